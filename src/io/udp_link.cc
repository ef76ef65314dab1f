// The udp backend: one plane's receive socket, EV source port sockets, GSO sends and GRO
// receives behind PlaneLink (udp_link.h).
#include "io/udp_link.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <utility>

#include "core/wire/packet.h"
#include "io/port_holder.h"
#include "util/errno_map.h"

namespace mrc::io {
namespace {

constexpr int kUdpNoCheck6Tx = 101;  // linux/udp.h UDP_NO_CHECK6_TX / _RX
constexpr int kUdpNoCheck6Rx = 102;
constexpr int kIpv6FlowinfoSend = 33;  // IPV6_FLOWINFO_SEND (linux/in6.h; not in glibc's headers)

Error errno_error(const std::string& what, const PlaneAddress& a) {
  return system_error(what + " " + to_string(a), errno);
}

// Why `a` is in use, and how to move: "(process 1234 (mrc_bw) uses this port: stop it, or
// choose another with --port)".
std::string in_use_advice(const PlaneAddress& a, const char* what, const std::string& setting) {
  const pid_t holder = udp_port_holder(a);
  if (holder == getpid())
    return std::string(" (this process already uses this ") + what + ": choose another with " +
           setting + ")";
  const std::string who = holder != 0 ? describe_process(holder) : "another process";
  return " (" + who + " uses this " + what + ": stop it, or choose another with " + setting + ")";
}

// Socket options of an MRC socket: large buffers (FORCE works as root, the plain option up to
// rmem_max), ECT(0) on what it sends and the TOS / traffic class of what it receives; IPv6 ones
// send the flow label their destination's sin6_flowinfo carries (0: the kernel's own); SRv6
// planes send and accept UDP checksum zero (srv6.h).
void set_options(int fd, bool v6, int buffer_bytes, bool zero_checksum) {
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer_bytes, sizeof buffer_bytes) != 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer_bytes, sizeof buffer_bytes);
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buffer_bytes, sizeof buffer_bytes) != 0)
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer_bytes, sizeof buffer_bytes);
  const int on = 1;
  const int ect0 = 0x02;  // ECN-capable transport
  if (v6) {
    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on, sizeof on);
    setsockopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, &on, sizeof on);
    setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &ect0, sizeof ect0);
    setsockopt(fd, IPPROTO_IPV6, kIpv6FlowinfoSend, &on, sizeof on);
  } else {
    setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &on, sizeof on);
    setsockopt(fd, IPPROTO_IP, IP_TOS, &ect0, sizeof ect0);
  }
  if (zero_checksum) {
    setsockopt(fd, IPPROTO_UDP, kUdpNoCheck6Tx, &on, sizeof on);
    setsockopt(fd, IPPROTO_UDP, kUdpNoCheck6Rx, &on, sizeof on);
  }
}

}  // namespace

Result<int, Error> bound_socket(const PlaneAddress& a, int buffer_bytes, bool zero_checksum,
                                const char* what, const std::string& setting) {
  const int fd = socket(a.v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Err{errno_error("socket for", a)};
  set_options(fd, a.v6, buffer_bytes, zero_checksum);
  const SocketAddress sa = a.socket();
  if (bind(fd, sa.get(), sa.length()) != 0) {
    const int error = errno;
    Error e = errno_error("cannot bind", a);
    close(fd);
    if (error == EADDRNOTAVAIL) e.message += " (is this address configured on a local interface?)";
    if (error == EADDRINUSE) e.message += in_use_advice(a, what, setting);
    return Err{e};
  }
  return fd;
}

Result<PlaneLinks, Error> open_udp_links(const LinkConfig& config) {
  auto gso = std::make_shared<GsoSwitch>(GsoSwitch{config.gso});
  PlaneLinks links;
  for (size_t p = 0; p < config.planes.size(); ++p) {
    const auto first_port =
        static_cast<uint16_t>(config.ev_port_base + p * config.ev_ports_per_plane);
    auto link = std::make_unique<UdpLink>(config.planes[p], first_port, gso);
    if (auto opened = link->open(config, static_cast<int>(p)); !opened.ok())
      return Err{opened.error()};
    links.push_back(std::move(link));
  }
  return links;
}

UdpLink::UdpLink(const PlaneAddress& local, uint16_t first_port, std::shared_ptr<GsoSwitch> gso)
    : local_(local), first_port_(first_port), tx_(wire::kMaxDatagramBytes, std::move(gso)) {}

UdpLink::~UdpLink() {
  if (rx_fd_ >= 0) close(rx_fd_);
  for (int fd : tx_fds_) close(fd);
}

Result<Ok, Error> UdpLink::open(const LinkConfig& config, int plane) {
  auto rx =
      bound_socket(local_, config.socket_buffer_bytes, config.srv6, "port", config.port_setting);
  if (!rx.ok()) return Err{rx.error()};
  rx_fd_ = rx.value();
  if (config.gro) enable_gro(rx_fd_);
  enable_arrival_times(rx_fd_);
  for (uint16_t i = 0; i < config.ev_ports_per_plane; ++i) {
    PlaneAddress a = local_;
    a.port = static_cast<uint16_t>(config.ev_port_base + plane * config.ev_ports_per_plane + i);
    auto tx = bound_socket(a, config.socket_buffer_bytes, config.srv6, "EV source port",
                           config.ev_port_setting);
    if (!tx.ok()) return Err{tx.error()};
    tx_fds_.push_back(tx.value());
    // The kernel refuses GSO for datagrams without a UDP checksum (SRv6 planes).
    if (tx_.gso() && (config.srv6 || !gso_supported(tx.value()))) tx_.disable_gso();
  }
  return Ok{};
}

size_t UdpLink::max_datagram_bytes() const {
  return wire::kMaxDatagramBytes;
}

}  // namespace mrc::io
