#!/usr/bin/env bash
# mrc_bw server and client as two processes over two loopback planes each: a bandwidth sweep
# and a latency sweep, through lib_mrc.so and the software device only. No timing thresholds:
# the test checks that every size finished and printed a line.
set -euo pipefail
bw="$1"
export MRC_DEVICES="mrc0 planes=127.0.0.71,127.0.0.72 port=33001 ev-ports=33100;mrc1 planes=127.0.0.73,127.0.0.74 port=33001 ev-ports=33500"
out=$(mktemp)
trap 'rm -f "$out"; kill $server 2>/dev/null || true' EXIT
for mode in "" "--lat"; do
  timeout 120 "$bw" -d mrc0 -p 40011 $mode &
  server=$!
  timeout 120 "$bw" -d mrc1 -p 40011 $mode -m 1 -s 262144 -n 200 127.0.0.1 | tee "$out"
  wait $server
  lines=$(grep -cE '^ [0-9]+ ' "$out")
  [ "$lines" -eq 19 ] || { echo "expected 19 sizes, got $lines"; exit 1; }
  grep -q "mrc_bw: done" "$out"
done
echo "bw_process_test: bandwidth and latency sweeps completed"
