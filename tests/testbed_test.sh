#!/usr/bin/env bash
# Testbed.PerfVerifiedOverFourPlanes: mrc perf --verify between two network namespaces joined by
# four 500 Mbit/s planes (scripts/testbed.sh), with plane 2's links taken down and brought back
# up while the transfer runs, and plane 3's segmentation offloads turned on (`testbed.sh
# offload`), so that its bursts cross as 64 KB super-packets and arrive through UDP GRO. Passes when the client exits 0 having printed "every byte
# verified". Needs root and network namespaces; otherwise exits 77, which CTest reports as
# skipped. The testbed is always taken down, whatever happens.
#
#   tests/testbed_test.sh PATH/TO/mrc
set -uo pipefail

MRC=${1:?usage: testbed_test.sh PATH/TO/mrc}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TESTBED=$HERE/../scripts/testbed.sh
PREFIX=mrctest$$
BYTES=$((768 << 20))  # at most 2 Gbit/s over 4 x 500 Mbit/s: at least 3.2 s of transfer
OUT=$(mktemp -d)

# shellcheck source=tests/namespace_test_lib.sh
. "$HERE/namespace_test_lib.sh"
require_namespaces "$MRC"

server_pid="" client_pid=""
trap testbed_cleanup EXIT

"$TESTBED" --prefix "$PREFIX" --hosts 2 --planes 4 --rate 500mbit up >"$OUT/up" 2>&1 || {
  cat "$OUT/up"
  fail "testbed up failed"
}
server_planes=$("$TESTBED" --prefix "$PREFIX" addrs 0) || fail "testbed addrs 0"
client_planes=$("$TESTBED" --prefix "$PREFIX" addrs 1) || fail "testbed addrs 1"
echo "testbed $PREFIX: server $server_planes, client $client_planes"

udp_gso_state() { ip netns exec "$PREFIX-h$1" ethtool -k "h$1p$2" | awk '/^tx-udp-segmentation:/ {print $2}'; }
[ "$(udp_gso_state 0 3)" = off ] || fail "testbed up left plane 3's segmentation offloads on"
"$TESTBED" --prefix "$PREFIX" offload 3 sideways >/dev/null 2>&1 && fail "testbed offload accepted 'sideways'"
"$TESTBED" --prefix "$PREFIX" offload 3 on || fail "testbed offload 3 on"
[ "$(udp_gso_state 0 3)" = on ] && [ "$(udp_gso_state 1 3)" = on ] || fail "plane 3's offloads are not on at both ends"

timeout 120 ip netns exec "$PREFIX-h0" "$MRC" perf --server --planes "$server_planes" >"$OUT/server" 2>&1 &
server_pid=$!
timeout 120 ip netns exec "$PREFIX-h1" "$MRC" perf --client "${server_planes%%,*}" --planes "$client_planes" \
  --bytes "$BYTES" --verify --interval 0.5 >"$OUT/client" 2>&1 &
client_pid=$!

# Fail plane 2 once data flows (the first live line), bring it back 1 s later.
wait_for_data "$client_pid"
"$TESTBED" --prefix "$PREFIX" fail 2 || fail "testbed fail 2"
ip -n "$PREFIX-h0" -o link show h0p2 | grep -q 'state DOWN' || fail "plane 2 is not down after 'testbed fail 2'"
echo "plane 2 down at: $(tail -1 "$OUT/client")"
sleep 1
kill -0 "$client_pid" 2>/dev/null || fail "the transfer ended before plane 2 came back: the fault did not happen mid-run"
"$TESTBED" --prefix "$PREFIX" repair 2 || fail "testbed repair 2"
echo "plane 2 up at:   $(tail -1 "$OUT/client")"

wait_verified
# The datapath saw its plane go down (the interface's link, through rtnetlink's events).
grep -q "p2  DOWN" "$OUT/client" || fail "the client's live lines never showed plane 2 DOWN"
"$TESTBED" --prefix "$PREFIX" offload 3 off || fail "testbed offload 3 off"
[ "$(udp_gso_state 1 3)" = off ] || fail "plane 3's offloads are still on after 'offload 3 off'"
echo "PASSED: $((BYTES >> 20)) MiB verified over 4 planes (plane 3 with offloads) with plane 2 failed and repaired mid-run"
