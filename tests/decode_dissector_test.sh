#!/usr/bin/env bash
# Seeing packets: `mrc perf --pcap` captures a transfer with retransmissions, `mrc decode` reads
# it (every datagram MRC, every ICRC good, data, SACKs and retransmissions there), and the
# Wireshark dissector (tools/wireshark/mrc.lua, under tshark) decodes the same packets to the
# same opcodes and PSNs. Then bad captures: cut short, not a capture at all, missing.
# Usage: decode_dissector_test.sh PATH_TO_MRC SOURCE_DIR. Skips (77) the tshark half without
# tshark (scripts/install-deps.sh installs it).
set -u
MRC=$1 SRC=$2
fail() { echo "FAIL: $*"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
port=$((21000 + RANDOM % 500))
"$MRC" perf --server --oob-port $port --port 4871 --ev-port-base 58000 --planes 127.0.0.1,127.0.0.2 > "$dir/server.txt" 2>&1 &
srv=$!
"$MRC" perf --client 127.0.0.1 --oob-port $port --port 4872 --ev-port-base 58600 --planes 127.0.0.1,127.0.0.2 \
  --bytes 4M --size 256K --drop 0.02 --verify --pcap "$dir/run.pcap" > "$dir/client.txt" 2>&1 || { cat "$dir/client.txt"; fail "perf with --pcap"; }
wait $srv
grep -q "^capture: [0-9]* datagrams in $dir/run.pcap" "$dir/client.txt" || fail "no capture line in perf's summary"

"$MRC" decode "$dir/run.pcap" --port 4871 --json > "$dir/decode.json" || fail "mrc decode exit $?"
/usr/bin/python3 - "$dir/decode.json" "$dir/ours.txt" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
s, packets = d["summary"], d["packets"]
def fail(why): print("FAIL:", why); sys.exit(1)
if s["mrc_packets"] == 0 or s["mrc_packets"] != len(packets): fail(f"summary {s}")
if s["undecodable"] or s["bad_icrc"] or s["other_udp"]: fail(f"capture of a clean run has bad packets: {s}")
ops = s["by_opcode"]
for need in ("WRITE_FIRST", "WRITE_MIDDLE", "WRITE_LAST_IMM", "SACK"):
    if ops.get(need, 0) == 0: fail(f"no {need} in {ops}")
if not any(p["headers"]["bth"]["rtx"] for p in packets): fail("2 % drop and no retransmission captured")
if any(p["icrc"] != "ok (udp)" for p in packets): fail("an ICRC not the udp datapath's")
with open(sys.argv[2], "w") as out:
    for p in packets:
        b = p["headers"]["bth"]
        out.write(f'{p["record"]} {int(b["opcode"], 16)} {b["psn"]} {int(b["rtx"])}\n')
print(f"ok: mrc decode: {s['mrc_packets']} packets, {ops}")
PY

# A secure transfer (PROTOCOL.md 1.12): every packet shows its S flag, SECH and tag, its
# headers in the clear, its ICRC good.
key="$dir/key"
openssl rand -hex 32 > "$key"; chmod 600 "$key"
"$MRC" perf --server --oob-port $((port + 1)) --port 4871 --ev-port-base 58000 --planes 127.0.0.1,127.0.0.2 --secure encrypt --key-file "$key" > "$dir/server.txt" 2>&1 &
srv=$!
"$MRC" perf --client 127.0.0.1 --oob-port $((port + 1)) --port 4872 --ev-port-base 58600 --planes 127.0.0.1,127.0.0.2 \
  --secure encrypt --key-file "$key" --bytes 1M --size 256K --verify --pcap "$dir/secure.pcap" > "$dir/client.txt" 2>&1 || { cat "$dir/client.txt"; fail "secure perf with --pcap"; }
wait $srv
"$MRC" decode "$dir/secure.pcap" --port 4871 --json > "$dir/secure.json" || fail "mrc decode of a secure capture: exit $?"
/usr/bin/python3 - "$dir/secure.json" "$dir/ours-secure.txt" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
s, packets = d["summary"], d["packets"]
def fail(why): print("FAIL:", why); sys.exit(1)
if s["mrc_packets"] == 0 or s["undecodable"] or s["bad_icrc"]: fail(f"secure capture: {s}")
for p in packets:
    h = p["headers"]
    if not h["bth"].get("s") or "sech" not in h or len(h["tag"]["aes_gcm"]) != 32: fail(f"not shown as secure: {p}")
if s["by_opcode"].get("WRITE_MIDDLE", 0) == 0 or s["by_opcode"].get("SACK", 0) == 0: fail(f"secure capture: {s}")
with open(sys.argv[2], "w") as out:
    for p in packets:
        out.write(f'{p["record"]} {p["headers"]["bth"]["psn"]} {p["headers"]["sech"]["epoch"]} {p["headers"]["sech"]["counter"]}\n')
print(f"ok: mrc decode shows {s['mrc_packets']} secure packets with their SECH and tag")
PY

# A KEY OFFER (PROTOCOL.md 1.13), built here from the documented layout: mrc decode shows its
# KOETH field by field.
/usr/bin/python3 - "$dir/offer.pcap" <<'PY' || fail "writing the KEY OFFER capture"
import struct, sys, zlib
koeth = struct.pack(">I", 0x00ABCDEF) + bytes([2, 0x03, 0, 0]) + bytes(range(8)) + bytes([0x11] * 32) \
      + bytes([0x22] * 16) + bytes([0x33] * 32)
bth = bytes([0xDF, 0, 0, 0, 0, 0x12, 0x34, 0x56, 0, 0, 0, 0])
mrc = bth + koeth
mrc += struct.pack(">I", zlib.crc32(mrc))
udp = struct.pack(">HHHH", 4791, 4791, 8 + len(mrc), 0) + mrc
ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0, bytes([127, 0, 0, 1]), bytes([127, 0, 0, 2]))
s = sum(struct.unpack(">10H", ip)); s = (s & 0xFFFF) + (s >> 16); s = (s & 0xFFFF) + (s >> 16)
ip = ip[:10] + struct.pack(">H", ~s & 0xFFFF) + ip[12:]
frame = bytes(12) + b"\x08\x00" + ip + udp
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    f.write(struct.pack("<IIII", 1, 0, len(frame), len(frame)) + frame)
PY
"$MRC" decode "$dir/offer.pcap" --json > "$dir/offer.json" || fail "mrc decode of a KEY OFFER: exit $?"
/usr/bin/python3 - "$dir/offer.json" <<'PY' || exit 1
import json, sys
def fail(why): print("FAIL:", why); sys.exit(1)
d = json.load(open(sys.argv[1]))
if d["summary"]["by_opcode"] != {"KEY_OFFER": 1}: fail(f"KEY OFFER capture: {d['summary']}")
h = d["packets"][0]["headers"]
k = h["koeth"]
want = {"source_qp": "0xabcdef", "mode": "encrypt", "holds_yours": True, "reply": True,
        "key_id": "0001020304050607", "public_key": "11" * 32, "nonce": "22" * 16, "proof": "33" * 32}
if h["bth"]["dest_qp"] != "0x123456" or any(k.get(f) != v for f, v in want.items()): fail(f"KEY OFFER shown as {h}")
print("ok: mrc decode shows a KEY OFFER's KOETH")
PY

# Bad input: a capture cut inside a record, a file that is no capture, a missing file.
head -c $(( $(stat -c %s "$dir/run.pcap") - 100 )) "$dir/run.pcap" > "$dir/cut.pcap"
out=$("$MRC" decode "$dir/cut.pcap" --brief 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "runs past the end of the file" || fail "cut capture: rc=$rc $(echo "$out" | tail -2)"
head -c 5000 /dev/urandom > "$dir/noise.pcap"
out=$("$MRC" decode "$dir/noise.pcap" 2>&1); rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "not a pcap or pcapng file" || fail "noise: rc=$rc $out"
"$MRC" decode "$dir/missing.pcap" > /dev/null 2>&1; rc=$?
[ $rc -eq 2 ] || fail "missing file: rc=$rc"
echo "ok: bad captures refused with a reason"

if ! command -v tshark > /dev/null; then
  echo "SKIP: tshark is not installed (scripts/install-deps.sh installs it): the dissector is not checked"
  exit 77
fi
tshark -X "lua_script:$SRC/tools/wireshark/mrc.lua" -r "$dir/run.pcap" -Y mrc -T fields \
  -e frame.number -e mrc.opcode -e mrc.psn -e mrc.rtx -e mrc.icrc.status -e _ws.expert.message 2> "$dir/tshark.err" > "$dir/tshark.txt" \
  || { cat "$dir/tshark.err"; fail "tshark exit $?"; }
grep -v "Running as" "$dir/tshark.err" | grep -qi "error" && { cat "$dir/tshark.err"; fail "tshark reported an error"; }
/usr/bin/python3 - "$dir/tshark.txt" "$dir/ours.txt" <<'PY' || exit 1
import sys
def fail(why): print("FAIL:", why); sys.exit(1)
theirs = []
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if len(f) < 5: fail(f"short tshark line {line!r}")
    if f[4] != "good (UDP datapath CRC-32)": fail(f"dissector ICRC status {f[4]!r} in {line!r}")
    if len(f) > 5 and f[5]: fail(f"dissector expert info {f[5]!r} in {line!r}")
    rtx = 1 if f[3] in ("1", "True") else 0
    theirs.append(f"{int(f[0])} {int(f[1], 16)} {int(f[2])} {rtx}")
ours = [l.strip() for l in open(sys.argv[2])]
if theirs != ours:
    diff = [(a, b) for a, b in zip(theirs, ours) if a != b][:5]
    fail(f"tshark and mrc decode disagree: {len(theirs)} vs {len(ours)} packets, first differences {diff}")
print(f"ok: the dissector decodes the same {len(theirs)} packets to the same opcodes, PSNs and flags")
PY

tshark -X "lua_script:$SRC/tools/wireshark/mrc.lua" -r "$dir/secure.pcap" -Y mrc -T fields \
  -e frame.number -e mrc.psn -e mrc.sech.epoch -e mrc.sech.counter -e mrc.s -e mrc.icrc.status -e _ws.expert.message 2> "$dir/tshark.err" > "$dir/tshark-secure.txt" \
  || { cat "$dir/tshark.err"; fail "tshark on the secure capture: exit $?"; }
/usr/bin/python3 - "$dir/tshark-secure.txt" "$dir/ours-secure.txt" <<'PY' || exit 1
import sys
def fail(why): print("FAIL:", why); sys.exit(1)
theirs = []
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    if len(f) < 6 or f[4] not in ("1", "True") or f[5] != "good (UDP datapath CRC-32)": fail(f"secure packet as tshark shows it: {line!r}")
    if len(f) > 6 and f[6]: fail(f"dissector expert info {f[6]!r} in {line!r}")
    theirs.append(f"{int(f[0])} {int(f[1])} {int(f[2])} {int(f[3])}")
ours = [l.strip() for l in open(sys.argv[2])]
if theirs != ours: fail(f"tshark and mrc decode disagree on the secure capture: {theirs[:3]} vs {ours[:3]}")
print(f"ok: the dissector shows the same {len(theirs)} secure packets, epochs and counters")
PY

tshark -X "lua_script:$SRC/tools/wireshark/mrc.lua" -r "$dir/offer.pcap" -Y mrc -T fields \
  -e mrc.opcode -e mrc.koeth.source_qp -e mrc.koeth.mode -e mrc.koeth.holds_yours -e mrc.koeth.reply \
  -e mrc.icrc.status 2> "$dir/tshark.err" > "$dir/tshark-offer.txt" \
  || { cat "$dir/tshark.err"; fail "tshark on the KEY OFFER capture: exit $?"; }
offer=$(tr '\t' ' ' < "$dir/tshark-offer.txt")
case "$offer" in
  "0xdf 0xabcdef 2 "[1T]*" "[1T]*" good (UDP datapath CRC-32)") echo "ok: the dissector shows the KEY OFFER's KOETH" ;;
  *) fail "KEY OFFER as tshark shows it: '$offer'" ;;
esac
