#!/usr/bin/env bash
# `mrc run` gives a program mrc's devices as a kernel would: kernel_view (libibverbs and sysfs
# only, as the MRC NCCL plugin discovers devices) finds mrc0 and mrc1 through the preloaded
# lib_mrc.so, reads each one's GID type and device path from /sys/class/infiniband, which exists
# for the program only (a private mount namespace); the rest of /sys/class stays visible; the
# program's exit status is mrc run's. Without mrc run, kernel_view finds no mrc device. As an
# unprivileged user, mrc run works in a user namespace or says clearly why it cannot.
#   run_test.sh <mrc> <kernel_view>
set -euo pipefail
mrc="$1"
view="$2"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
unset MRC_DEVICES MRC_CONFIG
export MRC_CTL_SOCKET=off
cat > "$dir/devices.conf" <<'CONF'
mrc0 planes=127.0.3.11,127.0.3.12 port=39401 ev-ports=39500
mrc1 planes=127.0.3.13 port=39401 ev-ports=39800
CONF
chmod 644 "$dir/devices.conf"
before=$(ls -la /sys/class/infiniband 2>&1 || true)

"$mrc" run --devices "$dir/devices.conf" -- "$view" mrc0 > "$dir/out" 2>&1 || { cat "$dir/out"; fail "mrc0 under mrc run"; }
grep -q "mrc0: 2 ports, link layer Ethernet, GID 3 RoCE v2, device /sys/class/infiniband/.bus/e000:00:00.0" "$dir/out" ||
  { cat "$dir/out"; fail "mrc0's view"; }
"$mrc" run --devices "$dir/devices.conf" -- "$view" mrc1 > "$dir/out" 2>&1 || { cat "$dir/out"; fail "mrc1 under mrc run"; }
grep -q "mrc1: 1 ports, .*device /sys/class/infiniband/.bus/e000:01:00.0" "$dir/out" || fail "mrc1 has one port and its own bus path"
"$mrc" run --devices "$dir/devices.conf" -- test -e /sys/class/net/lo || fail "/sys/class/net hidden"
"$mrc" run --devices "$dir/devices.conf" -- sh -c 'case "$LD_PRELOAD" in */lib_mrc.so*) exit 0;; esac; exit 1' ||
  fail "lib_mrc.so is not preloaded"
MRC_DEVICES="mrc9 planes=127.0.3.14" "$mrc" run --devices "$dir/devices.conf" -- sh -c '[ -z "${MRC_DEVICES:-}" ] && [ -n "$MRC_CONFIG" ]' ||
  fail "--devices must replace MRC_DEVICES"
set +e
"$mrc" run --devices "$dir/devices.conf" -- sh -c 'exit 7'; rc=$?
"$mrc" run --devices "$dir/devices.conf" -- /nonexistent/program 2> "$dir/err"; rc_missing=$?
"$view" mrc0 > /dev/null 2>&1; rc_plain=$?
set -e
[ "$rc" -eq 7 ] || fail "exit status $rc, expected the program's 7"
[ "$rc_missing" -eq 127 ] && grep -q "mrc run: cannot run /nonexistent/program" "$dir/err" || fail "a missing program"
[ "$rc_plain" -ne 0 ] || fail "kernel_view found mrc0 without mrc run"
[ "$(ls -la /sys/class/infiniband 2>&1 || true)" = "$before" ] || fail "the host's /sys/class/infiniband changed"

# Unprivileged: a user namespace, or a clear refusal.
if [ "$(id -u)" -eq 0 ] && command -v setpriv > /dev/null; then
  chmod 755 "$dir"
  set +e
  setpriv --reuid=65534 --regid=65534 --clear-groups "$mrc" run --devices "$dir/devices.conf" -- "$view" mrc0 > "$dir/out" 2>&1
  rc=$?
  set -e
  if [ "$rc" -ne 0 ]; then
    grep -q "mrc run: cannot give the program a /sys/class/infiniband of the mrc devices: .*run as root, allow user namespaces" "$dir/out" ||
      { cat "$dir/out"; fail "unprivileged mrc run failed without saying why"; }
  else
    grep -q "mrc0: 2 ports" "$dir/out" || fail "unprivileged view"
  fi
fi
echo "run_test: mrc run shows mrc's devices as kernel devices"
