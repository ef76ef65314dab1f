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

TxBatch::TxBatch(size_t max_datagram_bytes, bool gso)
    : buffer_(kTxBufferBytes + max_datagram_bytes), max_datagram_(max_datagram_bytes), gso_(gso) {}

// A datagram joins a send no longer than its datagrams, while the send's last datagram is of
// full size (bytes == count * segment: a shorter one ends it) and the bounds allow one more.
bool TxBatch::Send::joins(size_t length) const {
  return bytes == count * segment && length <= segment && count < kMaxGsoSegments &&
         bytes + length <= kMaxGsoBytes;
}

TxBatch::Send* TxBatch::find(int fd, const sockaddr_in& to) {
  for (size_t i = 0; i < open_; ++i) {
    Send& s = sends_[i];
    if (s.fd == fd && s.to.sin_addr.s_addr == to.sin_addr.s_addr && s.to.sin_port == to.sin_port) return &s;
  }
  return nullptr;
}

size_t TxBatch::size() const {
  size_t n = 0;
  for (size_t i = 0; i < open_; ++i) n += sends_[i].count;
  return n;
}

// Invariants: at most one open send per socket and address, so its datagrams leave in the order
// added; and after add() the buffer has room for one more datagram at next().
void TxBatch::add(int fd, const sockaddr_in& to, size_t length, TxOutcome& out) {
  Send* s = find(fd, to);
  if (s != nullptr && !s->joins(length)) {
    send_at(static_cast<size_t>(s - sends_.data()), out);
    s = nullptr;
  }
  if (s == nullptr) {
    if (open_ == kOpenSends) send_at(0, out);  // all open: one leaves to make room
    s = &sends_[open_++];
    s->fd = fd;
    s->to = to;
    s->segment = length;
    s->bytes = 0;
    s->count = 0;
  }
  s->iov[s->count++] = {buffer_.data() + used_, length};
  s->bytes += length;
  used_ += length;
  if (used_ + max_datagram_ > buffer_.size()) flush(out);
}

void TxBatch::flush(TxOutcome& out) {
  for (size_t i = 0; i < open_; ++i) send(sends_[i], out);
  open_ = 0;
  used_ = 0;
}

void TxBatch::send_at(size_t index, TxOutcome& out) {
  send(sends_[index], out);
  if (index != --open_) sends_[index] = sends_[open_];
}

void TxBatch::send(Send& s, TxOutcome& out) {
  if (gso_ && s.count > 1) {
    send_gso(s, out);
  } else {
    send_each(s, out);
  }
}

// One sendmsg carrying the whole send, cut by the kernel into datagrams of `segment` bytes.
void TxBatch::send_gso(Send& s, TxOutcome& out) {
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(uint16_t))] = {};
  msghdr msg{};
  msg.msg_name = &s.to;
  msg.msg_namelen = sizeof s.to;
  msg.msg_iov = s.iov.data();
  msg.msg_iovlen = s.count;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_UDP;
  c->cmsg_type = UDP_SEGMENT;
  c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
  const auto segment = static_cast<uint16_t>(s.segment);
  std::memcpy(CMSG_DATA(c), &segment, sizeof segment);
  ++out.calls;
  if (sendmsg(s.fd, &msg, 0) >= 0) {
    out.packets += s.count;
    out.bytes += s.bytes;
    return;
  }
  if (errno == EIO || errno == EINVAL || errno == EOPNOTSUPP) {
    // The device or the route cannot segment (no checksum offload, segment above its MTU):
    // from now on, separate datagrams.
    gso_ = false;
    send_each(s, out);
    return;
  }
  out.errors += s.count;
  out.last_errno = errno;
}

// The send as separate datagrams, in sendmmsg calls of up to kMaxGsoSegments.
void TxBatch::send_each(Send& s, TxOutcome& out) {
  std::array<mmsghdr, kMaxGsoSegments> messages{};
  for (size_t i = 0; i < s.count; ++i) {
    messages[i].msg_hdr.msg_name = &s.to;
    messages[i].msg_hdr.msg_namelen = sizeof s.to;
    messages[i].msg_hdr.msg_iov = &s.iov[i];
    messages[i].msg_hdr.msg_iovlen = 1;
  }
  size_t done = 0;
  while (done < s.count) {
    ++out.calls;
    const int n = sendmmsg(s.fd, messages.data() + done, static_cast<unsigned>(s.count - done), 0);
    if (n <= 0) {  // the datagram at `done` was refused: count it lost and go on after it
      out.last_errno = errno;
      ++out.errors;
      ++done;
      continue;
    }
    for (int i = 0; i < n; ++i) out.bytes += s.iov[done + static_cast<size_t>(i)].iov_len;
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
    size_t segment = messages_[i].msg_len;
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c != nullptr; c = CMSG_NXTHDR(&h, c)) {
      if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) std::memcpy(&tos, CMSG_DATA(c), 1);
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
      out_.push_back(RxDatagram{{base + offset, length}, from_[i], tos});
    }
  }
  return out_;
}

}  // namespace mrc::io
