#!/usr/bin/env bash
# Alternates builds of mrc over the same `mrc perf` transfer on loopback planes (A B A B ...),
# so that a change is judged against the build before it in the same minutes of a shared,
# noisy machine. Per run: goodput and, from the client's --json summary, what the sender's
# engine saw: losses it declared that proved false, RACK losses, the congestion window at the
# end, datagrams per send call, the mean RTT and the SACKs that arrived out of order (stale).
set -euo pipefail

usage() {
  cat <<'EOF'
usage: bench/perf_ab.sh [options] MRC_BINARY [MRC_BINARY ...]
  --rounds N       alternations of all binaries (default 3)
  --duration S     seconds per transfer (default 4)
  --planes N       loopback planes 127.0.0.1..N on both sides (default 4)
  --args "ARGS"    more options for both sides' mrc perf, e.g. "--ev-burst 4"
  --json           one JSON object per run on stdout (else a table)
Runs `mrc perf -s` and `mrc perf -c 127.0.0.1 --json` of each binary in turn (server port 4791,
client 4807, setup port 18515: they must be free).
EOF
}

rounds=3 duration=4 planes=4 extra="" json=0 binaries=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --rounds) rounds="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --planes) planes="$2"; shift 2 ;;
    --args) extra="$2"; shift 2 ;;
    --json) json=1; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "perf_ab.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) binaries+=("$1"); shift ;;
  esac
done
[[ ${#binaries[@]} -ge 1 ]] || { echo "perf_ab.sh: name at least one mrc binary" >&2; exit 2; }
[[ "$planes" =~ ^[1-9]$|^1[0-6]$ ]] || { echo "perf_ab.sh: --planes takes 1..16" >&2; exit 2; }
for b in "${binaries[@]}"; do
  [[ -x "$b" ]] || { echo "perf_ab.sh: $b is not an executable" >&2; exit 2; }
done

plane_list=""
for ((p = 1; p <= planes; ++p)); do plane_list+=" 127.0.0.$p"; done
work=$(mktemp -d)
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

[[ $json -eq 1 ]] || printf '%-5s %-28s %8s %6s %6s %9s %9s %8s %7s\n' round binary Gbit/s false rack window pkts/send rtt_us stale
for ((r = 1; r <= rounds; ++r)); do
  for b in "${binaries[@]}"; do
    # shellcheck disable=SC2086  # plane list and extra options are words
    "$b" perf -s --planes $plane_list $extra >"$work/server.txt" 2>&1 &
    server_pid=$!
    sleep 0.5
    # shellcheck disable=SC2086
    if ! "$b" perf -c 127.0.0.1 --planes $plane_list $extra --duration "$duration" --json \
        >"$work/client.json" 2>"$work/client.err"; then
      echo "perf_ab.sh: $b's client failed:" >&2
      cat "$work/client.err" "$work/server.txt" >&2
      exit 1
    fi
    wait "$server_pid" || true
    server_pid=""
    /usr/bin/python3 - "$work/client.json" "$b" "$r" "$json" <<'PY'
import json, sys
path, binary, rnd, as_json = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4] == "1"
d = json.load(open(path))
s = d["summary"]
q = s["qps"][0]
packets = sum(p["packets_sent"] for p in s["planes"])
calls = sum(p["send_calls"] for p in s["planes"])
row = {
    "round": rnd, "binary": binary, "gbit_per_s": d["gbit_per_s"],
    "false_losses": q["false_losses"], "losses_rack": q["losses_rack"],
    "window_bytes": q["window_bytes"], "packets_per_send": packets / max(calls, 1),
    "rtt_avg_us": q["rtt_us"]["avg"], "stale_sacks": q["stale_sacks"],
}
if as_json:
    print(json.dumps(row))
else:
    print("%-5d %-28s %8.2f %6d %6d %9d %9.2f %8.0f %7d" % (
        rnd, binary[-28:], row["gbit_per_s"], row["false_losses"], row["losses_rack"],
        row["window_bytes"], row["packets_per_send"], row["rtt_avg_us"], row["stale_sacks"]))
PY
  done
done
