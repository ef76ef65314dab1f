#!/usr/bin/env bash
# A spine cut mid-run on the SRv6 testbed, seen from both sides: `mrc perf --verify` in SRv6
# path mode (or ECMP mode with --ecmp) between hosts 0 and 1 while plane 0's spine 1 loses its
# link to host 0's leaf (a silent black hole: nothing upstream notices) at --cut-at and gets it
# back --down-for later. Prints every 100 ms the client's goodput and the packets each of plane
# 0's spines forwarded in that interval, then the client's summary (bytes verified, losses).
#
#   sudo bench/srv6_spine_cut.sh [--ecmp] [--duration S] [--cut-at S] [--down-for S] [--mrc PATH]
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DURATION=10 CUT_AT=3 DOWN_FOR=2 MODE=srv6 MRC=$REPO/build/release/src/mrc PREFIX=mrcs6c
while [ $# -gt 0 ]; do
  case "$1" in
    --ecmp) MODE=ecmp; shift ;;
    --duration) DURATION=$2; shift 2 ;;
    --cut-at) CUT_AT=$2; shift 2 ;;
    --down-for) DOWN_FOR=$2; shift 2 ;;
    --mrc) MRC=$2; shift 2 ;;
    -h | --help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "srv6_spine_cut.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
# shellcheck source=bench/srv6_bench_lib.sh
. "$REPO/bench/srv6_bench_lib.sh"
srv6_bench_up "$PREFIX" 2 2
extra=()
[ "$MODE" = ecmp ] || extra=(--srv6-paths "$paths")
count() { ip netns exec "$PREFIX-p0-s$1" nft list table inet mrctb_count | grep -o 'packets [0-9]*' | head -1 | awk '{print $2}'; }
ip netns exec "$PREFIX-h0" "$MRC" perf --server --planes "$server" "${extra[@]}" >/dev/null 2>&1 &
sleep 0.5
ip netns exec "$PREFIX-h1" "$MRC" perf --client "${server%%,*}" --planes "$client" "${extra[@]}" \
  --duration "$DURATION" --verify --interval 0.1 >"$OUT/client" 2>&1 &
client=$!
start=$(date +%s.%N) cut=0 repaired=0 last0=$(count 0) last1=$(count 1)
echo "# $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg) mode $MODE: t_s client_gbit_per_s spine0_pkts spine1_pkts (plane 0, per 100 ms)"
while kill -0 "$client" 2>/dev/null; do
  sleep 0.1
  t=$(awk -v now="$(date +%s.%N)" -v s="$start" 'BEGIN { printf "%.2f", now - s }')
  if [ "$cut" = 0 ] && awk -v t="$t" -v c="$CUT_AT" 'BEGIN { exit !(t >= c) }'; then
    $TB fail 0 --spine 1 --leaf 0 >/dev/null; cut=1; echo "# cut at $t"
  fi
  if [ "$cut" = 1 ] && [ "$repaired" = 0 ] && awk -v t="$t" -v c="$CUT_AT" -v d="$DOWN_FOR" 'BEGIN { exit !(t >= c + d) }'; then
    $TB repair 0 --spine 1 --leaf 0 >/dev/null; repaired=1; echo "# repaired at $t"
  fi
  n0=$(count 0) n1=$(count 1)
  gbit=$(grep -o '^\[[ 0-9.]*s\] *[0-9.]* Gbit/s' "$OUT/client" | tail -1 | awk '{print $(NF-1)}' || true)
  printf '%.1f %s %d %d\n' "$t" "${gbit:-0}" $((n0 - last0)) $((n1 - last1))
  last0=$n0 last1=$n1
done
wait "$client" || true
wait || true
sed -n '/^client:/,$p' "$OUT/client"
grep -q "^client:" "$OUT/client" || cat "$OUT/client"
