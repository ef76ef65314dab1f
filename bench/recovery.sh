#!/usr/bin/env bash
# bench/recovery.sh: how fast a verified `mrc perf` transfer over 4 loopback planes (unshaped)
# gets its goodput back after three events in one run, each against the goodput of the 2 s
# before it:
#   flood   --flood N garbage datagrams (random bytes) at the server's planes, from t = 4 s
#   burst   every plane down for 50 ms at t = 8 s (a total loss burst)
#   plane   plane 2 down for good at t = 12 s (on loopback the other planes share the same CPU,
#           so the surviving capacity is the whole rate)
# Recovery: the time from the event's end to the first 0.1 s interval from which the mean of
# three intervals is at least 0.9 of the level before. No root needed.
#
#   bench/recovery.sh                 # one run, a table and a JSON line
#   bench/recovery.sh --runs 3 --flood 200000
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
RUNS=1 FLOOD=200000 OOB=18710
usage() {
  cat <<EOF
usage: bench/recovery.sh [--runs N] [--flood DATAGRAMS]
  --runs N          runs, one after the other (default $RUNS)
  --flood N         garbage datagrams sent at t = 4 s (default $FLOOD)
Prints per run and event: the goodput before (Gbit/s), the time to 0.9 of it (ms) and the
goodput over the 2 s after; then one JSON line per run.
EOF
}
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) RUNS=$2; shift 2 ;;
    --flood) FLOOD=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "recovery.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
MRC=build/release/src/mrc
[ -x "$MRC" ] || { echo "recovery.sh: $MRC is missing (cmake --build --preset release)" >&2; exit 1; }
PY=/usr/bin/python3
TMP=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$TMP"' EXIT

flood() {  # N: garbage UDP datagrams at the server's receive port on every plane
  "$PY" - "$1" <<'PY'
import os, socket, sys
n = int(sys.argv[1])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
junk = [os.urandom(1200) for _ in range(64)]
for i in range(n):
    s.sendto(junk[i & 63], ("127.0.0.%d" % (1 + i % 4), 4791))
PY
}

report() {  # CLIENT_JSON FLOOD_TIMES START RUN
  "$PY" - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
f0, f1 = (float(x) - float(sys.argv[3]) for x in open(sys.argv[2]).read().split())
iv = [(i["t_s"], i["gbit_per_s"]) for i in d["intervals"]]
def mean(a, b):
    v = [g for t, g in iv if a < t <= b]
    return sum(v) / len(v) if v else 0.0
def recovery(end, level):
    after = [(t, g) for t, g in iv if t > end]
    for k in range(len(after) - 2):
        if sum(g for _, g in after[k:k + 3]) / 3 >= 0.9 * level:
            return max(0.0, (after[k][0] - 0.1 - end) * 1000)
    return None
events = {"flood": (f0, f1), "burst": (8.0, 8.05), "plane": (12.0, 12.0)}
ok = d.get("ok", False) and d.get("mismatches", 1) == 0
out = {"run": int(sys.argv[4]), "verified": ok, "gbit_per_s": d["gbit_per_s"], "events": {}}
print(f"run {out['run']}: {d['gbit_per_s']:.2f} Gbit/s overall, verified: {ok}")
print(f"  {'event':6} {'before':>8} {'to 0.9 (ms)':>12} {'2 s after':>10}")
for name, (a, b) in events.items():
    before, r, after = mean(a - 2, a), None, mean(b, b + 2)
    r = recovery(b, before)
    out["events"][name] = {"start_s": round(a, 3), "end_s": round(b, 3),
                           "before_gbit_per_s": before, "recovery_ms": r,
                           "after_gbit_per_s": after}
    shown = "never" if r is None else f"{r:.0f}"
    print(f"  {name:6} {before:8.2f} {shown:>12} {after:10.2f}")
print(json.dumps(out))
sys.exit(0 if ok else 1)
PY
}

for run in $(seq 1 "$RUNS"); do
  "$MRC" perf --server --oob-port $OOB --json > "$TMP/server.json" 2>&1 &
  server=$!
  sleep 0.5
  burst=()
  for p in 0 1 2 3; do burst+=(--fail-plane "$p@8s+50ms"); done
  start=$(date +%s.%N)
  ( sleep 4; t0=$(date +%s.%N); flood "$FLOOD"; echo "$t0 $(date +%s.%N)" > "$TMP/flood" ) &
  "$MRC" perf --client 127.0.0.1 --oob-port $OOB --duration 16 --verify --interval 0.1 --json \
    "${burst[@]}" --fail-plane 2@12s > "$TMP/client.json"
  wait
  report "$TMP/client.json" "$TMP/flood" "$start" "$run"
done
