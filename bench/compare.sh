#!/usr/bin/env bash
# bench/compare.sh: the comparison of mrc with single-path TCP and kernel MPTCP, measured in
# one run on the namespace testbed (scripts/testbed.sh, docs/TESTBED.md). Root only.
#
#   sudo bench/compare.sh                    # 2 hosts x 4 planes at 250 Mbit/s each
#   sudo bench/compare.sh --rate 200mbit --duration 12
#
# What it measures (docs/BENCHMARKS.md, "Comparison with TCP and MPTCP on the namespace testbed"):
#   clean     goodput of one mrc connection over the 4 planes (mrc perf, 4 KiB packets), of
#             single-path TCP over one plane (iperf3) and of one MPTCP connection with one
#             subflow per plane (kernel MPTCP, mptcpize run iperf3), as fractions of the sum of
#             the plane rates; CPU per transferred bit.
#   cut       the same three while plane --fail-plane is taken down (testbed `fail`) --fail-at
#             seconds in and repaired (testbed `repair`) --fail-for seconds later: receiver-side
#             throughput every millisecond (NIC counters, netdev_sample) and every 0.1 s (the
#             tools' own receiver-side goodput); recovery times; mrc with --verify.
#             Single-path TCP runs over the plane that fails (it has no other).
#   loss      --loss percent random loss on every plane (testbed `loss`, both directions).
#   unshaped  one plane without a rate limit: mrc over that one plane vs raw UDP with GSO
#             (bench/udp_gso_blast, datagrams of mrc's size) vs kernel TCP; CPU per bit.
# Before each measurement it waits (20 s steps, at most --max-wait seconds in all) until the
# 1-minute load average is below --max-load: the machine is shared and a busy machine makes
# throughput numbers meaningless. The load at each start is recorded.
#
# Output: a small summary JSON (--out, default bench/results/compare-DATE.json), the plot
# (--plot, default docs/img/compare.png) and the raw files of every run (--raw-dir, default
# bench/results/raw/STAMP/, not meant to be committed). The testbed is always taken down.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
STAMP=$(date +%Y%m%d-%H%M%S)
COMMAND_LINE="bench/compare.sh $*"

RATE=250mbit PLANES=4 DURATION=10 FAIL_AT=3 FAIL_FOR=2 FAIL_PLANE=2 LOSS=1 UNSHAPED_DURATION=8
MAX_LOAD=1.0 MAX_WAIT=900 PREFIX=mrccmp INSTALL=1 BUILD=1 TCP_PLANE="" MRC_BIN="" MRC_ARGS=()
OUT="bench/results/compare-$(date +%F).json" PLOT=docs/img/compare.png RAW="bench/results/raw/$STAMP"
OFFLOADS=off SCENARIOS="clean cut loss unshaped" TRANSPORTS="mrc mrc_xdp mptcp tcp udp_gso"

usage() {
  cat <<EOF
usage: sudo bench/compare.sh [options]
  --rate RATE          per-plane rate (tc syntax; default $RATE): the machine must drive the sum
  --duration S         seconds per transfer (default $DURATION)
  --fail-plane P       plane cut in the 'cut' scenario (default $FAIL_PLANE)
  --fail-at S          seconds after the client starts (default $FAIL_AT)
  --fail-for S         seconds until the repair (default $FAIL_FOR)
  --loss PCT           random loss per plane in the 'loss' scenario (default $LOSS)
  --tcp-plane P        plane of single-path TCP (default: the plane that is cut)
  --unshaped-duration S  seconds per transfer on the unshaped path (default $UNSHAPED_DURATION)
  --offloads           the unshaped path with its segmentation offloads on (testbed.sh offload):
                       TCP's and UDP's 64 KB super-packets cross the veths whole, as over NICs
                       with TSO/USO, and raw UDP receives with GRO like mrc (default: off, as
                       the testbed keeps every link so that loss rules see single packets)
  --scenarios LIST     subset of "clean cut loss unshaped" (default: all)
  --transports LIST    subset of "mrc mrc_xdp mptcp tcp udp_gso" (default: all; mrc_xdp: mrc perf --backend xdp,
                       on the unshaped path only: AF_XDP bypasses the tbf and nftables of the others)
  --max-load L         wait until the 1-minute load average is below L (default $MAX_LOAD)
  --max-wait S         give up waiting for a quiet machine after S seconds in all (default $MAX_WAIT)
  --prefix NAME        testbed prefix (default $PREFIX)
  --out FILE           summary JSON (default $OUT)
  --plot FILE          PNG (default $PLOT)
  --raw-dir DIR        raw files (default bench/results/raw/STAMP)
  --no-install         do not apt-get install the packages of bench/compare-deps.txt
  --no-build           use build/release as it is
  --mrc BIN            the mrc binary to measure (default build/release/src/mrc; implies --no-build)
  --mrc-args "ARGS"    more options for both sides' mrc perf, e.g. "--ev-burst 4 --ack-every 4"
EOF
}

while [ $# -gt 0 ]; do
  case "$1" in
    --rate) RATE=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --fail-plane) FAIL_PLANE=$2; shift 2 ;;
    --fail-at) FAIL_AT=$2; shift 2 ;;
    --fail-for) FAIL_FOR=$2; shift 2 ;;
    --loss) LOSS=$2; shift 2 ;;
    --tcp-plane) TCP_PLANE=$2; shift 2 ;;
    --unshaped-duration) UNSHAPED_DURATION=$2; shift 2 ;;
    --offloads) OFFLOADS=on; shift ;;
    --scenarios) SCENARIOS=$2; shift 2 ;;
    --transports) TRANSPORTS=$2; shift 2 ;;
    --max-load) MAX_LOAD=$2; shift 2 ;;
    --max-wait) MAX_WAIT=$2; shift 2 ;;
    --prefix) PREFIX=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --plot) PLOT=$2; shift 2 ;;
    --raw-dir) RAW=$2; shift 2 ;;
    --no-install) INSTALL=0; shift ;;
    --no-build) BUILD=0; shift ;;
    --mrc) MRC_BIN=$2; BUILD=0; shift 2 ;;
    --mrc-args) read -r -a MRC_ARGS <<<"$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "compare.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
TCP_PLANE=${TCP_PLANE:-$FAIL_PLANE}
BLAST_GRO=()
[ "$OFFLOADS" = off ] || BLAST_GRO=(--gro)

say() { echo "compare.sh: $*" >&2; }
die() { say "$*"; exit 1; }

if [ "$(id -u)" -ne 0 ]; then
  die "needs root: it builds a network-namespace testbed (scripts/testbed.sh), applies kernel faults and installs packages with apt-get; run it as root (sudo bench/compare.sh)"
fi
[ "$PLANES" -ge 2 ] && [ "$FAIL_PLANE" -lt "$PLANES" ] && [ "$TCP_PLANE" -lt "$PLANES" ] || die "planes are 0..$((PLANES - 1))"

# --- packages only this benchmark needs (bench/compare-deps.txt, not scripts/install-deps.sh)
PY=/usr/bin/python3  # Debian's, for python3-matplotlib (a pyenv python3 on PATH lacks it)
if [ "$INSTALL" = 1 ]; then
  scripts/install-deps.sh
  mapfile -t deps < <(grep -v '^[[:space:]]*\(#\|$\)' bench/compare-deps.txt | awk '{print $1}')
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
for c in iperf3 mptcpize ip tc nft ethtool; do
  command -v "$c" >/dev/null || die "'$c' not found (packages: bench/compare-deps.txt, scripts/install-deps.sh; drop --no-install)"
done
"$PY" -c 'import matplotlib' 2>/dev/null || die "$PY has no matplotlib (Debian package python3-matplotlib)"

# --- build
if [ "$BUILD" = 1 ]; then
  say "building mrc, udp_gso_blast, netdev_sample (release preset)"
  cmake --preset release >/dev/null
  cmake --build --preset release --target mrc udp_gso_blast netdev_sample -j2 >/dev/null
fi
MRC=${MRC_BIN:-$REPO/build/release/src/mrc}
BLAST=$REPO/build/release/bench/udp_gso_blast
SAMPLER=$REPO/build/release/bench/netdev_sample
for b in "$MRC" "$BLAST" "$SAMPLER"; do [ -x "$b" ] || die "$b is missing (build without --no-build)"; done

# --- testbed (always taken down: EXIT trap)
# shellcheck source=bench/testbed_session.sh
. bench/testbed_session.sh
mkdir -p "$RAW"
say "testbed: 2 hosts x $PLANES planes at $RATE each"
"${TB[@]}" --planes "$PLANES" --rate "$RATE" up >"$RAW/testbed-up.txt"
A0=$("${TB[@]}" addrs 0)
A1=$("${TB[@]}" addrs 1)
plane_addr() { echo "198.18.$2.$(($1 + 1))"; }  # host, plane (docs/TESTBED.md)
MTU=$(awk -F= '$1 == "MTU" {print $2}' "/run/mrc-testbed/$PREFIX/config")
QUEUE_MS=$(awk -F= '$1 == "QUEUE_MS" {print $2}' "/run/mrc-testbed/$PREFIX/config")

# Kernel MPTCP: the client (host 1) opens one extra subflow from each other plane's address
# ('dev' binds it to that plane); both sides accept up to 8 (testbeds.md, MPTCP).
for h in 0 1; do
  "${TB[@]}" exec "$h" sysctl -q -w net.mptcp.enabled=1
  "${TB[@]}" exec "$h" ip mptcp limits set subflow 8 add_addr_accepted 8
done
for ((p = 0; p < PLANES; p++)); do
  [ "$p" = 0 ] && continue
  "${TB[@]}" exec 1 ip mptcp endpoint add "$(plane_addr 1 "$p")" dev "h1p$p" subflow
done
TCP_CC=$("${TB[@]}" exec 1 sysctl -n net.ipv4.tcp_congestion_control)

# --- helpers
now_ns() { date +%s%N; }
sleep_until() {  # EPOCH_NS
  local s
  s=$(awk -v t="$1" -v n="$(now_ns)" 'BEGIN { d = (t - n) / 1e9; if (d > 0) printf "%.3f", d; else print 0 }')
  [ "$s" = 0 ] || sleep "$s"
}
ns_after() { echo $(($1 + $(awk -v x="$2" 'BEGIN { printf "%.0f", x * 1e9 }'))); }  # EPOCH_NS SECONDS
cpu_line() { head -1 /proc/stat; }
load1() { cut -d' ' -f1 /proc/loadavg; }

WAITED=0
wait_for_quiet() {
  local load
  load=$(load1)
  while awk -v l="$load" -v m="$MAX_LOAD" 'BEGIN { exit !(l >= m) }'; do
    if [ "$WAITED" -ge "$MAX_WAIT" ]; then
      say "load average $load is still >= $MAX_LOAD after ${WAITED} s of waiting in all: measuring anyway (recorded as loaded)"
      return
    fi
    say "load average $load >= $MAX_LOAD (someone is busy on this shared machine): waiting 20 s (${WAITED} s so far)"
    sleep 20
    WAITED=$((WAITED + 20))
    load=$(load1)
  done
}

# Runs a command in a testbed host, in the background, recording its CPU time (bash `times`:
# user and system time of the waited-for children) in TIMES_FILE.
start_in() {  # HOST TIMES_FILE STDOUT STDERR CMD...
  local host=$1 times=$2 out=$3 err=$4
  shift 4
  "${TB[@]}" exec "$host" bash -c 'f=$1; shift; "$@"; rc=$?; times >"$f"; exit $rc' _ "$times" "$@" >"$out" 2>"$err" &
  LAST_PID=$!
  PIDS+=("$LAST_PID")
}

# One measurement: scenario, transport. Writes $RAW/$scenario-$transport/.
run_one() {
  local scenario=$1 transport=$2 dir=$RAW/$1-$2 d=$DURATION sample_us=1000
  [[ " $TRANSPORTS " == *" $transport "* ]] || return 0
  [ "$scenario" = unshaped ] && { d=$UNSHAPED_DURATION; sample_us=10000; }
  mkdir -p "$dir"
  wait_for_quiet
  local load_start loadavg bg0 bg1
  load_start=$(load1)
  loadavg=$(cut -d' ' -f1-3 /proc/loadavg)
  bg0=$(cpu_line); sleep 2; bg1=$(cpu_line)  # background CPU just before
  say "$scenario / $transport (load $load_start)"

  local planes_s=$A0 planes_c=$A1 limit=$((${d%.*} + 40))
  if [ "$scenario" = unshaped ]; then planes_s=$(plane_addr 0 0); planes_c=$(plane_addr 1 0); fi
  local ifaces=()
  for ((p = 0; p < PLANES; p++)); do ifaces+=("h0p$p"); done
  "${TB[@]}" exec 0 "$SAMPLER" --interval-us "$sample_us" --seconds $((${d%.*} + 30)) "${ifaces[@]}" >"$dir/samples.txt" 2>"$dir/sampler.err" &
  local sampler=$!
  PIDS+=("$sampler")

  local server client verify=() mserver=() mclient=()
  # The cut: every byte checked (--verify), and Prometheus metrics to scrape if the transfer
  # hangs (the watchdog below), so that a hang leaves evidence.
  [ "$scenario" = cut ] && { verify=(--verify); mserver=(--metrics-port 9465); mclient=(--metrics-port 9464); }
  local backend=udp
  [ "$transport" = mrc_xdp ] && backend=xdp
  case "$transport" in
    mrc | mrc_xdp)
      start_in 0 "$dir/server.times" "$dir/server.json" "$dir/server.err" \
        timeout -k 5 $((limit + 10)) "$MRC" perf --server --backend "$backend" --planes "$planes_s" --interval 0.1 --json "${mserver[@]}" "${MRC_ARGS[@]}"
      server=$LAST_PID; sleep 0.5
      T0=$(now_ns)
      start_in 1 "$dir/client.times" "$dir/client.json" "$dir/client.err" \
        timeout -k 5 "$limit" "$MRC" perf --client "$(plane_addr 0 0)" --backend "$backend" --planes "$planes_c" --duration "$d" --interval 0.1 --json "${verify[@]}" "${mclient[@]}" "${MRC_ARGS[@]}"
      client=$LAST_PID
      if [ "$scenario" = cut ]; then
        (sleep $((${d%.*} + 10))
         if kill -0 "$client" 2>/dev/null; then
           "${TB[@]}" exec 1 curl -s -m 5 http://127.0.0.1:9464/metrics >"$dir/hang-client.prom" 2>&1
           "${TB[@]}" exec 0 curl -s -m 5 http://127.0.0.1:9465/metrics >"$dir/hang-server.prom" 2>&1
         fi) &
        PIDS+=("$!")
      fi ;;
    tcp | mptcp)
      local port=5201 dst src wrap=()
      dst=$(plane_addr 0 "$TCP_PLANE") src=$(plane_addr 1 "$TCP_PLANE")
      [ "$scenario" = unshaped ] && { dst=$(plane_addr 0 0) src=$(plane_addr 1 0); }
      if [ "$transport" = mptcp ]; then port=5301 dst=$(plane_addr 0 0) src=$(plane_addr 1 0) wrap=(mptcpize run); fi
      start_in 0 "$dir/server.times" "$dir/server.json" "$dir/server.err" \
        timeout -k 5 $((limit + 10)) "${wrap[@]}" iperf3 -s -1 -p "$port" -i 0.1 -J
      server=$LAST_PID; sleep 0.5
      T0=$(now_ns)
      start_in 1 "$dir/client.times" "$dir/client.json" "$dir/client.err" \
        timeout -k 5 "$limit" "${wrap[@]}" iperf3 -c "$dst" -B "$src" -p "$port" -t "$d" -i 0.1 -J
      client=$LAST_PID ;;
    udp_gso)
      start_in 0 "$dir/server.times" "$dir/server.json" "$dir/server.err" \
        timeout -k 5 $((limit + 10)) "$BLAST" recv --bind "$(plane_addr 0 0):9000" --idle-ms 500 --max-seconds "$limit" "${BLAST_GRO[@]}"
      server=$LAST_PID; sleep 0.5
      T0=$(now_ns)
      start_in 1 "$dir/client.times" "$dir/client.json" "$dir/client.err" \
        timeout -k 5 "$limit" "$BLAST" send --bind "$(plane_addr 1 0)" --to "$(plane_addr 0 0):9000" --segment "$MRC_DATAGRAM" --duration "$d"
      client=$LAST_PID ;;
  esac
  local stat0
  stat0=$(cpu_line)
  local tf0="" tf1="" tr0="" tr1=""
  if [ "$transport" = mptcp ]; then
    (sleep 1.5; "${TB[@]}" exec 1 ss -tnH state established >"$dir/ss-client.txt" 2>&1) &
  fi
  if [ "$scenario" = cut ]; then
    sleep_until "$(ns_after "$T0" "$FAIL_AT")"
    tf0=$(now_ns); "${TB[@]}" fail "$FAIL_PLANE" >"$dir/fail.txt"; tf1=$(now_ns)
    sleep_until "$(ns_after "$tf0" "$FAIL_FOR")"
    tr0=$(now_ns); "${TB[@]}" repair "$FAIL_PLANE" >"$dir/repair.txt"; tr1=$(now_ns)
  fi
  local crc=0 src_rc=0
  wait "$client" || crc=$?
  local stat1 tend
  stat1=$(cpu_line); tend=$(now_ns)
  wait "$server" || src_rc=$?
  sleep 0.3
  kill -TERM "$sampler" 2>/dev/null || true
  wait "$sampler" 2>/dev/null || true
  cat >"$dir/meta.txt" <<EOF
scenario $scenario
transport $transport
duration_s $d
load_start $load_start
loadavg $loadavg
t0_ns $T0
tend_ns $tend
fail_cmd_start_ns $tf0
fail_cmd_end_ns $tf1
repair_cmd_start_ns $tr0
repair_cmd_end_ns $tr1
client_rc $crc
server_rc $src_rc
stat_bg0 $bg0
stat_bg1 $bg1
stat_run0 $stat0
stat_run1 $stat1
EOF
  [ "$crc" = 0 ] || say "WARNING: $transport client exited $crc in $scenario (see $dir/client.err)"
  [ "$src_rc" = 0 ] || say "WARNING: $transport server exited $src_rc in $scenario (see $dir/server.err)"
}

# mrc's payload per packet: what mrc perf picks on these links (8192 bytes where the MTU carries
# it with 128 bytes of headers, else 4096; io::auto_payload_bytes), or --mtu in --mrc-args. Its
# data datagram: BTH 12 + METH 4 + TSETH 4 + RETH 16 + payload + ICRC 4 (the last packet of a
# message adds ImmDt 4). The raw UDP sender uses the same size.
MRC_PAYLOAD=4096
[ "${MTU:-0}" -ge 8320 ] && MRC_PAYLOAD=8192
for ((i = 0; i + 1 < ${#MRC_ARGS[@]}; i++)); do
  [ "${MRC_ARGS[$i]}" = --mtu ] && MRC_PAYLOAD=${MRC_ARGS[$((i + 1))]}
done
MRC_DATAGRAM=$((MRC_PAYLOAD + 40))

# A run whose client failed (an mrc transfer that hung and was killed by `timeout`, say) is kept
# as DIR-failedN and measured again, at most twice more; the summary lists the failures.
run() {  # SCENARIO TRANSPORT
  local attempt dir=$RAW/$1-$2 rc
  for attempt in 1 2 3; do
    run_one "$1" "$2"
    [ -f "$dir/meta.txt" ] || return 0
    rc=$(awk '$1 == "client_rc" {print $2}' "$dir/meta.txt")
    [ "$rc" = 0 ] && return 0
    mv "$dir" "$dir-failed$attempt"
    [ "$attempt" = 3 ] || say "$1 / $2 failed (client exit $rc): kept as $dir-failed$attempt, measuring again"
  done
}

# The testbed's rates (tbf, an egress qdisc) and loss (nftables at netdev ingress) act on the
# kernel's path; AF_XDP sends bypass the qdisc and XDP receives before the ingress hook, so the
# xdp backend would run unshaped and loss-free there: it is measured on the unshaped path only.
xdp_unshaped_only() {
  [[ " $TRANSPORTS " == *" mrc_xdp "* ]] && say "mrc_xdp: not in '$scenario' (AF_XDP bypasses the testbed's tbf and nftables; unshaped only)"
  return 0
}

for scenario in $SCENARIOS; do
  case "$scenario" in
    clean | cut)
      xdp_unshaped_only
      for t in mrc mptcp tcp; do run "$scenario" "$t"; done ;;
    loss)
      for ((p = 0; p < PLANES; p++)); do "${TB[@]}" loss "$p" "$LOSS" >/dev/null; done
      xdp_unshaped_only
      for t in mrc mptcp tcp; do run loss "$t"; done
      for ((p = 0; p < PLANES; p++)); do "${TB[@]}" loss "$p" 0 >/dev/null; done ;;
    unshaped)
      "${TB[@]}" rate 0 0 >/dev/null
      [ "$OFFLOADS" = off ] || "${TB[@]}" offload 0 on >/dev/null
      for t in mrc mrc_xdp udp_gso tcp; do run unshaped "$t"; done
      [ "$OFFLOADS" = off ] || "${TB[@]}" offload 0 off >/dev/null
      "${TB[@]}" rate 0 "$RATE" >/dev/null ;;
    *) die "unknown scenario '$scenario' (clean cut loss unshaped)" ;;
  esac
done

# --- context of the run, then the summary JSON and the plot
{ machine_context; cat <<EOF
iperf3 $(iperf3 --version | head -1)
tcp_congestion_control $TCP_CC
rate $RATE
planes $PLANES
mtu $MTU
mrc_payload $MRC_PAYLOAD
queue_ms $QUEUE_MS
fail_plane $FAIL_PLANE
fail_at_s $FAIL_AT
fail_for_s $FAIL_FOR
loss_percent $LOSS
tcp_plane $TCP_PLANE
mrc_datagram $MRC_DATAGRAM
unshaped_offloads $OFFLOADS
max_load $MAX_LOAD
waited_s $WAITED
EOF
} >"$RAW/context.txt"
mkdir -p "$(dirname "$OUT")" "$(dirname "$PLOT")"
"$PY" bench/compare_report.py --raw "$RAW" --out "$OUT" --plot "$PLOT"
say "summary $OUT, plot $PLOT, raw files $RAW"
