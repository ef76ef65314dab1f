// A UDP socket address of either IP family, as the kernel takes it (sockaddr_in or
// sockaddr_in6), so the datapath's sends, receives and peer tables need not know which family
// a plane uses. Plane addresses are IPv4 (a plane per local address, ECMP on the UDP source
// port) or IPv6 (also the family SRv6 planes need: wire/srv6.h).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <string>

#include "mrc/error.hpp"

namespace mrc::io {

struct SocketAddress {
  union {
    sockaddr any;
    sockaddr_in v4;
    sockaddr_in6 v6;
  } u{};

  static SocketAddress ipv4(in_addr address, uint16_t port);
  static SocketAddress ipv6(const in6_addr& address, uint16_t port);
  // From what recvmmsg or getifaddrs wrote (room for the family it names); anything but
  // AF_INET / AF_INET6 gives family 0.
  static SocketAddress from(const sockaddr* address);

  int family() const { return u.any.sa_family; }
  bool is_v6() const { return family() == AF_INET6; }
  socklen_t length() const { return is_v6() ? sizeof u.v6 : sizeof u.v4; }
  const sockaddr* get() const { return &u.any; }
  sockaddr* get() { return &u.any; }
  uint16_t port() const;
  void set_port(uint16_t port);
  // The address's bytes (4 or 16), as they are on the wire.
  const uint8_t* bytes() const;
  size_t byte_count() const { return is_v6() ? 16 : 4; }
  // Same family, address and port.
  bool operator==(const SocketAddress& o) const;
};

// "127.0.0.1:4791", "[fd00::1]:4791".
std::string to_string(const SocketAddress& a);
// The address alone: "127.0.0.1", "fd00::1".
std::string address_text(const SocketAddress& a);

// A plane's address: IPv4 or IPv6, and its MRC port.
struct PlaneAddress {
  in_addr address{};  // IPv4 plane
  uint16_t port = 4791;
  bool v6 = false;
  in6_addr address6{};  // IPv6 plane
  SocketAddress socket() const;
};
// Parses "127.0.0.1", "127.0.0.1:4792", "fd00::1", "[fd00::1]:4792" (a missing port takes
// `default_port`).
Result<PlaneAddress, Error> parse_plane_address(const std::string& text, uint16_t default_port);
std::string to_string(const PlaneAddress& a);

}  // namespace mrc::io
