#!/usr/bin/env bash
# `mrc allreduce-perf` as a user runs it: local ranks as processes over loopback planes, every
# output element checked (#wrong must be 0 in the JSON), for several collectives; ranks started
# one by one with a TCP store and with mpirun's environment and a file store; the errors a user
# sees. Ports: UDP 5900-5919, EV source ports 16000-17900, TCP 5990-5999 (no other test uses
# them). Usage: coll_perf_process_test.sh PATH_TO_MRC
set -u
MRC=$1
fail() { echo "FAIL: $*"; exit 1; }
out=/tmp/mrc-coll-perf.$$
planes=127.0.0.1,127.0.0.2
common="--planes $planes --port 5900 --ev-port-base 16000 -n 5 -w 2 --timeout 20"

check_json() {  # description; the JSON is in $out
  grep -q '^  "ok": true' $out && grep -qE '^  "wrong": 0,?$' $out || { cat $out; fail "$1: #wrong is not 0"; }
  echo "ok: $1"
}

"$MRC" allreduce-perf --ranks 2 -b 1K -e 4M -f 8 --json $common > $out 2>&1 || { cat $out; fail "allreduce 2 ranks exit $?"; }
check_json "allreduce, 2 ranks, 1K-4M"
"$MRC" allreduce-perf --ranks 2 -b 8 -e 16K -f 8 --busy-poll-us 300 --json $common > $out 2>&1 || { cat $out; fail "allreduce 2 ranks busy-polling"; }
check_json "allreduce, 2 ranks, 8-16K, busy-polling"
"$MRC" allreduce-perf --ranks 3 -b 4 -e 1M -f 32 -d bf16 -o avg --json $common > $out 2>&1 || { cat $out; fail "allreduce 3 ranks"; }
check_json "allreduce bf16 avg, 3 ranks"
"$MRC" coll-perf --coll allgather --ranks 3 -b 1K -e 1M -f 32 -d int32 --json $common > $out 2>&1 || { cat $out; fail "allgather"; }
check_json "allgather, 3 ranks"
"$MRC" coll-perf --coll reducescatter --ranks 2 -b 3K -e 3M -f 32 -d float16 -o max --json $common > $out 2>&1 || { cat $out; fail "reducescatter"; }
check_json "reducescatter fp16 max, 2 ranks"
"$MRC" coll-perf --coll alltoall --ranks 3 -b 1K -e 1M -f 32 -d uint8 --json $common > $out 2>&1 || { cat $out; fail "alltoall"; }
check_json "alltoall, 3 ranks"
"$MRC" coll-perf --coll broadcast --root 1 --ranks 2 -b 1K -e 1M -f 32 --json $common > $out 2>&1 || { cat $out; fail "broadcast"; }
check_json "broadcast root 1, 2 ranks"
"$MRC" coll-perf --coll reduce --root 1 --ranks 2 -b 1K -e 1M -f 32 -o prod -d int64 --json $common > $out 2>&1 || { cat $out; fail "reduce"; }
check_json "reduce int64 prod root 1, 2 ranks"

# The text table: a header and one row per size.
"$MRC" allreduce-perf --ranks 2 -b 1M -e 2M $common > $out 2>&1 || { cat $out; fail "text output"; }
grep -q "algbw" $out && grep -q "Wrong elements       : 0 OK" $out && [ "$(grep -c '^ ' $out)" -eq 2 ] || { cat $out; fail "text table"; }
echo "ok: text table"

# Ranks started one by one: a TCP store served by rank 0.
"$MRC" allreduce-perf --rank 1 --world-size 2 --store tcp:127.0.0.1:5990 -b 64K -e 64K $common > $out.1 2>&1 &
r1=$!
"$MRC" allreduce-perf --rank 0 --world-size 2 --store tcp:127.0.0.1:5990 -b 64K -e 64K --json $common > $out 2>&1 || { cat $out; fail "tcp store rank 0"; }
wait $r1 || { cat $out.1; fail "tcp store rank 1"; }
check_json "ranks by hand with a TCP store"

# Ranks whose payload per packet differs (loopback's default is 8192) are refused on both,
# naming the setting, not left to drop each other's packets.
dir=/tmp/mrc-coll-perf-store.$$
"$MRC" allreduce-perf --rank 1 --world-size 2 --store file:$dir -b 64K -e 64K --mtu 4096 $common > $out.1 2>&1 &
r1=$!
"$MRC" allreduce-perf --rank 0 --world-size 2 --store file:$dir -b 64K -e 64K $common > $out 2>&1; rc=$?
wait $r1; rc1=$?
rm -rf $dir
[ $rc -ne 0 ] && [ $rc1 -ne 0 ] && grep -q "mtu" $out && grep -q "mtu" $out.1 ||
  { cat $out $out.1; fail "ranks with different payloads: rc=$rc/$rc1"; }
grep -q "mtu=8192" $out.1 || { cat $out.1; fail "the default on loopback is not 8192"; }
echo "ok: ranks with different --mtu refused"

# As under mpirun: rank and size from Open MPI's environment, a file store.
dir=/tmp/mrc-coll-perf-store.$$
OMPI_COMM_WORLD_RANK=1 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=1 "$MRC" allreduce-perf --store file:$dir -b 4K -e 4K $common > $out.1 2>&1 &
r1=$!
OMPI_COMM_WORLD_RANK=0 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=0 "$MRC" allreduce-perf --store file:$dir -b 4K -e 4K --json $common > $out 2>&1 || { cat $out; fail "mpirun env rank 0"; }
wait $r1 || { cat $out.1; fail "mpirun env rank 1"; }
rm -rf $dir
check_json "ranks from mpirun's environment with a file store"

# Errors: clear messages, non-zero exit, no hang.
o=$("$MRC" allreduce-perf 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$o" | grep -q "give --ranks N" || fail "no launch mode: rc=$rc $o"
o=$("$MRC" allreduce-perf --ranks 2 --planes 127.0.0.1,999.0.0.1 --port 5910 --ev-port-base 17000 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$o" | grep -q "999.0.0.1" || fail "bad plane: rc=$rc $o"
o=$("$MRC" allreduce-perf --ranks 2 -d complex 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$o" | grep -q "unknown --dtype 'complex'" || fail "bad dtype: rc=$rc $o"
o=$("$MRC" allreduce-perf --ranks 2 -b 64G -e 64G 2>&1); rc=$?  # was: a rank killed by std::bad_alloc
[ $rc -eq 2 ] && echo "$o" | grep -q "more than half of this machine's memory" || fail "-e 64G: rc=$rc $o"
"$MRC" allreduce-perf --help | grep -q -- "--coll" || fail "--help"
rm -f $out $out.1
echo "all allreduce-perf process tests passed"
