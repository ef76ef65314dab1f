# Shared by the OCP shell tests that need a device owner: start_owner runs
# "$owner --serve mrc0 mrc1" fed by the fifo "$fifo" (held open on fd 3), logging to
# "$XDG_RUNTIME_DIR/owner.log"; sets $pid, and fails (through the caller's fail) unless the
# owner reports "ready qpn" within 30 s. Source it once XDG_RUNTIME_DIR is the test's own
# temporary directory. Also the tests' common ending: cleanup (on EXIT: the
# owner's input closed, the owner waited for, the runtime directory removed) and fail (prints
# "$out" if there is one).
pid=""
cleanup() { exec 3>&- 2>/dev/null || true; [ -n "$pid" ] && wait "$pid" 2>/dev/null || true; rm -rf "$XDG_RUNTIME_DIR"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; [ -f "${out:-}" ] && cat "$out"; exit 1; }

start_owner() {
  mkfifo "$fifo"
  "$owner" --serve mrc0 mrc1 <"$fifo" >"$XDG_RUNTIME_DIR/owner.log" 2>&1 &
  pid=$!
  exec 3>"$fifo"
  # "^ready qpn", not "ready": "Address already in use" contains it, and a failed owner then
  # looked ready.
  for _ in $(seq 1 300); do
    grep -q "^ready qpn" "$XDG_RUNTIME_DIR/owner.log" 2>/dev/null && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  grep -q "^ready qpn" "$XDG_RUNTIME_DIR/owner.log" || { cat "$XDG_RUNTIME_DIR/owner.log"; fail "owner not ready"; }
}
