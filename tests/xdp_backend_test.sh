#!/usr/bin/env bash
# Testbed.XdpBackendVerified: the AF_XDP backend (mrc perf --backend xdp) between two network
# namespaces joined by two veth planes (scripts/testbed.sh), as a user runs it:
#   1. a verified transfer over both planes, with the impairments on top (1 % of packets
#      reordered, plane 1 down from 0.5 s to 1.5 s): every byte must arrive and match;
#   2. while it runs, a second xdp host on the same interfaces is refused, naming why, and
#      garbage datagrams to the server's port (a kernel UDP socket's, so no RoCEv2 ICRC) are
#      refused and counted (mrc_plane_xdp_receive_refused_total) without hurting the transfer;
#   3. once both processes are gone, no XDP program is left on any interface (a BPF link
#      detaches with its process), after a clean exit and after kill -9;
#   4. given mrc_bw, the OCP device on the xdp backend in secure mode (encrypt): its QPs agree
#      keys over the link (KEY OFFERs carry the RoCEv2 ICRC too) and a bandwidth sweep finishes.
# Needs root, network namespaces and AF_XDP; otherwise exits 77 (CTest: skipped).
#
#   tests/xdp_backend_test.sh PATH/TO/mrc [PATH/TO/mrc_bw]
set -uo pipefail

MRC=${1:?usage: xdp_backend_test.sh PATH/TO/mrc [PATH/TO/mrc_bw]}
BW=${2:-}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TESTBED=$HERE/../scripts/testbed.sh
PREFIX=mrcxdp$$
SECONDS_OF_TRANSFER=6  # long enough for the checks made while it runs, on any machine
OUT=$(mktemp -d)

# shellcheck source=tests/namespace_test_lib.sh
. "$HERE/namespace_test_lib.sh"
require_namespaces "$MRC"

pids=""
cleanup() {
  for pid in $pids; do kill "$pid" 2>/dev/null; done
  "$TESTBED" --prefix "$PREFIX" down >/dev/null || echo "warning: '$TESTBED --prefix $PREFIX down' failed"
  rm -rf "$OUT"
}
trap cleanup EXIT

"$TESTBED" --prefix "$PREFIX" --hosts 2 --planes 2 up >"$OUT/up" 2>&1 || {
  cat "$OUT/up"
  fail "testbed up failed"
}
server_planes=$("$TESTBED" --prefix "$PREFIX" addrs 0) || fail "testbed addrs 0"
client_planes=$("$TESTBED" --prefix "$PREFIX" addrs 1) || fail "testbed addrs 1"
in_ns() { local host=$1; shift; ip netns exec "$PREFIX-h$host" "$@"; }
xdp_programs() {  # interfaces of both hosts that carry an XDP program
  for h in 0 1; do ip -n "$PREFIX-h$h" -o link show | grep -E 'xdp(generic|drv)?[ /]' ; done
}

# 1. A verified transfer with impairments.
timeout 120 ip netns exec "$PREFIX-h0" "$MRC" perf --server --backend xdp --planes "$server_planes" \
  --metrics-port 9477 >"$OUT/server" 2>&1 &
server_pid=$!
pids="$server_pid"
sleep 0.3

timeout 120 ip netns exec "$PREFIX-h1" "$MRC" perf --client "${server_planes%%,*}" --backend xdp \
  --planes "$client_planes" --duration "$SECONDS_OF_TRANSFER" --verify --reorder 0.01 --fail-plane 1@0.5s+1s >"$OUT/client" 2>&1 &
client_pid=$!
pids="$server_pid $client_pid"

# 2. While it runs, a second xdp host on the same interfaces (other ports) is refused.
for _ in $(seq 1 300); do
  grep -q 'Gbit/s |' "$OUT/client" 2>/dev/null && break
  kill -0 "$client_pid" 2>/dev/null || break
  sleep 0.1
done
if grep -q "no AF_XDP sockets\|XDP program: Invalid argument\|Operation not supported" "$OUT/client" "$OUT/server"; then
  skip "this kernel cannot run the xdp backend: $(grep -h 'mrc perf:' "$OUT/client" "$OUT/server" | head -1)"
fi
in_ns 1 timeout 20 "$MRC" perf --client "${server_planes%%,*}" --backend xdp --planes "$client_planes" \
  --port 4801 --ev-port-base 53000 --bytes 1M >"$OUT/second" 2>&1 && fail "a second xdp host on the same interfaces was accepted"
grep -q "in use by another mrc host" "$OUT/second" || fail "the second xdp host's error does not say why"
echo "second host refused: $(tail -1 "$OUT/second")"
in_ns 1 bash -c 'for i in $(seq 1 200); do echo "not an MRC packet $i" >/dev/udp/'"${server_planes%%,*}"'/4791; done' ||
  fail "could not send the garbage datagrams"
sleep 0.3  # the server publishes its metrics every 100 ms
metrics=$(in_ns 0 bash -c 'exec 3<>/dev/tcp/127.0.0.1/9477 && printf "GET /metrics HTTP/1.0\r\n\r\n" >&3 && cat <&3') ||
  fail "could not read the server's metrics"
refused=$(echo "$metrics" | awk '$1 ~ /^mrc_plane_xdp_receive_refused_total\{.*plane="0"/ {print $2}')
[ "${refused:-0}" -ge 1 ] 2>/dev/null || fail "the garbage was not counted as refused (mrc_plane_xdp_receive_refused_total: '${refused:-none}')"
echo "garbage refused and counted: $refused frames"
wait "$client_pid"
client_rc=$?
wait "$server_pid"
server_rc=$?
pids=""
check_verified "$client_rc" "$server_rc"
grep -q "datapath: xdp:" "$OUT/client" || fail "the client did not run on the xdp backend"

# 3. Nothing left attached: after the clean exits above, and after kill -9.
[ -z "$(xdp_programs)" ] || fail "XDP programs left after a clean exit: $(xdp_programs)"
# A client without a server holds its device while it tries to connect (5 s).
in_ns 1 "$MRC" perf --client "${server_planes%%,*}" --backend xdp --planes "$client_planes" >"$OUT/client" 2>&1 &
killed=$!
pids="$killed"
for _ in $(seq 1 50); do [ -n "$(xdp_programs)" ] && break; sleep 0.1; done
[ -n "$(xdp_programs)" ] || fail "the xdp client attached no program"
kill -9 "$killed"
wait "$killed" 2>/dev/null
pids=""
for _ in $(seq 1 50); do [ -z "$(xdp_programs)" ] && break; sleep 0.1; done
[ -z "$(xdp_programs)" ] || fail "XDP programs left after kill -9: $(xdp_programs)"
# 4. The OCP device on the xdp backend, secure.
secure=""
if [ -n "$BW" ]; then
  head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$OUT/key"
  chmod 600 "$OUT/key"
  devices="mrc0 planes=$server_planes backend=xdp secure=encrypt key-file=$OUT/key"
  devices="$devices;mrc1 planes=$client_planes backend=xdp secure=encrypt key-file=$OUT/key"
  in_ns 0 env MRC_CTL_DIR="$OUT/ctl0" MRC_DEVICES="$devices" timeout 60 "$BW" -d mrc0 -p 40041 \
    >"$OUT/bw-server" 2>&1 &
  pids="$!"
  in_ns 1 env MRC_CTL_DIR="$OUT/ctl1" MRC_DEVICES="$devices" timeout 60 "$BW" -d mrc1 -p 40041 \
    -m 4096 -s 1048576 -n 20 "${server_planes%%,*}" >"$OUT/bw-client" 2>&1 ||
    { cat "$OUT/bw-client" "$OUT/bw-server"; fail "secure OCP sweep over the xdp backend failed"; }
  wait "$pids" || { cat "$OUT/bw-server"; fail "secure OCP server over the xdp backend failed"; }
  pids=""
  grep -q "mrc_bw: done" "$OUT/bw-client" || fail "secure OCP sweep over the xdp backend did not finish"
  secure="; the OCP device agreed keys and moved data encrypted over it"
fi
echo "PASSED: $SECONDS_OF_TRANSFER s of transfer verified over the xdp backend with reordering and a plane cut; a second host refused; garbage refused and counted; nothing left attached$secure"
