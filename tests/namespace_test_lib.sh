# Shared by the namespace tests (testbed_test.sh, xdp_backend_test.sh), sourced after they set
# OUT (their scratch directory): skip (exit 77, which CTest shows as skipped), fail (prints the
# outputs kept in OUT, exits 1) and the checks that decide whether the test can run here.

skip() {
  echo "SKIPPED: $*"
  exit 77
}

fail() {
  echo "FAILED: $*"
  for f in "$OUT"/*; do
    [ -f "$f" ] && { echo "--- $(basename "$f") output:"; cat "$f"; }
  done
  exit 1
}

# Root, the tools the testbed needs, network namespaces and the mrc binary $1.
require_namespaces() {
  [ "$(id -u)" -eq 0 ] || skip "needs root (it creates network namespaces); run as root to include it"
  for tool in ip:iproute2 tc:iproute2 ethtool:ethtool flock:util-linux unshare:util-linux; do
    command -v "${tool%%:*}" >/dev/null 2>&1 ||
      skip "'${tool%%:*}' is missing (Debian package ${tool#*:}; scripts/install-deps.sh installs it)"
  done
  unshare --net true 2>/dev/null || skip "this kernel or container does not allow network namespaces"
  [ -x "$1" ] || fail "no mrc binary at $1"
}

# The end of a verified `mrc perf` transfer: prints the client's output, and fails unless both
# ends exited 0 and the client printed its byte check.
check_verified() {  # CLIENT_RC SERVER_RC
  cat "$OUT/client"
  [ "$1" -eq 0 ] || fail "mrc perf client exited $1"
  grep -q "every byte verified" "$OUT/client" || fail "the client did not print 'every byte verified'"
  [ "$2" -eq 0 ] || fail "mrc perf server exited $2"
}

# Waits (up to 30 s) until the client's output in $OUT/client shows a live line, or fails.
wait_for_data() {  # CLIENT_PID
  for _ in $(seq 1 300); do
    grep -q 'Gbit/s |' "$OUT/client" 2>/dev/null && break
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  grep -q 'Gbit/s |' "$OUT/client" || fail "no data flowed within 30 s"
}

# The EXIT trap of a test on the testbed: ends $client_pid and $server_pid, takes the testbed
# ($TESTBED, $PREFIX) down, removes $OUT.
testbed_cleanup() {
  for pid in $client_pid $server_pid; do kill "$pid" 2>/dev/null; done
  "$TESTBED" --prefix "$PREFIX" down >/dev/null || echo "warning: '$TESTBED --prefix $PREFIX down' failed"
  rm -rf "$OUT"
}

# Waits for $client_pid and $server_pid (cleared once ended), then check_verified.
wait_verified() {
  local client_rc server_rc
  wait "$client_pid"
  client_rc=$?
  client_pid=""
  wait "$server_pid"
  server_rc=$?
  server_pid=""
  check_verified "$client_rc" "$server_rc"
}
