#!/usr/bin/env bash
# bench/depth_sweep.sh: `mrc perf --size 4M` over 4 loopback planes at every depth (messages in
# flight) from 1 to 128, with the memory the messages use held two ways in the same run:
#   own:    every message in flight has its own buffer on each side (perf's default), so the
#           working set the copies walk grows with the depth (depth 128: 1 GiB a side);
#   shared: the messages cycle through one 8 MiB buffer a side (`--buffer 8M`, as perftest's
#           cycle buffer), so only the transport's own state grows with the depth.
# Rounds alternate the runs (depth 1 own, depth 1 shared, depth 2 own, ...); the table gives each
# median, its share of the variant's best, and the median post-to-completion latency. No root.
#
#   bench/depth_sweep.sh                      # 2 rounds, 3 s per run, about 2 minutes
#   bench/depth_sweep.sh --rounds 3 --json
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
ROUNDS=2 DURATION=3 BUILD=1 JSON=0 DEPTHS="1 2 4 8 16 32 64 128" SIZE=4M BUFFER=8M
usage() {
  cat <<EOF
usage: bench/depth_sweep.sh [--rounds N] [--duration S] [--depths "D ..."] [--json] [--no-build]
  --rounds N       alternations of all runs (default $ROUNDS)
  --duration S     seconds per run (default $DURATION)
  --depths "D ..." depths to run, each 1..128 (default: $DEPTHS)
  --json           one JSON object on stdout (else a table)
  --no-build       use build/release as it is
Message size $SIZE; the shared variant's buffer $BUFFER a side.
EOF
}
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --duration) DURATION=$2; shift 2 ;;
    --depths) DEPTHS=$2; shift 2 ;;
    --json) JSON=1; shift ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "depth_sweep.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
say() { echo "depth_sweep.sh: $*" >&2; }
for d in $DEPTHS; do
  [[ "$d" =~ ^[0-9]+$ ]] && [ "$d" -ge 1 ] && [ "$d" -le 128 ] || { say "depth $d is not 1..128"; exit 2; }
done
if [ "$BUILD" = 1 ]; then
  say "building mrc (release preset)"
  cmake --preset release >/dev/null
  cmake --build --preset release --target mrc >/dev/null
fi
MRC=$REPO/build/release/src/mrc
[ -x "$MRC" ] || { say "$MRC is missing (drop --no-build)"; exit 1; }
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT

run() {  # FILE ARGS...: one transfer; the client's JSON in FILE (empty if it failed)
  local file=$1 oob=$((18900 + RANDOM % 300))
  shift
  timeout 60 "$MRC" perf --server --oob-port "$oob" --json >/dev/null 2>&1 &
  local server=$!
  sleep 0.4
  timeout 60 "$MRC" perf --client 127.0.0.1 --oob-port "$oob" --duration "$DURATION" --size "$SIZE" \
    --json "$@" >"$file" 2>"$file.err" || say "a run failed: $* ($(tail -1 "$file.err"))"
  wait "$server" || true
}

for ((r = 1; r <= ROUNDS; r++)); do
  for d in $DEPTHS; do
    say "round $r/$ROUNDS: depth $d"
    run "$OUT/own-$d-$r" --depth "$d"
    run "$OUT/shared-$d-$r" --depth "$d" --buffer "$BUFFER"
  done
done

/usr/bin/python3 - "$OUT" "$ROUNDS" "$JSON" "$DEPTHS" <<'EOF'
import json, statistics, sys
out, rounds, as_json, depths = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4].split()
def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
rows = {}
for variant in ("own", "shared"):
    for d in depths:
        runs = [load(f"{out}/{variant}-{d}-{r}") for r in range(1, rounds + 1)]
        runs = [x for x in runs if x and x.get("ok")]
        rows[(variant, d)] = {
            "depth": int(d), "variant": variant, "runs_ok": len(runs),
            "gbit_per_s": [round(x["gbit_per_s"], 2) for x in runs],
            "median_gbit_per_s": round(statistics.median([x["gbit_per_s"] for x in runs]), 2) if runs else None,
            "median_p50_ms": round(statistics.median([x["latency_us"]["p50"] for x in runs]) / 1000, 2) if runs else None,
        }
for variant in ("own", "shared"):
    best = max((rows[(variant, d)]["median_gbit_per_s"] or 0) for d in depths)
    for d in depths:
        g = rows[(variant, d)]["median_gbit_per_s"]
        rows[(variant, d)]["of_best"] = round(g / best, 3) if g and best else None
if as_json:
    print(json.dumps({"rounds": rounds, "rows": list(rows.values())}, indent=2))
    sys.exit(0)
print(f"{'depth':>5}  {'own Gbit/s':>10} {'of best':>7} {'p50 ms':>8}   {'shared Gbit/s':>13} {'of best':>7} {'p50 ms':>8}")
for d in depths:
    o, s = rows[("own", d)], rows[("shared", d)]
    fmt = lambda v: "-" if v is None else str(v)
    print(f"{d:>5}  {fmt(o['median_gbit_per_s']):>10} {fmt(o['of_best']):>7} {fmt(o['median_p50_ms']):>8}   "
          f"{fmt(s['median_gbit_per_s']):>13} {fmt(s['of_best']):>7} {fmt(s['median_p50_ms']):>8}")
EOF
