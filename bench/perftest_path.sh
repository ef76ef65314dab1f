#!/usr/bin/env bash
# bench/perftest_path.sh: Debian's perftest over mrc devices (verbs RC QPs over MRC QPs, under
# `mrc run`) against `mrc perf` over the same loopback planes, one after the other in each round,
# so that the ratios compare runs of the same minute:
#   bandwidth: ib_write_bw -s SIZE -n ITERS --report_gbits against mrc perf --size SIZE
#              --duration 3 --mtu 4096 (perftest's path MTU), Gbit/s;
#   latency:   ib_write_lat -s 8 -n 5000, whose t_typical is half a round trip, against
#              mrc perf --pingpong --size 8 --iterations 5000 (round trip p50), microseconds of
#              round trip.
# Needs perftest (apt install perftest) and root or user namespaces (mrc run).
#
#   bench/perftest_path.sh                       # 1 MiB, 2 rounds
#   bench/perftest_path.sh --size 65536 --rounds 3
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
SIZE=1048576 ROUNDS=2 ITERS=2000
usage() {
  cat <<EOF
usage: bench/perftest_path.sh [--size BYTES] [--rounds N] [--iters N]
  --size BYTES   ib_write_bw / mrc perf message size (default $SIZE)
  --rounds N     pairs of measurements (default $ROUNDS)
  --iters N      ib_write_bw iterations (default $ITERS)
EOF
}
while [ $# -gt 0 ]; do
  case "$1" in
    --size) SIZE=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --iters) ITERS=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "perftest_path.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
MRC=build/release/src/mrc
[ -x "$MRC" ] || { echo "perftest_path.sh: $MRC is missing (cmake --build --preset release)" >&2; exit 1; }
command -v ib_write_bw > /dev/null || { echo "perftest_path.sh: ib_write_bw not found (apt install perftest)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export MRC_CTL_SOCKET=off
cat > "$dir/devices.conf" <<'CONF'
mrc0 planes=127.0.0.31,127.0.0.32 port=47001 ev-ports=47100
mrc1 planes=127.0.0.33,127.0.0.34 port=47001 ev-ports=47500
CONF
SERVER_PLANES=127.0.0.31,127.0.0.32 CLIENT_PLANES=127.0.0.33,127.0.0.34

perftest() {  # TOOL ARGS... -> the client's output
  local tool=$1
  shift
  timeout 90 "$MRC" run --devices "$dir/devices.conf" -- "$tool" -d mrc0 -p 47031 -F "$@" > /dev/null 2>&1 &
  local server=$!
  sleep 1
  timeout 90 "$MRC" run --devices "$dir/devices.conf" -- "$tool" -d mrc1 -p 47031 -F "$@" 127.0.0.1 2>&1 || true
  wait "$server" || true
}
perf() {  # ARGS... -> perf's JSON
  timeout 60 "$MRC" perf -s --planes "$SERVER_PLANES" --port 47201 --ev-port-base 47300 --oob-port 47032 \
    --mtu 4096 > /dev/null 2>&1 &
  local server=$!
  sleep 0.5
  timeout 50 "$MRC" perf -c 127.0.0.1 --planes "$CLIENT_PLANES" --port 47211 --ev-port-base 47600 \
    --oob-port 47032 --mtu 4096 --json "$@" 2> /dev/null || true
  wait "$server" || true
}
json() { /usr/bin/python3 -c "import json,sys; r=json.load(sys.stdin)['sweep'][0]; print(round(r['$1'], 2))" 2> /dev/null; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b; else print "-" }'; }

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%6s %14s %12s %6s %18s %14s %6s\n" round "ib_write_bw" "mrc perf" ratio "ib_write_lat RTT" "perf RTT p50" ratio
for ((r = 1; r <= ROUNDS; r++)); do
  bw=$(perftest ib_write_bw -s "$SIZE" -n "$ITERS" --report_gbits | awk -v s="$SIZE" '$1 == s {print $4}')
  pbw=$(perf --size "$SIZE" --duration 3 | json gbit_per_s)
  lat=$(perftest ib_write_lat -s 8 -n 5000 | awk '$1 == 8 {printf "%.2f", 2 * $5}')
  plat=$(perf --pingpong --size 8 --iterations 5000 | json p50_us)
  printf "%6s %14s %12s %6s %18s %14s %6s\n" "$r" "${bw:-failed}" "${pbw:-failed}" "$(ratio "$bw" "$pbw")" \
    "${lat:-failed}" "${plat:-failed}" "$(ratio "$lat" "$plat")"
done
