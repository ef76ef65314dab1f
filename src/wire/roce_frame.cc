#include "wire/roce_frame.h"

#include <cstring>

#include "core/wire/packet.h"
#include "util/bytes.h"

namespace mrc::wire {
namespace {

// Offsets inside a frame.
constexpr size_t kIp = kEthernetHeaderBytes;
constexpr size_t kUdp = kIp + kIpv4HeaderBytes;
constexpr size_t kBth = kUdp + kUdpHeaderBytes;
constexpr size_t kIpTos = kIp + 1;
constexpr size_t kIpTtl = kIp + 8;
constexpr size_t kIpChecksum = kIp + 10;
constexpr size_t kUdpChecksum = kUdp + 6;
constexpr size_t kBthByte4 = kBth + 4;
// The CRC starts 8 bytes before the IP header: the pseudo-LRH of ones.
constexpr size_t kIcrcStart = kIp - 8;
// Headers, a BTH and an ICRC: the shortest frame an MRC datagram makes.
constexpr size_t kMinFrameBytes = kFrameHeaderBytes + 12 + wire::kIcrcBytes;

uint16_t ip_checksum(const uint8_t* header) {
  uint32_t sum = 0;
  for (size_t i = 0; i < kIpv4HeaderBytes; i += 2) sum += load_be16(header + i);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

void store_le32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t load_le32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

}  // namespace

uint32_t roce_icrc(std::span<uint8_t> frame) {
  uint8_t* f = frame.data();
  uint8_t saved_lrh[8];
  std::memcpy(saved_lrh, f + kIcrcStart, sizeof saved_lrh);
  const uint8_t tos = f[kIpTos], ttl = f[kIpTtl], bth4 = f[kBthByte4];
  uint8_t ip_sum[2], udp_sum[2];
  std::memcpy(ip_sum, f + kIpChecksum, 2);
  std::memcpy(udp_sum, f + kUdpChecksum, 2);

  std::memset(f + kIcrcStart, 0xFF, 8);
  f[kIpTos] = f[kIpTtl] = f[kBthByte4] = 0xFF;
  std::memset(f + kIpChecksum, 0xFF, 2);
  std::memset(f + kUdpChecksum, 0xFF, 2);
  const uint32_t crc =
      wire::icrc32(frame.subspan(kIcrcStart, frame.size() - kIcrcStart - wire::kIcrcBytes));

  std::memcpy(f + kIcrcStart, saved_lrh, sizeof saved_lrh);
  f[kIpTos] = tos;
  f[kIpTtl] = ttl;
  f[kBthByte4] = bth4;
  std::memcpy(f + kIpChecksum, ip_sum, 2);
  std::memcpy(f + kUdpChecksum, udp_sum, 2);
  return crc;
}

size_t write_frame(const FrameAddresses& a, uint16_t ip_id, size_t datagram_bytes,
                   std::span<uint8_t> frame) {
  uint8_t* f = frame.data();
  const size_t length = kFrameHeaderBytes + datagram_bytes;
  std::memcpy(f, a.destination_mac.data(), 6);
  std::memcpy(f + 6, a.source_mac.data(), 6);
  store_be16(f + 12, kEtherTypeIpv4);

  uint8_t* ip = f + kIp;
  ip[0] = 0x45;  // version 4, 5 words
  ip[1] = a.tos;
  store_be16(ip + 2, static_cast<uint16_t>(length - kEthernetHeaderBytes));
  store_be16(ip + 4, ip_id);
  store_be16(ip + 6, 0x4000);  // don't fragment
  ip[8] = a.ttl;
  ip[9] = IPPROTO_UDP;
  store_be16(ip + 10, 0);
  std::memcpy(ip + 12, &a.source_ip, 4);
  std::memcpy(ip + 16, &a.destination_ip, 4);
  store_be16(ip + 10, ip_checksum(ip));

  uint8_t* udp = f + kUdp;
  store_be16(udp, a.source_port);
  store_be16(udp + 2, a.destination_port);
  store_be16(udp + 4, static_cast<uint16_t>(kUdpHeaderBytes + datagram_bytes));
  store_be16(udp + 6, 0);

  const std::span<uint8_t> whole = frame.first(length);
  store_le32(f + length - wire::kIcrcBytes, roce_icrc(whole));
  return length;
}

Result<ParsedFrame, FrameError> parse_frame(std::span<uint8_t> frame) {
  if (frame.size() < kMinFrameBytes) return Err{FrameError::kTooShort};
  const uint8_t* f = frame.data();
  const uint8_t* ip = f + kIp;
  if (load_be16(f + 12) != kEtherTypeIpv4 || (ip[0] >> 4) != 4) return Err{FrameError::kNotIpv4};
  if ((ip[0] & 0x0F) != 5) return Err{FrameError::kIpOptions};
  if ((load_be16(ip + 6) & 0x3FFF) != 0) return Err{FrameError::kFragment};
  if (ip[9] != IPPROTO_UDP) return Err{FrameError::kNotUdp};
  const size_t ip_length = load_be16(ip + 2);
  const size_t udp_length = load_be16(f + kUdp + 4);
  // Ethernet may pad a short frame: the IP length says where the packet ends.
  if (ip_length + kEthernetHeaderBytes > frame.size() ||
      ip_length != kIpv4HeaderBytes + udp_length || udp_length < kMinFrameBytes - kUdp)
    return Err{FrameError::kBadLength};
  if (ip_checksum(ip) != 0) return Err{FrameError::kBadIpChecksum};
  const std::span<uint8_t> packet = frame.first(kEthernetHeaderBytes + ip_length);
  if (roce_icrc(packet) != load_le32(packet.data() + packet.size() - wire::kIcrcBytes))
    return Err{FrameError::kBadIcrc};

  ParsedFrame out;
  std::memcpy(out.addresses.destination_mac.data(), f, 6);
  std::memcpy(out.addresses.source_mac.data(), f + 6, 6);
  out.addresses.tos = ip[1];
  out.addresses.ttl = ip[8];
  std::memcpy(&out.addresses.source_ip, ip + 12, 4);
  std::memcpy(&out.addresses.destination_ip, ip + 16, 4);
  out.addresses.source_port = load_be16(f + kUdp);
  out.addresses.destination_port = load_be16(f + kUdp + 2);
  out.datagram = packet.subspan(kBth);
  return out;
}

const char* to_string(FrameError error) {
  switch (error) {
    case FrameError::kTooShort:
      return "too short";
    case FrameError::kNotIpv4:
      return "not IPv4";
    case FrameError::kIpOptions:
      return "IP options";
    case FrameError::kFragment:
      return "IP fragment";
    case FrameError::kNotUdp:
      return "not UDP";
    case FrameError::kBadLength:
      return "bad IP/UDP length";
    case FrameError::kBadIpChecksum:
      return "bad IP checksum";
    case FrameError::kBadIcrc:
      return "bad ICRC";
  }
  return "?";
}

}  // namespace mrc::wire
