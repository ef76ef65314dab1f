#!/usr/bin/env bash
# bench/latency_tails.sh: ping-pong latency tails on the namespace testbed (4 shaped planes) under
# load, loss and a plane cut, mrc beside kernel TCP in the same run.
#
#   sudo bench/latency_tails.sh --mrc /path/to/mrc                  # every scenario, 2 rounds
#   sudo bench/latency_tails.sh --scenarios "idle cut" --rounds 1 --json --plot tails.png
#
# Scenarios (--scenarios), each measured for mrc and for TCP, alternating over --rounds:
#   idle  mrc perf --pingpong over the 4 planes; sockperf ping-pong --tcp over plane 0
#   bulk  the same ping-pongs while a bulk transfer shares their planes: for mrc a second
#         mrc perf pair (its own setup port, UDP ports and QP) sending over the same 4 planes,
#         for TCP iperf3 over plane 0; both bulks start 1 s before the ping-pong and end after
#         it; their goodput is reported (has the bulk filled the links?)
#   loss  --loss % random loss on every plane (scripts/testbed.sh loss P PCT), both ping-pongs
#   cut   a plane failed (links down, scripts/testbed.sh fail) --cut-at s into the ping-pong's
#         timed exchanges (seen as its packets on the plane) and repaired --cut-for s later:
#         for mrc plane --cut-plane (default 0, one of its four), for TCP plane 0, the one it
#         uses; the slowest exchanges (with when each began) and how many took over 5 ms
# Also reported: the fault commands' times, and the ping-pong QPs' retransmissions, tail
# resends and timeouts at both mrc ends (mrc perf --json of client and server).
# Every round trip is a sample (mrc perf --samples, sockperf --full-log); the report pools each
# scenario's samples over the rounds and gives p50, p99, p99.9 and max, the ratios the targets use
# (mrc under bulk / mrc idle at p99, mrc / TCP under bulk at p99) and whether each target is met:
# bulk p99 <= 3 x idle p99 and below TCP's bulk p99; loss p99.9 <= 2 ms; cut: no exchange over
# 5 ms. For TCP the cut shows its retransmission timeout: a segment sent into the cut plane
# waits for the RTO (200 ms at least, doubling while the plane stays down), so its slowest
# exchange is roughly the cut's length rounded up to the RTO's backoff steps.
# Raw output (every run's JSON, samples and fault times) goes to --raw DIR (default: a temporary
# directory, kept and named at the end). Needs root (network namespaces).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
COMMAND_LINE="bench/latency_tails.sh $*"
MRC=build/release/src/mrc SIZE=64 ROUNDS=2 SECONDS_PER=3 RATE=2500mbit LOSS=1
CUT_PLANE=0 CUT_AT=1 CUT_FOR=1 SCENARIOS="idle bulk loss cut" JSON=0 PLOT="" RAW="" INSTALL=1
PREFIX=mrctails MRC_ARGS=""
usage() {
  cat <<EOF
usage: bench/latency_tails.sh [options]      (root: it builds a namespace testbed)
  --mrc PATH            the mrc binary (default $MRC; not built by this script)
  --scenarios "S ..."   any of idle bulk loss cut (default: "$SCENARIOS")
  --rounds N            alternations of every scenario, mrc and TCP each (default $ROUNDS)
  --seconds N           seconds of each ping-pong (default $SECONDS_PER; the cut's run lasts at
                        least --cut-at + 2 x --cut-for + 2 s, so TCP's late exchange is in it)
  --size B              message size in bytes, 14 to 65000 (default $SIZE; sockperf's range)
  --rate RATE           per-plane rate of the testbed, tc syntax (default $RATE)
  --loss PCT            the loss scenario's random loss on every plane, percent (default $LOSS)
  --cut-plane P         the plane mrc's cut fails, 0-3 (default $CUT_PLANE); TCP's cut is always
                        plane 0, the one it uses
  --cut-at S            seconds into the ping-pong's timed exchanges to fail it (default $CUT_AT)
  --cut-for S           seconds it stays down (default $CUT_FOR)
  --mrc-args "..."      more options for every mrc perf end (e.g. "--busy-poll-us 200")
  --prefix NAME         the testbed's namespace prefix (default $PREFIX)
  --json                one JSON object on stdout (else a table)
  --plot FILE           the latency distributions (complementary CDFs), a panel per scenario
                        (PNG or SVG)
  --raw DIR             keep raw output there (default: a new temporary directory)
  --no-install          do not apt-get the packages of bench/latency-tails-deps.txt
  -h, --help            this text
Progress goes to stderr; the table (or JSON) to stdout.
EOF
}
say() { echo "latency_tails.sh: $*" >&2; }
die() { say "$*"; exit 2; }
need_arg() { [ $# -ge 2 ] || die "$1 needs a value (--help)"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --mrc|--scenarios|--rounds|--seconds|--size|--rate|--loss|--cut-plane|--cut-at|--cut-for| \
    --mrc-args|--prefix|--plot|--raw) need_arg "$@" ;;
  esac
  case "$1" in
    --mrc) MRC=$2; shift 2 ;;
    --scenarios) SCENARIOS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --seconds) SECONDS_PER=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --rate) RATE=$2; shift 2 ;;
    --loss) LOSS=$2; shift 2 ;;
    --cut-plane) CUT_PLANE=$2; shift 2 ;;
    --cut-at) CUT_AT=$2; shift 2 ;;
    --cut-for) CUT_FOR=$2; shift 2 ;;
    --mrc-args) MRC_ARGS=$2; shift 2 ;;
    --prefix) PREFIX=$2; shift 2 ;;
    --json) JSON=1; shift ;;
    --plot) PLOT=$2; shift 2 ;;
    --raw) RAW=$2; shift 2 ;;
    --no-install) INSTALL=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) say "unknown option '$1'"; usage >&2; exit 2 ;;
  esac
done
positive_int() { [[ $2 =~ ^[1-9][0-9]*$ ]] || die "$1 takes a positive integer (got '$2')"; }
positive_int --rounds "$ROUNDS"
positive_int --seconds "$SECONDS_PER"
positive_int --size "$SIZE"
if [ "$SIZE" -lt 14 ] || [ "$SIZE" -gt 65000 ]; then die "--size: 14 to 65000 bytes (sockperf's messages; got $SIZE)"; fi
number() { [[ $2 =~ ^[0-9]+(\.[0-9]+)?$ ]] || die "$1 takes a number (got '$2')"; }
number --loss "$LOSS"
number --cut-at "$CUT_AT"
number --cut-for "$CUT_FOR"
awk -v l="$LOSS" 'BEGIN { exit !(l > 0 && l <= 100) }' || die "--loss: above 0 and at most 100 (got $LOSS)"
awk -v f="$CUT_FOR" 'BEGIN { exit !(f > 0) }' || die "--cut-for must be above 0"
[[ $CUT_PLANE =~ ^[0-3]$ ]] || die "--cut-plane: 0 to 3 (got '$CUT_PLANE')"
[[ $PREFIX =~ ^[A-Za-z0-9_]{1,32}$ ]] || die "--prefix: letters, digits and _, up to 32 (got '$PREFIX')"
[[ $RATE =~ ^[0-9.]+[kmgKMG]?(bit|bps)$ ]] || die "--rate: tc syntax such as 2500mbit or 2.5gbit (got '$RATE')"
[ -n "$SCENARIOS" ] || die "--scenarios is empty"
for s in $SCENARIOS; do
  case $s in idle|bulk|loss|cut) ;; *) die "unknown scenario '$s' (idle bulk loss cut)" ;; esac
done
[ -z "$PLOT" ] || case $PLOT in *.png|*.svg) ;; *) die "--plot: a .png or .svg file (got '$PLOT')" ;; esac
[ "$(id -u)" = 0 ] || die "needs root (network namespaces: scripts/testbed.sh)"
[ -x "$MRC" ] || die "$MRC is not an executable (--mrc PATH; cmake --build --preset release --target mrc)"
MRC=$(cd "$(dirname "$MRC")" && pwd)/$(basename "$MRC")
PY=/usr/bin/python3  # Debian's, for python3-matplotlib
# shellcheck source=bench/latency_lib.sh
. bench/latency_lib.sh
[ "$INSTALL" = 0 ] || install_deps bench/latency-tails-deps.txt
for c in sockperf iperf3 ip tc nft; do
  command -v "$c" >/dev/null || die "'$c' not found (bench/latency-tails-deps.txt, scripts/install-deps.sh)"
done
[ -z "$PLOT" ] || "$PY" -c 'import matplotlib' 2>/dev/null || die "$PY has no matplotlib (python3-matplotlib)"
# The cut's run: long enough for TCP's segment held through the cut (RTO backoff) to come back.
CUT_SECONDS=$(awk -v s="$SECONDS_PER" -v a="$CUT_AT" -v f="$CUT_FOR" \
  'BEGIN { t = a + 2 * f + 2; t = (t == int(t)) ? t : int(t) + 1; print (s > t ? s : t) }')

[ -n "$RAW" ] || RAW=$(mktemp -d /tmp/mrc-latency-tails.XXXXXX)
mkdir -p "$RAW"
RAW=$(cd "$RAW" && pwd)
# Testbed session: TB, PIDS, the EXIT/INT/TERM trap that ends PIDS and takes the testbed down,
# machine_context.
# shellcheck source=bench/testbed_session.sh
. bench/testbed_session.sh
{
  machine_context
  echo "mrc $MRC"
  echo "testbed 2 hosts, 4 planes, $RATE per plane, direct veth pairs"
  echo "size $SIZE"
  echo "seconds $SECONDS_PER"
  echo "cut_seconds $CUT_SECONDS"
  echo "loss_percent $LOSS"
  echo "cut_plane $CUT_PLANE"
  echo "cut_at $CUT_AT"
  echo "cut_for $CUT_FOR"
  echo "load_average $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$RAW/context.txt"

say "testbed: 2 hosts, 4 planes at $RATE (${TB[*]} up)"
"${TB[@]}" up --hosts 2 --planes 4 --rate "$RATE" > "$RAW/testbed-up.txt"
SERVER_PLANES=$("${TB[@]}" addrs 0)
CLIENT_PLANES=$("${TB[@]}" addrs 1)
SERVER=198.18.0.1 CLIENT=198.18.0.2  # plane 0: mrc's setup connection, and every TCP flow
ns() { local h=$1; shift; ip netns exec "$PREFIX-h$h" "$@"; }
PORT=$((20000 + RANDOM % 5000))
next_port() { PORT=$((PORT + 2)); }
now() { date +%s.%N; }

# An mrc perf server in host 0, backgrounded (its pid in $!). ROLE pp: the defaults' UDP and EV
# ports; bulk: its own, so both pairs share the planes and nothing else.
mrc_server() {  # ROLE OOB_PORT OUT
  local ports=()
  [ "$1" = bulk ] && ports=(--port 5791 --ev-port-base 42000)
  # shellcheck disable=SC2086
  ns 0 timeout $((CUT_SECONDS + 60)) "$MRC" perf --server --planes "$SERVER_PLANES" \
    --oob-port "$2" "${ports[@]}" --json $MRC_ARGS > "$3.json" 2> "$3" &
}

# The bulk transfer's client: mrc perf's default bulk (1 MiB WRITE-with-immediate messages, 16 in
# flight) for SECONDS, in the background ($!).
mrc_bulk_client() {  # OOB_PORT SECONDS OUT
  # shellcheck disable=SC2086
  ns 1 timeout $(($2 + 60)) "$MRC" perf --client "$SERVER" --planes "$CLIENT_PLANES" \
    --oob-port "$1" --port 5807 --ev-port-base 47120 --duration "$2" --interval 0.25 --json \
    $MRC_ARGS > "$3.bulk.json" 2> "$3.bulk.err" &
}

mrc_pingpong() {  # SECONDS OUT
  # shellcheck disable=SC2086
  ns 1 timeout $(($1 + 60)) "$MRC" perf --client "$SERVER" --planes "$CLIENT_PLANES" \
    --oob-port "$PORT" --pingpong --size "$SIZE" --duration "$1" --json --samples "$2.samples.csv" \
    $MRC_ARGS > "$2.json" 2> "$2.err" || say "mrc ping-pong failed: $(tail -1 "$2.err")"
}

# sockperf's client waits about 2 s after connecting (longer on a busy machine), then exchanges
# for -t seconds of which it drops the first 0.4 (warm-up) and the last 0.05: -t SECONDS + 1
# measures about SECONDS + 0.55 s.
SOCKPERF_WARMUP=0.4
tcp_pingpong() {  # SECONDS OUT
  sockperf_client "sockperf TCP ping-pong" "$2.txt" ns 1 timeout $(($1 + 60)) sockperf pp --tcp \
    -i "$SERVER" -p "$PORT" -m "$SIZE" -t $(($1 + 1)) --full-rtt --full-log "$2.log.csv"
}

# Returns once host 1's NIC of PLANE sends more than 200 packets in 0.1 s: the ping-pong's
# timed exchanges have begun (at most 60 s).
await_traffic() {  # PLANE
  local f=/sys/class/net/h1p$1/statistics/tx_packets a b i
  a=$(ns 1 cat "$f")
  for ((i = 0; i < 600; ++i)); do
    sleep 0.1
    b=$(ns 1 cat "$f")
    [ $((b - a)) -le 200 ] || return 0
    a=$b
  done
  return 1
}

# The cut, in the background: once the ping-pong's traffic runs on PLANE, WARMUP + CUT_AT s
# later PLANE goes down, CUT_FOR s after that up again. The epoch times (traffic seen, each
# command started and returned) go to OUT.faults.
cut_in_background() {  # PLANE OUT WARMUP
  (
    await_traffic "$1" || say "no ping-pong traffic seen on plane $1: cutting anyway"
    t=$(now)
    sleep "$(awk -v a="$CUT_AT" -v w="$3" 'BEGIN { print a + w }')"
    t0=$(now); "${TB[@]}" fail "$1" >/dev/null; t1=$(now)
    sleep "$CUT_FOR"
    t2=$(now); "${TB[@]}" repair "$1" >/dev/null; t3=$(now)
    printf 'traffic_start %s\nfail_start %s\nfail_done %s\nrepair_start %s\nrepair_done %s\n' \
      "$t" "$t0" "$t1" "$t2" "$t3" > "$2.faults"
  ) &
}

# What both transports do once their servers (and bulk transfer) run: the ping-pong PINGPONG
# (a function of SECONDS and OUT) timed between OUT.start and OUT.end, the cut of CUT_PLANE
# beside it in the cut scenario (WARMUP: the client's seconds before it measures), then every
# process of the run ended; BULK_ERR names why a bulk client failed.
measure() {  # SCENARIO OUT SECONDS CUT_PLANE WARMUP PINGPONG SERVER BULK BULK_SERVER BULK_ERR
  local cut=""
  now > "$2.start"
  if [ "$1" = cut ]; then cut_in_background "$4" "$2" "$5"; cut=$!; PIDS+=("$cut"); fi
  "$6" "$3" "$2"
  now > "$2.end"
  [ -z "$cut" ] || wait "$cut" || true
  if [ -n "$8" ]; then
    wait "$8" || say "bulk client failed: $(tail -1 "${10}")"
    reap "$9"
  fi
  reap "$7"
  PIDS=()
}

run_mrc() {  # SCENARIO OUT
  local scenario=$1 out=$2 seconds=$SECONDS_PER server bulk_server="" bulk=""
  next_port
  [ "$scenario" = cut ] && seconds=$CUT_SECONDS
  if [ "$scenario" = bulk ]; then
    mrc_server bulk $((PORT + 1)) "$out.bulk.server"
    bulk_server=$!
    sleep 0.4
    mrc_bulk_client $((PORT + 1)) $((seconds + 3)) "$out"
    bulk=$!
    sleep 1  # the bulk's window opens before the ping-pong starts
  fi
  mrc_server pp "$PORT" "$out.server"
  server=$!
  PIDS+=("$server" ${bulk_server:+"$bulk_server"} ${bulk:+"$bulk"})
  sleep 0.4
  measure "$scenario" "$out" "$seconds" "$CUT_PLANE" 0 mrc_pingpong "$server" "$bulk" \
    "$bulk_server" "$out.bulk.err"
}

run_tcp() {  # SCENARIO OUT
  local scenario=$1 out=$2 seconds=$SECONDS_PER server bulk_server="" bulk=""
  next_port
  [ "$scenario" = cut ] && seconds=$CUT_SECONDS
  if [ "$scenario" = bulk ]; then
    ns 0 timeout $((seconds + 60)) iperf3 -s -1 -B "$SERVER" -p $((PORT + 1)) > "$out.iperf.server" 2>&1 &
    bulk_server=$!
    sleep 0.4
    ns 1 timeout $((seconds + 60)) iperf3 -c "$SERVER" -B "$CLIENT" -p $((PORT + 1)) -t $((seconds + 6)) \
      -J > "$out.iperf.json" 2> "$out.iperf.err" &
    bulk=$!
    sleep 1
  fi
  ns 0 timeout $((seconds + 60)) sockperf sr --tcp -i "$SERVER" -p "$PORT" > "$out.server" 2>&1 &
  server=$!
  PIDS+=("$server" ${bulk_server:+"$bulk_server"} ${bulk:+"$bulk"})
  sleep 0.4
  measure "$scenario" "$out" "$seconds" 0 "$SOCKPERF_WARMUP" tcp_pingpong "$server" "$bulk" \
    "$bulk_server" "$out.iperf.err"
}

set_loss() {  # PERCENT (0: none) on every plane
  local p
  for p in 0 1 2 3; do "${TB[@]}" loss "$p" "$1" >/dev/null; done
}

for ((round = 1; round <= ROUNDS; ++round)); do
  # Odd rounds measure mrc first, even rounds TCP first: a drift of the shared machine's speed
  # hits both alike.
  order="mrc tcp"
  [ $((round % 2)) = 0 ] && order="tcp mrc"
  for scenario in $SCENARIOS; do
    [ "$scenario" = loss ] && set_loss "$LOSS"
    for t in $order; do
      say "round $round/$ROUNDS: $scenario, $t"
      "run_$t" "$scenario" "$RAW/$scenario.$t.r$round"
    done
    [ "$scenario" = loss ] && set_loss 0
  done
done
"${TB[@]}" status > "$RAW/testbed-status.txt" 2>&1 || true
echo "load_average_end $(cut -d' ' -f1-3 /proc/loadavg)" >> "$RAW/context.txt"
report=("$PY" bench/latency_tails_report.py "$RAW")
[ "$JSON" = 1 ] && report+=(--json)
[ -n "$PLOT" ] && report+=(--plot "$PLOT")
"${report[@]}"
say "raw output in $RAW"
