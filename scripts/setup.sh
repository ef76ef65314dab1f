#!/usr/bin/env bash
# One command: install dependencies (apt), build (release preset) and run the main demo: one
# MRC connection over 4 planes in the deterministic simulator, plane 2 failing mid-transfer and
# coming back, every byte verified.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
./build/release/src/mrc sim scenarios/four-planes-failover.toml --quiet
echo
exec scripts/demo.sh "$@"
