// UDP socket addresses of either family (socket_address.h).
#include "io/socket_address.h"

#include <arpa/inet.h>

#include <cstring>

namespace mrc::io {

SocketAddress SocketAddress::ipv4(in_addr address, uint16_t port) {
  SocketAddress a;
  a.u.v4.sin_family = AF_INET;
  a.u.v4.sin_addr = address;
  a.u.v4.sin_port = htons(port);
  return a;
}

SocketAddress SocketAddress::ipv6(const in6_addr& address, uint16_t port) {
  SocketAddress a;
  a.u.v6.sin6_family = AF_INET6;
  a.u.v6.sin6_addr = address;
  a.u.v6.sin6_port = htons(port);
  return a;
}

SocketAddress SocketAddress::from(const sockaddr* address) {
  SocketAddress a;
  if (address == nullptr) return a;
  if (address->sa_family == AF_INET) std::memcpy(&a.u.v4, address, sizeof a.u.v4);
  if (address->sa_family == AF_INET6) std::memcpy(&a.u.v6, address, sizeof a.u.v6);
  return a;
}

uint16_t SocketAddress::port() const {
  return ntohs(is_v6() ? u.v6.sin6_port : u.v4.sin_port);
}

void SocketAddress::set_port(uint16_t port) {
  (is_v6() ? u.v6.sin6_port : u.v4.sin_port) = htons(port);
}

const uint8_t* SocketAddress::bytes() const {
  return is_v6() ? u.v6.sin6_addr.s6_addr : reinterpret_cast<const uint8_t*>(&u.v4.sin_addr);
}

bool SocketAddress::operator==(const SocketAddress& o) const {
  return family() == o.family() && port() == o.port() &&
         std::memcmp(bytes(), o.bytes(), byte_count()) == 0;
}

std::string address_text(const SocketAddress& a) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.family() != AF_INET && a.family() != AF_INET6) return "?";
  inet_ntop(a.family(), a.bytes(), text, sizeof text);
  return text;
}

std::string to_string(const SocketAddress& a) {
  const std::string address = address_text(a);
  return (a.is_v6() ? "[" + address + "]" : address) + ":" + std::to_string(a.port());
}

}  // namespace mrc::io
