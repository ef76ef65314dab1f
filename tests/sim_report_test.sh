#!/usr/bin/env bash
# `mrc sim --report DIR`: report.json with the series, links and faults a plot needs, report.md
# with tables, and report.png when /usr/bin/python3 has matplotlib. A bad directory is refused.
set -euo pipefail
MRC=$1
SRC=$(cd "$(dirname "$0")/.." && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$MRC" sim "$SRC/scenarios/four-planes-failover.toml" --quiet --report "$dir/r" > "$dir/out.txt" 2> "$dir/err.txt" \
  || fail "mrc sim --report exited $?: $(cat "$dir/err.txt")"
[ -s "$dir/r/report.json" ] || fail "no report.json"
[ -s "$dir/r/report.md" ] || fail "no report.md"
python3 - "$dir/r/report.json" <<'PY' || fail "report.json lacks fields"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"], r["failure"]
assert len(r["series"]["t_ns"]) > 10 and len(r["series"]["t_ns"]) == len(r["series"]["placed_bytes"])
assert r["series"]["placed_bytes"][-1] == r["bytes_written"]
assert len(r["links"]) > 0 and all(0 <= l["utilization"] <= 1.01 for l in r["links"])
assert [f["what"] for f in r["faults"]] == ["down", "up", "heal all"], r["faults"]
assert len(r["fct_all_ns"]) == r["ops_completed"]
# the speed is reported for the whole run and for the event loop alone (setup excluded)
assert 0 <= r["setup_wall_s"] <= r["wall_s"], (r["setup_wall_s"], r["wall_s"])
assert r["loop_events_per_wall_s"] >= r["events_per_wall_s"] > 0
assert isinstance(r["huge_page_bytes"], int) and r["huge_page_bytes"] >= 0
PY
grep -q "busiest links" "$dir/r/report.md" || fail "report.md has no link table"
if /usr/bin/python3 -c "import matplotlib" 2>/dev/null; then
  [ -s "$dir/r/report.png" ] || fail "matplotlib is installed but there is no report.png"
else
  echo "note: no matplotlib for /usr/bin/python3; report.png not checked"
fi

touch "$dir/file"
if "$MRC" sim "$SRC/scenarios/four-planes-failover.toml" --quiet --report "$dir/file/sub" > /dev/null 2> "$dir/err2.txt"; then
  fail "a report directory inside a file was accepted"
fi
grep -q "cannot write" "$dir/err2.txt" || fail "no clear error for an unwritable report directory: $(cat "$dir/err2.txt")"
out=$("$MRC" sim "$SRC/scenarios/four-planes-failover.toml" --sweep 3 --report "$dir/s" 2>&1) && fail "--report with --sweep was accepted"
echo "$out" | grep -q "describes one run" || fail "no clear error for --report with --sweep: $out"
# --no-huge-pages: the same run on 4 KiB pages, which the report says
"$MRC" sim "$SRC/scenarios/four-planes-failover.toml" --json --quiet --no-huge-pages > "$dir/nohp.json" \
  || fail "mrc sim --no-huge-pages exited $?"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["ok"] and r["huge_page_bytes"] == 0, r["huge_page_bytes"]' \
  "$dir/nohp.json" || fail "--no-huge-pages still reported huge pages"
echo "ok"
