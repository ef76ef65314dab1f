// Batched UDP I/O: how one system call carries many MRC datagrams.
//
// Send (TxBatch): the engine writes datagrams one after another into one buffer. Consecutive
// datagrams from the same socket to the same address, all of one size but a shorter last one,
// form a batch that leaves as one UDP GSO super-datagram (setsockopt level UDP, UDP_SEGMENT as
// a control message: the kernel cuts it into datagrams of that size, so the receiver sees the
// same datagrams as from separate sends). The engine's EV bursts (QpConfig::ev_burst_packets)
// are what makes consecutive datagrams share a socket: each EV is its own source port. A
// datagram that cannot join sends the batch first and starts the next. Without GSO (turned off,
// or refused by the kernel or the device: EIO, EINVAL) a batch goes as one sendmmsg of
// separate datagrams, and after a refusal GSO stays off for that TxBatch.
//
// Receive (RxBatch): recvmmsg into buffers of 64 KiB, with UDP_GRO on the socket so that a
// burst from one source arrives as one buffer with its segment size in a control message; the
// segments are handed out one by one, each with the sender's address, the IP TOS byte (the
// traffic class over IPv6) and the kernel's receive time (see enable_arrival_times).
//
// Bounds: a batch holds at most kMaxGsoSegments datagrams and kMaxGsoBytes bytes; a receive
// call at most kRxMessages buffers.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "io/socket_address.h"

namespace mrc::io {

// What one UDP send may carry: the largest UDP payload over IPv4, and the kernel's segment limit.
inline constexpr size_t kMaxGsoBytes = 65507;
inline constexpr size_t kMaxGsoSegments = 64;

// Whether this kernel accepts UDP_SEGMENT and UDP_GRO on a UDP socket.
bool gso_supported(int fd);
bool enable_gro(int fd);
// Asks the kernel to stamp each datagram with the time it received it (SO_TIMESTAMPNS), so
// that datagrams read from several sockets can be put back into their order of arrival.
bool enable_arrival_times(int fd);

// What a flush did, for the plane's counters.
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

class TxBatch {
 public:
  // max_datagram_bytes: the largest datagram the engine writes (the space next() offers).
  TxBatch(size_t max_datagram_bytes, bool gso);
  // Where the engine writes the next datagram: right after the batch's datagrams.
  std::span<uint8_t> next() { return {buffer_.data() + bytes_, max_datagram_}; }
  // The datagram just written at next(), `length` bytes, goes from `fd` to `to`. If it cannot
  // join the batch, the batch is sent first (into `out`) and it starts a new one.
  void add(int fd, const SocketAddress& to, size_t length, TxOutcome& out);
  // Sends what the batch holds.
  void flush(TxOutcome& out);
  bool gso() const { return gso_; }
  void disable_gso() { gso_ = false; }
  size_t size() const { return count_; }

 private:
  bool joins(int fd, const SocketAddress& to, size_t length) const;
  void send_gso(TxOutcome& out);
  void send_each(TxOutcome& out);

  std::vector<uint8_t> buffer_;
  size_t max_datagram_;
  bool gso_;
  int fd_ = -1;
  SocketAddress to_;
  size_t segment_ = 0;  // the batch's datagram size (all but a shorter last one)
  size_t count_ = 0;
  size_t bytes_ = 0;
};

// One received datagram: its bytes, its sender, the IP TOS byte it arrived with, and when the
// kernel received it (SO_TIMESTAMPNS, realtime ns; 0 if the socket gave no time). The segments
// of one GRO buffer share their buffer's time.
struct RxDatagram {
  std::span<const uint8_t> bytes;
  SocketAddress from;
  uint8_t tos = 0;
  int64_t arrival_ns = 0;
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

 private:
  std::vector<uint8_t> buffers_;
  std::vector<RxDatagram> out_;
  std::array<mmsghdr, kRxMessages> messages_{};
  std::array<iovec, kRxMessages> iov_{};
  std::array<sockaddr_in6, kRxMessages> from_{};  // either family fits
  alignas(cmsghdr) std::array<std::array<char, 128>, kRxMessages> control_{};
  uint64_t calls_ = 0;
};

}  // namespace mrc::io
