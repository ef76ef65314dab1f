// The xdp backend (backend.h): one plane's AF_XDP link in the UDP datapath (io/udp_host.h).
//
// An AF_XDP socket on the interface holding the plane's address (queue 0), its UMEM, and the
// XDP program (io/xdp_program.h) that hands it the packets to the plane's MRC port. The
// datapath writes whole frames (wire/roce_frame.h): Ethernet, IPv4 and UDP headers of its own,
// so any packet can carry any source port (an EV needs no socket), and the RoCEv2 ICRC a
// hardware RoCE NIC checks. The engine runs with ICRC offload: it leaves the ICRC field to the
// link, which fills it on send and checks it on receive (RxMeta::icrc_checked).
//
// UMEM: kFrames frames of kFrameBytes, half lent to the kernel for receiving (the fill ring),
// half for sending (a free list, refilled from the completion ring). A datagram must fit one
// frame with its headers: max_datagram_bytes(); the device lowers its QPs' MTU to match, and
// a larger frame from a peer is dropped by the kernel (XDP_STATISTICS of the socket).
//
// Zero copy where the driver offers it (XDP_ZEROCOPY), else copy mode (veth, and most
// virtual devices). A transmit goes frame by frame onto the TX ring (a frame to a next hop
// whose MAC is not known yet is dropped, and counted); the ring is kicked with one sendto per
// flush, or when kBatch frames wait. RX is polled from the ring every round (epoll's readiness
// does not cover it). The plane's MRC port is also held by a UDP socket, so that no other
// process takes it.
//
// Bounded: at most kBatch descriptors per send or receive call, and every ring has its size.
#pragma once

#include <xdp/xsk.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "io/backend.h"
#include "io/netdev.h"
#include "io/xdp_program.h"
#include "mrc/error.hpp"
#include "wire/roce_frame.h"

namespace mrc::io {

struct XdpLinkStats {
  uint64_t tx_no_neighbour = 0;  // a send to a next hop whose MAC is not known yet
  std::array<uint64_t, wire::kFrameErrorCount> rx_refused{};  // frames refused, by wire::FrameError
};

// Every plane's link (each holding its plane's MRC port with a UDP socket too); the error
// names the plane, what failed and the fix.
Result<PlaneLinks, Error> open_xdp_links(const LinkConfig& config);

class XdpLink final : public TransmitLink {
 public:
  static constexpr uint32_t kFrames = 4096;
  static constexpr uint32_t kFrameBytes = 4096;
  static constexpr uint32_t kRingSize = 2048;
  static constexpr uint32_t kBatch = 64;

  // Opens the link for the plane at `local`:`port`; the error names what failed and the fix.
  static Result<std::unique_ptr<XdpLink>, Error> open(in_addr local, uint16_t port);
  ~XdpLink() override;
  XdpLink(const XdpLink&) = delete;
  XdpLink& operator=(const XdpLink&) = delete;

  int fd() const;
  // "native zero-copy", "native copy" or "generic copy".
  std::string mode() const;
  const NetInterface& interface() const { return interface_; }
  Neighbours& neighbours() { return neighbours_; }
  const XdpLinkStats& counters() const { return stats_; }
  // Keeps `fd` (a UDP socket holding the plane's MRC port) open as long as the link.
  void hold_port(int fd) { port_holder_fd_ = fd; }

  // PlaneLink and TransmitLink (backend.h).
  int poll_fd() const override { return fd(); }
  bool read_every_round() const override { return true; }
  bool owns_icrc() const override { return true; }
  // The largest datagram a frame carries on this interface (its MTU, and the frame size).
  size_t max_datagram_bytes() const override;
  std::string description() const override { return interface_.name + " " + mode(); }
  void add_counters(UdpPlaneStats& stats) const override;
  void prepare_peer(const SocketAddress& to) override;
  // A TX frame's datagram area; empty if no frame is free.
  std::span<uint8_t> space() override;
  void written(size_t length) override;
  // Each datagram of `t` becomes a whole frame (its ICRC field filled here) from t.source_port
  // to t.to, IPv4; dropped (counted in `out.errors`) if the next hop's MAC is not known yet.
  void send(const Transmit& t, Instant now, TxOutcome& out) override;
  // Hands the frames sent to the kernel.
  void kick(TxOutcome& out) override;
  std::span<const uint8_t> as_sent(uint16_t source_port, const SocketAddress& to,
                                   std::span<const uint8_t> datagram) override;
  // The datagrams received since the last call, checked (ICRC included); valid until the next
  // call, which returns their frames to the kernel.
  std::span<const RxDatagram> receive() override;

 private:
  XdpLink(NetInterface interface, in_addr local, uint16_t port);
  Result<Ok, Error> open_socket();
  void reclaim_completions();
  void return_rx_frames();

  NetInterface interface_;
  in_addr local_;
  uint16_t port_;
  Neighbours neighbours_;
  std::optional<XdpProgram> program_;
  void* umem_area_ = nullptr;
  xsk_umem* umem_ = nullptr;
  xsk_socket* xsk_ = nullptr;
  xsk_ring_prod fill_{};
  xsk_ring_cons completion_{};
  xsk_ring_cons rx_{};
  xsk_ring_prod tx_{};
  bool zero_copy_ = false;
  std::vector<uint64_t> free_tx_;     // TX frame addresses not in flight
  uint64_t open_frame_ = UINT64_MAX;  // the frame space() handed out
  struct Written {
    uint64_t frame;
    uint32_t length;
  };
  std::vector<Written> written_;      // datagrams written, in order, not yet sent
  std::vector<xdp_desc> pending_tx_;  // added, not yet flushed
  std::vector<uint64_t> rx_held_;     // frames of the last receive(), returned on the next
  std::vector<RxDatagram> rx_out_;
  uint16_t ip_id_ = 0;
  XdpLinkStats stats_;
  int port_holder_fd_ = -1;
  std::vector<uint8_t> capture_frame_;  // as_sent's scratch: a frame, for its ICRC
};

}  // namespace mrc::io
