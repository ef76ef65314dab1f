#!/usr/bin/env bash
# One command: install dependencies (apt), build (release preset) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release

# Many tests bind fixed UDP/TCP ports inside the kernel's ephemeral range (32768-60999). A socket
# that another test (or a resolver lookup) binds to port 0 on the wildcard address could take one
# of them first and make that test's bind fail. As root, these ranges are reserved from automatic
# allocation for the run (explicit binds still work) and the old setting is restored afterwards;
# 40100-40999, 51000-51999 and 60600-60999 stay for the kernel to hand out.
test_ports="30000-40099,41000-50999,52000-60599"
reserved=/proc/sys/net/ipv4/ip_local_reserved_ports
if [ -w "$reserved" ]; then
  old_reserved=$(cat "$reserved")
  trap 'echo "$old_reserved" > "$reserved"' EXIT
  echo "${old_reserved:+$old_reserved,}$test_ports" > "$reserved"
else
  echo "test.sh: not root, so test ports $test_ports stay in the ephemeral range;" \
       "a test may rarely fail to bind one (EADDRINUSE)" >&2
fi
ctest --preset release "$@"
