#!/usr/bin/env bash
# Testbed.Srv6PathsVerified: mrc perf --verify in SRv6 uSID path mode between two namespaces of
# the SRv6 testbed (scripts/testbed.sh --routing srv6: 2 planes, each a leaf-spine of 2 spines),
# with plane 0's spine 1 cut from the server's leaf (a silent black hole: only packets through
# that spine die) and repaired while the transfer runs. Passes when every byte is verified, both
# spines of each plane forwarded SRv6 packets through their uN SID (the EVs spray over the
# paths), and bad path settings are refused with the rule they break. Root only; otherwise exits
# 77 (skipped). The testbed is always taken down.
#
# Then the same spines chosen at the sender's leaf instead (uA: paths e00,e01): a verified
# transfer whose packets go up both uplinks of the client's leaf through its uA SIDs.
# Given mrc_bw, the same over the OCP device (`srv6=` in MRC_DEVICES, a peer's GID its locator).
# Given mrc_ctl_srv6 too, SRv6 EVs through OCP's controller API: connectionless probes on the
# SRv6 EV of each spine of each plane are answered, each through its spine's SID; and a write
# sweep whose QPs (both ends, as the MRC paper's symmetric EVs) use an explicit profile of SRv6
# EVs naming only spine 1 on plane 0 (both spines on plane 1) goes through spine 1's SID and not
# spine 0's (but for stray packets).
#
# With MRC_TEST_TORCH_PATH (the torch backend's build directory), a 2-rank torch all-reduce
# across the two hosts with MRC_SRV6_PATHS, every element checked, through the spines' SIDs.
#
#   tests/srv6_testbed_test.sh PATH/TO/mrc [PATH/TO/mrc_bw [PATH/TO/mrc_ctl_srv6]]
set -uo pipefail

MRC=${1:?usage: srv6_testbed_test.sh PATH/TO/mrc [PATH/TO/mrc_bw]}
BW=${2:-}
CTL_SRV6=${3:-}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TESTBED=$HERE/../scripts/testbed.sh
PREFIX=mrcs6$$
BYTES=$((1024 << 20))
OUT=$(mktemp -d)

# shellcheck source=tests/namespace_test_lib.sh
. "$HERE/namespace_test_lib.sh"
require_namespaces "$MRC"
command -v nft >/dev/null 2>&1 || skip "'nft' is missing (Debian package nftables)"

server_pid="" client_pid=""
trap testbed_cleanup EXIT

# Bad settings first: each refused at once, naming what is wrong.
expect_refused() {  # MESSAGE ARGS...
  local want=$1
  shift
  if "$MRC" perf --server "$@" >"$OUT/refused" 2>&1; then fail "mrc perf $* was accepted"; fi
  grep -qF -- "$want" "$OUT/refused" || fail "mrc perf $* did not say '$want'"
  rm -f "$OUT/refused"
}
expect_refused "--srv6-paths=zz: bad SRv6 path 'zz'" --planes ::1 --srv6-paths zz
expect_refused "is IPv4: SRv6 paths need IPv6 planes" --planes 127.0.0.1 --srv6-paths 200
expect_refused "bad plane address '[fd00::1'" --planes "[fd00::1"

"$TESTBED" --prefix "$PREFIX" --routing srv6 --planes 2 --spines 2 up >"$OUT/up" 2>&1 || fail "testbed up failed"
server_planes=$("$TESTBED" --prefix "$PREFIX" addrs 0) || fail "testbed addrs 0"
client_planes=$("$TESTBED" --prefix "$PREFIX" addrs 1) || fail "testbed addrs 1"
paths=$("$TESTBED" --prefix "$PREFIX" --json status | sed -n 's/.*"srv6_paths": "\([^"]*\)".*/\1/p')
[ "$paths" = "200,201" ] || fail "testbed status gave SRv6 paths '$paths', expected 200,201"
echo "testbed $PREFIX: server $server_planes, client $client_planes, paths $paths"

timeout 120 ip netns exec "$PREFIX-h0" "$MRC" perf --server --planes "$server_planes" --srv6-paths "$paths" >"$OUT/server" 2>&1 &
server_pid=$!
timeout 120 ip netns exec "$PREFIX-h1" "$MRC" perf --client "${server_planes%%,*}" --planes "$client_planes" \
  --srv6-paths "$paths" --bytes "$BYTES" --verify --interval 0.5 >"$OUT/client" 2>&1 &
client_pid=$!

wait_for_data "$client_pid"
"$TESTBED" --prefix "$PREFIX" fail 0 --spine 1 --leaf 0 || fail "testbed fail 0 --spine 1 --leaf 0"
# The cut must land mid-run; the transfer may then end while the spine is still down (a loaded
# host makes the cut's nft commands slow), which is a cut survived all the same.
kill -0 "$client_pid" 2>/dev/null || fail "the transfer ended before the spine was cut: the fault did not happen mid-run"
echo "spine 1 cut from leaf 0 at: $(tail -1 "$OUT/client")"
sleep 1
"$TESTBED" --prefix "$PREFIX" repair 0 --spine 1 --leaf 0 || fail "testbed repair"
echo "spine 1 back at:            $(tail -1 "$OUT/client")"

wait_verified

"$TESTBED" --prefix "$PREFIX" status | tee "$OUT/status"
"$TESTBED" --prefix "$PREFIX" --json status >"$OUT/status.json"
for p in 0 1; do
  for s in 0 1; do
    n=$(grep -o "\"plane\": $p, \"spine\": $s, [^}]*\"sid_packets\": [0-9]*" "$OUT/status.json" | grep -o '[0-9]*$')
    [ "${n:-0}" -gt 1000 ] || fail "plane $p spine $s passed ${n:-0} packets through its uN SID: the EVs did not spray over both spines"
  done
done
# The same spines chosen at the first hop: uA paths (the leaves' uplink SIDs e00,e01).
ua_paths=$(sed -n 's/.*"srv6_ua_paths": "\([^"]*\)".*/\1/p' "$OUT/status.json")
[ "$ua_paths" = "e00,e01" ] || fail "testbed status gave uA paths '$ua_paths', expected e00,e01"
ua_of() {  # PLANE LEAF SPINE: packets that leaf sent up to that spine through its uA SID
  "$TESTBED" --prefix "$PREFIX" --json status | grep -o "\"plane\": $1, \"leaf\": $2, [^]]*" |
    grep -o "\"spine\": $3, [^}]*\"sid_packets\": [0-9]*" | grep -o '[0-9]*$'
}
timeout 60 ip netns exec "$PREFIX-h0" "$MRC" perf --server --planes "$server_planes" --srv6-paths "$ua_paths" >"$OUT/server-ua" 2>&1 &
server_pid=$!
timeout 60 ip netns exec "$PREFIX-h1" "$MRC" perf --client "${server_planes%%,*}" --planes "$client_planes" \
  --srv6-paths "$ua_paths" --bytes $((256 << 20)) --verify >"$OUT/client-ua" 2>&1 ||
  { cat "$OUT/client-ua"; fail "the transfer over uA paths failed"; }
wait "$server_pid" || true
server_pid=""
grep -q "every byte verified" "$OUT/client-ua" || fail "the transfer over uA paths was not verified"
for p in 0 1; do
  for s in 0 1; do
    n=$(ua_of "$p" 1 "$s")
    [ "${n:-0}" -gt 1000 ] || fail "plane $p: the client's leaf sent ${n:-0} packets up to spine $s through its uA SID"
  done
done
echo "uA paths $ua_paths: 256 MiB verified, the client's leaf sent up both uplinks of each plane through its uA SIDs"
sid_total() {  # packets through every spine's uN SID
  "$TESTBED" --prefix "$PREFIX" --json status | grep -o '"sid_packets": [0-9]*' | awk '{s += $2} END {print s + 0}'
}
sid_of() {  # PLANE SPINE: packets through that spine's uN SID
  "$TESTBED" --prefix "$PREFIX" --json status |
    grep -o "\"plane\": $1, \"spine\": $2, [^}]*\"sid_packets\": [0-9]*" | grep -o '[0-9]*$'
}
ocp=""
if [ -n "$BW" ]; then
  sids_before=$(sid_total)
  devices="mrc0 planes=$server_planes srv6=$paths;mrc1 planes=$client_planes srv6=$paths"
  ip netns exec "$PREFIX-h0" env MRC_CTL_DIR="$OUT/ctl0" MRC_DEVICES="$devices" timeout 60 "$BW" \
    -d mrc0 -p 40051 >"$OUT/bw-server" 2>&1 &
  server_pid=$!
  ip netns exec "$PREFIX-h1" env MRC_CTL_DIR="$OUT/ctl1" MRC_DEVICES="$devices" timeout 60 "$BW" \
    -d mrc1 -p 40051 -m 4096 -s 1048576 -n 20 "${server_planes%%,*}" >"$OUT/bw-client" 2>&1 ||
    fail "the OCP sweep over SRv6 paths failed"
  wait "$server_pid" || fail "the OCP server over SRv6 paths failed"
  server_pid=""
  grep -q "mrc_bw: done" "$OUT/bw-client" || fail "the OCP sweep over SRv6 paths did not finish"
  [ "$(sid_total)" -gt $((sids_before + 10000)) ] ||
    fail "the OCP sweep did not go through the spines' uN SIDs ($sids_before before, $(sid_total) after)"
  ocp="; OCP's write sweep over srv6= devices finished"
fi
if [ -n "$BW" ] && [ -n "$CTL_SRV6" ]; then
  # Probes first (replies come to the device port, so nothing else may hold it in h1). The
  # counters are read before the serving device opens and it serves until the probe is done:
  # reading them can take seconds on a loaded host.
  p0=$(sid_of 0 0) p1=$(sid_of 1 1)
  ip netns exec "$PREFIX-h0" env MRC_CTL_DIR="$OUT/ctl0" MRC_DEVICES="$devices" timeout 60 "$CTL_SRV6" \
    serve mrc0 60 >"$OUT/serve" 2>&1 &
  server_pid=$!
  for _ in $(seq 100); do grep -q "serving mrc0" "$OUT/serve" && break; sleep 0.1; done
  ip netns exec "$PREFIX-h1" env MRC_CTL_DIR="$OUT/ctl1" MRC_DEVICES="$devices" timeout 30 "$CTL_SRV6" \
    probe mrc1 "${paths}" "$server_planes" >"$OUT/probe" 2>&1 || { cat "$OUT/probe"; fail "SRv6 EV probes were not all answered"; }
  grep "mrc_ctl_srv6:" "$OUT/probe"
  kill "$server_pid" 2>/dev/null
  wait "$server_pid"
  server_pid=""
  [ "$(sid_of 0 0)" -gt "$p0" ] && [ "$(sid_of 1 1)" -gt "$p1" ] || fail "the probes did not go through the spines their EVs name"
  s00=$(sid_of 0 0) s01=$(sid_of 0 1)
  ip netns exec "$PREFIX-h0" env MRC_CTL_DIR="$OUT/ctl0" MRC_DEVICES="$devices" timeout 60 "$BW" \
    -d mrc0 -p 40052 --srv6-evs 1:201,2:200,2:201 >"$OUT/bw-server2" 2>&1 &
  server_pid=$!
  ip netns exec "$PREFIX-h1" env MRC_CTL_DIR="$OUT/ctl1" MRC_DEVICES="$devices" timeout 60 "$BW" \
    -d mrc1 -p 40052 -m 65536 -s 1048576 -n 600 --srv6-evs 1:201,2:200,2:201 "${server_planes%%,*}" \
    >"$OUT/bw-client2" 2>&1 &
  client_pid=$!
  if [ -n "${MRC_TEST_MRCCTL:-}" ]; then  # the controller CLI names the SRv6 EVs by address
    mrcctl_h1() { ip netns exec "$PREFIX-h1" env MRC_CTL_DIR="$OUT/ctl1" "$MRC_TEST_MRCCTL" "$@"; }
    for _ in $(seq 100); do  # until the client's QP of profile 9 is connected (stdout is buffered)
      mrcctl_h1 ev show mrc1 profile 9 >"$OUT/mrcctl-evs" 2>&1 && grep -q "path 201" "$OUT/mrcctl-evs" && break
      sleep 0.1
    done
    grep -q "port 1  path 201" "$OUT/mrcctl-evs" ||
      { cat "$OUT/mrcctl-evs"; fail "mrcctl ev show did not give the EVs' paths during the sweep"; }
    mrcctl_h1 ev profile show mrc1 >"$OUT/mrcctl" 2>&1 ||
      { cat "$OUT/mrcctl"; fail "mrcctl ev profile show failed during the sweep"; }
    grep -q "fd00:0:201::/1 fd00:1:200::/2 fd00:1:201::/2" "$OUT/mrcctl" ||
      { cat "$OUT/mrcctl"; fail "mrcctl did not list profile 9's SRv6 EVs by address"; }
  fi
  wait "$client_pid" || { cat "$OUT/bw-client2"; fail "the sweep with an explicit SRv6 EV profile failed"; }
  client_pid=""
  wait "$server_pid" || fail "its server failed"
  server_pid=""
  d00=$(($(sid_of 0 0) - s00)) d01=$(($(sid_of 0 1) - s01))
  echo "explicit SRv6 EVs 1:201,2:200,2:201: plane 0 spine 0 SID +$d00 packets, spine 1 +$d01"
  [ "$d01" -gt 10000 ] || fail "plane 0's spine 1 carried $d01 packets of a sweep whose EVs name it"
  # Spine 0 of plane 0: only what no EV of the profile names (the probes, two per plane and
  # spine, and any packet sent before the profile's EVs were in use).
  [ "$d00" -lt $((d01 / 100)) ] || fail "plane 0's spine 0 carried $d00 packets, though no EV names it (spine 1: $d01)"
  ocp+="; an explicit profile of SRv6 EVs steered the sweep (plane 0: spine 0 +$d00, spine 1 +$d01 packets) and SRv6 EV probes were answered"
fi
if [ -n "${MRC_TEST_TORCH_PATH:-}" ] && /usr/bin/python3 -c "import torch" 2>/dev/null; then
  before=$(sid_total)
  for r in 0 1; do
    planes=$server_planes
    [ "$r" = 0 ] || planes=$client_planes
    ip netns exec "$PREFIX-h$r" env PYTHONPATH="$MRC_TEST_TORCH_PATH" MRC_PLANES="$planes" \
      MRC_SRV6_PATHS="$paths" MRC_TIMEOUT_S=60 timeout 120 /usr/bin/python3 -c "
import sys, torch, torch.distributed as dist, mrc_torch
rank = int(sys.argv[1])
dist.init_process_group('mrc', init_method='file://$OUT/torch-store', rank=rank, world_size=2)
t = torch.arange(1 << 22, dtype=torch.float32) * (rank + 1)
dist.all_reduce(t)
assert torch.equal(t, torch.arange(1 << 22, dtype=torch.float32) * 3), 'wrong sum'
dist.destroy_process_group()
print('torch all-reduce over SRv6 paths ok')" "$r" >"$OUT/torch$r" 2>&1 &
    eval "torch_pid$r=\$!"
  done
  # shellcheck disable=SC2154
  wait "$torch_pid0" && wait "$torch_pid1" || { cat "$OUT/torch0" "$OUT/torch1"; fail "the torch all-reduce over SRv6 paths failed"; }
  [ "$(sid_total)" -gt $((before + 1000)) ] || fail "the torch all-reduce did not go through the spines' SIDs"
  ocp+="; a 2-rank torch all-reduce (16 MiB) over MRC_SRV6_PATHS, every element right"
fi
echo "PASSED: $((BYTES >> 20)) MiB verified over SRv6 paths, both spines of each plane used, a spine cut and repaired mid-run; uA paths verified through the leaves' uA SIDs$ocp"
