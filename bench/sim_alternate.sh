#!/bin/bash
# Compares the simulator speed of two or more mrc binaries on one scenario on a noisy machine:
# the binaries run one after the other on one core, alternating, for N rounds; prints per binary
# the best and median wall time and event-loop rate. Runs must be identical but for speed, so
# the script also checks that every run's --json agrees with the first binary's (speed fields
# dropped). A binary may carry `mrc sim` options, quoted with it: "build/pub/src/mrc --no-huge-pages".
#   bench/sim_alternate.sh [--rounds N] [--core C] SCENARIO.toml BIN_A BIN_B ...
set -euo pipefail
rounds=8 core=0
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --core) core=$2; shift 2 ;;
    --help|-h) sed -n '2,8p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ $# -ge 3 ]] || { sed -n '2,8p' "$0" >&2; exit 2; }
scenario=$1; shift
[[ -f $scenario ]] || { echo "no such scenario: $scenario" >&2; exit 2; }
for b in "$@"; do read -r exe _ <<< "$b"; [[ -x $exe ]] || { echo "not an executable: $exe" >&2; exit 2; }; done
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
for ((i = 0; i < rounds; i++)); do
  for ((j = 0; j < $#; j++)); do
    read -r -a cmd <<< "${@:$((j + 1)):1}"
    taskset -c "$core" "${cmd[0]}" sim "$scenario" "${cmd[@]:1}" --json --quiet > "$out/$i.$j.json"
  done
done
/usr/bin/python3 - "$out" "$rounds" "$@" <<'PY'
import json, statistics, sys
out, rounds, bins = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
speed = ("wall_s", "events_per_wall_s", "setup_wall_s", "loop_events_per_wall_s", "huge_page_bytes")
strip = lambda d: {k: v for k, v in d.items() if k not in speed}
ref = None
for j, b in enumerate(bins):
    runs = [json.load(open(f"{out}/{i}.{j}.json")) for i in range(rounds)]
    for r in runs:
        ref = ref or strip(r)
        if strip(r) != ref:
            sys.exit(f"{b}: a run's results differ from the first binary's")
    walls = [r["wall_s"] for r in runs]
    loops = [r["loop_events_per_wall_s"] / 1e6 for r in runs]
    print(f"{b}: {rounds} runs, wall best {min(walls):.3f} s median {statistics.median(walls):.3f} s, "
          f"loop best {max(loops):.2f} median {statistics.median(loops):.2f} M events/s")
PY
