#!/bin/bash
# The simulator's cost per event, counted instead of timed: instructions, and with --cache the
# first-level and last-level data misses of a modelled cache, per event of one scenario, for one
# or more mrc binaries, each against the first. Counts do not move with the machine's load, so
# a change of a few percent shows in one run where wall-clock alternation (sim_alternate.sh)
# needs many rounds on this shared VM; they do not replace it (a miss to memory and one to the
# last level cost the same here). Runs must be identical but for speed: every binary's --json
# is checked against the first's. Needs valgrind; runs take ~50x longer than natively.
#   bench/sim_cost.sh [--cache] [--ll BYTES] SCENARIO.toml BIN_A [BIN_B ...]
# --ll: the modelled last level (default 8 MiB, 16-way: about what this VM's last level holds
# of ours).
set -euo pipefail
cache=no ll=8388608
while [[ $# -gt 0 && $1 == --* ]]; do
  case $1 in
    --cache) cache=yes; shift ;;
    --ll) ll=$2; shift 2 ;;
    --help|-h) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done
[[ $# -ge 2 ]] || { sed -n '2,11p' "$0" >&2; exit 2; }
scenario=$1; shift
[[ -f $scenario ]] || { echo "no such scenario: $scenario" >&2; exit 2; }
command -v valgrind > /dev/null || { echo "sim_cost.sh needs valgrind (apt install valgrind)" >&2; exit 2; }
for b in "$@"; do [[ -x $b ]] || { echo "not an executable: $b" >&2; exit 2; }; done
out=$(mktemp -d); trap 'rm -rf "$out"' EXIT
args=(--tool=cachegrind "--cache-sim=$cache")
[[ $cache == yes ]] && args+=("--LL=$ll,16,64")
for ((j = 1; j <= $#; j++)); do
  # --no-huge-pages: the same pages whatever the kernel grants (and no re-execution).
  valgrind "${args[@]}" --cachegrind-out-file=/dev/null "${!j}" sim "$scenario" --json --quiet \
    --no-huge-pages > "$out/$j.json" 2> "$out/$j.err"
done
/usr/bin/python3 - "$out" "$cache" "$@" <<'PY'
import json, re, sys
out, cache, bins = sys.argv[1], sys.argv[2] == "yes", sys.argv[3:]
speed = ("wall_s", "events_per_wall_s", "setup_wall_s", "loop_events_per_wall_s", "huge_page_bytes")
strip = lambda d: {k: v for k, v in d.items() if k not in speed}

def count(text, label):
    m = re.search(r"==\d+== " + label + r":\s+([\d,]+)", text)
    if not m:
        sys.exit(f"no '{label}' in valgrind's output:\n{text[-2000:]}")
    return int(m.group(1).replace(",", ""))

ref = first = None
for j, b in enumerate(bins, 1):
    report = json.load(open(f"{out}/{j}.json"))
    ref = ref or strip(report)
    if strip(report) != ref:
        sys.exit(f"{b}: the run's results differ from the first binary's")
    text = open(f"{out}/{j}.err").read()
    events = report["events"]
    row = {"instructions": count(text, "I\\s+refs") / events}
    if cache:
        row["D1 misses"] = count(text, "D1\\s+misses") / events
        row["LL misses"] = count(text, "LLd misses") / events
    first = first or row
    cells = [f"{k} {v:,.1f}" + ("" if row is first else f" ({v / first[k]:.3f})") for k, v in row.items()]
    print(f"{b}: {events:,} events; per event: " + ", ".join(cells))
PY
