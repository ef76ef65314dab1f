#!/usr/bin/env bash
# A second process opening a device that another process owns is told who owns it and what to
# change. The owner (mrc_ctl_events --serve) moves data over mrc0 and mrc1; a data program
# (mrc_integrity) then opens mrc0 too:
#   - the owner serves its control socket: the open gives a controller-only device, and the
#     data path (ibv_alloc_pd) is refused with EBUSY and one line naming the owner's pid and
#     command and saying to stop it or open another device;
#   - nobody serves it (the second process looks in another socket directory): the open itself
#     fails with EBUSY, and the line names the owner, the address and port, and the `port=` of
#     mrc0's entry of MRC_DEVICES (not a tool's option).
# No timing thresholds.
set -euo pipefail
owner="$1"
second="$2"
export XDG_RUNTIME_DIR=$(mktemp -d)
. "$(dirname "${BASH_SOURCE[0]}")/owner_lib.sh"
unset MRC_CTL_SOCKET
export MRC_CTL_DIR="$XDG_RUNTIME_DIR/mrc"
export MRC_DEVICES="mrc0 planes=127.0.1.21,127.0.1.22 port=37001 ev-ports=37100;mrc1 planes=127.0.1.23,127.0.1.24 port=37001 ev-ports=37500"
out="$XDG_RUNTIME_DIR/out"
fifo="$XDG_RUNTIME_DIR/stdin"

start_owner
comm=$(cat /proc/$pid/comm)

# Served: controller-only, the data path refused with the owner named.
set +e; "$second" mrc0 mrc1 10 >"$out" 2>&1; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "a second data path on mrc0 was accepted"
grep -q "errno 16" "$out" || fail "the refusal is not EBUSY"
grep -q "^mrc: device mrc0 is owned by process $pid ($comm): .*stop that process or open another device" "$out" ||
  fail "the refusal does not name the owner $pid ($comm) and what to do"
[ "$(grep -c "is owned by" "$out")" -eq 1 ] || fail "said more than once"

# Not served: the open fails, naming the owner and the configuration entry's port=.
set +e; MRC_CTL_DIR="$XDG_RUNTIME_DIR/elsewhere" "$second" mrc0 mrc1 10 >"$out" 2>&1; rc=$?; set -e
[ "$rc" -ne 0 ] || fail "opening an owned device without its controller was accepted"
grep -q "^mrc: cannot open device mrc0: cannot bind 127.0.1.21:37001: Address already in use (process $pid ($comm) uses this port: stop it, or choose another with port= in mrc0's entry of MRC_DEVICES, or open another device)" "$out" ||
  fail "the open's error does not name the owner and port="
if grep -q -- "--port" "$out"; then fail "the library named a tool's option"; fi
[ "$(grep -c "cannot open device" "$out")" -eq 1 ] || fail "said more than once"

exec 3>&-
wait "$pid" || fail "owner failed: $(cat "$XDG_RUNTIME_DIR/owner.log")"
pid=""
echo "device_owner_test: a second process is told who owns the device and what to change"
