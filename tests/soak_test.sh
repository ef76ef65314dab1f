#!/usr/bin/env bash
# A 2-minute soak (bench/soak.sh --duration 120): a verified mrc perf transfer over 4 loopback
# planes with plane 1 flapping (down 1 s in every 5 s) and 0.1 % loss each way. Checks
# behaviour only: the transfer verified every byte, with 0 mismatches and 0 error completions,
# and neither process's RSS grew past 1.5 x its post-warm-up value + 16 MiB by the end.
# Goodput is reported, not judged. Usage: soak_test.sh PATH_TO_MRC
set -u
MRC=$1
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fail() { echo "FAIL: $*"; exit 1; }
report=$(mktemp /tmp/mrc-soak-test.XXXXXX)
trap 'rm -f "$report"' EXIT
"$HERE/../bench/soak.sh" --duration 120 --mrc "$MRC" >"$report"
rc=$?
[ -s "$report" ] || fail "bench/soak.sh wrote no report (exit $rc)"
python3 - "$report" "$rc" <<'PY' || exit 1
import json, sys
r, rc = json.load(open(sys.argv[1])), int(sys.argv[2])
problems = []
if not r["ok"] or rc != 0:
    problems.append(f"not verified (soak.sh exit {rc}, client exit {r['client_exit']}, server exit {r['server_exit']})")
if r["mismatches"] != 0:
    problems.append(f"{r['mismatches']} mismatches")
if r["error_completions"] != 0:
    problems.append(f"{r['error_completions']} error completions")
if r["bytes_verified"] == 0 or r["bytes_verified"] != r["bytes_sent"]:
    problems.append(f"{r['bytes_verified']} of {r['bytes_sent']} bytes verified")
for side in ("server", "client"):
    m = r["rss"][side]
    if m is None:
        problems.append(f"no RSS samples of the {side}")
        continue
    if not m["after_warmup"]:
        problems.append(f"no RSS sample of the {side} after the warm-up")
    limit = 1.5 * m["start_kib"] + 16 * 1024
    print(f"{side} RSS: {m['start_kib']} KiB after warm-up, {m['end_kib']} KiB at the end (limit {limit:.0f}), max {m['max_kib']}")
    if m["end_kib"] > limit:
        problems.append(f"{side} RSS grew from {m['start_kib']} KiB to {m['end_kib']} KiB (limit {limit:.0f} KiB)")
print(f"goodput (reported, not judged): first 10 % {r['goodput']['first_10pct_gbit_per_s']:.2f} Gbit/s, "
      f"last 10 % {r['goodput']['last_10pct_gbit_per_s']:.2f} Gbit/s")
for p in problems:
    print("FAIL:", p)
sys.exit(1 if problems else 0)
PY
echo "soak test passed"
