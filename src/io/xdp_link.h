// One plane's AF_XDP link: the `xdp` backend of the UDP datapath (io/udp_host.h).
//
// An AF_XDP socket on the interface holding the plane's address (queue 0), its UMEM, and the
// XDP program (io/xdp_program.h) that hands it the packets to the plane's MRC port. The
// datapath writes whole frames (io/roce_frame.h): Ethernet, IPv4 and UDP headers of its own,
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
// virtual devices). TX is kicked with one sendto per flush; RX is polled from the ring.
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

#include "io/netdev.h"
#include "io/roce_frame.h"
#include "io/udp_batch.h"
#include "io/xdp_program.h"
#include "mrc/error.hpp"

namespace mrc::io {

struct XdpLinkStats {
  uint64_t tx_no_neighbour = 0;  // a send to a next hop whose MAC is not known yet
  std::array<uint64_t, kFrameErrorCount> rx_refused{};  // frames refused, by FrameError
};

class XdpLink {
 public:
  static constexpr uint32_t kFrames = 4096;
  static constexpr uint32_t kFrameBytes = 4096;
  static constexpr uint32_t kRingSize = 2048;
  static constexpr uint32_t kBatch = 64;

  // Opens the link for the plane at `local`:`port`; the error names what failed and the fix.
  static Result<std::unique_ptr<XdpLink>, Error> open(in_addr local, uint16_t port);
  ~XdpLink();
  XdpLink(const XdpLink&) = delete;
  XdpLink& operator=(const XdpLink&) = delete;

  int fd() const;
  // The largest datagram a frame carries on this interface (its MTU, and the frame size).
  size_t max_datagram_bytes() const;
  // "native zero-copy", "native copy" or "generic copy".
  std::string mode() const;
  const NetInterface& interface() const { return interface_; }
  Neighbours& neighbours() { return neighbours_; }

  // Where the next datagram goes: a TX frame's datagram area; empty if no frame is free.
  std::span<uint8_t> next();
  // The datagram just written at next(), `length` bytes (its ICRC field is filled here), goes
  // from `source_port` to `to`. Dropped (counted in `out.errors`) if the next hop's MAC is not
  // known yet.
  void add(uint16_t source_port, const sockaddr_in& to, size_t length, Instant now, TxOutcome& out);
  // Hands the added frames to the kernel.
  void flush(TxOutcome& out);
  // The datagrams received since the last call, checked (ICRC included); valid until the next
  // call, which returns their frames to the kernel.
  std::span<const RxDatagram> receive();
  const XdpLinkStats& counters() const { return stats_; }

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
  uint64_t open_frame_ = UINT64_MAX;  // the frame next() handed out
  std::vector<xdp_desc> pending_tx_;  // added, not yet flushed
  std::vector<uint64_t> rx_held_;     // frames of the last receive(), returned on the next
  std::vector<RxDatagram> rx_out_;
  uint16_t ip_id_ = 0;
  XdpLinkStats stats_;
};

}  // namespace mrc::io
