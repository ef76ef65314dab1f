#!/usr/bin/env bash
# bench/perftest_path.sh: Debian's perftest over mrc devices (verbs RC QPs over MRC QPs, under
# `mrc run`) against `mrc perf` over the same loopback planes, one after the other in each round,
# so that the ratios compare runs of the same minute:
#   bandwidth: ib_write_bw -s SIZE -n ITERS --report_gbits against mrc perf --size SIZE
#              --duration 3 --mtu 4096 (perftest's path MTU), Gbit/s;
#   latency:   ib_write_lat -s 8 -n 5000, whose t_typical is half a round trip, against
#              mrc perf --pingpong --size 8 --iterations 5000 (round trip p50), microseconds of
#              round trip.
# With --busy-poll-us US each round measures two modes, in alternating order: the devices
# sleeping when idle (busy-poll-us=0 in the device file, mrc perf with --busy-poll-us 0) and
# busy polling for US microseconds after work (busy-poll-us=US in both perftest processes'
# device entries, --busy-poll-us US at both mrc perf ends), each against its own mrc perf run.
# Needs perftest (apt install perftest) and root or user namespaces (mrc run).
#
#   bench/perftest_path.sh                       # 1 MiB, 2 rounds
#   bench/perftest_path.sh --size 65536 --rounds 3
#   bench/perftest_path.sh --busy-poll-us 200 --latency-only --rounds 4
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
SIZE=1048576 ROUNDS=2 ITERS=2000 BUSY_POLL_US=0 BANDWIDTH=1
usage() {
  cat <<EOF
usage: bench/perftest_path.sh [--size BYTES] [--rounds N] [--iters N] [--busy-poll-us US]
                              [--latency-only]
  --size BYTES       ib_write_bw / mrc perf message size (default $SIZE)
  --rounds N         rounds of measurements (default $ROUNDS)
  --iters N          ib_write_bw iterations (default $ITERS)
  --busy-poll-us US  also measure with busy polling for US microseconds (1..1000000) at both
                     ends: busy-poll-us=US in the devices' entries, --busy-poll-us for mrc perf
  --latency-only     skip the bandwidth pair
EOF
}
while [ $# -gt 0 ]; do
  case "$1" in
    --size) SIZE=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --iters) ITERS=$2; shift 2 ;;
    --busy-poll-us) BUSY_POLL_US=$2; shift 2 ;;
    --latency-only) BANDWIDTH=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "perftest_path.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
if ! [[ "$BUSY_POLL_US" =~ ^[0-9]+$ ]] || [ "$BUSY_POLL_US" -gt 1000000 ]; then
  echo "perftest_path.sh: --busy-poll-us $BUSY_POLL_US is not microseconds in 0..1000000" >&2
  exit 2
fi
MRC=build/release/src/mrc
[ -x "$MRC" ] || { echo "perftest_path.sh: $MRC is missing (cmake --build --preset release)" >&2; exit 1; }
command -v ib_write_bw > /dev/null || { echo "perftest_path.sh: ib_write_bw not found (apt install perftest)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export MRC_CTL_SOCKET=off
devices() {  # US: a device file whose devices busy-poll US microseconds after work (0: sleep)
  cat > "$dir/devices-$1.conf" <<CONF
mrc0 planes=127.0.0.31,127.0.0.32 port=47001 ev-ports=47100 busy-poll-us=$1
mrc1 planes=127.0.0.33,127.0.0.34 port=47001 ev-ports=47500 busy-poll-us=$1
CONF
}
MODES=(0)
[ "$BUSY_POLL_US" -gt 0 ] && MODES=(0 "$BUSY_POLL_US")
for mode in "${MODES[@]}"; do devices "$mode"; done
SERVER_PLANES=127.0.0.31,127.0.0.32 CLIENT_PLANES=127.0.0.33,127.0.0.34

perftest() {  # US TOOL ARGS... -> the client's output
  local conf="$dir/devices-$1.conf" tool=$2
  shift 2
  timeout 90 "$MRC" run --devices "$conf" -- "$tool" -d mrc0 -p 47031 -F "$@" > /dev/null 2>&1 &
  local server=$!
  sleep 1
  timeout 90 "$MRC" run --devices "$conf" -- "$tool" -d mrc1 -p 47031 -F "$@" 127.0.0.1 2>&1 || true
  wait "$server" || true
}
perf() {  # US ARGS... -> perf's JSON
  local busy=(--busy-poll-us "$1")
  shift
  timeout 60 "$MRC" perf -s --planes "$SERVER_PLANES" --port 47201 --ev-port-base 47300 \
    --oob-port 47032 --mtu 4096 "${busy[@]}" > /dev/null 2>&1 &
  local server=$!
  sleep 0.5
  timeout 50 "$MRC" perf -c 127.0.0.1 --planes "$CLIENT_PLANES" --port 47211 --ev-port-base 47600 \
    --oob-port 47032 --mtu 4096 "${busy[@]}" --json "$@" 2> /dev/null || true
  wait "$server" || true
}
json() { /usr/bin/python3 -c "import json,sys; r=json.load(sys.stdin)['sweep'][0]; print(round(r['$1'], 2))" 2> /dev/null; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }
row() { printf "%6s %13s %12s %12s %6s %18s %14s %6s\n" "$@"; }

measure() {  # ROUND US -> one table row
  local bw=- pbw=- lat plat
  if [ "$BANDWIDTH" = 1 ]; then
    bw=$(perftest "$2" ib_write_bw -s "$SIZE" -n "$ITERS" --report_gbits | awk -v s="$SIZE" '$1 == s {print $4}')
    pbw=$(perf "$2" --size "$SIZE" --duration 3 | json gbit_per_s)
  fi
  lat=$(perftest "$2" ib_write_lat -s 8 -n 5000 | awk '$1 == 8 {printf "%.2f", 2 * $5}')
  plat=$(perf "$2" --pingpong --size 8 --iterations 5000 | json p50_us)
  row "$1" "$2" "${bw:-failed}" "${pbw:-failed}" "$(ratio "$bw" "$pbw")" "${lat:-failed}" \
    "${plat:-failed}" "$(ratio "$lat" "$plat")"
}

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
row round busy-poll-us ib_write_bw "mrc perf" ratio "ib_write_lat RTT" "perf RTT p50" ratio
for ((r = 1; r <= ROUNDS; r++)); do
  # Alternate which mode goes first, so that neither always has the quieter minute.
  order=("${MODES[@]}")
  if ((r % 2 == 0)) && [ ${#MODES[@]} -gt 1 ]; then order=("${MODES[1]}" "${MODES[0]}"); fi
  for mode in "${order[@]}"; do measure "$r" "$mode"; done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
