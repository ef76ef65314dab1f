#!/usr/bin/env bash
# Spray granularity study: what EV bursts ([qp] ev_burst = k, QpConfig::ev_burst_packets) cost
# in the simulated fabric. Runs scenarios/spray-{a2a,a2a-loss1,ring,ring-loss1}.toml with each k
# and seed (a temporary copy of the file with its `ev_burst = ...` line replaced; `mrc sim` has
# no key overrides), one simulation at a time under `nice`, and prints one table: per scenario
# and k the run's completion time relative to k = 1, goodput (all-to-all: per host, of the NIC's
# line rate) or busbw (ring), transfer completion times p99 / max, retransmits, trims, ECN marks,
# EVs retired (GOOD/SKIP -> ASSUMED_BAD), and the load imbalance of planes and spine uplinks
# (max / mean bytes over the run). Means over the seeds.
#
# --mib N runs the same files payload-free (no payload bytes moved: the same runs, faster) with N
# MiB per host, as bench/published.py's large rows do.
#
# It also checks that ev_burst = 1 changes nothing: the --json report of each shipped file
# (mrc64-{a2a,ring}-mrc.toml), of the same file with `ev_burst = 1` added, and of the spray file
# at k = 1 must be equal but for the wall-clock fields (and the scenario's name).
#
# docs/PROTOCOL.md, "Spray granularity (EV bursts)", holds the table this prints.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MRC=${MRC:-$ROOT/build/src/mrc}
KS="1 2 4 8 16"
SEEDS="1 2"
SCENARIOS="spray-a2a spray-a2a-loss1 spray-ring spray-ring-loss1"
OUT=""
JSON=0
REUSE=0
CHECK=1
MIB=""

usage() {
  cat <<EOF
usage: bench/spray_granularity.sh [--mrc PATH] [--ks "1 2 4 8 16"] [--seeds "1 2"]
                                  [--only "spray-a2a spray-ring ..."] [--mib N] [--out DIR [--reuse]]
                                  [--json] [--no-check]

Runs scenarios/spray-*.toml with [qp] ev_burst = each k and each seed and prints a markdown
table (or with --json one JSON object: per run the raw metrics, per scenario and k the means).
  --mrc PATH    the mrc binary (default \$MRC or $ROOT/build/src/mrc)
  --ks LIST     burst lengths (default "$KS"; the first is the baseline the times are relative to)
  --seeds LIST  seeds (default "$SEEDS")
  --only LIST   scenario names (default "$SCENARIOS")
  --mib N       payload-free, N MiB per host (all-to-all: N/64 MiB per peer; ring: the vector);
                default: the files' payload runs of 16 MiB per host
  --out DIR     keep every run's report (DIR/NAME-kK-sS/report.json); default a temporary directory
  --reuse       with --out: take the reports already in DIR (runs are deterministic: the same
                binary, file and seed give the same report) and run only the missing ones
  --json        print JSON instead of the table
  --no-check    skip the check that ev_burst = 1 leaves the shipped scenarios' reports unchanged
                (with --mib there is no check)
About 3-6 minutes of one core for the defaults (40 runs of 2-15 s, 4 more for the check).
EOF
}

while [ $# -gt 0 ]; do
  case "$1" in
    --mrc) MRC=$2; shift 2 ;;
    --ks) KS=$2; shift 2 ;;
    --seeds) SEEDS=$2; shift 2 ;;
    --only) SCENARIOS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --json) JSON=1; shift ;;
    --reuse) REUSE=1; shift ;;
    --no-check) CHECK=0; shift ;;
    --mib) MIB=$2; CHECK=0; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "spray_granularity.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ "$REUSE" = 0 ] || [ -n "$OUT" ] || { echo "spray_granularity.sh: --reuse needs --out DIR" >&2; exit 2; }
[ -x "$MRC" ] || { echo "spray_granularity.sh: no mrc binary at $MRC (use --mrc PATH)" >&2; exit 2; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
[ -n "$OUT" ] || OUT=$TMP/runs
mkdir -p "$OUT"

# One simulation: scenario file $1, seed $2, report directory $3. The report's report.json is
# the --json object plus per-link counters (stdout is not parsed: the plot step may write there).
simulate() {
  [ "$REUSE" = 1 ] && [ -s "$3/report.json" ] && return 0
  rm -rf "$3"
  nice -n 10 "$MRC" sim "$1" --seed "$2" --json --quiet --report "$3" >/dev/null 2>"$3.stderr" ||
    echo "spray_granularity.sh: $1 seed $2 failed its checks (see $3/report.json)" >&2
  [ -s "$3/report.json" ] || { echo "spray_granularity.sh: $1 seed $2 wrote no report" >&2; cat "$3.stderr" >&2; exit 1; }
}

# A copy of scenario $1 with ev_burst = $2 (the file must have exactly one `ev_burst = ` line),
# payload-free with $MIB MiB per host if --mib was given.
with_burst() {
  local copy=$TMP/$(basename "$1" .toml)-k$2.toml
  [ "$(grep -c '^ev_burst = ' "$1")" = 1 ] || { echo "spray_granularity.sh: $1 has no single ev_burst line" >&2; exit 2; }
  sed "s/^ev_burst = [0-9]*/ev_burst = $2/" "$1" >"$copy"
  [ -z "$MIB" ] || payload_free "$copy"
  echo "$copy"
}

# Makes scenario file $1 payload-free with $MIB MiB per host (before its first table).
payload_free() {
  local bytes=$((MIB << 20))
  grep -q '^pattern = "all_to_all"' "$1" && bytes=$((bytes / 64))
  sed -i -e "0,/^\[/s//payload = false\nmove_payload = false\n\n[/" \
      -e "s/^message_bytes = [0-9]*/message_bytes = $bytes/" "$1"
  grep -q "^message_bytes = $bytes" "$1" || { echo "spray_granularity.sh: $1 has no message_bytes line" >&2; exit 2; }
}

for name in $SCENARIOS; do
  for k in $KS; do
    file=$(with_burst "$ROOT/scenarios/$name.toml" "$k")
    for seed in $SEEDS; do
      echo "  $name ev_burst=$k seed=$seed" >&2
      simulate "$file" "$seed" "$OUT/$name-k$k-s$seed"
    done
  done
done

# The check, for the loss-free spray files run: shipped file, shipped file + `ev_burst = 1`,
# spray file at k = 1 (the first seed).
CHECKS=""
if [ "$CHECK" = 1 ]; then
  first_seed=${SEEDS%% *}
  for kind in a2a ring; do
    case " $SCENARIOS " in *" spray-$kind "*) ;; *) continue ;; esac
    shipped=$ROOT/scenarios/mrc64-$kind-mrc.toml
    added=$TMP/mrc64-$kind-mrc-burst1.toml
    sed 's/^\[qp\]$/[qp]\nev_burst = 1/' "$shipped" >"$added"
    grep -q '^ev_burst = 1$' "$added"
    echo "  check: $shipped, and with ev_burst = 1" >&2
    simulate "$shipped" "$first_seed" "$OUT/check-$kind-shipped"
    simulate "$added" "$first_seed" "$OUT/check-$kind-added"
    spray=$OUT/spray-$kind-k1-s$first_seed
    [ -d "$spray" ] || simulate "$(with_burst "$ROOT/scenarios/spray-$kind.toml" 1)" "$first_seed" "$spray"
    CHECKS="$CHECKS $kind:$OUT/check-$kind-shipped:$OUT/check-$kind-added:$spray"
  done
fi

python3 - "$OUT" "$JSON" "$KS" "$SEEDS" "$SCENARIOS" "$CHECKS" <<'EOF'
import json, os, statistics, sys

out, as_json, ks, seeds, names, checks = sys.argv[1], sys.argv[2] == "1", sys.argv[3].split(), sys.argv[4].split(), sys.argv[5].split(), sys.argv[6].split()
WALL = {"wall_s", "events_per_wall_s", "setup_wall_s", "loop_events_per_wall_s", "huge_page_bytes"}


def imbalance(values):
    """max / mean of a list of byte counts (1.0: perfectly even)."""
    mean = statistics.fmean(values)
    return max(values) / mean if mean > 0 else 0.0


def uplink_imbalance(links):
    """Per plane and leaf, max / mean of its spine uplinks' bytes; the mean over leaves and the worst."""
    groups = {}
    for l in links:
        if l["class"] == "fabric_up":
            groups.setdefault(l["name"].split("->")[0], []).append(l["bytes_sent"])
    ratios = [imbalance(v) for v in groups.values() if sum(v) > 0]
    return (statistics.fmean(ratios), max(ratios)) if ratios else (0.0, 0.0)


def metrics(r):
    f = r["fabric"]
    line_gbps = f["planes"] * f["host_link_gbps"]
    t = r["completion_time_ns"]
    m = {"ok": r["ok"], "completion_us": t / 1e3, "fct_p99_us": r["fct_ns"]["p99"] / 1e3,
         "fct_max_us": r["fct_ns"]["max"] / 1e3, "retransmits": r["retransmits"], "timeouts": r["timeouts"],
         "trims": r["trims"], "ecn_marks": r["ecn_marks"], "fabric_drops": r["fabric_drops"],
         "evs_retired": r["ev_transitions"]["to_assumed_bad"],
         "plane_imbalance": imbalance([p["data_bytes_sent"] for p in r["planes"]])}
    m["uplink_imbalance_mean"], m["uplink_imbalance_max"] = uplink_imbalance(r["links"])
    if r["groups"] and "busbw_gbit_per_s" in r["groups"][0]:
        m["busbw_gbps"] = r["groups"][0]["busbw_gbit_per_s"]
        m["rate_pct"] = 100 * m["busbw_gbps"] / line_gbps
    else:
        m["rate_pct"] = 100 * r["bytes_written"] * 8 / f["hosts"] / t / line_gbps
    return m


runs, means = [], {}
for name in names:
    for k in ks:
        per_seed = []
        for s in seeds:
            r = json.load(open(os.path.join(out, "%s-k%s-s%s" % (name, k, s), "report.json")))
            m = metrics(r)
            runs.append(dict(scenario=name, k=int(k), seed=int(s), **m))
            per_seed.append(m)
        means[(name, k)] = {key: statistics.fmean(float(m[key]) for m in per_seed) for key in per_seed[0] if key != "ok"}
        means[(name, k)]["ok"] = all(m["ok"] for m in per_seed)
        means[(name, k)]["completion_range_us"] = (min(m["completion_us"] for m in per_seed), max(m["completion_us"] for m in per_seed))

check_results = []
for c in checks:
    kind, shipped, added, spray = c.split(":")
    load = lambda d: {k: v for k, v in json.load(open(os.path.join(d, "report.json"))).items() if k not in WALL}
    a, b, s = load(shipped), load(added), load(spray)
    s["scenario"] = a["scenario"]
    check_results.append({"scenario": kind, "shipped_equals_with_ev_burst_1": a == b, "shipped_equals_spray_k1": a == s,
                          "differing_keys": sorted({k for k in a if a.get(k) != b.get(k) or a.get(k) != s.get(k)})})

if as_json:
    print(json.dumps({"runs": runs, "means": [dict(scenario=n, k=int(k), **v) for (n, k), v in means.items()],
                      "check": check_results}, indent=1))
    sys.exit(0 if all(c["shipped_equals_with_ev_burst_1"] and c["shipped_equals_spray_k1"] for c in check_results) else 1)

print("| scenario | k | time vs k=1 | completion us (range) | goodput / busbw, % of 400G | FCT p99 / max us | retransmits | trims | ECN marks | EVs retired | plane max/mean | uplink max/mean (mean, worst leaf) |")
print("|---|---:|---:|---|---:|---|---:|---:|---:|---:|---:|---|")
for name in names:
    base = means[(name, ks[0])]["completion_us"]
    for k in ks:
        m = means[(name, k)]
        lo, hi = m["completion_range_us"]
        print("| %s%s | %s | %.3f | %.1f (%.1f-%.1f) | %.1f | %.1f / %.1f | %.0f | %.0f | %.0f | %.0f | %.4f | %.3f, %.3f |" % (
            name, "" if m["ok"] else " (FAILED)", k, m["completion_us"] / base, m["completion_us"], lo, hi, m["rate_pct"],
            m["fct_p99_us"], m["fct_max_us"], m["retransmits"], m["trims"], m["ecn_marks"], m["evs_retired"],
            m["plane_imbalance"], m["uplink_imbalance_mean"], m["uplink_imbalance_max"]))
print("\nmeans over seeds %s; time vs k=1: mean completion time over that of k=%s" % (" ".join(seeds), ks[0]))
for c in check_results:
    print("check %s: shipped == shipped + ev_burst = 1: %s; shipped == spray k=1: %s%s" % (
        c["scenario"], c["shipped_equals_with_ev_burst_1"], c["shipped_equals_spray_k1"],
        "" if not c["differing_keys"] else " (differ: %s)" % ", ".join(c["differing_keys"])))
sys.exit(0 if all(c["shipped_equals_with_ev_burst_1"] and c["shipped_equals_spray_k1"] for c in check_results) else 1)
EOF
