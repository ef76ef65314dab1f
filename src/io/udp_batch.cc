// Batched UDP send and receive: GSO super-datagrams, sendmmsg, recvmmsg with GRO (udp_batch.h).
#include "io/udp_batch.h"

#include <netinet/ip.h>
#include <netinet/udp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

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

TxBatch::TxBatch(size_t max_datagram_bytes, bool gso)
    : buffer_(kMaxGsoBytes + max_datagram_bytes), max_datagram_(max_datagram_bytes), gso_(gso) {}

// A datagram joins a batch from the same socket to the same address, no longer than its
// datagrams, while the batch's last datagram is of full size (bytes_ == count_ * segment_: a
// shorter one ends the batch) and the bounds allow one more.
bool TxBatch::joins(int fd, const SocketAddress& to, size_t length) const {
  return bytes_ == count_ * segment_ && fd == fd_ && to == to_ && length <= segment_ &&
         count_ < kMaxGsoSegments && bytes_ + length <= kMaxGsoBytes;
}

void TxBatch::add(int fd, const SocketAddress& to, size_t length, TxOutcome& out) {
  if (count_ > 0 && !joins(fd, to, length)) {
    // The new datagram sits right after the batch: send the batch, then move it to the front.
    const size_t at = bytes_;
    flush(out);
    std::memmove(buffer_.data(), buffer_.data() + at, length);
  }
  if (count_ == 0) {
    fd_ = fd;
    to_ = to;
    segment_ = length;
  }
  ++count_;
  bytes_ += length;
}

void TxBatch::flush(TxOutcome& out) {
  if (count_ == 0) return;
  if (gso_ && count_ > 1) {
    send_gso(out);
  } else {
    send_each(out);
  }
  count_ = 0;
  bytes_ = 0;
}

// One sendmsg carrying the whole batch, cut by the kernel into datagrams of segment_ bytes.
void TxBatch::send_gso(TxOutcome& out) {
  iovec iov{buffer_.data(), bytes_};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(uint16_t))] = {};
  msghdr msg{};
  msg.msg_name = to_.get();
  msg.msg_namelen = to_.length();
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_UDP;
  c->cmsg_type = UDP_SEGMENT;
  c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
  const auto segment = static_cast<uint16_t>(segment_);
  std::memcpy(CMSG_DATA(c), &segment, sizeof segment);
  ++out.calls;
  if (sendmsg(fd_, &msg, 0) >= 0) {
    out.packets += count_;
    out.bytes += bytes_;
    return;
  }
  if (errno == EIO || errno == EINVAL || errno == EOPNOTSUPP) {
    // The device or the route cannot segment (no checksum offload, segment above its MTU):
    // from now on, separate datagrams.
    gso_ = false;
    send_each(out);
    return;
  }
  out.errors += count_;
  out.last_errno = errno;
}

// The batch as separate datagrams, in sendmmsg calls of up to kMaxGsoSegments.
void TxBatch::send_each(TxOutcome& out) {
  std::array<mmsghdr, kMaxGsoSegments> messages{};
  std::array<iovec, kMaxGsoSegments> iov{};
  for (size_t i = 0; i < count_; ++i) {
    const size_t offset = i * segment_;
    iov[i] = {buffer_.data() + offset, std::min(segment_, bytes_ - offset)};
    messages[i].msg_hdr.msg_name = to_.get();
    messages[i].msg_hdr.msg_namelen = to_.length();
    messages[i].msg_hdr.msg_iov = &iov[i];
    messages[i].msg_hdr.msg_iovlen = 1;
  }
  size_t done = 0;
  while (done < count_) {
    ++out.calls;
    const int n = sendmmsg(fd_, messages.data() + done, static_cast<unsigned>(count_ - done), 0);
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
