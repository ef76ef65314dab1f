// Checks and text forms of what the provider puts on the wire (wire.h).
#include "fabric/wire.h"

#include <arpa/inet.h>

#include <cstdio>

namespace mrc::fabric {

std::optional<std::string> check_header(const SlotHeader& h, uint32_t slot_bytes,
                                        uint64_t max_message_bytes, bool expect_first) {
  if ((h.flags & ~kKnownFlags) != 0) return "unknown fragment flags";
  if ((h.flags & kRmaData) != 0 &&
      (h.flags != (kRmaData | kFirst | kLast | kHasData) || h.message_bytes != 0 || !expect_first))
    return "a malformed remote-write notice";
  if ((h.flags & kRead) != 0) {
    if (h.flags != (kRead | kFirst | kLast) || h.fragment_bytes != sizeof(CtsRecord) ||
        h.offset >= kMaxRendezvous || !expect_first || h.fragment_bytes > slot_bytes - sizeof h)
      return "a malformed read request";
    if (h.message_bytes > max_message_bytes) return "a read larger than max_msg_size";
    return std::nullopt;
  }
  if ((h.flags & (kRts | kFin)) != 0) {
    const uint32_t kind = h.flags & (kRts | kFin | kRmaData);
    if ((kind != kRts && kind != kFin) || (h.flags & (kFirst | kLast)) != (kFirst | kLast) ||
        h.fragment_bytes != 0 || h.offset >= kMaxRendezvous || !expect_first ||
        (kind == kFin && h.message_bytes != 0))
      return "a malformed rendezvous fragment";
    if (h.message_bytes > max_message_bytes) return "a message larger than max_msg_size";
    return std::nullopt;
  }
  if (h.fragment_bytes > slot_bytes - sizeof(SlotHeader)) return "a fragment larger than its slot";
  if (h.message_bytes > max_message_bytes) return "a message larger than max_msg_size";
  if (h.offset > h.message_bytes || h.fragment_bytes > h.message_bytes - h.offset)
    return "a fragment past the end of its message";
  if (((h.flags & kFirst) != 0) != expect_first)
    return expect_first ? "a message that does not start with its first fragment"
                        : "a new message before the last one ended";
  if ((h.flags & kFirst) != 0 && h.offset != 0) return "a first fragment at a nonzero offset";
  if ((h.flags & kLast) != 0 && h.offset + h.fragment_bytes != h.message_bytes)
    return "a last fragment that does not end its message";
  return std::nullopt;
}

std::optional<EndpointName> parse_name(const void* bytes, size_t length, bool any_port) {
  if (bytes == nullptr || length < sizeof(EndpointName)) return std::nullopt;
  EndpointName name;
  std::memcpy(&name, bytes, sizeof name);
  const EndpointName blank;
  if (std::memcmp(name.magic, blank.magic, sizeof name.magic) != 0 || name.version != 1 ||
      (name.family != 4 && name.family != 6) || (name.port == 0 && !any_port))
    return std::nullopt;
  return name;
}

std::string to_string(const EndpointName& name) {
  char address[INET6_ADDRSTRLEN] = "?";
  inet_ntop(name.family == 4 ? AF_INET : AF_INET6, name.address, address, sizeof address);
  char text[INET6_ADDRSTRLEN + 48];
  std::snprintf(text, sizeof text,
                name.family == 4 ? "fi_mrc://%s:%u/%016llx" : "fi_mrc://[%s]:%u/%016llx", address,
                static_cast<unsigned>(ntohs(name.port)),
                static_cast<unsigned long long>(name.nonce));
  return text;
}

std::string to_hex(const EndpointName& name) {
  const auto* b = reinterpret_cast<const uint8_t*>(&name);
  std::string out;
  for (size_t i = 0; i < sizeof name; ++i) {
    char two[3];
    std::snprintf(two, sizeof two, "%02x", b[i]);
    out += two;
  }
  return out;
}

std::optional<EndpointName> name_from_hex(const std::string& hex) {
  if (hex.size() != 2 * sizeof(EndpointName)) return std::nullopt;
  uint8_t bytes[sizeof(EndpointName)];
  for (size_t i = 0; i < sizeof bytes; ++i) {
    unsigned v = 0;
    if (std::sscanf(hex.c_str() + 2 * i, "%2x", &v) != 1) return std::nullopt;
    bytes[i] = static_cast<uint8_t>(v);
  }
  return parse_name(bytes, sizeof bytes);
}

}  // namespace mrc::fabric
