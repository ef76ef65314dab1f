#!/usr/bin/env bash
# net_harness (NCCL's ncclNet_v8 calls, without NCCL) over the mini plugin (an ncclNet_v8 plugin
# over lib_mrc.so) under `mrc run`, and the harness's refusals. Each rank is a process that owns
# one mrc device: under `mrc run --devices all.conf` (mrc0 and mrc1, two loopback planes each,
# the sysfs view of both), rank 0's configuration is a.conf (mrc0, and mrc1's planes as a peer)
# and rank 1's b.conf (the other way round), given with --env0/--env1.
#   harness_test.sh MODE <mrc> <net_harness> <mini plugin> [<missing-symbol plugin> <v7-only plugin>]
# MODE:
#   data      every default size both ways, 8 in flight, --json checked; one in flight with
#             iflush; the two ranks as two `mrc run` processes meeting on a socket (--rank)
#   refusals  a plugin path that does not exist, a plugin with an undefined symbol (dlopen
#             RTLD_NOW's dlerror), one without ncclNetPlugin_v8, the mini plugin outside
#             `mrc run` (no sysfs entry): each fails with a message saying so
#   dead-peer rank 1 exits after 20 messages: rank 0 says its peer died, the run fails
# Skipped (77) where `mrc run` cannot run. Loopback 127.0.5.1-4, UDP ports 59001-59999.
set -uo pipefail
mode=$1 mrc=$2 harness=$3 plugin=$4
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
unset MRC_DEVICES MRC_CONFIG NCCL_DEBUG
export MRC_CTL_SOCKET=off
cat > "$dir/all.conf" <<'CONF'
mrc0 planes=127.0.5.1,127.0.5.2 port=59001 ev-ports=59100
mrc1 planes=127.0.5.3,127.0.5.4 port=59001 ev-ports=59500
CONF
cat > "$dir/a.conf" <<'CONF'
mrc0 planes=127.0.5.1,127.0.5.2 port=59001 ev-ports=59100
peer planes=127.0.5.3,127.0.5.4 port=59001
CONF
cat > "$dir/b.conf" <<'CONF'
mrc1 planes=127.0.5.3,127.0.5.4 port=59001 ev-ports=59500
peer planes=127.0.5.1,127.0.5.2 port=59001
CONF
chmod 755 "$dir"
chmod 644 "$dir"/*.conf
if ! "$mrc" run --devices "$dir/all.conf" -- true 2> "$dir/err"; then
  echo "harness_test: SKIP: mrc run cannot run here: $(cat "$dir/err")"
  exit 77
fi
# harness ARGS...: net_harness over the mini plugin, both ranks, each with its own device.
harness() {
  timeout 240 "$mrc" run --devices "$dir/all.conf" -- "$harness" "$plugin" --dev0 0 --dev1 0 \
    --env0 "MRC_CONFIG=$dir/a.conf" --env1 "MRC_CONFIG=$dir/b.conf" "$@"
}

case "$mode" in
data)
  harness --json > "$dir/out.json" 2> "$dir/err" || { cat "$dir/err" "$dir/out.json"; fail "the default sweep"; }
  python3 - "$dir/out.json" <<'PY' || { cat "$dir/err"; fail "the JSON report"; }
import json, sys
r = json.load(open(sys.argv[1]))
assert r["passed"] is True, r
assert [k["rank"] for k in r["ranks"]] == [0, 1], r
for k, name, bus in ((r["ranks"][0], "mrc0", "e000:00:00.0"), (r["ranks"][1], "mrc1", "e000:01:00.0")):
    assert k["passed"] is True and k["error"] is None, k
    assert k["plugin_name"] == "mrc-mini", k
    d = k["devices"][0]
    assert d["name"] == name and d["pciPath"].endswith("/.bus/" + bus), d
    assert d["ptrSupport"] == 1 and d["maxRecvs"] == 1 and d["maxComms"] >= 1, d
    # 34 sizes (0, 1 B to 8 MiB in powers of two, 9 odd sizes), 16 messages each way per size.
    assert k["sizes_done"] == 34 and k["messages_sent"] == 544 and k["messages_received"] == 544, k
    assert k["bytes_verified"] == 16 * (sum(1 << i for i in range(24)) + 3 + 7 + 1000 + 4095 + 4097 +
                                        65537 + 1000003 + 3 * 1048576 + 5 + 8 * 1048576 - 1), k
PY
  grep -q "ibv_reg_dmabuf_mr on device mrc0: DMA-BUF memory is not supported" "$dir/err" ||
    { cat "$dir/err"; fail "the DMA-BUF probe was not refused on mrc0"; }

  harness --inflight 1 --iflush --sizes 0,1,4097,1M > "$dir/out" 2>&1 ||
    { cat "$dir/out"; fail "one request in flight, with iflush"; }
  grep -q "PASSED: .*4 sizes, 2 messages each way per size" "$dir/out" || { cat "$dir/out"; fail "PASSED line"; }

  # Two `mrc run` processes, each with its own devices file, meeting on a unix socket.
  common=(--sizes 0,3,64K,2M --messages 6 --dev0 0 --dev1 0 --rendezvous "$dir/rdv")
  timeout 120 "$mrc" run --devices "$dir/a.conf" -- "$harness" "$plugin" --rank 0 "${common[@]}" \
    > "$dir/rank0" 2>&1 &
  rank0=$!
  timeout 120 "$mrc" run --devices "$dir/b.conf" -- "$harness" "$plugin" --rank 1 "${common[@]}" \
    > "$dir/rank1" 2>&1
  rc1=$?
  wait "$rank0"
  rc0=$?
  [ "$rc0" -eq 0 ] && [ "$rc1" -eq 0 ] || { cat "$dir/rank0" "$dir/rank1"; fail "--rank 0/1: $rc0/$rc1"; }
  for r in 0 1; do
    grep -q "\[rank $r\] passed: 4 sizes from 0 to 2097152 bytes, 24 messages sent and 24 received" "$dir/rank$r" ||
      { cat "$dir/rank$r"; fail "rank $r's summary"; }
  done
  echo "harness_test: the mini plugin moved and verified every size both ways"
  ;;
refusals)
  missing=$5 v7only=$6
  # expect_fail NAME PATTERN COMMAND...: the command fails and its output matches PATTERN.
  expect_fail() {
    local name=$1 pattern=$2
    shift 2
    if "$@" > "$dir/out" 2>&1; then cat "$dir/out"; fail "$name: succeeded"; fi
    grep -q -- "$pattern" "$dir/out" || { cat "$dir/out"; fail "$name: no '$pattern'"; }
  }
  expect_fail "a missing plugin" \
    "dlopen(RTLD_NOW) of $dir/none.so failed: $dir/none.so: cannot open shared object file: No such file or directory" \
    "$harness" "$dir/none.so"
  expect_fail "an undefined symbol" \
    "dlopen(RTLD_NOW) of $missing failed: .*undefined symbol: mrc_nccl_test_symbol_nobody_defines" \
    "$harness" "$missing"
  expect_fail "no ncclNetPlugin_v8" "has no symbol ncclNetPlugin_v8 .*it exports ncclNetPlugin_v7" \
    "$harness" "$v7only"
  # Outside `mrc run`: lib_mrc.so (the plugin's own dependency) has the devices, but no sysfs.
  expect_fail "outside mrc run" \
    "mrc0: /sys/class/infiniband/mrc0/device: No such file or directory (the sysfs entry of a kernel RDMA device; \`mrc run\` gives mrc's devices theirs)" \
    "$harness" "$plugin" --dev0 0 --dev1 0 --env0 "MRC_CONFIG=$dir/a.conf" --env1 "MRC_CONFIG=$dir/b.conf"
  grep -q "\[rank 0\] FAIL: init returned 2 (ncclSystemError)" "$dir/out" || { cat "$dir/out"; fail "init's failure"; }
  expect_fail "a usage error" "--inflight must be 1-8" "$harness" "$plugin" --inflight 9
  echo "harness_test: each bad plugin and the missing sysfs view were refused with the reason"
  ;;
dead-peer)
  if harness --exit-after 1:20 --timeout 60 > "$dir/out" 2>&1; then cat "$dir/out"; fail "succeeded"; fi
  grep -q "rank 1 exited with status 3" "$dir/out" || { cat "$dir/out"; fail "rank 1's exit not reported"; }
  grep -q "\[rank 0\] FAIL: rank 1 died or quit" "$dir/out" || { cat "$dir/out"; fail "rank 0 did not see its peer die"; }
  grep -q "FAILED: " "$dir/out" || { cat "$dir/out"; fail "no FAILED line"; }
  echo "harness_test: a dying rank ended the run with the reason, on both sides"
  ;;
*) fail "unknown mode $mode" ;;
esac
