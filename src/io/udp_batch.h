// Batched UDP I/O: how one system call carries many MRC datagrams.
//
// Send (TxBatch): the engine writes datagrams one after another into one buffer. A transmit
// (backend.h: datagrams from one source port to one address, all of one size but a shorter
// last one) leaves as one UDP GSO super-datagram (setsockopt level UDP, UDP_SEGMENT as a
// control message: the kernel cuts it into datagrams of that size, so the receiver sees the
// same datagrams as from separate sends). The engine's EV bursts (QpConfig::ev_burst_packets)
// are what makes consecutive datagrams share a source port: each EV is its own. Without GSO
// (turned off, or refused by the kernel or the device: EIO, EINVAL) a transmit goes as one
// sendmmsg of separate datagrams, and after a refusal GSO stays off (GsoSwitch).
//
// Receive (RxBatch): recvmmsg into buffers of 64 KiB, with UDP_GRO on the socket so that a
// burst from one source arrives as one buffer with its segment size in a control message; the
// segments are handed out one by one, each with the sender's address, the IP TOS byte (the
// traffic class over IPv6) and the kernel's receive time (see enable_arrival_times).
//
// Bounds: a transmit holds at most kMaxGsoSegments datagrams and kMaxGsoBytes bytes
// (backend.h); a receive call at most kRxMessages buffers.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "io/backend.h"
#include "io/socket_address.h"

namespace mrc::io {

// Whether this kernel accepts UDP_SEGMENT and UDP_GRO on a UDP socket.
bool gso_supported(int fd);
bool enable_gro(int fd);
// Asks the kernel to stamp each datagram with the time it received it (SO_TIMESTAMPNS), so
// that datagrams read from several sockets can be put back into their order of arrival.
bool enable_arrival_times(int fd);

// Whether the planes' sends use GSO: one switch the links of a host share, turned off for all
// when the kernel or a device refuses a GSO send.
struct GsoSwitch {
  bool on = true;
};

// The udp backend's send memory and calls: datagrams written end to end (TransmitGather forms
// the transmits, backend.h), and a transmit from the front sent as one GSO send.
class TxBatch {
 public:
  // max_datagram_bytes: the largest datagram the engine writes (the space next() offers).
  TxBatch(size_t max_datagram_bytes, std::shared_ptr<GsoSwitch> gso);
  TxBatch(size_t max_datagram_bytes, bool gso);
  // Where the next datagram is written: right after those written and not yet sent.
  std::span<uint8_t> next() { return {buffer_.data() + written_, max_datagram_}; }
  void written(size_t length) { written_ += length; }
  // Sends the first t.bytes written, from `fd` to t.to, as t.count datagrams of
  // t.segment_bytes (one GSO sendmsg; one sendmmsg without GSO); what was written after them
  // moves to the front. REQUIRES: t.bytes <= the bytes written.
  void send(int fd, const Transmit& t, TxOutcome& out);
  bool gso() const { return gso_->on; }
  void disable_gso() { gso_->on = false; }
  size_t written_bytes() const { return written_; }

 private:
  bool send_gso(int fd, const Transmit& t, TxOutcome& out);
  void send_each(int fd, const Transmit& t, TxOutcome& out);

  std::vector<uint8_t> buffer_;
  size_t max_datagram_;
  std::shared_ptr<GsoSwitch> gso_;
  size_t written_ = 0;
};

class RxBatch {
 public:
  static constexpr int kRxMessages = 16;
  static constexpr size_t kBufferBytes = 65536;
  RxBatch();
  // One recvmmsg on `fd` (non-blocking); returns the datagrams received (empty if none). The
  // spans stay valid until the next call.
  std::span<const RxDatagram> receive(int fd);
  uint64_t calls() const { return calls_; }
  // Whether the last receive() took fewer buffers than it offered: the socket was empty then.
  bool emptied() const { return emptied_; }

 private:
  std::vector<uint8_t> buffers_;
  std::vector<RxDatagram> out_;
  std::array<mmsghdr, kRxMessages> messages_{};
  std::array<iovec, kRxMessages> iov_{};
  std::array<sockaddr_in6, kRxMessages> from_{};  // either family fits
  alignas(cmsghdr) std::array<std::array<char, 128>, kRxMessages> control_{};
  uint64_t calls_ = 0;
  bool emptied_ = false;
};

}  // namespace mrc::io
