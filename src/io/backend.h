// What the datapath (io/udp_host.h) asks of a plane's link, behind one interface, so that the
// host's send and receive paths are the same over every backend and every decorator:
//   - backends: `udp` (io/udp_link.h: the kernel's UDP sockets, GSO/GRO) and `xdp`
//     (io/xdp_link.h: AF_XDP, whole RoCEv2 frames written by the link);
//   - decorators around any link: captures of what is sent (io/capture_link.h) and the
//     impairments (io/impaired_link.h: drop, delay, reorder).
//
// Send. Datagrams are written in place, in the backend's own send memory (the udp batch
// buffer, an AF_XDP frame), so nothing is copied between the engine and the kernel:
//   space()                          where the next datagram goes (empty: no room now);
//   add(source_port, to, length, …)  the datagram just written at space() is to be sent;
//   flush(…)                         sends everything added.
// A datagram written at space() but never added is overwritten by the next one.
//
// The batch contract (a Transmit, as quinn-udp's): datagrams of one segment size, the last one
// possibly shorter, from one source port to one destination, at most kMaxGsoSegments of them
// and kMaxGsoBytes in all. A backend (TransmitLink) forms transmits from the datagrams added,
// in their order (TransmitGather), and sends each: the udp link as one GSO send (or one
// sendmmsg where GSO is off), the xdp link frame by frame onto its TX ring.
//
// Receive: receive() reads once, non-blocking; the datagrams stay valid until the next call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "io/socket_address.h"
#include "mrc/datapath.hpp"
#include "mrc/error.hpp"
#include "mrc/types.hpp"

namespace mrc::io {

// What one transmit may carry: the largest UDP payload over IPv4, and the kernel's GSO segment
// limit (the bounds of one UDP GSO send, kept by every backend).
inline constexpr size_t kMaxGsoBytes = 65507;
inline constexpr size_t kMaxGsoSegments = 64;

// A batch of datagrams that leaves together (see the contract above).
struct Transmit {
  uint16_t source_port = 0;
  SocketAddress to;
  size_t segment_bytes = 0;  // every datagram's size but the last's, which is 1..segment_bytes
  size_t count = 0;
  size_t bytes = 0;  // all of them: (count - 1) * segment_bytes < bytes <= count * segment_bytes
};

// What sends did, for the plane's counters.
struct TxOutcome {
  uint64_t packets = 0;
  uint64_t bytes = 0;
  uint64_t errors =
      0;  // datagrams the kernel refused (EAGAIN, ENOBUFS, ...): lost, recovered by the engine
  uint64_t calls = 0;  // system calls made
  int last_errno = 0;
  void operator+=(const TxOutcome& o) {
    packets += o.packets;
    bytes += o.bytes;
    errors += o.errors;
    calls += o.calls;
    if (o.last_errno != 0) last_errno = o.last_errno;
  }
};

// One received datagram: its bytes, its sender, the IP TOS byte it arrived with, and when the
// kernel received it (SO_TIMESTAMPNS, realtime ns; 0 if the backend gives no time). The
// segments of one GRO buffer share their buffer's time.
struct RxDatagram {
  std::span<const uint8_t> bytes;
  SocketAddress from;
  uint8_t tos = 0;
  int64_t arrival_ns = 0;
};

// What the links of a host are opened with (from UdpHostConfig).
struct LinkConfig {
  std::vector<PlaneAddress> planes;
  uint16_t ev_port_base = 50000;  // plane p's EV source ports: base + p * n, n = ports per plane
  uint16_t ev_ports_per_plane = 40;
  bool srv6 = false;  // SRv6 planes: UDP checksums zero (wire/srv6.h)
  int socket_buffer_bytes = 8 << 20;
  bool gso = true;
  bool gro = true;
  std::string port_setting = "--port";  // named in the error of a port in use
  std::string ev_port_setting = "--ev-port-base";
};

// One plane's link: a backend, or a decorator around one.
class PlaneLink {
 public:
  virtual ~PlaneLink() = default;

  // The descriptor epoll watches for this plane's arrivals.
  virtual int poll_fd() const = 0;
  // Whether receive() must run every round: epoll's readiness does not cover all arrivals
  // (an AF_XDP ring).
  virtual bool read_every_round() const = 0;
  // Whether the link writes and checks the RoCEv2 ICRC (the engine then leaves the field to it:
  // EndpointConfig::icrc_offload, RxMeta::icrc_checked).
  virtual bool owns_icrc() const = 0;
  // The largest datagram the link carries.
  virtual size_t max_datagram_bytes() const = 0;
  // For people: "GSO/GRO", "no GSO", "veth0 native copy".
  virtual std::string description() const = 0;
  // Adds the link's own counters (frames refused, unresolved next hops, impairment drops).
  virtual void add_counters(UdpPlaneStats& stats) const = 0;
  // A peer's address on this plane is about to be used (the xdp link resolves its next hop).
  virtual void prepare_peer(const SocketAddress& to) = 0;

  virtual std::span<uint8_t> space() = 0;
  virtual void add(uint16_t source_port, const SocketAddress& to, size_t length, Instant now,
                   TxOutcome& out) = 0;
  virtual void flush(Instant now, TxOutcome& out) = 0;
  // Datagrams a link holds back (the impairments' delays): when the next is due, and sending
  // those due by `now` (`send` false: the plane is down, and they are lost). True if any was due.
  virtual Instant next_release() const { return Instant::never(); }
  virtual bool release(Instant /*now*/, bool /*send*/, TxOutcome& /*out*/) { return false; }
  // A datagram about to be sent as it will be on the wire (for captures): the xdp link fills in
  // the ICRC it will write; valid until the next call.
  virtual std::span<const uint8_t> as_sent(uint16_t source_port, const SocketAddress& to,
                                           std::span<const uint8_t> datagram) = 0;

  virtual std::span<const RxDatagram> receive() = 0;
  // Whether the last receive() emptied the link (it had fewer datagrams than one call takes):
  // the host then need not read it again in the very next round (udp_host.h, emptied_mask_).
  virtual bool emptied() const { return false; }
};

using PlaneLinks = std::vector<std::unique_ptr<PlaneLink>>;

class TransmitLink;

// Forms transmits from datagrams in the order they are added: a datagram joins the open
// transmit if it has the same source port and destination, is no longer than its datagrams,
// the transmit's last datagram is of full size (a shorter one ends it), and the bounds allow
// one more; otherwise the open transmit is sent first and the datagram starts the next.
class TransmitGather {
 public:
  // Announces to `link` the datagram just written at its space(), and sends the open transmit
  // first (into `out`) if the datagram cannot join it.
  void add(TransmitLink& link, uint16_t source_port, const SocketAddress& to, size_t length,
           Instant now, TxOutcome& out);
  // Sends the open transmit, if any, and kicks the link.
  void flush(TransmitLink& link, Instant now, TxOutcome& out);
  size_t size() const { return open_.count; }

 private:
  bool joins(uint16_t source_port, const SocketAddress& to, size_t length) const;
  Transmit open_;
};

// A backend's link: add() and flush() form transmits (TransmitGather) and hand them to the
// backend, which implements:
//   written(length)    the datagram at space() is `length` bytes and is to be sent;
//   send(t, now, out)  the first t.count written datagrams, not yet sent, leave as transmit t;
//                      a datagram written after them stays, as the first of the next one;
//   kick(out)          hands to the kernel what send() may have held (xdp: one TX ring kick).
class TransmitLink : public PlaneLink {
 public:
  void add(uint16_t source_port, const SocketAddress& to, size_t length, Instant now,
           TxOutcome& out) final {
    gather_.add(*this, source_port, to, length, now, out);
  }
  void flush(Instant now, TxOutcome& out) final { gather_.flush(*this, now, out); }
  size_t open_datagrams() const { return gather_.size(); }

  virtual void written(size_t length) = 0;
  virtual void send(const Transmit& t, Instant now, TxOutcome& out) = 0;
  virtual void kick(TxOutcome& out) = 0;

 private:
  TransmitGather gather_;
};

// A decorator's base: everything forwarded to the link it wraps.
class LinkDecorator : public PlaneLink {
 public:
  explicit LinkDecorator(std::unique_ptr<PlaneLink> inner) : inner_(std::move(inner)) {}
  int poll_fd() const override { return inner_->poll_fd(); }
  bool read_every_round() const override { return inner_->read_every_round(); }
  bool owns_icrc() const override { return inner_->owns_icrc(); }
  size_t max_datagram_bytes() const override { return inner_->max_datagram_bytes(); }
  std::string description() const override { return inner_->description(); }
  void add_counters(UdpPlaneStats& stats) const override { inner_->add_counters(stats); }
  void prepare_peer(const SocketAddress& to) override { inner_->prepare_peer(to); }
  std::span<uint8_t> space() override { return inner_->space(); }
  void add(uint16_t source_port, const SocketAddress& to, size_t length, Instant now,
           TxOutcome& out) override {
    inner_->add(source_port, to, length, now, out);
  }
  void flush(Instant now, TxOutcome& out) override { inner_->flush(now, out); }
  Instant next_release() const override { return inner_->next_release(); }
  bool release(Instant now, bool send, TxOutcome& out) override {
    return inner_->release(now, send, out);
  }
  std::span<const uint8_t> as_sent(uint16_t source_port, const SocketAddress& to,
                                   std::span<const uint8_t> datagram) override {
    return inner_->as_sent(source_port, to, datagram);
  }
  std::span<const RxDatagram> receive() override { return inner_->receive(); }
  bool emptied() const override { return inner_->emptied(); }

 protected:
  PlaneLink& inner() { return *inner_; }
  const PlaneLink& inner() const { return *inner_; }

 private:
  std::unique_ptr<PlaneLink> inner_;
};

}  // namespace mrc::io
