#!/bin/bash
# Compares the simulator speed of two or more mrc binaries on one scenario on a noisy machine:
# the binaries run one after the other on one core, alternating, for N rounds; prints per binary
# the best and median wall time and event-loop rate. Runs must be identical but for speed, so
# the script also checks that every run's --json agrees with the first binary's (speed fields
# dropped). A binary may carry `mrc sim` options, quoted with it: "build/pub/src/mrc --no-huge-pages".
# --abba: each round runs the binaries forward then backward (A B B A), so a drift of the
# machine's speed within a round weighs on each alike. Every binary after the first also gets
# the geometric mean over rounds of its loop rate against the first's in the same round.
#   bench/sim_alternate.sh [--rounds N] [--core C] [--abba] SCENARIO.toml BIN_A BIN_B ...
set -euo pipefail
rounds=8 core=0 abba=0
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --core) core=$2; shift 2 ;;
    --abba) abba=1; shift ;;
    --help|-h) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ $# -ge 3 ]] || { sed -n '2,11p' "$0" >&2; exit 2; }
scenario=$1; shift
[[ -f $scenario ]] || { echo "no such scenario: $scenario" >&2; exit 2; }
for b in "$@"; do read -r exe _ <<< "$b"; [[ -x $exe ]] || { echo "not an executable: $exe" >&2; exit 2; }; done
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
order=$(seq 0 $(($# - 1)))
((abba)) && order="$order $(seq $(($# - 1)) -1 0)"
for ((i = 0; i < rounds; i++)); do
  for j in $order; do
    read -r -a cmd <<< "${@:$((j + 1)):1}"
    k=0; while [[ -e $out/$i.$j.$k.json ]]; do k=$((k + 1)); done
    taskset -c "$core" "${cmd[0]}" sim "$scenario" "${cmd[@]:1}" --json --quiet > "$out/$i.$j.$k.json"
  done
done
/usr/bin/python3 - "$out" "$rounds" "$((abba + 1))" "$@" <<'PY'
import json, math, statistics, sys
out, rounds, per_round, bins = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
speed = ("wall_s", "events_per_wall_s", "setup_wall_s", "loop_events_per_wall_s", "huge_page_bytes")
strip = lambda d: {k: v for k, v in d.items() if k not in speed}
geomean = lambda xs: math.exp(statistics.mean(math.log(x) for x in xs))
ref = None
first = None
for j, b in enumerate(bins):
    runs = [[json.load(open(f"{out}/{i}.{j}.{k}.json")) for k in range(per_round)] for i in range(rounds)]
    for r in (r for round_runs in runs for r in round_runs):
        ref = ref or strip(r)
        if strip(r) != ref:
            sys.exit(f"{b}: a run's results differ from the first binary's")
    walls = [r["wall_s"] for round_runs in runs for r in round_runs]
    loops = [[r["loop_events_per_wall_s"] / 1e6 for r in round_runs] for round_runs in runs]
    flat = [x for round_loops in loops for x in round_loops]
    ratio = ""
    if first is None:
        first = loops
    else:
        ratio = geomean([geomean(mine) / geomean(theirs) for mine, theirs in zip(loops, first)])
        ratio = f", {ratio:.3f} x the first (geometric mean of the per-round ratios)"
    print(f"{b}: {len(walls)} runs, wall best {min(walls):.3f} s median {statistics.median(walls):.3f} s, "
          f"loop best {max(flat):.2f} median {statistics.median(flat):.2f} M events/s{ratio}")
PY
