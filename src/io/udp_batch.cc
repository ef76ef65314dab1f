// Batched UDP send and receive: GSO super-datagrams, sendmmsg, recvmmsg with GRO (udp_batch.h).
#include "io/udp_batch.h"

#include <netinet/ip.h>
#include <netinet/udp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#ifndef SOL_UDP
#define SOL_UDP 17
#endif

namespace mrc::io {

bool gso_supported(int fd) {
  int size = 0;
  socklen_t len = sizeof size;
  return getsockopt(fd, SOL_UDP, UDP_SEGMENT, &size, &len) == 0;
}

bool enable_gro(int fd) {
  const int on = 1;
  return setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof on) == 0;
}

bool enable_arrival_times(int fd) {
  const int on = 1;
  return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) == 0;
}

TxBatch::TxBatch(size_t max_datagram_bytes, std::shared_ptr<GsoSwitch> gso)
    : buffer_(kMaxGsoBytes + max_datagram_bytes),
      max_datagram_(max_datagram_bytes),
      gso_(std::move(gso)) {}

TxBatch::TxBatch(size_t max_datagram_bytes, bool gso)
    : TxBatch(max_datagram_bytes, std::make_shared<GsoSwitch>(GsoSwitch{gso})) {}

void TxBatch::send(int fd, const Transmit& t, TxOutcome& out) {
  if (t.count == 0 || t.bytes > written_) return;
  if (!gso_->on || t.count == 1 || !send_gso(fd, t, out)) send_each(fd, t, out);
  // The datagram written after the transmit (one that did not join it) moves to the front.
  std::memmove(buffer_.data(), buffer_.data() + t.bytes, written_ - t.bytes);
  written_ -= t.bytes;
}

// One sendmsg carrying the whole transmit, cut by the kernel into datagrams of its segment
// size. False: GSO was refused (and is off from now on); the caller sends datagram by datagram.
bool TxBatch::send_gso(int fd, const Transmit& t, TxOutcome& out) {
  iovec iov{buffer_.data(), t.bytes};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(uint16_t))] = {};
  SocketAddress to = t.to;
  msghdr msg{};
  msg.msg_name = to.get();
  msg.msg_namelen = to.length();
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_UDP;
  c->cmsg_type = UDP_SEGMENT;
  c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
  const auto segment = static_cast<uint16_t>(t.segment_bytes);
  std::memcpy(CMSG_DATA(c), &segment, sizeof segment);
  ++out.calls;
  if (sendmsg(fd, &msg, 0) >= 0) {
    out.packets += t.count;
    out.bytes += t.bytes;
    return true;
  }
  if (errno == EIO || errno == EINVAL || errno == EOPNOTSUPP) {
    // The device or the route cannot segment (no checksum offload, segment above its MTU):
    // from now on, separate datagrams.
    gso_->on = false;
    return false;
  }
  out.errors += t.count;
  out.last_errno = errno;
  return true;
}

// The transmit as separate datagrams, in sendmmsg calls of up to kMaxGsoSegments.
void TxBatch::send_each(int fd, const Transmit& t, TxOutcome& out) {
  std::array<mmsghdr, kMaxGsoSegments> messages{};
  std::array<iovec, kMaxGsoSegments> iov{};
  SocketAddress to = t.to;
  for (size_t i = 0; i < t.count; ++i) {
    const size_t offset = i * t.segment_bytes;
    iov[i] = {buffer_.data() + offset, std::min(t.segment_bytes, t.bytes - offset)};
    messages[i].msg_hdr.msg_name = to.get();
    messages[i].msg_hdr.msg_namelen = to.length();
    messages[i].msg_hdr.msg_iov = &iov[i];
    messages[i].msg_hdr.msg_iovlen = 1;
  }
  size_t done = 0;
  while (done < t.count) {
    ++out.calls;
    const int n = sendmmsg(fd, messages.data() + done, static_cast<unsigned>(t.count - done), 0);
    if (n <= 0) {  // the datagram at `done` was refused: count it lost and go on after it
      out.last_errno = errno;
      ++out.errors;
      ++done;
      continue;
    }
    for (int i = 0; i < n; ++i) out.bytes += iov[done + static_cast<size_t>(i)].iov_len;
    out.packets += static_cast<uint64_t>(n);
    done += static_cast<size_t>(n);
  }
}

RxBatch::RxBatch() : buffers_(static_cast<size_t>(kRxMessages) * kBufferBytes) {
  out_.reserve(kRxMessages * kMaxGsoSegments);
  for (int i = 0; i < kRxMessages; ++i) {
    iov_[i] = {buffers_.data() + static_cast<size_t>(i) * kBufferBytes, kBufferBytes};
    messages_[i].msg_hdr.msg_iov = &iov_[i];
    messages_[i].msg_hdr.msg_iovlen = 1;
  }
}

std::span<const RxDatagram> RxBatch::receive(int fd) {
  out_.clear();
  for (int i = 0; i < kRxMessages; ++i) {
    messages_[i].msg_hdr.msg_name = &from_[i];
    messages_[i].msg_hdr.msg_namelen = sizeof from_[i];
    messages_[i].msg_hdr.msg_control = control_[i].data();
    messages_[i].msg_hdr.msg_controllen = control_[i].size();
  }
  ++calls_;
  const int n = recvmmsg(fd, messages_.data(), kRxMessages, MSG_DONTWAIT, nullptr);
  emptied_ = n < kRxMessages;
  for (int i = 0; i < n; ++i) {
    msghdr& h = messages_[i].msg_hdr;
    uint8_t tos = 0;
    int64_t arrival_ns = 0;
    size_t segment = messages_[i].msg_len;
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
      if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) std::memcpy(&tos, CMSG_DATA(c), 1);
      if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_TCLASS) {
        int tclass = 0;
        std::memcpy(&tclass, CMSG_DATA(c), sizeof tclass);
        tos = static_cast<uint8_t>(tclass);
      }
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec t{};
        std::memcpy(&t, CMSG_DATA(c), sizeof t);
        arrival_ns = static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
      }
      if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
        int size = 0;
        std::memcpy(&size, CMSG_DATA(c), sizeof size);
        if (size > 0) segment = static_cast<size_t>(size);
      }
    }
    const uint8_t* base = buffers_.data() + static_cast<size_t>(i) * kBufferBytes;
    // A truncated buffer (MSG_TRUNC) cannot hold a whole MRC datagram: its last segment is cut
    // short and is dropped by the engine's decoder like any malformed datagram.
    for (size_t offset = 0; offset < messages_[i].msg_len; offset += segment) {
      const size_t length = std::min<size_t>(segment, messages_[i].msg_len - offset);
      out_.push_back(RxDatagram{{base + offset, length},
                                SocketAddress::from(reinterpret_cast<sockaddr*>(&from_[i])),
                                tos,
                                arrival_ns});
    }
  }
  return out_;
}

}  // namespace mrc::io
