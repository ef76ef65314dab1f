#!/usr/bin/env bash
# bench/ocp_path.sh: the OCP C API over lib_mrc.so (tests/ocp/mrc_bw) against `mrc perf`, per
# message size, over 4 loopback planes each, the two measured one after the other at every size
# (--rounds times), so that the ratio compares runs of the same minute. No root needed.
#
#   bench/ocp_path.sh                         # 64 KiB .. 4 MiB, 2 rounds
#   bench/ocp_path.sh --sizes "65536 1048576" --rounds 3
#
# mrc_bw: 64 WRITEs in flight, one signalled per 16, 500 per size (devices mrc0/mrc1 on
# 127.0.0.51-54 and .55-58). mrc perf: 16 messages in flight, 3 s per size, at the OCP path's
# 4096-byte payloads (RoCE's largest path MTU, what OCP's verbs set; perf's own default follows
# the links' MTU, 8192 on loopback). Gbit/s of payload.
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"
SIZES="65536 262144 1048576 4194304" ROUNDS=2
usage() {
  cat <<EOF
usage: bench/ocp_path.sh [--sizes "BYTES ..."] [--rounds N]
  --sizes LIST   message sizes in bytes (default "$SIZES")
  --rounds N     measurements of each per size (default $ROUNDS); the table shows each pair
EOF
}
while [ $# -gt 0 ]; do
  case "$1" in
    --sizes) SIZES=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "ocp_path.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
done
MRC=build/release/src/mrc BW=build/release/tests/ocp/mrc_bw
for b in "$MRC" "$BW"; do [ -x "$b" ] || { echo "ocp_path.sh: $b is missing (cmake --build --preset release)" >&2; exit 1; }; done
export MRC_DEVICES="mrc0 planes=127.0.0.51,127.0.0.52,127.0.0.53,127.0.0.54 port=30001 ev-ports=30100;mrc1 planes=127.0.0.55,127.0.0.56,127.0.0.57,127.0.0.58 port=30001 ev-ports=30500"
PLANES=(127.0.0.1 127.0.0.2 127.0.0.3 127.0.0.4)

ocp() {  # SIZE -> Gbit/s
  timeout 60 "$BW" -d mrc0 -p 40021 >/dev/null 2>&1 &
  local server=$!
  sleep 0.5
  timeout 60 "$BW" -d mrc1 -p 40021 -m "$1" -s "$1" -n 500 127.0.0.1 2>/dev/null | awk -v s="$1" '$1 == s {print $3}'
  wait "$server" || true
}
perf() {  # SIZE -> Gbit/s
  timeout 30 "$MRC" perf -s --planes "${PLANES[@]}" --mtu 4096 >/dev/null 2>&1 &
  local server=$!
  sleep 0.4
  timeout 20 "$MRC" perf -c 127.0.0.1 --planes "${PLANES[@]}" --mtu 4096 --duration 3 --size "$1" --json 2>/dev/null |
    /usr/bin/python3 -c 'import json,sys; print(round(json.load(sys.stdin)["sweep"][0]["gbit_per_s"], 2))'
  wait "$server" || true
}

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%10s %6s %12s %12s %8s\n" size round "OCP mrc_bw" "mrc perf" ratio
for s in $SIZES; do
  for ((r = 1; r <= ROUNDS; r++)); do
    o=$(ocp "$s")
    p=$(perf "$s")
    printf "%10s %6s %12s %12s %8s\n" "$s" "$r" "${o:-failed}" "${p:-failed}" \
      "$(awk -v o="$o" -v p="$p" 'BEGIN { if (o > 0 && p > 0) printf "%.2f", o / p; else print "-" }')"
  done
done
