#!/usr/bin/env bash
# SRv6 path mode against ECMP mode on the same SRv6 testbed (scripts/testbed.sh --routing srv6),
# alternated: `mrc perf` with --srv6-paths (each EV a spine, UDP checksum zero, so no GSO),
# without (plain IPv6 to the locators: the leaves hash the UDP ports over the spines), and
# without and with --no-gso (ECMP on the same sends as SRv6: the cost of the lost GSO). Per run:
# goodput, the two processes' CPU seconds (user + system) and the packets each spine forwarded.
#
#   sudo bench/srv6_compare.sh [--rounds N] [--duration S] [--planes P] [--spines S] [--mrc PATH]
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROUNDS=2 DURATION=8 PLANES=2 SPINES=2 MRC=$REPO/build/release/src/mrc PREFIX=mrcs6b
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --planes) PLANES=$2; shift 2 ;;
    --spines) SPINES=$2; shift 2 ;;
    --mrc) MRC=$2; shift 2 ;;
    -h | --help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "srv6_compare.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
# shellcheck source=bench/srv6_bench_lib.sh
. "$REPO/bench/srv6_bench_lib.sh"
srv6_bench_up "$PREFIX" "$PLANES" "$SPINES"
spine_counts() {  # forwarded packets per spine, "p0s0=N p0s1=M ..."
  local p s out=""
  for ((p = 0; p < PLANES; p++)); do
    for ((s = 0; s < SPINES; s++)); do
      out+="p${p}s$s=$(ip netns exec "$PREFIX-p$p-s$s" nft list table inet mrctb_count | grep -o 'packets [0-9]*' | head -1 | awk '{print $2}') "
    done
    done
  echo "$out"
}
run() {  # MODE (srv6|ecmp|ecmp-no-gso)
  local extra=() before after
  [ "$1" = srv6 ] && extra=(--srv6-paths "$paths")
  [ "$1" = ecmp-no-gso ] && extra=(--no-gso)
  before=$(spine_counts)
  ip netns exec "$PREFIX-h0" /usr/bin/time -f "%U %S" -o "$OUT/server.time" \
    "$MRC" perf --server --planes "$server" "${extra[@]}" >/dev/null 2>&1 &
  sleep 0.5
  ip netns exec "$PREFIX-h1" /usr/bin/time -f "%U %S" -o "$OUT/client.time" \
    "$MRC" perf --client "${server%%,*}" --planes "$client" "${extra[@]}" --duration "$DURATION" --json >"$OUT/client.json" 2>/dev/null
  wait
  after=$(spine_counts)
  local gbit cpu
  gbit=$(python3 -c "import json; d=json.load(open('$OUT/client.json')); print('%.2f' % d['gbit_per_s'])" 2>/dev/null || echo "?")
  cpu=$(cat "$OUT/server.time" "$OUT/client.time" | awk '{s += $1 + $2} END {printf "%.1f", s}')
  echo "$1 goodput_gbit_per_s=$gbit cpu_s=$cpu spines(before->after): $before-> $after"
}
echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg), $PLANES planes x $SPINES spines, ${DURATION}s per run, paths $paths"
for ((r = 0; r < ROUNDS; r++)); do run srv6; run ecmp; run ecmp-no-gso; done
