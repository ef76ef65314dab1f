# shellcheck shell=bash
# scripts/outside-suites.sh's steps: sources from the Debian archive, fabtests built and run from
# runfabtests.sh's own test lists with runfabtests.sh's verdicts (a test that both sides end with
# -FI_ENODATA or -FI_ENOSYS is Notrun; exit 124 from the timeout is a hang, a signal a crash) and
# the cases told apart from its Fail (ft_verdict says which and why), and mpi4py's suite one
# module per mpirun under a timeout. Each run writes one TSV of "test<TAB>verdict<TAB>reason"
# lines into $work/results; outside_suites_summary.py reads them.
# Expects: work, log, lib, server, port_base, timeout_s, test_timeout, module_timeout, debian,
# ft_src, py_src, py (the Python that has python3-mpi4py).

results() { mkdir -p "$work/results" && echo "$work/results/$1.tsv"; }

# debian_source PKG: unpacks Debian's source of PKG under $work/src (a private deb-src list for
# the archive this host's apt uses, so the system's configuration is left alone); prints its dir.
debian_source() {
  local pkg=$1 apt=$work/apt uri dir
  dir=$(find "$work/src" -maxdepth 1 -type d -name "$pkg-[0-9]*" 2> /dev/null | head -1)
  [ -n "$dir" ] && { echo "$dir"; return 0; }
  [ "$debian" -eq 1 ] || { echo "  no source for $pkg (--no-debian)" >&2; return 1; }
  command -v apt-get > /dev/null || { echo "  no apt-get for the source of $pkg" >&2; return 1; }
  uri=$(grep -rhoE "https?://[^ ]*debian/?$|https?://deb.debian.org/debian" /etc/apt/sources.list \
    /etc/apt/sources.list.d/ 2> /dev/null | grep -v security | head -1)
  . /etc/os-release
  mkdir -p "$apt/lists/partial" "$work/src"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
    "${uri:-http://deb.debian.org/debian} ${VERSION_CODENAME:-bookworm} main" > "$apt/sources.list"
  local o=(-o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/nonexistent
    -o "Dir::State::Lists=$apt/lists" -o APT::Sandbox::User=root)
  if ! timeout 300 apt-get "${o[@]}" update > "$log/apt-update.log" 2>&1 ||
    ! (cd "$work/src" && timeout 600 apt-get "${o[@]}" source "$pkg" > "$log/apt-$pkg.log" 2>&1); then
    echo "  apt-get source $pkg failed ($(grep -m1 -E '^E:' "$log/apt-$pkg.log" "$log/apt-update.log" \
      2> /dev/null | cut -d: -f2-)); give the sources with --${pkg/libfabric/fabtests}-src" >&2
    return 1
  fi
  find "$work/src" -maxdepth 1 -type d -name "$pkg-[0-9]*" | head -1
}

# need_tools TOOL...: present, or installed from the archive (root), or a message and failure.
need_tools() {
  local missing=() t
  for t in "$@"; do command -v "$t" > /dev/null || missing+=("$t"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  local pkgs=${missing[*]}
  pkgs=${pkgs//libtoolize/libtool}
  pkgs=${pkgs//autoreconf/autoconf}
  if [ "$(id -u)" -eq 0 ] && timeout 600 apt-get install -y $pkgs > "$log/apt-tools.log" 2>&1; then
    return 0
  fi
  echo "  missing ${missing[*]}: apt-get install $pkgs" >&2
  return 1
}

# fabtests_build: builds and installs fabtests under $work/fabtests; prints its bin directory.
fabtests_build() {
  local src=$ft_src
  [ -n "$src" ] || src=$(debian_source libfabric) || return 1
  [ -d "$src/fabtests" ] && src=$src/fabtests
  [ -f "$src/configure.ac" ] && [ -f "$src/scripts/runfabtests.sh" ] ||
    { echo "  no fabtests sources in $src (it needs configure.ac and scripts/runfabtests.sh)" >&2; return 1; }
  local b=$work/fabtests
  if [ ! -x "$b/inst/bin/fi_rdm" ]; then
    need_tools autoreconf automake libtoolize make cc || return 1
    echo "building fabtests from $src (log: $log/fabtests-build.log)" >&2
    rm -rf "$b" && mkdir -p "$b" && cp -a "$src" "$b/src" || return 1
    (cd "$b/src" && { [ -x configure ] || timeout 600 ./autogen.sh; } &&
      timeout 600 ./configure --prefix="$b/inst" && timeout 1800 nice -n 10 make -j2 install) \
      > "$log/fabtests-build.log" 2>&1 || { echo "  fabtests did not build: $log/fabtests-build.log" >&2; return 1; }
  fi
  echo "$b/inst/bin"
}

# fabtests_list BIN SET: the test lines of runfabtests.sh's arrays for SET, one a line, each
# prefixed by its kind (unit, neg, cs).
fabtests_list() {
  local sh=$1/runfabtests.sh
  array() { sed -n "/^$1=(/,/^)/p" "$sh" | sed -e '1d' -e '$d' | sed -n 's/^[[:space:]]*"\(.*\)".*/\1/p'; }
  case $2 in
    quick)
      array unit_tests | sed 's/^/unit /'
      array neg_unit_tests | sed 's/^/neg /'
      array functional_tests | sed 's/^/cs /'
      array short_tests | sed 's/^/cs /' ;;
    *) array "${2}_tests" | sed 's/^/cs /' ;;
  esac
}

# ft_errline FILE...: the first line in which fabtests names a failed call and its error
# ("fi_getinfo(): common/shared.c:918, ret=-61 (No data available)"), else the last line.
ft_errline() {
  local l
  l=$(grep -h -m1 -E 'ret=-?[0-9]+ \(' "$@" 2> /dev/null | head -1)
  [ -n "$l" ] || l=$(cat "$@" 2> /dev/null | grep -v '^[[:space:]]*$' | tail -1)
  echo "${l//$'\t'/ }"
}

# ft_waiting PID: what the fabtest run by the timeout process PID is blocked in: "accept" for
# accept() (fabtests' out-of-band or socket exchange listening for its peer's first connection),
# else "system call N", or "gone".
ft_waiting() {
  local t sc
  t=$(ps -o pid= --ppid "$1" 2> /dev/null | head -1 | tr -d ' ')
  { [ -n "$t" ] && read -r sc _ < "/proc/$t/syscall"; } 2> /dev/null || { echo gone; return; }
  case "$(uname -m):$sc" in
    x86_64:43 | x86_64:288 | aarch64:202 | aarch64:242) echo accept ;;
    *) if [ "$(cat "/proc/$t/wchan" 2> /dev/null)" = inet_csk_accept ]; then echo accept
       else echo "system call $sc"; fi ;;
  esac
}

# ft_verdict S_RC C_RC OUT [STOPPED]: "verdict<TAB>reason" for a test whose server and client
# exited with S_RC and C_RC (a unit test: its status twice), OUT.s and OUT.c holding their output;
# STOPPED, what the server was blocked in when it was stopped after its client had ended.
# runfabtests.sh's verdicts (non-strict): Notrun when both sides end with -FI_ENODATA (61) or both
# with -FI_ENOSYS (38), Pass when both end with 0, Fail otherwise. Told apart from its Fail: a hang
# (124 or 137: the timeout's), a crash (another signal), and two cases that are not the provider's:
# - Notrun when the client ended with -FI_ENODATA or -FI_ENOSYS and the server had only been left
#   waiting in accept() for the client's first connection (fabtests' out-of-band or socket
#   exchange, which such a client never reaches, as fi_cm_data's and fi_shared_ctx -e msg's do not
#   with -b): runfabtests.sh kills the server and says Fail; the reason says so.
# - n/a when the test cannot run in this form with any provider: both sides exit before calling
#   libfabric with fabtests' "Source address (-s) is required for this test" (fi_msg_sockets
#   with -b, which gives no -s).
ft_verdict() {
  local s=$1 c=$2 out=$3 stopped=${4:-} e
  e=$(ft_errline "$out.c" "$out.s")
  if [ "$s" = 124 ] || [ "$c" = 124 ] || [ "$s" = 137 ] || [ "$c" = 137 ]; then
    printf 'hang\tnot finished within %s s (server status %s, client %s)\n' "$timeout_s" "$s" "$c"
  elif [ "$s" -ge 128 ] || [ "$c" -ge 128 ]; then
    printf 'crash\tkilled by a signal (server status %s, client %s): %s\n' "$s" "$c" "$e"
  elif { [ "$s" = 61 ] && [ "$c" = 61 ]; } || { [ "$s" = 38 ] && [ "$c" = 38 ]; }; then
    printf 'notrun\t%s\n' "$e"
  elif [ "$s" = 0 ] && [ "$c" = 0 ]; then
    printf 'pass\t\n'
  elif [ "$s" != 0 ] && [ "$c" != 0 ] &&
    grep -qs 'Source address (-s) is required for this test' "$out.s" &&
    grep -qs 'Source address (-s) is required for this test' "$out.c"; then
    printf 'n/a\tthe test needs -s, which this form does not give; both sides exit before calling libfabric, whatever the provider\n'
  elif { [ "$c" = 61 ] || [ "$c" = 38 ]; } && [ "$stopped" = accept ]; then
    printf 'notrun\tclient: %s; the server, left waiting in accept() for the client'"'"'s first (out-of-band) connection, which this client never opens, was stopped (runfabtests.sh: Fail)\n' \
      "$(ft_errline "$out.c")"
  else
    printf 'fail\tserver status %s, client %s%s: %s\n' "$s" "$c" \
      "${stopped:+ (server stopped after its client ended, in $stopped)}" "$e"
  fi
}

# ft_await_listener PID PORT: returns once a TCP socket listens on PORT (the server's out-of-band
# port with -b, its endpoint's as shipped), the server run by the timeout process PID has ended,
# or 10 s have passed. runfabtests.sh starts the client a second after the server; on a loaded
# host the server may not listen yet, and the client's connect is refused (a Fail of the harness,
# not of the test).
ft_await_listener() {
  local i
  for ((i = 0; i < 100; i++)); do
    [ -n "$(ss -Hltn "sport = :$2" 2> /dev/null)" ] && return 0
    kill -0 "$1" 2> /dev/null || return 0
    sleep 0.1
  done
}

# ft_one BIN KIND "TEST" MODE PORT OUT: one fabtest; prints "verdict<TAB>reason".
ft_one() {
  local bin=$1 kind=$2 t=$3 mode=$4 port=$5 out=$6 s c sp cp
  local -a words
  read -ra words <<< "${t//GOOD_ADDR/$server}"
  words=("${words[@]//SERVER_ADDR/$server}")
  words[0]=$bin/${words[0]}
  if [ "$kind" != cs ]; then
    timeout -k 5 "$timeout_s" "${words[@]}" -p mrc > "$out.s" 2>&1
    s=$?
    : > "$out.c"
    if [ "$kind" = neg ]; then [ $s = 61 ] && s=0 || { [ $s -ge 124 ] || s=1; }; fi
    ft_verdict $s $s "$out"
    return
  fi
  local sa=(-B "$port" -s "$server") ca=(-P "$port" -s "$server" "$server") stopped=""
  # -b: both sides on one host would bind fabtests' default source port (9228) and the second
  # get EADDRINUSE (libfabric's tcp;ofi_rxm too), so each takes a port the system picks (-B 0).
  [ "$mode" = oob ] && sa=(-B 0 -E="$port") ca=(-B 0 -E="$port" "$server")
  timeout -k 5 $((timeout_s + 5)) "${words[@]}" -p mrc "${sa[@]}" > "$out.s" 2>&1 &
  sp=$!
  sleep 1
  ft_await_listener $sp "$port"
  timeout -k 5 "$timeout_s" "${words[@]}" -p mrc "${ca[@]}" > "$out.c" 2>&1 &
  cp=$!
  wait $cp
  c=$?
  if [ $c -ne 0 ] && kill -0 $sp 2> /dev/null; then
    sleep 2
    # runfabtests kills the server of a failed client (a Fail, not a hang); what it was blocked
    # in tells a server left waiting for its client apart. SIGTERM to timeout is passed on to
    # the test (and -k ends it), so no server is left behind.
    if kill -0 $sp 2> /dev/null; then
      stopped=$(ft_waiting $sp)
      kill $sp 2> /dev/null
    fi
  fi
  wait $sp
  s=$?
  [ -n "$stopped" ] && s=1
  ft_verdict $s $c "$out" "$stopped"
}

# fabtests_run BIN SET MODE: runs one set in one mode, printing a line per test.
fabtests_run() {
  local bin=$1 set=$2 mode=$3 key="fabtests-$2-$3" n=0 kind t v why port tsv
  tsv=$(results "$key")
  : > "$tsv"
  echo "== fabtests $set, $mode addresses, provider mrc (logs: $log/$key)"
  mkdir -p "$log/$key"
  export FI_PROVIDER_PATH=$lib
  while read -r kind t; do
    n=$((n + 1))
    port=$((port_base + 800 + n % 150))
    IFS=$'\t' read -r v why < <(ft_one "$bin" "$kind" "$t" "$mode" "$port" "$log/$key/$n")
    printf "%-60s %-7s %s\n" "$t" "$v" "$log/$key/$n.[sc]"
    printf "%s\t%s\t%s\n" "$t" "$v" "$why" >> "$tsv"
  done < <(fabtests_list "$bin" "$set")
  unset FI_PROVIDER_PATH
}

# mpi4py_sources: prints the mpi4py source tree (with test/runtests.py), or says why not.
mpi4py_sources() {
  command -v mpirun > /dev/null || { echo "  no mpirun: apt-get install openmpi-bin" >&2; return 1; }
  "$py" -c "import mpi4py" 2> /dev/null || { echo "  no mpi4py: apt-get install python3-mpi4py" >&2; return 1; }
  local src=$py_src
  [ -n "$src" ] || src=$(debian_source mpi4py) || return 1
  [ -f "$src/test/runtests.py" ] || { echo "  no test/runtests.py in $src" >&2; return 1; }
  echo "$src"
}

# mpi4py_run SRC PROVIDER RANKS: each test module in an mpirun of its own, bounded by
# $module_timeout, over Open MPI's OFI MTL on PROVIDER.
mpi4py_run() {
  local src=$1 prov=$2 n=$3 key tsv m rc dir
  key="mpi4py-${prov%%;*}-$n"
  tsv=$(results "$key")
  : > "$tsv"
  echo "== mpi4py $("$py" -c 'import mpi4py; print(mpi4py.__version__)') suite, $n ranks," \
    "Open MPI's OFI MTL over $prov (logs: $log/$key)"
  local env=()
  # Over mrc, a rank whose endpoint waits half a test's bound with nothing completed writes the
  # provider's state into the run's log (FI_MRC_STALL_REPORT_MS): what each side of a hang waited for.
  [ "$prov" = mrc ] && env=(-x "FI_PROVIDER_PATH=$lib" -x FI_MRC_PLANES -x FI_MRC_PORT -x FI_MRC_EV_PORT_BASE
    -x "FI_MRC_STALL_REPORT_MS=${FI_MRC_STALL_REPORT_MS:-$((test_timeout * 500))}")
  local modules
  modules=$(cd "$src/test" && ls test_*.py | sed 's/\.py$//')
  if [ -n "$py_modules" ]; then
    for m in ${py_modules//,/ }; do
      grep -qx "$m" <<< "$modules" || { echo "  no module $m in $src/test" >&2; return 1; }
    done
    modules=${py_modules//,/ }
  fi
  for m in $modules; do
    dir=$log/$key/$m
    rm -rf "$dir" && mkdir -p "$dir"
    local attempt=0 left=0
    while :; do  # after a hang or crash, again from the next test
      timeout -k 10 "$module_timeout" mpirun --allow-run-as-root --oversubscribe -np "$n" \
        --mca mpi_yield_when_idle 1 --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include "$prov" \
        --mca btl self "${env[@]}" "$py" "$here/outside_suites_mpi4py.py" "$src/test" "$m" "$dir" \
        $attempt "$test_timeout" > "$dir/mpirun.$attempt.log" 2>&1
      rc=$?
      left=$("$py" "$here/outside_suites_mpi4py.py" --left "$dir")
      [ "$left" -gt 0 ] && [ $attempt -lt 40 ] || break
      attempt=$((attempt + 1))
    done
    "$py" "$here/outside_suites_mpi4py.py" --verdicts "$dir" > "$dir/verdicts.tsv"
    [ "$left" -ge 0 ] || [ $attempt -gt 0 ] ||
      printf "%s (mpirun status %d)\t%s\n" "$m" $rc "$([ $rc = 124 ] && echo hang || echo crash)" >> "$dir/verdicts.tsv"
    cat "$dir/verdicts.tsv" >> "$tsv"
    printf "  %-24s %s\n" "$m" "$(cut -f2 "$dir/verdicts.tsv" | sort | uniq -c | tr -s ' \n' '  ')"
  done
}

summary_print() { python3 "$here/outside_suites_summary.py" "$work/results"; }
summary_json() { python3 "$here/outside_suites_summary.py" --json "$work/results"; }
