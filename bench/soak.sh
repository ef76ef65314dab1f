#!/usr/bin/env bash
# bench/soak.sh: a long verified transfer under faults, watched for decay. mrc perf server and
# client over 4 loopback planes (127.0.0.1-4), every byte checked at the receiver (--verify),
# one plane flapping (mrc perf --flap-plane) and a fraction of each side's sent packets dropped
# (--drop), for --duration seconds; both processes' RSS (VmRSS of /proc/PID/status) sampled
# every --sample seconds. No root needed.
#
#   bench/soak.sh                       # one hour
#   bench/soak.sh --duration 600 --out /tmp/soak
#
# Report: a short summary on stderr and one JSON object on stdout: goodput per perf interval
# (the client's JSON intervals of the sending phase), the mean of the last 10 % of them over
# the mean of the first 10 %, RSS of each process after the warm-up, at the end and the
# largest, error completions, mismatches and bytes verified. Exit status 0 if the transfer
# verified (every byte sent was checked equal, 0 mismatches, 0 error completions, both
# processes exited 0), 1 if not, 2 for a usage error. Goodput and RSS are reported, never
# judged: no threshold on them decides the exit status.
#
# Ports: UDP 4901 (server) and 4902 (client) on the planes, EV source ports from 61200
# (server) and 61700 (client), 320 each; TCP setup port random in 62000-62999. Outside
# Linux's default ephemeral range (32768-60999) and used by no other test or bench script.
set -uo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MRC=$REPO/build/release/src/mrc
DURATION=3600 FLAP=1:1s:5s FLAP_SIDE=client DROP=0.001 INTERVAL=5 SAMPLE=5 WARMUP="" OUT="" SIZE=1M
usage() {
  cat <<EOF
usage: bench/soak.sh [options]
  --duration S     seconds of sending (default $DURATION)
  --flap SPEC      mrc perf --flap-plane PLANE:DOWN_FOR:EVERY (default $FLAP: plane 1 down
                   for 1 s in every 5 s, first at 5 s)
  --flap-side X    which side's plane flaps: client (default), server or both; the other side
                   sees only the packets the flapping side no longer sends or receives
  --drop F         fraction of each side's sent packets dropped (default $DROP, 0.1 %)
  --size N         message size, K/M suffixes (default $SIZE)
  --interval S     mrc perf --interval: seconds per goodput sample (default $INTERVAL)
  --sample S       seconds between RSS samples (default $SAMPLE)
  --warmup S       RSS "start" is the first sample at or after S seconds (default: a tenth of
                   --duration, at most 60)
  --mrc PATH       the mrc binary (default build/release/src/mrc; not built by this script)
  --out DIR        keep the raw files there (perf JSON, logs, RSS samples, the report); by
                   default they go to a temporary directory, removed unless the run failed
A summary goes to stderr, the report (JSON) to stdout. Exit status: 0 if every byte sent was
verified with 0 mismatches and 0 error completions, 1 if not, 2 for a usage error; goodput
and RSS are reported only. Ports: UDP 4901/4902, EV source ports 61200+ and 61700+, TCP
62000-62999 (one run at a time).
EOF
}
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) DURATION=$2; shift 2 ;;
    --flap) FLAP=$2; shift 2 ;;
    --flap-side) FLAP_SIDE=$2; shift 2 ;;
    --drop) DROP=$2; shift 2 ;;
    --size) SIZE=$2; shift 2 ;;
    --interval) INTERVAL=$2; shift 2 ;;
    --sample) SAMPLE=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --mrc) MRC=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "soak.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
say() { echo "soak.sh: $*" >&2; }
is_number() { [[ $1 =~ ^[0-9]+([.][0-9]+)?$ ]]; }
for v in "$DURATION" "$INTERVAL" "$SAMPLE" "$DROP" ${WARMUP:+"$WARMUP"}; do
  is_number "$v" || { say "not a non-negative number: $v"; exit 2; }
done
awk -v d="$DURATION" -v i="$INTERVAL" -v s="$SAMPLE" 'BEGIN { exit !(d > 0 && i > 0 && s > 0) }' ||
  { say "--duration, --interval and --sample must be greater than zero"; exit 2; }
case "$FLAP_SIDE" in client|server|both) ;; *) say "--flap-side: client, server or both"; exit 2 ;; esac
[ -x "$MRC" ] || { say "$MRC is missing: build it (cmake --build --preset release) or give --mrc"; exit 2; }
[ -n "$WARMUP" ] || WARMUP=$(awk -v d="$DURATION" 'BEGIN { w = d / 10; print (w > 60 ? 60 : w) }')

KEEP=1
if [ -z "$OUT" ]; then OUT=$(mktemp -d /tmp/mrc-soak.XXXXXX); KEEP=0; fi
mkdir -p "$OUT" || exit 2
SERVER_PID="" CLIENT_PID="" SAMPLER_PID="" T0=$(date +%s.%N)
cleanup() {
  for p in $SAMPLER_PID $CLIENT_PID $SERVER_PID; do kill "$p" 2>/dev/null; done
  [ "$KEEP" = 1 ] || rm -rf "$OUT"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

server_flap=() client_flap=()
[ "$FLAP_SIDE" = client ] || server_flap=(--flap-plane "$FLAP")
[ "$FLAP_SIDE" = server ] || client_flap=(--flap-plane "$FLAP")
OOB=$((62000 + RANDOM % 1000))
# A hang guard only: the client sends for DURATION, then waits at most 180 s for the server.
GUARD=$(awk -v d="$DURATION" 'BEGIN { printf "%d", d + 300 }')
common=(--oob-port "$OOB" --json --interval "$INTERVAL" --drop "$DROP")
say "$DURATION s verified transfer of $SIZE messages, plane flap $FLAP on the $FLAP_SIDE side, drop $DROP each way; files in $OUT"
"$MRC" perf --server "${common[@]}" --port 4901 --ev-port-base 61200 "${server_flap[@]}" \
  >"$OUT/server.json" 2>"$OUT/server.log" &
SERVER_PID=$!
sleep 0.5
"$MRC" perf --client 127.0.0.1 "${common[@]}" --port 4902 --ev-port-base 61700 --verify \
  --size "$SIZE" --duration "$DURATION" "${client_flap[@]}" >"$OUT/client.json" 2>"$OUT/client.log" &
CLIENT_PID=$!

# RSS sampler: "seconds server_kib client_kib" while both processes live; past the guard it
# stops them (the test has hung).
rss_of() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
(
  start=$SECONDS
  while kill -0 "$CLIENT_PID" 2>/dev/null || kill -0 "$SERVER_PID" 2>/dev/null; do
    rs=$(rss_of "$SERVER_PID"); rc=$(rss_of "$CLIENT_PID")
    [ -n "$rs" ] && [ -n "$rc" ] && echo "$(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') $rs $rc"
    if [ $((SECONDS - start)) -gt "$GUARD" ]; then
      echo "soak.sh: still running after $GUARD s: stopping both processes" >&2
      kill "$CLIENT_PID" "$SERVER_PID" 2>/dev/null
      break
    fi
    sleep "$SAMPLE"
  done
) >"$OUT/rss.txt" &
SAMPLER_PID=$!

wait "$CLIENT_PID"; CLIENT_RC=$?
CLIENT_PID=""
# A client that failed leaves the server waiting for it: stop it now.
[ "$CLIENT_RC" -eq 0 ] || kill "$SERVER_PID" 2>/dev/null
wait "$SERVER_PID"; SERVER_RC=$?
SERVER_PID=""
kill "$SAMPLER_PID" 2>/dev/null; wait "$SAMPLER_PID" 2>/dev/null
SAMPLER_PID=""

python3 - "$OUT" "$CLIENT_RC" "$SERVER_RC" "$DURATION" "$INTERVAL" "$WARMUP" "$FLAP" "$FLAP_SIDE" "$DROP" "$SIZE" \
  >"$OUT/report.json" <<'EOF'
import json, sys
out, client_rc, server_rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
duration, interval, warmup = float(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
flap, flap_side, drop, size = sys.argv[7], sys.argv[8], float(sys.argv[9]), sys.argv[10]

def load(name):
    try:
        with open(f"{out}/{name}.json") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None

def tail(name, n=5):
    try:
        with open(f"{out}/{name}.log") as f:
            return [l.rstrip("\n") for l in f.readlines()[-n:]]
    except OSError:
        return []

client, server = load("client"), load("server")
# Goodput: the client's intervals of the sending phase, whole ones only (the drain after
# sending stops and a short last interval are left out).
goodput, prev = [], 0.0
for iv in (client or {}).get("intervals", []):
    dt = iv["t_s"] - prev
    prev = iv["t_s"]
    if dt >= interval / 2 and iv["t_s"] <= duration + interval / 2:
        goodput.append({"t_s": round(iv["t_s"], 3), "gbit_per_s": round(iv["gbit_per_s"], 4)})
k = max(1, round(len(goodput) / 10))
mean = lambda xs: sum(xs) / len(xs) if xs else 0.0
first = mean([g["gbit_per_s"] for g in goodput[:k]])
last = mean([g["gbit_per_s"] for g in goodput[-k:]])

samples = []
with open(f"{out}/rss.txt") as f:
    for line in f:
        parts = line.split()
        if len(parts) == 3:
            samples.append((float(parts[0]), int(parts[1]), int(parts[2])))
# Seconds since the server started. "start" is the first sample after the warm-up (the last
# sample, with after_warmup false, if the run ended first).
def rss(col):
    after = [s for s in samples if s[0] >= warmup]
    if not samples:
        return None
    first = after[0] if after else samples[-1]
    return {"start_kib": first[col], "start_at_s": first[0], "after_warmup": bool(after),
            "end_kib": samples[-1][col], "end_at_s": samples[-1][0], "max_kib": max(s[col] for s in samples)}

def plane_counts(side):
    if side is None:
        return None
    return [{k: p[k] for k in ("plane", "packets_sent", "retransmits", "impairment_drops")} for p in side["summary"]["planes"]]

errors = (client or {}).get("error_completions", 0) + (server or {}).get("error_completions", 0)
mismatches = (client or {}).get("mismatches", 0) + (server or {}).get("mismatches", 0)
verified = (client or {}).get("bytes_verified_total", 0)
ok = (client_rc == 0 and server_rc == 0 and client is not None and server is not None and client.get("ok") is True
      and errors == 0 and mismatches == 0 and verified > 0 and verified == client.get("bytes"))
report = {
    "ok": ok, "duration_s": duration, "flap_plane": flap, "flap_side": flap_side, "drop": drop, "size": size,
    "client_exit": client_rc, "server_exit": server_rc,
    "bytes_sent": (client or {}).get("bytes", 0), "bytes_verified": verified,
    "mismatches": mismatches, "error_completions": errors,
    "goodput": {"mean_gbit_per_s": mean([g["gbit_per_s"] for g in goodput]),
                "first_10pct_gbit_per_s": first, "last_10pct_gbit_per_s": last,
                "last_over_first": last / first if first > 0 else None,
                "intervals_per_tenth": k, "interval_s": interval, "intervals": goodput},
    "rss": {"warmup_s": warmup, "server": rss(1), "client": rss(2),
            "samples": [{"t_s": t, "server_kib": a, "client_kib": b} for t, a, b in samples]},
    "planes": {"client": plane_counts(client), "server": plane_counts(server)},
}
if not ok:
    report["client_log_tail"], report["server_log_tail"] = tail("client"), tail("server")
print(json.dumps(report, indent=2))

def mib(kib):
    return f"{kib / 1024:.1f} MiB"
lines = [f"soak: {duration:g} s verified transfer of {size} messages, plane flap {flap} ({flap_side} side), drop {drop:g} each way"]
if goodput:
    ratio = f"{last / first:.3f}" if first > 0 else "n/a"
    lines.append(f"goodput: mean {report['goodput']['mean_gbit_per_s']:.2f} Gbit/s over {len(goodput)} intervals of {interval:g} s; "
                 f"first 10 % {first:.2f}, last 10 % {last:.2f} (last/first {ratio})")
for side in ("server", "client"):
    r = report["rss"][side]
    if r:
        when = "after warm-up" if r["after_warmup"] else "the run ended before the warm-up"
        lines.append(f"RSS {side}: {mib(r['start_kib'])} at {r['start_at_s']:.0f} s ({when}), "
                     f"{mib(r['end_kib'])} at the end ({r['end_at_s']:.0f} s), max {mib(r['max_kib'])}")
lines.append(f"errors: {errors} error completions, {mismatches} mismatches; {verified} of {report['bytes_sent']} bytes verified")
lines.append("result: VERIFIED" if ok else f"result: FAILED (client exit {client_rc}, server exit {server_rc})")
if not ok:
    lines += [f"  client: {l}" for l in report["client_log_tail"]] + [f"  server: {l}" for l in report["server_log_tail"]]
print("\n".join(lines), file=sys.stderr)
EOF
PY_RC=$?
cat "$OUT/report.json"
[ $PY_RC -eq 0 ] || { KEEP=1; say "could not build the report; raw files kept in $OUT"; exit 1; }
if python3 -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1]))["ok"] else 1)' "$OUT/report.json"; then
  exit 0
fi
KEEP=1
say "raw files kept in $OUT"
exit 1
