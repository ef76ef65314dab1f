#!/usr/bin/env bash
# One command: install dependencies (apt), build (release preset) and run the demos: first the
# deterministic simulator (4 planes, plane 2 failing mid-transfer and coming back), then the same
# over real UDP sockets between two processes on loopback (scripts/demo.sh), every byte verified.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
./build/release/src/mrc sim scenarios/four-planes-failover.toml --quiet
echo
exec scripts/demo.sh "$@"
