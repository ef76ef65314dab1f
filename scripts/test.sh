#!/usr/bin/env bash
# One command: install dependencies (apt), build (release preset) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
ctest --preset release "$@"
