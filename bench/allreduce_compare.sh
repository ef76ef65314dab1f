#!/usr/bin/env bash
# bench/allreduce_compare.sh: all-reduce over the namespace testbed, mrc vs
# torch Gloo vs Open MPI, measured in one run. Root only.
#
#   sudo bench/allreduce_compare.sh                     # 4 hosts x 4 planes at 250 Mbit/s, 2 and 4 ranks
#   sudo bench/allreduce_compare.sh --ranks 2 --max 4M --no-fail     # a quick small run
#
# Testbed: scripts/testbed.sh --prefix mrcar --router --hosts MAXRANKS --planes 4 --rate RATE (a
# router per plane and host, so 4 hosts are possible; 2-rank runs use hosts 0 and 1 of the same
# testbed). One rank per host namespace. float32 sum, sizes --min..--max by factors of 4; per size
# 20 timed + 3 warm-up iterations up to 1 MiB, 8 + 1 at 4 MiB, 3 + 1 from 16 MiB (all three).
#   mrc   `mrc allreduce-perf --rank R --world-size N --store tcp:198.18.0.1:PORT --planes <host R's
#         4 plane addresses>` (one invocation per iteration group); reported: out of place.
#   gloo  bench/torch_allreduce.py, torch.distributed "gloo", GLOO_SOCKET_IFNAME = host R's NIC of
#         plane --gloo-plane (Gloo uses one interface); rendezvous tcp://198.18.0.1 (plane 0).
#   mpi   bench/mpi_allreduce.c (MPI_Allreduce, out of place) compiled with mpicc; mpirun runs in
#         host 0's namespace with -H <plane-0 addresses> and --mca plm_rsh_agent
#         bench/netns_rsh.sh, which starts each orted with `ip netns exec` in its host's namespace
#         (own UTS namespace and hostname: Open MPI would otherwise take all hosts for one node);
#         --mca btl tcp,self --mca btl_tcp_if_include <the 4 plane subnets> (the TCP BTL stripes
#         large messages over all of them), --mca oob_tcp_if_include <plane 0>,
#         --mca mpi_yield_when_idle 1 (4 busy-polling ranks on 2 cores otherwise starve each other).
# Failure runs (--fail-size, default 16 MiB, about --fail-seconds each): plane --fail-plane (by
# default the plane Gloo uses) is taken down (testbed `fail`) --fail-at s after data starts to flow
# (host 0's NICs moved 1 MiB) and repaired --fail-for s later. Gloo and MPI print every iteration's wall-clock start and end; mrc
# allreduce-perf runs N iterations (N from the clean run's time at that size) and reports the
# average and #wrong. Every run has a time limit (--run-limit); a run that hits it is recorded.
# Before the first measurement it waits (20 s steps, at most --max-wait s in all) until the
# 1-minute load average is below --max-load; before each later one, until the other tasks'
# busy cores (2 s, /proc/stat) are (our own runs keep the 1-minute average up); both recorded.
# Output: summary JSON (--out), PNG (--plot), raw files (--raw-dir, default
# bench/results/raw/allreduce-STAMP/, git-ignored). The testbed is always taken down (EXIT trap).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
STAMP=$(date +%Y%m%d-%H%M%S)
COMMAND_LINE="bench/allreduce_compare.sh $*"

RATE=250mbit PLANES=4 RANKS="2 4" MIN=1K MAX=64M TRANSPORTS="mrc gloo mpi" GLOO_PLANE=1
FAIL=1 FAIL_RANKS="" FAIL_PLANE="" FAIL_SIZE=16M FAIL_SECONDS=12 FAIL_AT=3 FAIL_FOR=3 RUN_LIMIT=120
MRC_MTU=8192 MAX_LOAD=1.0 MAX_WAIT=900 PREFIX=mrcar INSTALL=1 BUILD=1 BUILD_DIR=build/cmp MRC="" MRC_TORCH_PATH=""
OUT="bench/results/allreduce-compare-$(date +%F).json" PLOT=docs/img/allreduce_compare.png
RAW="bench/results/raw/allreduce-$STAMP"

usage() {
  cat <<EOF
usage: sudo bench/allreduce_compare.sh [options]
  --rate RATE          per-plane rate (tc syntax; default $RATE)
  --ranks LIST         rank counts (default "$RANKS"); the testbed has max(LIST) hosts
  --min SIZE --max SIZE  all-reduce sizes, K/M suffixes, factor 4 (default $MIN..$MAX)
  --transports LIST    subset of "mrc gloo mpi" (default all)
  --gloo-plane P       the plane whose interface Gloo uses (default $GLOO_PLANE)
  --mrc-mtu BYTES      mrc payload per packet (default $MRC_MTU: the testbed links carry 9000-byte
                       frames, as Gloo's and Open MPI's TCP segments use them)
  --no-fail            skip the failure runs
  --fail-ranks LIST    rank counts of the failure runs (default: --ranks)
  --fail-plane P       plane taken down (default: --gloo-plane)
  --fail-size SIZE     all-reduce size of the failure runs (default $FAIL_SIZE)
  --fail-seconds S     length of a failure run (default $FAIL_SECONDS)
  --fail-at S          fail the plane S seconds after the data starts flowing (default $FAIL_AT)
  --fail-for S         repair it S seconds later (default $FAIL_FOR)
  --run-limit S        kill a run after S seconds (default $RUN_LIMIT)
  --max-load L         wait until the 1-minute load average is below L (default $MAX_LOAD)
  --max-wait S         measure anyway after S seconds of waiting in all (default $MAX_WAIT)
  --prefix NAME        testbed prefix (default $PREFIX)
  --out FILE --plot FILE --raw-dir DIR   outputs (defaults $OUT, $PLOT, bench/results/raw/allreduce-STAMP)
  --no-install         do not apt-get install bench/allreduce-compare-deps.txt
  --no-build           do not build (use --mrc PATH or $BUILD_DIR/src/mrc as it is)
  --build-dir DIR      where mrc is built (default $BUILD_DIR)
  --mrc PATH           the mrc binary to use (implies --no-build)
  --mrc-torch DIR      also run the failure runs through the mrc torch backend (DIR holds the
                       built mrc_torch package, e.g. build/release/python): a per-iteration
                       timeline for mrc, which allreduce-perf does not give
EOF
}

while [ $# -gt 0 ]; do
  case "$1" in
    --rate) RATE=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --min) MIN=$2; shift 2 ;;
    --max) MAX=$2; shift 2 ;;
    --transports) TRANSPORTS=$2; shift 2 ;;
    --gloo-plane) GLOO_PLANE=$2; shift 2 ;;
    --mrc-mtu) MRC_MTU=$2; shift 2 ;;
    --no-fail) FAIL=0; shift ;;
    --fail-ranks) FAIL_RANKS=$2; shift 2 ;;
    --fail-plane) FAIL_PLANE=$2; shift 2 ;;
    --fail-size) FAIL_SIZE=$2; shift 2 ;;
    --fail-seconds) FAIL_SECONDS=$2; shift 2 ;;
    --fail-at) FAIL_AT=$2; shift 2 ;;
    --fail-for) FAIL_FOR=$2; shift 2 ;;
    --run-limit) RUN_LIMIT=$2; shift 2 ;;
    --max-load) MAX_LOAD=$2; shift 2 ;;
    --max-wait) MAX_WAIT=$2; shift 2 ;;
    --prefix) PREFIX=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --plot) PLOT=$2; shift 2 ;;
    --raw-dir) RAW=$2; shift 2 ;;
    --no-install) INSTALL=0; shift ;;
    --no-build) BUILD=0; shift ;;
    --build-dir) BUILD_DIR=$2; shift 2 ;;
    --mrc) MRC=$2; BUILD=0; shift 2 ;;
    --mrc-torch) MRC_TORCH_PATH=$(cd "$2" && pwd); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "allreduce_compare.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done

FAIL_RANKS=${FAIL_RANKS:-$RANKS}
FAIL_PLANE=${FAIL_PLANE:-$GLOO_PLANE}

say() { echo "allreduce_compare.sh: $*" >&2; }
die() { say "$*"; exit 1; }
bytes_of() {  # 64M -> 67108864
  local v=$1
  case "$v" in
    *[Kk]) echo $((${v%?} * 1024)) ;;
    *[Mm]) echo $((${v%?} * 1048576)) ;;
    *[Gg]) echo $((${v%?} * 1073741824)) ;;
    *) echo "$v" ;;
  esac
}
MIN_B=$(bytes_of "$MIN") MAX_B=$(bytes_of "$MAX") FAIL_B=$(bytes_of "$FAIL_SIZE")
HOSTS=2
for n in $RANKS $FAIL_RANKS; do
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 2 ] && [ "$n" -le 16 ] || die "rank counts are 2..16 (got '$n')"
  [ "$n" -gt "$HOSTS" ] && HOSTS=$n
done
[ "$GLOO_PLANE" -lt "$PLANES" ] && [ "$FAIL_PLANE" -lt "$PLANES" ] || die "planes are 0..$((PLANES - 1))"

[ "$(id -u)" -eq 0 ] || die "needs root: it builds a network-namespace testbed (scripts/testbed.sh), applies kernel faults and installs packages; run it as root"

# --- packages only this benchmark needs
PY=/usr/bin/python3  # Debian's: torch and matplotlib (a pyenv python3 on PATH has neither)
if [ "$INSTALL" = 1 ]; then
  scripts/install-deps.sh >/dev/null
  mapfile -t deps < <(grep -v '^[[:space:]]*\(#\|$\)' bench/allreduce-compare-deps.txt | awk '{print $1}')
  missing=()
  for p in "${deps[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi
for c in mpicc mpirun ip tc unshare; do
  command -v "$c" >/dev/null || die "'$c' not found (packages: bench/allreduce-compare-deps.txt; drop --no-install)"
done
"$PY" -c 'import torch.distributed, matplotlib' 2>/dev/null || die "$PY lacks torch or matplotlib (python3-torch, python3-matplotlib)"

# --- build
if [ "$BUILD" = 1 ]; then
  say "building mrc in $BUILD_DIR"
  [ -f "$BUILD_DIR/build.ninja" ] || cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g" >/dev/null
  cmake --build "$BUILD_DIR" --target mrc -j2 >/dev/null
fi
MRC=${MRC:-$REPO/$BUILD_DIR/src/mrc}
[ -x "$MRC" ] || die "$MRC is missing (build without --no-build, or give --mrc PATH)"
mkdir -p "$RAW/bin"
RAW=$(cd "$RAW" && pwd)
MPIBIN=$RAW/bin/mpi_allreduce
mpicc -O2 -o "$MPIBIN" bench/mpi_allreduce.c

# --- testbed (always taken down: EXIT trap)
# shellcheck source=bench/testbed_session.sh
. bench/testbed_session.sh
say "testbed: $HOSTS hosts x $PLANES planes at $RATE each, a router per plane and host"
"${TB[@]}" --hosts "$HOSTS" --planes "$PLANES" --rate "$RATE" --router up >"$RAW/testbed-up.txt"
addr() { echo "198.18.$2.$(($1 + 1))"; }  # host, plane (docs/TESTBED.md)
NS() { echo "$PREFIX-h$1"; }
SUBNETS=$(for ((p = 0; p < PLANES; p++)); do printf '198.18.%d.0/24,' "$p"; done)
SUBNETS=${SUBNETS%,}

# --- helpers
now_ns() { date +%s%N; }
load1() { cut -d' ' -f1 /proc/loadavg; }
# Before the first measurement: the 1-minute load average must be below --max-load. Later ones
# follow our own runs, which keep the 1-minute average up for a minute or two; there the test is
# the machine's busy cores over 2 s with none of our runs going (/proc/stat), so that the
# benchmark does not wait for its own load to decay.
WAITED=0 FIRST_QUIET=1
busy_now() {  # busy cores over 2 s (/proc/stat), while none of our runs is going
  local a b
  a=$(head -1 /proc/stat); sleep 2; b=$(head -1 /proc/stat)
  awk -v a="$a" -v b="$b" -v n="$(nproc)" 'BEGIN { split(a, x); split(b, y); t = 0; i = 0
    for (k = 2; k <= 9; k++) t += y[k] - x[k]
    i = (y[5] - x[5]) + (y[6] - x[6])
    printf "%.2f", (t > 0 ? n * (t - i) / t : 0) }'
}
wait_for_quiet() {
  local load
  while :; do
    if [ "$FIRST_QUIET" = 1 ]; then load=$(load1); else load=$(busy_now); fi
    awk -v l="$load" -v m="$MAX_LOAD" 'BEGIN { exit !(l >= m) }' || break
    if [ "$WAITED" -ge "$MAX_WAIT" ]; then
      say "load $load is still >= $MAX_LOAD after ${WAITED} s of waiting in all: measuring anyway (recorded)"
      break
    fi
    say "load $load >= $MAX_LOAD ($([ "$FIRST_QUIET" = 1 ] && echo "1-minute average" || echo "busy cores, 2 s")): waiting 20 s (${WAITED} s so far)"
    sleep 20
    WAITED=$((WAITED + 20))
  done
  FIRST_QUIET=0
  RUNNABLE=$(busy_now)
}
nic_bytes() {  # host 0's per-plane rx+tx bytes, "p0 p1 p2 p3"
  local p out=()
  for ((p = 0; p < PLANES; p++)); do
    out+=("$(ip netns exec "$(NS 0)" awk -v d="h0p$p:" '$1 == d { printf "%.0f\n", $2 + $10 }' /proc/net/dev)")
  done
  echo "${out[*]}"
}
STORE_PORT=29500
next_port() { STORE_PORT=$((STORE_PORT + 1)); }

# Launchers: each starts every rank of one run in the background and sets RUN_PIDS; rank 0's
# stdout goes to $dir/out.txt, every rank's stderr to $dir/rankR.err.
launch_mrc() {  # DIR N ARGS...
  local dir=$1 n=$2 r
  shift 2
  next_port
  RUN_PIDS=()
  for ((r = 0; r < n; r++)); do
    ip netns exec "$(NS "$r")" timeout -k 5 "$RUN_LIMIT" "$MRC" allreduce-perf --rank "$r" --world-size "$n" \
      --store "tcp:$(addr 0 0):$STORE_PORT" --planes "$(for ((p = 0; p < PLANES; p++)); do printf '%s,' "$(addr "$r" "$p")"; done | sed 's/,$//')" \
      --mtu "$MRC_MTU" --json "$@" >"$dir/rank$r.out" 2>"$dir/rank$r.err" &
    RUN_PIDS+=("$!")
  done
}
launch_gloo() {  # DIR N MODE ARGS...
  local dir=$1 n=$2 r
  shift 2
  next_port
  RUN_PIDS=()
  for ((r = 0; r < n; r++)); do
    ip netns exec "$(NS "$r")" env RANK="$r" WORLD_SIZE="$n" GLOO_SOCKET_IFNAME="h${r}p$GLOO_PLANE" OMP_NUM_THREADS=1 \
      timeout -k 5 "$RUN_LIMIT" "$PY" bench/torch_allreduce.py --init "tcp://$(addr 0 0):$STORE_PORT" \
      --timeout "$RUN_LIMIT" "$@" >"$dir/rank$r.out" 2>"$dir/rank$r.err" &
    RUN_PIDS+=("$!")
  done
}
launch_mrc_torch() {  # DIR N MODE ARGS...: bench/torch_allreduce.py over the mrc backend
  local dir=$1 n=$2 r
  shift 2
  next_port
  RUN_PIDS=()
  for ((r = 0; r < n; r++)); do
    ip netns exec "$(NS "$r")" env RANK="$r" WORLD_SIZE="$n" PYTHONPATH="$MRC_TORCH_PATH" OMP_NUM_THREADS=1 \
      MRC_PLANES="$(for ((p = 0; p < PLANES; p++)); do printf '%s,' "$(addr "$r" "$p")"; done | sed 's/,$//')" \
      timeout -k 5 "$RUN_LIMIT" "$PY" bench/torch_allreduce.py --backend mrc --init "tcp://$(addr 0 0):$STORE_PORT" \
      --timeout "$RUN_LIMIT" "$@" >"$dir/rank$r.out" 2>"$dir/rank$r.err" &
    RUN_PIDS+=("$!")
  done
}
launch_mpi() {  # DIR N MODE ARGS...
  local dir=$1 n=$2 r hosts=""
  shift 2
  for ((r = 0; r < n; r++)); do hosts+="$(addr "$r" 0),"; done
  RUN_PIDS=()
  ip netns exec "$(NS 0)" env MRC_NETNS_PREFIX="$PREFIX" timeout -k 5 "$RUN_LIMIT" unshare --uts sh -c \
    'hostname "$0"; exec "$@"' "$(NS 0)" \
    mpirun --allow-run-as-root -np "$n" -H "${hosts%,}" --map-by node \
    --mca plm_rsh_agent "$REPO/bench/netns_rsh.sh" --mca oob_tcp_if_include "$(addr 0 0 | sed 's/\.1$/.0/')/24" \
    --mca mpi_yield_when_idle 1 --mca btl tcp,self --mca btl_tcp_if_include "$SUBNETS" \
    "$MPIBIN" "$@" >"$dir/rank0.out" 2>"$dir/rank0.err" &
  RUN_PIDS+=("$!")
}
wait_run() {  # DIR: waits for RUN_PIDS, writes the exit codes
  local dir=$1 pid rcs=() rc
  for pid in "${RUN_PIDS[@]}"; do
    rc=0; wait "$pid" || rc=$?
    rcs+=("$rc")
  done
  echo "${rcs[*]}" >"$dir/rc.txt"
}

# One clean sweep: N ranks, one transport. Writes $RAW/sweep-nN-T/.
sweep() {  # N TRANSPORT
  local n=$1 t=$2 dir=$RAW/sweep-n$1-$2
  mkdir -p "$dir"
  wait_for_quiet
  local load loadavg nb0 t0
  load=$(load1); loadavg=$(cut -d' ' -f1-3 /proc/loadavg)
  say "sweep: $n ranks, $t (load $load)"
  nb0=$(nic_bytes); t0=$(now_ns)
  case "$t" in
    mrc)
      # Iteration groups as in mpi_allreduce.c and torch_allreduce.py.
      local g lo hi iters warm b sizes rc_all=""
      for g in "0 1048576 20 3" "1048577 4194304 8 1" "4194305 1099511627776 3 1"; do
        read -r lo hi iters warm <<<"$g"
        sizes=()
        for ((b = MIN_B; b <= MAX_B; b *= 4)); do [ "$b" -ge "$lo" ] && [ "$b" -le "$hi" ] && sizes+=("$b"); done
        [ ${#sizes[@]} -gt 0 ] || continue
        mkdir -p "$dir/g$lo"
        launch_mrc "$dir/g$lo" "$n" -b "${sizes[0]}" -e "${sizes[-1]}" -f 4 -n "$iters" -w "$warm"
        wait_run "$dir/g$lo"
        rc_all+="$(cat "$dir/g$lo/rc.txt") "
      done
      echo "$rc_all" >"$dir/rc.txt" ;;
    gloo) launch_gloo "$dir" "$n" sweep "$MIN_B" "$MAX_B" 4; wait_run "$dir" ;;
    mpi) launch_mpi "$dir" "$n" sweep "$MIN_B" "$MAX_B" 4; wait_run "$dir" ;;
  esac
  cat >"$dir/meta.txt" <<EOF
kind sweep
ranks $n
transport $t
load_start $load
busy_cores_start $RUNNABLE
loadavg $loadavg
t0_ns $t0
tend_ns $(now_ns)
rc $(cat "$dir/rc.txt")
nic_bytes_h0_before $nb0
nic_bytes_h0_after $(nic_bytes)
EOF
  grep -qv '^[0 ]*$' "$dir/rc.txt" && say "WARNING: $t with $n ranks: exit codes $(cat "$dir/rc.txt") (see $dir)"
  return 0
}

# One failure run: N ranks, one transport. Writes $RAW/fail-nN-T/.
fail_run() {  # N TRANSPORT
  local n=$1 t=$2 dir=$RAW/fail-n$1-$2
  mkdir -p "$dir"
  wait_for_quiet
  local load loadavg nb0 t0 tf tr iters=""
  load=$(load1); loadavg=$(cut -d' ' -f1-3 /proc/loadavg)
  nb0=$(nic_bytes)
  if [ "$t" = mrc ]; then
    # N iterations (out of place + in place each) to last about --fail-seconds at the clean speed.
    iters=$("$PY" - "$RAW/sweep-n$n-mrc" "$FAIL_B" "$FAIL_SECONDS" <<'EOF'
import glob, json, math, sys
d, size, secs = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
t = None
for f in glob.glob(d + "/g*/rank0.out"):
    try:
        for row in json.load(open(f))["rows"]:
            if row["size"] == size:
                t = row["out_of_place"]["time_us"] / 1e6
    except Exception:
        pass
print(max(5, min(400, math.ceil(secs / (2 * t)))) if t else 40)
EOF
)
  fi
  say "failure run: $n ranks, $t, plane $FAIL_PLANE down at +${FAIL_AT}s for ${FAIL_FOR}s (load $load)"
  t0=$(now_ns)
  case "$t" in
    mrc) launch_mrc "$dir" "$n" -b "$FAIL_B" -e "$FAIL_B" -f 1 -n "$iters" -w 1 ;;
    gloo) launch_gloo "$dir" "$n" timeline "$FAIL_B" "$FAIL_SECONDS" ;;
    mpi) launch_mpi "$dir" "$n" timeline "$FAIL_B" "$FAIL_SECONDS" ;;
    mrc_torch) launch_mrc_torch "$dir" "$n" timeline "$FAIL_B" "$FAIL_SECONDS" ;;
  esac
  # The clock of the fault starts when the all-reduces do (host 0's NICs have moved 1 MiB more
  # than the rendezvous needs), not at the launch: start-up times differ (torch's import takes
  # seconds on a busy machine), and a plane cut during Gloo's connect is another experiment.
  local base sum td=""
  base=$(echo "$nb0" | awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; printf "%.0f\n", s }')
  for _ in $(seq 1 $((RUN_LIMIT * 20))); do
    sum=$(nic_bytes | awk '{ s = 0; for (i = 1; i <= NF; i++) s += $i; printf "%.0f\n", s }')
    [ "$sum" -gt $((base + 1048576)) ] && { td=$(now_ns); break; }
    kill -0 "${RUN_PIDS[0]}" 2>/dev/null || break
    sleep 0.05
  done
  sleep "$FAIL_AT"
  local alive_fail=0 alive_repair=0
  kill -0 "${RUN_PIDS[0]}" 2>/dev/null && alive_fail=1
  tf=$(now_ns); "${TB[@]}" fail "$FAIL_PLANE" >"$dir/fail.txt"
  sleep "$FAIL_FOR"
  kill -0 "${RUN_PIDS[0]}" 2>/dev/null && alive_repair=1
  tr=$(now_ns); "${TB[@]}" repair "$FAIL_PLANE" >"$dir/repair.txt"
  [ "$alive_repair" = 1 ] || say "WARNING: the run ended before the repair (make --fail-seconds longer)"
  wait_run "$dir"
  cat >"$dir/meta.txt" <<EOF
kind fail
ranks $n
transport $t
load_start $load
busy_cores_start $RUNNABLE
loadavg $loadavg
size $FAIL_B
mrc_iters $iters
t0_ns $t0
data_ns $td
fail_ns $tf
repair_ns $tr
running_at_fail $alive_fail
running_at_repair $alive_repair
tend_ns $(now_ns)
rc $(cat "$dir/rc.txt")
nic_bytes_h0_before $nb0
nic_bytes_h0_after $(nic_bytes)
EOF
  grep -qv '^[0 ]*$' "$dir/rc.txt" && say "WARNING: failure run of $t with $n ranks: exit codes $(cat "$dir/rc.txt") (see $dir)"
  return 0
}

START_NS=$(now_ns)
for n in $RANKS; do
  for t in $TRANSPORTS; do sweep "$n" "$t"; done
done
if [ "$FAIL" = 1 ]; then
  for n in $FAIL_RANKS; do
    for t in $TRANSPORTS; do fail_run "$n" "$t"; done
    [ -z "$MRC_TORCH_PATH" ] || fail_run "$n" mrc_torch
  done
fi

{ machine_context; cat <<EOF
openmpi $(mpirun --version 2>/dev/null | head -1)
torch $("$PY" -c 'import torch; print(torch.__version__)')
rate $RATE
planes $PLANES
hosts $HOSTS
gloo_plane $GLOO_PLANE
mrc_mtu $MRC_MTU
fail_plane $FAIL_PLANE
fail_at_s $FAIL_AT
fail_for_s $FAIL_FOR
fail_size $FAIL_B
fail_seconds $FAIL_SECONDS
max_load $MAX_LOAD
waited_s $WAITED
elapsed_s $((($(now_ns) - START_NS) / 1000000000))
EOF
} >"$RAW/context.txt"
mkdir -p "$(dirname "$OUT")" "$(dirname "$PLOT")"
"$PY" bench/allreduce_compare_report.py --raw "$RAW" --out "$OUT" --plot "$PLOT"
say "summary $OUT, plot $PLOT, raw files $RAW"
