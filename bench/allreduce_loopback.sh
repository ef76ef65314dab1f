#!/usr/bin/env bash
# bench/allreduce_loopback.sh: all-reduce over unshaped loopback planes, where the CPU and not a
# link is the limit: torch Gloo (one interface: lo), the mrc torch backend and `mrc
# allreduce-perf` (planes 127.0.0.1-4), measured in one run, as ratios to Gloo. No root needed.
#
#   bench/allreduce_loopback.sh                      # 2 and 4 ranks, 1 MiB .. 64 MiB
#   bench/allreduce_loopback.sh --ranks 2 --min 64M --max 64M --json
#
# float32 sum; the torch runs use bench/torch_allreduce.py (per size 20/3 timed/warm-up
# iterations up to 1 MiB, 8/1 at 4 MiB, 3/1 from 16 MiB; the slowest rank's average; a checked
# iteration after them); allreduce-perf its own (-n 5 -w 1, out of place, checked). Rows are
# algorithm bandwidth (bytes / time) in GB/s. The ranks run as processes on this host, so with
# 2 cores a 4-rank run shares each core between two ranks for every transport alike.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
RANKS="2 4" MIN=1M MAX=64M PLANES=4 BUILD=1 JSON=0 TRANSPORTS="gloo mrc-torch mrc-perf"
PY=/usr/bin/python3
usage() {
  cat <<EOF
usage: bench/allreduce_loopback.sh [options]
  --ranks LIST        rank counts (default "$RANKS")
  --min SIZE --max SIZE  sizes, K/M suffixes, factor 4 (default $MIN..$MAX)
  --planes N          mrc loopback planes 127.0.0.1..N (default $PLANES)
  --transports LIST   subset of "$TRANSPORTS"
  --json              one JSON object per row on stdout (else a table)
  --no-build          use build/release as it is
EOF
}
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) RANKS=$2; shift 2 ;;
    --min) MIN=$2; shift 2 ;;
    --max) MAX=$2; shift 2 ;;
    --planes) PLANES=$2; shift 2 ;;
    --transports) TRANSPORTS=$2; shift 2 ;;
    --json) JSON=1; shift ;;
    --no-build) BUILD=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "allreduce_loopback.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
say() { echo "allreduce_loopback.sh: $*" >&2; }
bytes() { local v=${1%[KkMm]}; case "$1" in *[Kk]) echo $((v << 10)) ;; *[Mm]) echo $((v << 20)) ;; *) echo "$1" ;; esac; }
LO=$(bytes "$MIN") HI=$(bytes "$MAX")
[ "$LO" -ge 4 ] && [ "$HI" -ge "$LO" ] || { say "--min/--max: need 4 <= min <= max"; exit 2; }
"$PY" -c 'import torch' 2>/dev/null || { say "$PY has no torch (Debian: python3-torch; scripts/install-deps.sh)"; exit 1; }
if [ "$BUILD" = 1 ]; then
  say "building mrc and the torch backend (release preset)"
  cmake --preset release >/dev/null
  cmake --build --preset release >/dev/null
fi
MRC=$REPO/build/release/src/mrc
TORCH_PATH=$REPO/build/release/python
[ -x "$MRC" ] || { say "$MRC is missing (drop --no-build)"; exit 1; }
planes=() ; for ((p = 1; p <= PLANES; p++)); do planes+=("127.0.0.$p"); done
PLANES_CSV=$(IFS=,; echo "${planes[*]}")
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
PORT=$((29500 + RANDOM % 400))

# torch_allreduce.py on N ranks with BACKEND; rows (JSON lines) of rank 0 into FILE.
run_torch() {  # BACKEND N FILE
  local backend=$1 n=$2 file=$3 pids=() r rc=0
  PORT=$((PORT + 1))
  for ((r = 0; r < n; r++)); do
    RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r LOCAL_WORLD_SIZE=$n GLOO_SOCKET_IFNAME=lo \
      MRC_PLANES=$PLANES_CSV PYTHONPATH=$TORCH_PATH OMP_NUM_THREADS=1 \
      timeout -k 5 600 "$PY" bench/torch_allreduce.py --backend "$backend" --init "tcp://127.0.0.1:$PORT" \
      sweep "$LO" "$HI" 4 >"$file.$r" 2>"$file.err.$r" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
  [ "$rc" = 0 ] || say "WARNING: $backend at $n ranks exited $rc (see $file.err.*)"
  cp "$file.0" "$file"
}

run_perf() {  # N FILE
  timeout -k 5 600 "$MRC" allreduce-perf --ranks "$1" --planes "${planes[@]}" -b "$LO" -e "$HI" -f 4 \
    -n 5 -w 1 --json >"$2" 2>"$2.err" || say "WARNING: allreduce-perf at $1 ranks failed (see $2.err)"
}

for n in $RANKS; do
  for t in $TRANSPORTS; do
    say "$t, $n ranks"
    case "$t" in
      gloo) run_torch gloo "$n" "$OUT/gloo-$n" ;;
      mrc-torch) run_torch mrc "$n" "$OUT/mrc-torch-$n" ;;
      mrc-perf) run_perf "$n" "$OUT/mrc-perf-$n" ;;
      *) say "unknown transport $t"; exit 2 ;;
    esac
  done
done

"$PY" - "$OUT" "$JSON" "$RANKS" "$TRANSPORTS" <<'EOF'
import json, os, sys
out, as_json, ranks, transports = sys.argv[1], sys.argv[2] == "1", sys.argv[3].split(), sys.argv[4].split()
def rows(path):
    got = {}
    if not os.path.exists(path):
        return got
    text = open(path).read().strip()
    if not text:
        return got
    try:  # allreduce-perf --json: one object with "rows" (one torch line also parses whole)
        doc = json.loads(text)
        if isinstance(doc, dict) and "rows" in doc:
            for r in doc["rows"]:
                o = r["out_of_place"]
                got[int(r["size"])] = (float(o["algbw_gbps"]), int(o.get("wrong", 0)))
            return got
    except json.JSONDecodeError:
        pass
    for line in text.splitlines():
        r = json.loads(line)
        got[int(r["size"])] = (float(r["algbw"]), int(r.get("wrong", 0)))
    return got
for n in ranks:
    data = {t: rows(os.path.join(out, f"{t}-{n}")) for t in transports}
    sizes = sorted(set().union(*[set(d) for d in data.values()]))
    if not as_json:
        print(f"{n} ranks: algbw GB/s (ratio to gloo)")
        print("  size      " + "".join(f"{t:>20}" for t in transports))
    for s in sizes:
        base = data.get("gloo", {}).get(s, (None, 0))[0]
        row = {"ranks": int(n), "size": s}
        cells = []
        for t in transports:
            v = data[t].get(s)
            if v is None:
                cells.append(f"{'not run':>20}")
                continue
            row[t] = {"algbw_gbs": v[0], "wrong": v[1]}
            ratio = f" ({v[0] / base:.2f}x)" if base and t != "gloo" else ""
            cells.append(f"{v[0]:>12.3f}{ratio:>8}" + ("!" if v[1] else ""))
        if as_json:
            print(json.dumps(row))
        else:
            print(f"  {s:>9} " + "".join(cells))
EOF
