// Capture files' formats (see pcap.h): the classic pcap writer's records, and a reader of pcap
// and pcapng down to each record's UDP datagram. Formats: the libpcap file format and the
// pcapng specification (IETF draft-ietf-opsawg-pcapng); link-layer header types as tcpdump.org
// lists them.
#include "wire/pcap.h"

#include <arpa/inet.h>

#include <cstring>
#include <utility>

#include "util/bytes.h"

namespace mrc::wire {

std::string address_text(int family, const uint8_t* address, uint16_t port) {
  char text[INET6_ADDRSTRLEN] = {};
  const bool known = family == AF_INET || family == AF_INET6;
  if (known) inet_ntop(family, address, text, sizeof text);
  const std::string host = known ? text : "?";
  return (family == AF_INET6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

namespace {

constexpr uint32_t kMagicMicro = 0xA1B2C3D4;
constexpr uint32_t kMagicNano = 0xA1B23C4D;
constexpr uint32_t kLinkRaw = 101;
constexpr uint32_t kBlockSection = 0x0A0D0D0A;
constexpr uint32_t kBlockInterface = 1;
constexpr uint32_t kBlockPacketObsolete = 2;
constexpr uint32_t kBlockSimplePacket = 3;
constexpr uint32_t kBlockEnhancedPacket = 6;
constexpr uint32_t kByteOrderMagic = 0x1A2B3C4D;
constexpr size_t kMaxRecordBytes = size_t{256} * 1024;  // larger than any snap length a tool writes

uint16_t ipv4_checksum(const uint8_t* header) {
  uint32_t sum = 0;
  for (int i = 0; i < 20; i += 2) sum += load_be16(header + i);
  while (sum >> 16) sum = (sum & 0xFFFF) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// The UDP header at `udp` (within `ip`, which ends where the IP packet says it ends).
bool take_udp(std::span<const uint8_t> ip, size_t udp_at, CapturedDatagram& out) {
  if (ip.size() < udp_at + 8) return false;
  const uint8_t* udp = ip.data() + udp_at;
  const uint16_t length = load_be16(udp + 4);
  if (length < 8 || length > ip.size() - udp_at) return false;
  out.source_port = load_be16(udp);
  out.destination_port = load_be16(udp + 2);
  out.ip_packet = ip.first(udp_at + length);
  out.datagram = ip.subspan(udp_at + 8, length - 8u);
  return true;
}

bool take_ipv4(std::span<const uint8_t> bytes, CapturedDatagram& out) {
  if (bytes.size() < 20 || (bytes[0] >> 4) != 4) return false;
  const size_t header = static_cast<size_t>(bytes[0] & 0x0F) * 4;
  const size_t total = load_be16(bytes.data() + 2);
  if (header < 20 || total < header || total > bytes.size()) return false;
  const uint16_t fragment = load_be16(bytes.data() + 6);
  if ((fragment & 0x3FFF) != 0 || bytes[9] != IPPROTO_UDP) return false;  // MF or an offset
  if (!take_udp(bytes.first(total), header, out)) return false;
  out.ipv6 = false;
  out.tos = bytes[1];
  out.source = address_text(AF_INET, bytes.data() + 12, out.source_port);
  out.destination = address_text(AF_INET, bytes.data() + 16, out.destination_port);
  return true;
}

bool take_ipv6(std::span<const uint8_t> bytes, CapturedDatagram& out) {
  if (bytes.size() < 40 || (bytes[0] >> 4) != 6 || bytes[6] != IPPROTO_UDP) return false;
  const size_t payload = load_be16(bytes.data() + 4);
  if (payload > bytes.size() - 40) return false;
  if (!take_udp(bytes.first(40 + payload), 40, out)) return false;
  out.ipv6 = true;
  out.tos = static_cast<uint8_t>((bytes[0] & 0x0F) << 4 | bytes[1] >> 4);
  out.source = address_text(AF_INET6, bytes.data() + 8, out.source_port);
  out.destination = address_text(AF_INET6, bytes.data() + 24, out.destination_port);
  return true;
}

bool take_ethertype(uint16_t type, std::span<const uint8_t> bytes, CapturedDatagram& out) {
  if (type == 0x0800) return take_ipv4(bytes, out);
  if (type == 0x86DD) return take_ipv6(bytes, out);
  return false;
}

}  // namespace

// ---- writer ----------------------------------------------------------------------------------

std::array<uint8_t, kPcapFileHeaderBytes> pcap_file_header() {
  const uint32_t header[6] = {kMagicNano, 2u | 4u << 16, 0, 0, 65535 + 28, kLinkRaw};
  std::array<uint8_t, kPcapFileHeaderBytes> out{};
  std::memcpy(out.data(), header, sizeof header);
  return out;
}

std::array<uint8_t, kPcapRecordHeaderBytes> pcap_record_header(uint64_t unix_ns, uint32_t length) {
  const uint32_t record[4] = {static_cast<uint32_t>(unix_ns / 1'000'000'000),
                              static_cast<uint32_t>(unix_ns % 1'000'000'000), length, length};
  std::array<uint8_t, kPcapRecordHeaderBytes> out{};
  std::memcpy(out.data(), record, sizeof record);
  return out;
}

size_t write_udp_headers(const UdpHeaderFields& fields, size_t datagram_bytes,
                         std::span<uint8_t, kPcapMaxHeaderBytes> out) {
  uint8_t* const h = out.data();
  const auto udp_length = static_cast<uint16_t>(8 + datagram_bytes);
  size_t ip = 20;
  if (fields.v6) {
    ip = 40;
    std::memset(h, 0, ip);
    store_be32(h, 6u << 28 | static_cast<uint32_t>(fields.tos) << 20);
    store_be16(h + 4, udp_length);
    h[6] = IPPROTO_UDP;
    h[7] = 64;
    std::memcpy(h + 8, fields.source.data(), 16);
    std::memcpy(h + 24, fields.destination.data(), 16);
  } else {
    std::memset(h, 0, ip);
    h[0] = 0x45;
    h[1] = fields.tos;
    store_be16(h + 2, static_cast<uint16_t>(ip + udp_length));
    store_be16(h + 4, fields.ip_id);
    h[6] = 0x40;  // don't fragment
    h[8] = 64;
    h[9] = IPPROTO_UDP;
    std::memcpy(h + 12, fields.source.data(), 4);
    std::memcpy(h + 16, fields.destination.data(), 4);
    store_be16(h + 10, ipv4_checksum(h));
  }
  store_be16(h + ip, fields.source_port);
  store_be16(h + ip + 2, fields.destination_port);
  store_be16(h + ip + 4, udp_length);
  store_be16(h + ip + 6, 0);
  return ip + 8;
}

// ---- reader ----------------------------------------------------------------------------------

Result<std::unique_ptr<PcapReader>, Error> PcapReader::parse(std::vector<uint8_t> file,
                                                             const std::string& path) {
  std::unique_ptr<PcapReader> r(new PcapReader());
  r->file_ = std::move(file);
  if (r->file_.size() < 24)
    return fail(Errc::kInvalidArgument, path + ": too short for a capture file");
  uint32_t magic = 0;
  std::memcpy(&magic, r->file_.data(), 4);
  if (magic == kBlockSection) {
    r->pcapng_ = true;
    return r;
  }
  const uint32_t swapped = __builtin_bswap32(magic);
  if (magic != kMagicMicro && magic != kMagicNano && swapped != kMagicMicro &&
      swapped != kMagicNano)
    return fail(Errc::kInvalidArgument,
                path + ": not a pcap or pcapng file (magic " + std::to_string(magic) + ")");
  r->swapped_ = magic != kMagicMicro && magic != kMagicNano;
  const uint32_t plain = r->swapped_ ? swapped : magic;
  r->ticks_per_second_ = plain == kMagicNano ? 1'000'000'000 : 1'000'000;
  r->link_type_ = r->u32(r->file_.data() + 20) & 0x0FFFFFFF;  // the upper bits are FCS flags
  r->at_ = 24;
  return r;
}

uint32_t PcapReader::u32(const uint8_t* p) const {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return swapped_ ? __builtin_bswap32(v) : v;
}

uint16_t PcapReader::u16(const uint8_t* p) const {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return swapped_ ? __builtin_bswap16(v) : v;
}

bool PcapReader::next_classic(uint32_t& link_type, uint64_t& unix_ns,
                              std::span<const uint8_t>& bytes) {
  if (file_.size() - at_ < 16) return false;  // the end (a partial header is a cut file)
  const uint8_t* h = file_.data() + at_;
  const uint32_t captured = u32(h + 8);
  if (captured > kMaxRecordBytes || captured > file_.size() - at_ - 16) {
    error_ = "record " + std::to_string(records_ + 1) + " runs past the end of the file";
    return false;
  }
  link_type = link_type_;
  unix_ns =
      uint64_t{u32(h)} * 1'000'000'000 + uint64_t{u32(h + 4)} * (1'000'000'000 / ticks_per_second_);
  bytes = {h + 16, captured};
  at_ += 16 + captured;
  return true;
}

bool PcapReader::read_section_header(std::span<const uint8_t> block) {
  uint32_t order = 0;
  std::memcpy(&order, block.data() + 8, 4);
  if (order != kByteOrderMagic && __builtin_bswap32(order) != kByteOrderMagic) {
    error_ = "pcapng section with a bad byte-order magic";
    return false;
  }
  swapped_ = order != kByteOrderMagic;
  interfaces_.clear();
  return true;
}

// An interface description: its link type and, from its if_tsresol option, its time unit.
bool PcapReader::read_interface(std::span<const uint8_t> body) {
  if (body.size() < 8) return false;
  Interface i;
  i.link_type = u16(body.data());
  for (size_t at = 8; at + 4 <= body.size();) {
    const uint16_t code = u16(body.data() + at);
    const uint16_t length = u16(body.data() + at + 2);
    if (code == 0 || at + 4 + length > body.size()) break;
    if (code == 9 && length >= 1) {
      const uint8_t r = body[at + 4];
      const uint8_t exponent = r & 0x7F;
      if ((r & 0x80) == 0 && exponent <= 19) {
        i.ticks_per_second = 1;
        for (int k = 0; k < exponent; ++k) i.ticks_per_second *= 10;
      } else if ((r & 0x80) != 0 && exponent <= 63) {
        i.ticks_per_second = uint64_t{1} << exponent;
      }
    }
    at += 4 + ((length + 3u) & ~3u);
  }
  interfaces_.push_back(i);
  return true;
}

bool PcapReader::next_pcapng(uint32_t& link_type, uint64_t& unix_ns,
                             std::span<const uint8_t>& bytes) {
  while (file_.size() - at_ >= 12) {
    const uint8_t* b = file_.data() + at_;
    uint32_t type = 0;
    std::memcpy(&type, b, 4);
    if (type == kBlockSection) {
      if (file_.size() - at_ < 28 || !read_section_header({b, 28})) return false;
    }
    const uint32_t length = u32(b + 4);
    if (length < 12 || length % 4 != 0 || length > file_.size() - at_) {
      error_ = "a pcapng block runs past the end of the file";
      return false;
    }
    at_ += length;
    const std::span<const uint8_t> body(b + 8, length - 12);
    if (type == kBlockInterface && !read_interface(body)) continue;
    uint32_t interface = 0, captured = 0;
    uint64_t ticks = 0;
    size_t data_at = 0;
    if ((type == kBlockEnhancedPacket || type == kBlockPacketObsolete) && body.size() >= 20) {
      interface = type == kBlockEnhancedPacket ? u32(body.data()) : u16(body.data());
      ticks = uint64_t{u32(body.data() + 4)} << 32 | u32(body.data() + 8);
      captured = u32(body.data() + 12);
      data_at = 20;
    } else if (type == kBlockSimplePacket && body.size() >= 4) {
      captured = std::min<uint32_t>(u32(body.data()), static_cast<uint32_t>(body.size() - 4));
      data_at = 4;
    } else {
      continue;  // another block: statistics, name resolution, a custom one
    }
    if (interface >= interfaces_.size() || captured > body.size() - data_at) {
      ++records_;
      ++skipped_;
      continue;
    }
    const Interface& i = interfaces_[interface];
    link_type = i.link_type;
    unix_ns = ticks / i.ticks_per_second * 1'000'000'000 +
              ticks % i.ticks_per_second * 1'000'000'000 / i.ticks_per_second;
    bytes = body.subspan(data_at, captured);
    return true;
  }
  return false;
}

bool PcapReader::next_record(uint32_t& link_type, uint64_t& unix_ns,
                             std::span<const uint8_t>& bytes) {
  return pcapng_ ? next_pcapng(link_type, unix_ns, bytes) : next_classic(link_type, unix_ns, bytes);
}

bool PcapReader::next(CapturedDatagram& out) {
  uint32_t link_type = 0;
  uint64_t unix_ns = 0;
  std::span<const uint8_t> bytes;
  while (next_record(link_type, unix_ns, bytes)) {
    ++records_;
    out = CapturedDatagram{};
    if (!find_udp(link_type, bytes, out)) {
      ++skipped_;
      continue;
    }
    out.number = records_;
    out.unix_ns = unix_ns;
    return true;
  }
  return false;
}

bool find_udp(uint32_t link_type, std::span<const uint8_t> frame, CapturedDatagram& out) {
  switch (link_type) {
    case 1: {  // Ethernet, with any number of 802.1Q / 802.1ad tags
      size_t at = 12;
      while (frame.size() >= at + 2) {
        const uint16_t type = load_be16(frame.data() + at);
        if (type != 0x8100 && type != 0x88A8)
          return take_ethertype(type, frame.subspan(at + 2), out);
        at += 4;
      }
      return false;
    }
    case 113:  // Linux cooked v1: the protocol in bytes 14-15 of 16
      return frame.size() >= 16 &&
             take_ethertype(load_be16(frame.data() + 14), frame.subspan(16), out);
    case 276:  // Linux cooked v2: the protocol in bytes 0-1 of 20
      return frame.size() >= 20 && take_ethertype(load_be16(frame.data()), frame.subspan(20), out);
    case 0: {  // BSD loopback: a 4-byte address family in the capturing host's order
      if (frame.size() < 4) return false;
      const std::span<const uint8_t> ip = frame.subspan(4);
      return take_ipv4(ip, out) || take_ipv6(ip, out);
    }
    case 12:
    case 101:  // raw IP: the version nibble says which
    case 228:
    case 229:
      return take_ipv4(frame, out) || take_ipv6(frame, out);
    default:
      return false;
  }
}

}  // namespace mrc::wire
