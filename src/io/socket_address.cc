// UDP socket addresses of either family (socket_address.h).
#include "io/socket_address.h"

#include <arpa/inet.h>

#include <cstdlib>
#include <cstring>
#include <optional>

#include "wire/pcap.h"

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
  return wire::address_text(a.family(), a.bytes(), a.port());
}

SocketAddress PlaneAddress::socket() const {
  return v6 ? SocketAddress::ipv6(address6, port) : SocketAddress::ipv4(address, port);
}

Result<PlaneAddress, Error> parse_plane_address(const std::string& text, uint16_t default_port) {
  PlaneAddress a;
  a.port = default_port;
  std::string host = text;
  std::optional<std::string> port;  // after the address's ':', if it names one
  const size_t colon = text.rfind(':');
  const bool bracketed = !text.empty() && text.front() == '[';
  if (bracketed) {  // [IPv6]:port or [IPv6]
    const size_t close = text.find(']');
    if (close == std::string::npos || (close + 1 < text.size() && text[close + 1] != ':'))
      return fail(Errc::kInvalidArgument,
                  "bad plane address '" + text + "': expected [IPv6 address]:port");
    host = text.substr(1, close - 1);
    if (close + 1 < text.size()) port = text.substr(close + 2);
  } else if (colon != std::string::npos && text.find(':') == colon) {  // IPv4:port
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (port) {
    char* end = nullptr;
    const long value = std::strtol(port->c_str(), &end, 10);
    if (port->empty() || *end != '\0' || value < 1 || value > 65535)
      return fail(Errc::kInvalidArgument,
                  "bad port in plane address '" + text + "': must be 1..65535");
    a.port = static_cast<uint16_t>(value);
  }
  a.v6 = bracketed || host.find(':') != std::string::npos;
  const int parsed = a.v6 ? inet_pton(AF_INET6, host.c_str(), &a.address6)
                          : inet_pton(AF_INET, host.c_str(), &a.address);
  if (parsed != 1)
    return fail(Errc::kInvalidArgument,
                "bad plane address '" + text +
                    "': expected an IPv4 address such as 127.0.0.1[:port] or an IPv6 address "
                    "such as fd00::1 or [fd00::1]:port");
  return a;
}

std::string to_string(const PlaneAddress& a) {
  return to_string(a.socket());
}

}  // namespace mrc::io
