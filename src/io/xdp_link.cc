// The xdp backend: one plane's AF_XDP socket, UMEM and rings behind PlaneLink (xdp_link.h).
#include "io/xdp_link.h"

#include <linux/if_xdp.h>
#include <netinet/in.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/wire/packet.h"
#include "io/udp_link.h"
#include "util/errno_map.h"

namespace mrc::io {
namespace {

// The kernel sends at most this many frames per kick in copy mode (it answers EAGAIN with more
// left): a flush kicks until the ring is drained, at most kRingSize / this + 1 times.
constexpr uint32_t kFramesPerKick = 32;

// What an AF_XDP socket's EAFNOSUPPORT means, and the fix.
constexpr const char* kNoXdpSockets =
    " (this kernel has no AF_XDP sockets: CONFIG_XDP_SOCKETS; use --backend udp)";

}  // namespace

Result<PlaneLinks, Error> open_xdp_links(const LinkConfig& config) {
  PlaneLinks links;
  for (size_t p = 0; p < config.planes.size(); ++p) {
    const PlaneAddress& local = config.planes[p];
    // The port is held by a UDP socket too, so that no other process binds it.
    auto holder =
        bound_socket(local, config.socket_buffer_bytes, config.srv6, "port", config.port_setting);
    if (!holder.ok()) return Err{holder.error()};
    auto link = XdpLink::open(local.address, local.port);
    if (!link.ok()) {
      close(holder.value());
      return fail(link.error(),
                  "xdp backend, plane " + std::to_string(p) + " (" + to_string(local) + "): ");
    }
    link.value()->hold_port(holder.value());
    links.push_back(std::move(link.value()));
  }
  return links;
}

XdpLink::XdpLink(NetInterface interface, in_addr local, uint16_t port)
    : interface_(std::move(interface)),
      local_(local),
      port_(port),
      neighbours_(interface_.name, local) {}

Result<std::unique_ptr<XdpLink>, Error> XdpLink::open(in_addr local, uint16_t port) {
  auto found = interface_of(local);
  if (!found.ok()) return Err{found.error()};
  const NetInterface& ifc = found.value();
  if (ifc.rx_queues > 1)
    return fail(Errc::kUnsupported, ifc.name + " has " + std::to_string(ifc.rx_queues) +
                                        " receive queues and the xdp backend binds one: "
                                        "`ethtool -L " +
                                        ifc.name + " combined 1`");
  if (ifc.mtu < wire::kIpv4HeaderBytes + wire::kUdpHeaderBytes + 256)
    return fail(Errc::kUnsupported,
                ifc.name + "'s MTU (" + std::to_string(ifc.mtu) + ") is too small for MRC packets");
  std::unique_ptr<XdpLink> link(new XdpLink(ifc, local, port));
  auto program = XdpProgram::attach(ifc.name, ifc.index, port, 1, ifc.driver == "veth");
  if (!program.ok()) return Err{program.error()};
  link->program_.emplace(std::move(program.value()));
  if (auto opened = link->open_socket(); !opened.ok()) return Err{opened.error()};
  if (auto added = link->program_->add_socket(0, link->fd()); !added.ok())
    return Err{added.error()};
  return link;
}

Result<Ok, Error> XdpLink::open_socket() {
  const size_t bytes = static_cast<size_t>(kFrames) * kFrameBytes;
  umem_area_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (umem_area_ == MAP_FAILED) {
    umem_area_ = nullptr;
    return Err{system_error("mmap of the AF_XDP UMEM", errno)};
  }
  const xsk_umem_config umem_config{kRingSize, kRingSize, kFrameBytes, 0, 0};
  if (int e = xsk_umem__create(&umem_, umem_area_, bytes, &fill_, &completion_, &umem_config);
      e != 0) {
    Error error = system_error("creating the AF_XDP UMEM", -e);
    if (-e == EPERM) error.message += " (needs root, or CAP_NET_RAW and CAP_IPC_LOCK)";
    if (-e == EAFNOSUPPORT) error.message += kNoXdpSockets;
    return Err{error};
  }
  xsk_socket_config config{};
  config.rx_size = kRingSize;
  config.tx_size = kRingSize;
  config.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD;
  int e = 0;
  for (uint16_t mode : {uint16_t{XDP_ZEROCOPY}, uint16_t{XDP_COPY}}) {
    config.bind_flags = static_cast<uint16_t>(mode | XDP_USE_NEED_WAKEUP);
    e = xsk_socket__create(&xsk_, interface_.name.c_str(), 0, umem_, &rx_, &tx_, &config);
    if (e == 0) {
      zero_copy_ = mode == XDP_ZEROCOPY;
      break;
    }
  }
  if (e != 0) {
    Error error = system_error("creating an AF_XDP socket on " + interface_.name + " queue 0", -e);
    if (-e == EAFNOSUPPORT) error.message += kNoXdpSockets;
    return Err{error};
  }
  uint32_t idx = 0;
  const uint32_t rx_frames = kFrames / 2;
  if (xsk_ring_prod__reserve(&fill_, rx_frames, &idx) != rx_frames)
    return fail(Errc::kResourceExhausted, "AF_XDP fill ring too small");
  for (uint32_t i = 0; i < rx_frames; ++i)
    *xsk_ring_prod__fill_addr(&fill_, idx + i) = static_cast<uint64_t>(i) * kFrameBytes;
  xsk_ring_prod__submit(&fill_, rx_frames);
  for (uint32_t i = rx_frames; i < kFrames; ++i)
    free_tx_.push_back(static_cast<uint64_t>(i) * kFrameBytes);
  pending_tx_.reserve(kBatch);
  rx_out_.reserve(kBatch);
  return Ok{};
}

XdpLink::~XdpLink() {
  if (xsk_ != nullptr) xsk_socket__delete(xsk_);
  if (umem_ != nullptr) xsk_umem__delete(umem_);
  if (umem_area_ != nullptr) munmap(umem_area_, static_cast<size_t>(kFrames) * kFrameBytes);
  program_.reset();  // detaches the program
  if (port_holder_fd_ >= 0) close(port_holder_fd_);
}

void XdpLink::add_counters(UdpPlaneStats& stats) const {
  for (uint64_t n : stats_.rx_refused) stats.receive_refused += n;
  stats.unresolved_neighbour = stats_.tx_no_neighbour;
}

// The link writes the next hop's MAC itself: a peer's is resolved now, not on its first packets.
void XdpLink::prepare_peer(const SocketAddress& to) {
  neighbours_.resolve(to.u.v4.sin_addr, Duration::from_ms(1000));
}

int XdpLink::fd() const {
  return xsk_socket__fd(xsk_);
}

std::string XdpLink::mode() const {
  return std::string(program_ ? program_->mode() : "?") + (zero_copy_ ? " zero-copy" : " copy");
}

// A received frame lands XDP_PACKET_HEADROOM (256) bytes into its UMEM frame: that much less
// than kFrameBytes is what a frame can be, in either direction.
size_t XdpLink::max_datagram_bytes() const {
  return std::min<size_t>(kFrameBytes - XDP_PACKET_HEADROOM - wire::kFrameHeaderBytes,
                          interface_.mtu - wire::kIpv4HeaderBytes - wire::kUdpHeaderBytes);
}

void XdpLink::reclaim_completions() {
  uint32_t idx = 0;
  const uint32_t n = xsk_ring_cons__peek(&completion_, kRingSize, &idx);
  for (uint32_t i = 0; i < n; ++i)
    free_tx_.push_back(*xsk_ring_cons__comp_addr(&completion_, idx + i));
  if (n > 0) xsk_ring_cons__release(&completion_, n);
}

std::span<uint8_t> XdpLink::space() {
  if (open_frame_ == UINT64_MAX) {
    if (free_tx_.empty()) reclaim_completions();
    if (free_tx_.empty()) return {};
    open_frame_ = free_tx_.back();
    free_tx_.pop_back();
  }
  auto* frame = static_cast<uint8_t*>(umem_area_) + open_frame_;
  return {frame + wire::kFrameHeaderBytes, max_datagram_bytes()};
}

// REQUIRES: space() handed out the frame the datagram was written in.
void XdpLink::written(size_t length) {
  written_.push_back(Written{open_frame_, static_cast<uint32_t>(length)});
  open_frame_ = UINT64_MAX;
}

void XdpLink::send(const Transmit& t, Instant now, TxOutcome& out) {
  const size_t count = std::min(t.count, written_.size());
  wire::FrameAddresses a;
  const bool known = neighbours_.lookup(t.to.u.v4.sin_addr, now, a.destination_mac);
  a.source_mac = interface_.mac;
  a.source_ip = local_;
  a.destination_ip = t.to.u.v4.sin_addr;
  a.source_port = t.source_port;
  a.destination_port = t.to.port();
  for (size_t i = 0; i < count; ++i) {
    const Written w = written_[i];
    if (!known) {  // the engine resends it; the frame goes back to the free list
      ++stats_.tx_no_neighbour;
      ++out.errors;
      free_tx_.push_back(w.frame);
      continue;
    }
    auto* frame = static_cast<uint8_t*>(umem_area_) + w.frame;
    const size_t frame_bytes = wire::write_frame(a, ip_id_++, w.length, {frame, kFrameBytes});
    pending_tx_.push_back(xdp_desc{w.frame, static_cast<uint32_t>(frame_bytes), 0});
    out.bytes += w.length;
    if (pending_tx_.size() >= kBatch) kick(out);
  }
  written_.erase(written_.begin(), written_.begin() + static_cast<ptrdiff_t>(count));
}

// The frame the link will write for `datagram`, built here, so a capture has its ICRC.
std::span<const uint8_t> XdpLink::as_sent(uint16_t source_port, const SocketAddress& to,
                                          std::span<const uint8_t> datagram) {
  if (datagram.size() < 16) return datagram;
  capture_frame_.resize(wire::kFrameHeaderBytes + datagram.size());
  std::memcpy(capture_frame_.data() + wire::kFrameHeaderBytes, datagram.data(), datagram.size());
  wire::FrameAddresses f;
  f.source_ip = local_;
  f.destination_ip = to.u.v4.sin_addr;
  f.source_port = source_port;
  f.destination_port = to.port();
  wire::write_frame(f, 0, datagram.size(), capture_frame_);
  return std::span<const uint8_t>(capture_frame_).subspan(wire::kFrameHeaderBytes);
}

void XdpLink::kick(TxOutcome& out) {
  const uint32_t n = static_cast<uint32_t>(pending_tx_.size());
  if (n == 0) return;
  uint32_t idx = 0;
  // The ring holds as many entries as there are TX frames, so a frame we own always has a slot.
  if (xsk_ring_prod__reserve(&tx_, n, &idx) != n) {
    for (const xdp_desc& d : pending_tx_) free_tx_.push_back(d.addr);
    out.errors += n;
    pending_tx_.clear();
    return;
  }
  for (uint32_t i = 0; i < n; ++i) *xsk_ring_prod__tx_desc(&tx_, idx + i) = pending_tx_[i];
  xsk_ring_prod__submit(&tx_, n);
  pending_tx_.clear();
  out.packets += n;
  for (uint32_t kick = 0; kick <= kRingSize / kFramesPerKick; ++kick) {
    if (kick == 0 && !xsk_ring_prod__needs_wakeup(&tx_)) break;  // the driver is already sending
    ++out.calls;
    if (sendto(fd(), nullptr, 0, MSG_DONTWAIT, nullptr, 0) == 0) break;
    if (errno != EAGAIN) {
      if (errno != EBUSY && errno != ENOBUFS) out.last_errno = errno;
      break;
    }
  }
  reclaim_completions();
}

void XdpLink::return_rx_frames() {
  const uint32_t n = static_cast<uint32_t>(rx_held_.size());
  if (n == 0) return;
  uint32_t idx = 0;
  // The fill ring holds as many entries as there are RX frames: there is always room.
  if (xsk_ring_prod__reserve(&fill_, n, &idx) == n) {
    for (uint32_t i = 0; i < n; ++i) *xsk_ring_prod__fill_addr(&fill_, idx + i) = rx_held_[i];
    xsk_ring_prod__submit(&fill_, n);
  }
  rx_held_.clear();
  if (xsk_ring_prod__needs_wakeup(&fill_))
    (void)recvfrom(fd(), nullptr, 0, MSG_DONTWAIT, nullptr, nullptr);
}

std::span<const RxDatagram> XdpLink::receive() {
  return_rx_frames();
  rx_out_.clear();
  uint32_t idx = 0;
  const uint32_t n = xsk_ring_cons__peek(&rx_, kBatch, &idx);
  for (uint32_t i = 0; i < n; ++i) {
    const xdp_desc* d = xsk_ring_cons__rx_desc(&rx_, idx + i);
    rx_held_.push_back(d->addr & ~static_cast<uint64_t>(kFrameBytes - 1));
    auto parsed = wire::parse_frame({static_cast<uint8_t*>(umem_area_) + d->addr, d->len});
    if (!parsed.ok()) {
      ++stats_.rx_refused[static_cast<size_t>(parsed.error())];
      continue;
    }
    const wire::FrameAddresses& a = parsed->addresses;
    neighbours_.learn(a.source_ip, a.source_mac);
    RxDatagram out;
    out.bytes = parsed->datagram;
    out.from = SocketAddress::ipv4(a.source_ip, a.source_port);
    out.tos = a.tos;
    rx_out_.push_back(out);
  }
  if (n > 0) xsk_ring_cons__release(&rx_, n);
  return rx_out_;
}

}  // namespace mrc::io
