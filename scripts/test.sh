#!/usr/bin/env bash
# One command: install dependencies (apt), build and run the whole test suite.
#
#   scripts/test.sh [--release-only] [CTEST ARGS...]
#
# 1. release preset: every test (CTEST ARGS go to this run, e.g. -LE soak).
# 2. debug and asan-ubsan presets (unless --release-only): the test binary's GoogleTest tests,
#    built without optimization and with AddressSanitizer + UBSan. The long simulations
#    (seed sweeps, the >4 GiB write) run in release only: the same code, hours under the
#    sanitizers.
# 3. lint: clang-format over every C++ file, clang-tidy over the files of the last commit
#    (scripts/lint.sh).
# Every stage runs; the exit status is non-zero if any failed, and the last lines say which.
set -uo pipefail
cd "$(dirname "$0")/.."
presets=1
if [ "${1:-}" = "--release-only" ]; then presets=0; shift; fi
scripts/install-deps.sh || exit 1

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

failed=()
stage() {  # NAME COMMAND...: runs a stage, records a failure
  echo "=== test.sh: $1"
  "${@:2}" || failed+=("$1")
}
release() {
  cmake --preset release >/dev/null && cmake --build --preset release && ctest --preset release "$@"
}
# The long simulations, left to the release run (GoogleTest names, a ctest regex).
slow='FortySeedsOfWireFaults|ThousandSeedsOfRandomFaults|SimRecovery\.|LargeWrite\.|SimIncast\.|SimRun\.ScenarioFilesLoadAndRun|SimPayloadFree\.'
checked() {  # PRESET: the test binary's GoogleTest tests in that preset
  cmake --preset "$1" >/dev/null && cmake --build --preset "$1" --target mrc_tests &&
    ctest --preset "$1" -L gtest -E "$slow"
}

stage "release: the whole suite" release "$@"
if [ "$presets" = 1 ]; then
  stage "debug: unit and simulation tests" checked debug
  stage "asan-ubsan: unit and simulation tests" checked asan-ubsan
fi
stage "lint: clang-format, clang-tidy" scripts/lint.sh
if [ ${#failed[@]} -gt 0 ]; then
  printf 'test.sh: FAILED: %s\n' "${failed[@]}"
  exit 1
fi
echo "test.sh: every stage passed"
