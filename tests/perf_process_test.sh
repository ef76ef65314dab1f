#!/usr/bin/env bash
# mrc perf between two real processes over 4 loopback planes: verified transfers clean, under
# drop, delay/reorder, a plane failing and returning, and a plane flapping; and the errors a
# user sees for misconfiguration. Usage: perf_process_test.sh PATH_TO_MRC
set -u
MRC=$1
fail() { echo "FAIL: $*"; exit 1; }
port=$((19000 + RANDOM % 1000))

SERVER_FLAGS="" CLIENT_PORT=4892  # extra server flags and the client's port for the next run_pair
run_pair() {  # extra client flags...
  port=$((port + 1))
  # shellcheck disable=SC2086
  "$MRC" perf --server --oob-port $port --port 4891 --ev-port-base 52000 --json $SERVER_FLAGS > /tmp/mrc-perf-srv.$$ 2>&1 &
  local srv=$!
  local out
  out=$(timeout 300 "$MRC" perf --client 127.0.0.1 --oob-port $port --port "$CLIENT_PORT" --ev-port-base 53000 --json --verify "$@" 2>&1)
  local rc=$?
  # A client that failed leaves a server waiting for it: stop it, so a failure is reported
  # now instead of as the test's timeout.
  [ $rc -eq 0 ] || { kill $srv 2>/dev/null; wait $srv; echo "$out" | tail -20; tail -5 /tmp/mrc-perf-srv.$$; fail "client exit $rc for: $*"; }
  wait $srv
  local src=$?
  [ $src -eq 0 ] || { tail -20 /tmp/mrc-perf-srv.$$; fail "server exit $src for: $*"; }
  echo "$out" | grep -q '"ok": true' || fail "client did not report ok for: $*"
  LAST_OUT=$out
  echo "ok: $*"
}

run_pair --bytes 67108864
run_pair --bytes 33554432 --drop 0.01
run_pair --bytes 33554432 --delay-us 100 --reorder 0.2
run_pair --bytes 134217728 --fail-plane 1@100ms+200ms
run_pair --bytes 134217728 --flap-plane 2:50ms:150ms
run_pair --bytes 33554432 --qps 3 --bidir --size 262144
# Ping-pong: every answer verified; a sweep times every size from 8 B up, after the warm-up.
run_pair --pingpong --iterations 300
echo "$LAST_OUT" | grep -q '"timed": 300' || fail "--pingpong did not time 300 exchanges"
run_pair --pingpong --sweep-sizes --size 64K --iterations 50 --warmup 10
[ "$(echo "$LAST_OUT" | grep -c '"timed": 50')" -eq 14 ] || fail "--pingpong --sweep-sizes: not 14 sizes of 50"
# 64 KiB over one plane, long enough that a receiver late with a message makes the tail timer
# resend. Those resends must not retire EVs, and many retired EVs' probes must not overflow
# the sockets and keep them retired: without either guard this run stalls in about half the
# tries (a stall fails here at the 300 s timeout above).
SERVER_FLAGS="--planes 127.0.0.1"
run_pair --pingpong --size 64K --iterations 5000 --planes 127.0.0.1
SERVER_FLAGS=""
# Busy polling (both sides poll their sockets for 500 us after work instead of sleeping).
SERVER_FLAGS="--busy-poll-us 500"
run_pair --pingpong --iterations 200 --busy-poll-us 500
SERVER_FLAGS=""
# Engine threads: the server's 3 threads listen on 4891-4893 (so the client moves to 4895-4896)
# and take EV ranges 52000-52959; QP q sits in thread q % 3 there and q % 2 here.
SERVER_FLAGS="--threads 3" CLIENT_PORT=4895
run_pair --bytes 33554432 --qps 5 --bidir --size 262144 --threads 2 --drop 0.001
SERVER_FLAGS="" CLIENT_PORT=4892
# Payload per packet: loopback's MTU carries 8192 bytes, the default there; a server held to
# 4096 makes both sides send 4096, and every byte arrives. Sizes outside 256..9000 are refused.
run_pair --bytes 16777216
echo "$LAST_OUT" | grep -q '"mtu_bytes": 8192' || fail "loopback planes did not get 8192-byte payloads"
SERVER_FLAGS="--mtu 4096"
run_pair --bytes 33554432 --drop 0.01
echo "$LAST_OUT" | grep -q '"mtu_bytes": 4096' || fail "the client did not take the server's 4096"
grep -q '"mtu_bytes": 4096' /tmp/mrc-perf-srv.$$ || fail "the server did not keep its 4096"
SERVER_FLAGS=""
out=$("$MRC" perf --client 127.0.0.1 --mtu 100 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "mtu" || fail "--mtu 100: rc=$rc $out"
# Secure mode (the same key file on both sides): encrypted under drop, authenticated through a
# plane failure; then keys and modes that differ fail on both sides at connection time.
key=$(mktemp) other_key=$(mktemp)
openssl rand -hex 32 > "$key"; openssl rand -hex 32 > "$other_key"; chmod 600 "$key" "$other_key"
SERVER_FLAGS="--secure encrypt --key-file $key"
run_pair --bytes 33554432 --drop 0.01 --secure encrypt --key-file "$key"
SERVER_FLAGS="--secure auth --key-file $key"
run_pair --bytes 134217728 --fail-plane 1@100ms+200ms --secure auth --key-file "$key"
SERVER_FLAGS=""
secure_refused() {  # SERVER_FLAGS CLIENT_FLAGS EXPECTED_MESSAGE
  port=$((port + 1))
  # shellcheck disable=SC2086
  "$MRC" perf --server --oob-port $port --port 4891 --ev-port-base 52000 $1 > /tmp/mrc-perf-srv.$$ 2>&1 &
  local srv=$! out rc
  # shellcheck disable=SC2086
  out=$("$MRC" perf --client 127.0.0.1 --oob-port $port --port 4892 --ev-port-base 53000 --duration 1 $2 2>&1); rc=$?
  wait $srv; local src=$?
  [ $rc -eq 2 ] && echo "$out" | grep -q "$3" || fail "client: rc=$rc $out"
  [ $src -eq 2 ] && grep -q "$3" /tmp/mrc-perf-srv.$$ || fail "server: rc=$src $(tail -2 /tmp/mrc-perf-srv.$$)"
  echo "ok: refused on both sides: $3"
}
secure_refused "--secure encrypt --key-file $key" "--secure encrypt --key-file $other_key" "pre-shared keys differ"
secure_refused "" "--secure auth --key-file $key" "secure mode differs"
out=$("$MRC" perf --client 127.0.0.1 --secure auth 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "needs --key-file" || fail "secure without a key: rc=$rc $out"
chmod 644 "$other_key"
out=$("$MRC" perf --client 127.0.0.1 --secure auth --key-file "$other_key" 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "chmod 600" || fail "key readable by others: rc=$rc $out"
rm -f "$key" "$other_key"

# Garbage sent to a server's port during a transfer is refused and counted (the summary's
# decode errors and unknown QPNs), and the transfer stays verified. The kernel may drop a few of
# the 200 when the socket's buffer is full, so the count must be positive and at most 200.
port=$((port + 1))
"$MRC" perf --server --oob-port $port --port 4891 --ev-port-base 52000 --json > /tmp/mrc-perf-srv.$$ 2>&1 &
srv=$!
"$MRC" perf --client 127.0.0.1 --oob-port $port --port 4892 --ev-port-base 53000 --json --verify --duration 3 > /tmp/mrc-perf-cli.$$ 2>&1 &
cli=$!
for _ in $(seq 1 100); do ss -uln 2>/dev/null | grep -q '127.0.0.1:4891 ' && break; sleep 0.1; done
sleep 0.5
/usr/bin/python3 -c '
import os, socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for i in range(200): s.sendto(os.urandom(16 + i % 100), ("127.0.0.1", 4891))'
wait $cli; rc=$?
wait $srv
grep -q '"ok": true' /tmp/mrc-perf-cli.$$ && [ $rc -eq 0 ] || { tail -5 /tmp/mrc-perf-cli.$$; fail "transfer under garbage: rc=$rc"; }
refused=$(/usr/bin/python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
print(sum(s["decode_errors"].values()) + s["unknown_qp"])' /tmp/mrc-perf-srv.$$) || fail "no refusal counters in the server's JSON summary"
[ "$refused" -ge 1 ] && [ "$refused" -le 200 ] || fail "200 garbage datagrams sent, $refused counted as refused"
echo "ok: $refused of 200 garbage datagrams refused and counted, the transfer verified"

# --buffer: 16 messages of 256 KiB in flight cycle through 1 MiB on each side (so they share
# memory, as perftest's do; the server takes the size from the client): every message arrives.
port=$((port + 1))
"$MRC" perf --server --oob-port $port --port 4891 --ev-port-base 52000 --json > /tmp/mrc-perf-srv.$$ 2>&1 &
srv=$!
out=$("$MRC" perf --client 127.0.0.1 --oob-port $port --port 4892 --ev-port-base 53000 --json \
  --bytes 67108864 --size 256K --depth 16 --buffer 1M 2>&1); rc=$?
wait $srv
[ $rc -eq 0 ] && echo "$out" | grep -q '"ok": true' && echo "$out" | grep -q '"received": 256,' ||
  { echo "$out" | tail -20; fail "--buffer 1M: rc=$rc"; }
echo "ok: --buffer 1M, 256 messages of 256 KiB through 1 MiB"
out=$("$MRC" perf --client 127.0.0.1 --buffer 4K --size 64K 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "must hold at least one message" || fail "small --buffer: rc=$rc $out"
out=$("$MRC" perf --client 127.0.0.1 --buffer 8M --verify 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "cannot go with --verify" || fail "--buffer with --verify: rc=$rc $out"

# Test parameters out of reach are refused with a message, not an abort: on the client's own
# command line, and by a server from a client (they arrive over the network, unchecked).
out=$("$MRC" perf --client 127.0.0.1 --size 5G 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "must be 1 byte to 1 GiB" || fail "--size 5G: rc=$rc $out"
out=$("$MRC" perf --client 127.0.0.1 --pingpong --qps 2 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "pingpong runs one queue pair" || fail "--pingpong --qps 2: rc=$rc $out"
out=$("$MRC" perf --client 127.0.0.1 --size 256M --depth 128 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "more than half of this machine's memory" || fail "256M x 128: rc=$rc $out"
hostile_hello() {  # HELLO EXPECTED_MESSAGE: a raw client that sends one set-up line
  port=$((port + 1))
  "$MRC" perf --server --oob-port $port --port 4891 --ev-port-base 52000 > /tmp/mrc-perf-srv.$$ 2>&1 &
  local srv=$! reply="" src tries=0
  until exec 3<>"/dev/tcp/127.0.0.1/$port"; do
    tries=$((tries + 1)); [ $tries -lt 50 ] || fail "the server never listened on $port"; sleep 0.1
  done 2>/dev/null
  echo "$1" >&3
  read -r -t 10 reply <&3
  exec 3>&-
  wait $srv; src=$?
  [ $src -eq 2 ] && grep -q "$2" /tmp/mrc-perf-srv.$$ || fail "hello $1: server rc=$src $(tail -2 /tmp/mrc-perf-srv.$$)"
  echo "ok: server refused $1 ($2${reply:+; told the client: $reply})"
}
hostile_hello '{"params": {"size": 65536, "verify": true, "bidir": false, "pingpong": false, "depth": 16}}' "names no mrc perf version"
hostile_hello '{"params": {"size": 65536, "verify": true, "bidir": false, "pingpong": false, "depth": 16}, "mrc_perf": 1}' "version 1 and this side 3: run the same mrc build"
hostile_hello '{"mrc_perf": 3, "params": {"size": "big"}}' "malformed test parameters"
hostile_hello '{"mrc_perf": 3, "params": {"size": 1099511627776, "verify": false, "bidir": false, "pingpong": false, "depth": 16}}' "must be 1 byte to 1 GiB"
hostile_hello '{"mrc_perf": 3, "params": {"size": 65536, "verify": false, "bidir": false, "pingpong": false, "depth": 4294967296}}' "must be 1 to 128"
hostile_hello '{"mrc_perf": 3, "params": {"size": 65536, "verify": false, "bidir": false, "pingpong": false, "depth": 16}}' "set-up message is malformed"
hostile_hello '{"params": {"size": 65536, "verify": false, "bidir": false, "pingpong": false, "depth": 16}, "mrc_perf": 3, "qps": [{"qpn": "x", "psn": 1}], "planes": ["127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"], "addr": 1, "rkey": 1, "len": 99999999, "port": 4807}' "set-up message is malformed"

# What leaves is what the engine wrote: over 4 planes, whose turns share one send batch, the
# server receives no datagram more often than the client sent it (captured on both sides; a
# loss only takes some away). A datagram sent in another's place would be a stale copy.
dir=$(mktemp -d)
port=$((port + 1))
"$MRC" perf --server --oob-port $port --port 4891 --ev-port-base 52000 --pcap "$dir/server.pcap" > /dev/null 2>&1 &
srv=$!
"$MRC" perf --client 127.0.0.1 --oob-port $port --port 4892 --ev-port-base 53000 --bytes 16M \
  --size 256K --pcap "$dir/client.pcap" > "$dir/client.txt" 2>&1 || { tail -3 "$dir/client.txt"; fail "captured transfer"; }
wait $srv
/usr/bin/python3 - "$dir/client.pcap" "$dir/server.pcap" <<'PY' || fail "the server received datagrams the client did not send"
import collections, struct, sys
def to_server(path):  # UDP payloads to port 4891, counted
    data, seen = open(path, "rb").read(), collections.Counter()
    at = 24
    while at + 16 <= len(data):
        length = struct.unpack_from("<I", data, at + 8)[0]
        ip = data[at + 16:at + 16 + length]
        at += 16 + length
        if ip and ip[0] >> 4 == 4 and ip[9] == 17:
            udp = (ip[0] & 15) * 4
            if struct.unpack_from(">H", ip, udp + 2)[0] == 4891:
                seen[ip[udp + 8:]] += 1
    return seen
sent, got = to_server(sys.argv[1]), to_server(sys.argv[2])
extra = sum(n - sent[d] for d, n in got.items() if n > sent[d])
print(f"{sum(sent.values())} datagrams sent, {sum(got.values())} received, {extra} never sent")
sys.exit(1 if extra or sum(got.values()) < 2048 else 0)  # 16 MiB of 8192-byte payloads
PY
rm -rf "$dir"
echo "ok: every datagram received over 4 planes was one the client sent"

out=$("$MRC" perf --client 127.0.0.1 --threads 17 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "threads" || fail "bad thread count: rc=$rc $out"

# The server dies mid-transfer: the client must fail with a message, not hang.
port=$((port + 1))
"$MRC" perf --server --oob-port $port --port 4899 --ev-port-base 57000 > /dev/null 2>&1 &
srv=$!
"$MRC" perf --client 127.0.0.1 --oob-port $port --port 4900 --ev-port-base 57500 --duration 140 > /tmp/mrc-perf-cli.$$ 2>&1 &
cli=$!
# Kill it once data flows (the client's first report line), not at a fixed time: on a loaded
# machine the setup alone can take longer than a second.
for _ in $(seq 1 100); do grep -q "Gbit/s" /tmp/mrc-perf-cli.$$ 2>/dev/null && break; sleep 0.2; done
kill -9 $srv
# Only a hang guard: the retries (srtt + 4 rttvar, doubling ten times) take ~8 s on an idle
# machine and much longer on a loaded one, where RTT estimates grow (37 s seen with load 7 on
# 2 cores: a 30 s run ended first and the client saw the server's closed connection instead).
for _ in $(seq 1 300); do kill -0 $cli 2>/dev/null || break; sleep 0.5; done
if kill -0 $cli 2>/dev/null; then kill -9 $cli; fail "client still running 150 s after the server died"; fi
wait $cli; rc=$?
[ $rc -eq 1 ] && grep -q "FAILED: queue pair" /tmp/mrc-perf-cli.$$ || { tail -5 /tmp/mrc-perf-cli.$$; fail "dead server: rc=$rc"; }
echo "ok: the client reports a dead server (rc=1)"
rm -f /tmp/mrc-perf-cli.$$

# Misconfiguration gives a clear message and exit status 2.
out=$("$MRC" perf --client 127.0.0.1 --oob-port 1 --port 4893 --ev-port-base 54000 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "cannot reach the mrc perf server" || fail "unreachable server: rc=$rc $out"
out=$("$MRC" perf --client 127.0.0.1 --planes 127.0.0.1,999.1.1.1 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "999.1.1.1" || fail "bad plane address: rc=$rc $out"
out=$("$MRC" perf --client 127.0.0.1 --fail-plane 9@1s --port 4894 --ev-port-base 54500 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "plane 9 does not exist" || fail "bad plane index: rc=$rc $out"
out=$("$MRC" perf --client 127.0.0.1 --fail-plane x@1s --port 4894 --ev-port-base 54500 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "expected PLANE@TIME" || fail "plane not a number: rc=$rc $out"
out=$("$MRC" perf --client 127.0.0.1 --flap-plane 9:1s:5s --port 4894 --ev-port-base 54500 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "plane 9 does not exist" || fail "bad flap plane: rc=$rc $out"
out=$("$MRC" perf --client 127.0.0.1 --flap-plane 1:5s:5s --port 4894 --ev-port-base 54500 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "DOWN_FOR must be shorter than EVERY" || fail "flap never up: rc=$rc $out"
out=$("$MRC" perf 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "exactly one of --server or --client" || fail "no role: rc=$rc $out"
out=$("$MRC" perf --client 127.0.0.1 --cc bogus 2>&1); rc=$?  # the parser's own checks: 2 as well
[ $rc -eq 2 ] && echo "$out" | grep -q "bogus not in" || fail "bad --cc: rc=$rc $out"
out=$("$MRC" allreduce-perf --threads 99 2>&1); rc=$?
[ $rc -eq 2 ] && echo "$out" | grep -q "threads" || fail "bad --threads: rc=$rc $out"
"$MRC" perf --help >/dev/null || fail "perf --help: rc=$?"
rm -f /tmp/mrc-perf-srv.$$
echo "all perf process tests passed"
