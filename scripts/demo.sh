#!/usr/bin/env bash
# The main demo, no root needed: one MRC connection over 4 planes on loopback addresses
# (127.0.0.1-127.0.0.4) between two processes, a 2 GiB transfer with every byte verified at the
# receiver; plane 2 fails 1 s in and comes back 1 s later. Live per-plane throughput on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
MRC=${MRC:-build/release/src/mrc}
PORT=${MRC_DEMO_OOB_PORT:-18515}
"$MRC" perf --server --oob-port "$PORT" > /tmp/mrc-demo-server.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
"$MRC" perf --client 127.0.0.1 --oob-port "$PORT" --bytes $((2 << 30)) --verify \
  --fail-plane 2@1s+1s --interval 0.5 "$@"
wait $server
