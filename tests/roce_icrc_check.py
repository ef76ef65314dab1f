#!/usr/bin/env python3
"""mrc's RoCEv2 ICRC (src/wire/roce_frame) against scapy's RoCE layer, in both directions.

1. Frames mrc writes around real MRC packets: scapy recomputes each one's ICRC and must find
   the one mrc wrote.
2. Frames scapy builds (BTH over UDP to port 4791): mrc must accept them; with a payload byte
   flipped it must refuse them as "bad ICRC"; with TTL, TOS (ECN) or the UDP checksum changed,
   the fields routers may rewrite and the ICRC masks, it must still accept them.

Usage: roce_icrc_check.py ROCE_ICRC_TOOL. Exits 77 (skipped) without scapy (python3-scapy).
"""
import subprocess
import sys

try:
    from scapy.all import Ether, IP, UDP, Raw, raw
    from scapy.contrib.roce import BTH
except ImportError:
    print("skip: scapy is not installed (apt-get install python3-scapy)")
    sys.exit(77)

tool = sys.argv[1]
failures = []

# 1. mrc's frames, checked by scapy.
out = subprocess.run([tool, "frames"], check=True, capture_output=True, text=True).stdout
frames = [bytes.fromhex(line) for line in out.split()]
assert len(frames) >= 5, "the tool printed too few frames"
for i, frame in enumerate(frames):
    packet = Ether(frame)
    if BTH not in packet:
        failures.append(f"mrc frame {i}: scapy does not see a BTH")
        continue
    written = packet[BTH].icrc
    packet[BTH].icrc = None
    expected = Ether(raw(packet))[BTH].icrc
    if written != expected:
        failures.append(f"mrc frame {i}: ICRC {written:#010x}, scapy computes {expected:#010x}")
print(f"{len(frames)} mrc frames checked by scapy")

# 2. scapy's frames, checked by mrc.
def scapy_frame(opcode, payload, **ip):
    return raw(Ether(dst="02:00:00:00:00:02", src="02:00:00:00:00:01") /
               IP(src="198.18.1.1", dst="198.18.1.2", **ip) /
               UDP(sport=51234, dport=4791, chksum=0) /
               BTH(opcode=opcode, dqpn=0x100, psn=77) / Raw(payload))

cases = []
for size in (16, 100, 1500, 4000):
    payload = bytes((j * 13 + size) & 0xFF for j in range(size))
    good = scapy_frame(0x0A, payload)  # RC WRITE ONLY
    cases.append((f"scapy {size} B", good, "ok"))
    flipped = bytearray(good)
    flipped[-10] ^= 0x40
    cases.append((f"scapy {size} B, payload byte flipped", bytes(flipped), "bad ICRC"))
    cases.append((f"scapy {size} B, TTL 3 and ECN CE", scapy_frame(0x0A, payload, ttl=3, tos=0x03), "ok"))
    udp_sum = bytearray(good)
    udp_sum[40:42] = b"\x12\x34"  # the UDP checksum field is masked too
    cases.append((f"scapy {size} B, UDP checksum set", bytes(udp_sum), "ok"))
stdin = "".join(frame.hex() + "\n" for _, frame, _ in cases)
answers = subprocess.run([tool, "check"], input=stdin, check=True, capture_output=True, text=True).stdout.splitlines()
for (name, _, want), got in zip(cases, answers):
    if got != want:
        failures.append(f"{name}: mrc says {got!r}, expected {want!r}")
if len(answers) != len(cases):
    failures.append(f"mrc answered {len(answers)} of {len(cases)} frames")
print(f"{len(cases)} scapy frames checked by mrc")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
