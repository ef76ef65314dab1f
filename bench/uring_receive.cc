// Whether io_uring would make the UDP datapath's receive cheaper on this host: one receiver
// over four loopback sockets (127.0.0.1-4, UDP_GRO on, as the datapath's planes) reads either
// with recvmmsg on every socket in turn (what UdpHost::receive does each round) or through one
// io_uring with a multishot recvmsg per socket and a ring of provided buffers, so that a
// socket with nothing for it costs no system call. Each received datagram is copied once into
// a 1 MiB region, as placement would. A sender process blasts GSO bursts (7 x 8232 bytes, the
// datapath's default on loopback) round-robin at the four sockets, faster than the receiver
// reads: the receiver is the limit, and its goodput compares the two ways of reading.
//
//   uring_receive recv poll|uring|uring_defer SECONDS &  uring_receive send SECONDS
//
// uring: IORING_SETUP_COOP_TASKRUN | TASKRUN_FLAG (io_uring_enter only when the kernel flags
// pending work); uring_defer: DEFER_TASKRUN | SINGLE_ISSUER (an io_uring_enter every loop).
// Built only where liburing is installed (liburing-dev); not part of mrc.
#include <arpa/inet.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifndef UDP_GRO
#define UDP_GRO 104
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

namespace {

constexpr int kSockets = 4;
constexpr uint16_t kPort = 47001;
constexpr size_t kSegmentBytes = 8232;
constexpr size_t kBurst = 7;
constexpr size_t kBufferBytes = 65536 + 256;  // a GRO super-datagram and io_uring's header

struct Tally {
  std::vector<char> region = std::vector<char>(size_t{1} << 20);
  size_t offset = 0;
  uint64_t bytes = 0;
  uint64_t datagrams = 0;
  uint64_t calls = 0;  // system calls the receive loop made

  // Copies each segment of a (GRO) buffer into the region, as the engine's placement would.
  void consume(const char* p, size_t n, size_t segment) {
    for (size_t at = 0; at < n; at += segment) {
      const size_t length = std::min(segment, n - at);
      if (offset + length > region.size()) offset = 0;
      std::memcpy(region.data() + offset, p + at, length);
      offset += length;
      ++datagrams;
    }
    bytes += n;
  }
};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

sockaddr_in address_of(int socket_index) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(kPort);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK + static_cast<uint32_t>(socket_index));
  return a;
}

int bind_socket(int socket_index) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  const sockaddr_in a = address_of(socket_index);
  if (fd < 0 || bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0) {
    std::perror("uring_receive: bind 127.0.0.x:47001");
    std::exit(1);
  }
  const int on = 1;
  const int eight_mib = 8 << 20;
  setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof on);
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &eight_mib, sizeof eight_mib);
  return fd;
}

// One GSO send of a burst to `to`; the kernel cuts it into kBurst datagrams.
bool send_burst(int fd, const sockaddr_in& to, std::vector<char>& burst) {
  iovec iov{burst.data(), burst.size()};
  std::array<char, CMSG_SPACE(sizeof(uint16_t))> control{};
  msghdr m{};
  m.msg_name = const_cast<sockaddr_in*>(&to);
  m.msg_namelen = sizeof to;
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control.data();
  m.msg_controllen = control.size();
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_UDP;
  c->cmsg_type = UDP_SEGMENT;
  c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
  const uint16_t segment = kSegmentBytes;
  std::memcpy(CMSG_DATA(c), &segment, sizeof segment);
  return sendmsg(fd, &m, 0) > 0;
}

void send_main(double seconds) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  std::vector<char> burst(kSegmentBytes * kBurst, 7);
  uint64_t sent = 0;
  int next = 0;
  for (const double end = now_s() + seconds; now_s() < end;) {
    for (int i = 0; i < 64; ++i, next = (next + 1) % kSockets)
      if (send_burst(fd, address_of(next), burst)) sent += burst.size();
  }
  std::fprintf(stderr, "sender: %.2f Gbit/s offered, cpu %.2f s\n",
               static_cast<double>(sent) * 8 / seconds / 1e9, cpu_s());
}

// The GRO segment size a receive's control messages carry, else `whole`.
template <typename First, typename Next>
size_t gro_segment(size_t whole, First first, Next next) {
  for (cmsghdr* c = first(); c != nullptr; c = next(c)) {
    if (c->cmsg_level != SOL_UDP || c->cmsg_type != UDP_GRO) continue;
    int segment = 0;
    std::memcpy(&segment, CMSG_DATA(c), sizeof segment);
    if (segment > 0) return static_cast<size_t>(segment);
  }
  return whole;
}

void receive_polling(const std::array<int, kSockets>& fds, double seconds, Tally& tally) {
  constexpr int kMessages = 16;
  std::vector<char> buffers(kMessages * kBufferBytes);
  std::array<mmsghdr, kMessages> m{};
  std::array<iovec, kMessages> iov{};
  std::array<std::array<char, 64>, kMessages> control{};
  for (const double end = now_s() + seconds; now_s() < end;) {
    for (const int fd : fds) {
      for (size_t i = 0; i < kMessages; ++i) {
        iov[i] = {buffers.data() + i * kBufferBytes, kBufferBytes};
        m[i].msg_hdr = msghdr{};
        m[i].msg_hdr.msg_iov = &iov[i];
        m[i].msg_hdr.msg_iovlen = 1;
        m[i].msg_hdr.msg_control = control[i].data();
        m[i].msg_hdr.msg_controllen = control[i].size();
      }
      ++tally.calls;
      const int n = recvmmsg(fd, m.data(), kMessages, MSG_DONTWAIT, nullptr);
      for (int i = 0; i < n; ++i) {
        msghdr* h = &m[static_cast<size_t>(i)].msg_hdr;
        const size_t length = m[static_cast<size_t>(i)].msg_len;
        const size_t segment = gro_segment(
            length, [h] { return CMSG_FIRSTHDR(h); },
            [h](cmsghdr* c) { return CMSG_NXTHDR(h, c); });
        tally.consume(buffers.data() + static_cast<size_t>(i) * kBufferBytes, length, segment);
      }
    }
  }
}

class UringReceiver {
 public:
  static constexpr unsigned kBuffers = 64;

  UringReceiver(const std::array<int, kSockets>& fds, unsigned flags) : fds_(fds), flags_(flags) {
    io_uring_params params{};
    params.flags = flags;
    if (const int r = io_uring_queue_init_params(64, &ring_, &params); r < 0) fail("setup", r);
    ring_bytes_ = sizeof(io_uring_buf) * kBuffers;
    void* m =
        mmap(nullptr, ring_bytes_, PROT_READ | PROT_WRITE, MAP_ANONYMOUS | MAP_PRIVATE, -1, 0);
    if (m == MAP_FAILED) fail("mmap", -errno);
    buffer_ring_ = static_cast<io_uring_buf_ring*>(m);
    io_uring_buf_reg reg{};
    reg.ring_addr = reinterpret_cast<uint64_t>(buffer_ring_);
    reg.ring_entries = kBuffers;
    reg.bgid = 1;
    if (const int r = io_uring_register_buf_ring(&ring_, &reg, 0); r < 0) fail("buffer ring", r);
    io_uring_buf_ring_init(buffer_ring_);
    for (unsigned i = 0; i < kBuffers; ++i)
      give_back(static_cast<uint16_t>(i), static_cast<int>(i));
    io_uring_buf_ring_advance(buffer_ring_, kBuffers);
    template_.msg_controllen = 64;
    for (int s = 0; s < kSockets; ++s) arm(s);
    io_uring_submit(&ring_);
  }
  ~UringReceiver() {
    io_uring_queue_exit(&ring_);
    munmap(buffer_ring_, ring_bytes_);
  }
  UringReceiver(const UringReceiver&) = delete;
  UringReceiver& operator=(const UringReceiver&) = delete;

  void run(double seconds, Tally& tally) {
    for (const double end = now_s() + seconds; now_s() < end;) {
      const bool pending = (flags_ & IORING_SETUP_TASKRUN_FLAG) == 0 ||
                           (IO_URING_READ_ONCE(*ring_.sq.kflags) & IORING_SQ_TASKRUN) != 0;
      if (pending) {  // runs the receives' task work, which posts their completions
        io_uring_get_events(&ring_);
        ++tally.calls;
      }
      if (drain(tally)) {
        io_uring_submit(&ring_);
        ++tally.calls;
      }
    }
  }

 private:
  [[noreturn]] static void fail(const char* what, int r) {
    std::fprintf(stderr, "uring_receive: io_uring %s: %s\n", what, std::strerror(-r));
    std::exit(1);
  }
  char* buffer(uint16_t id) { return memory_.data() + static_cast<size_t>(id) * kBufferBytes; }
  void give_back(uint16_t id, int offset) {
    io_uring_buf_ring_add(buffer_ring_, buffer(id), kBufferBytes, id,
                          io_uring_buf_ring_mask(kBuffers), offset);
  }
  void arm(int s) {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    io_uring_prep_recvmsg_multishot(sqe, fds_[static_cast<size_t>(s)], &template_, 0);
    sqe->flags |= IOSQE_BUFFER_SELECT;
    sqe->buf_group = 1;
    io_uring_sqe_set_data64(sqe, static_cast<uint64_t>(s));
  }
  // Hands every completion's datagrams to the tally and its buffer back to the ring; re-arms a
  // socket whose multishot receive ended. True if something needs submitting.
  bool drain(Tally& tally) {
    io_uring_cqe* cqe = nullptr;
    unsigned head = 0;
    unsigned seen = 0;
    int returned = 0;
    bool rearmed = false;
    io_uring_for_each_cqe(&ring_, head, cqe) {
      ++seen;
      if ((cqe->flags & IORING_CQE_F_MORE) == 0) {
        arm(static_cast<int>(cqe->user_data));
        rearmed = true;
      }
      if (cqe->res <= 0 || (cqe->flags & IORING_CQE_F_BUFFER) == 0) continue;
      const auto id = static_cast<uint16_t>(cqe->flags >> IORING_CQE_BUFFER_SHIFT);
      consume(buffer(id), cqe->res, tally);
      give_back(id, returned++);
    }
    io_uring_cq_advance(&ring_, seen);
    if (returned > 0) io_uring_buf_ring_advance(buffer_ring_, returned);
    return rearmed;
  }
  void consume(char* b, int res, Tally& tally) {
    msghdr h = template_;
    io_uring_recvmsg_out* out = io_uring_recvmsg_validate(b, res, &h);
    if (out == nullptr) return;
    const size_t length = io_uring_recvmsg_payload_length(out, res, &h);
    const size_t segment = gro_segment(
        length, [&] { return io_uring_recvmsg_cmsg_firsthdr(out, &h); },
        [&](cmsghdr* c) { return io_uring_recvmsg_cmsg_nexthdr(out, &h, c); });
    tally.consume(static_cast<char*>(io_uring_recvmsg_payload(out, &h)), length, segment);
  }

  std::array<int, kSockets> fds_;
  unsigned flags_;
  io_uring ring_{};
  io_uring_buf_ring* buffer_ring_ = nullptr;
  size_t ring_bytes_ = 0;
  std::vector<char> memory_ = std::vector<char>(kBuffers * kBufferBytes);
  msghdr template_{};
};

}  // namespace

int main(int argc, char** argv) {
  const std::string role = argc > 1 ? argv[1] : "";
  if (role == "send" && argc == 3) {
    send_main(std::atof(argv[2]));
    return 0;
  }
  const std::string mode = argc > 2 ? argv[2] : "";
  if (role != "recv" || argc != 4 || (mode != "poll" && mode != "uring" && mode != "uring_defer")) {
    std::fprintf(stderr,
                 "usage: uring_receive recv poll|uring|uring_defer SECONDS\n"
                 "       uring_receive send SECONDS\n");
    return 2;
  }
  const double seconds = std::atof(argv[3]);
  std::array<int, kSockets> fds{};
  for (int s = 0; s < kSockets; ++s) fds[static_cast<size_t>(s)] = bind_socket(s);
  Tally tally;
  const double cpu0 = cpu_s();
  const double t0 = now_s();
  if (mode == "poll") {
    receive_polling(fds, seconds, tally);
  } else {
    const unsigned flags = mode == "uring"
                               ? IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG
                               : IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_SINGLE_ISSUER;
    UringReceiver(fds, flags).run(seconds, tally);
  }
  const double t = now_s() - t0;
  std::printf("%s: %.2f Gbit/s received, %.0f datagrams/s, %.1f system calls per ms, cpu %.2f s\n",
              mode.c_str(), static_cast<double>(tally.bytes) * 8 / t / 1e9,
              static_cast<double>(tally.datagrams) / t, static_cast<double>(tally.calls) / t / 1000,
              cpu_s() - cpu0);
  for (const int fd : fds) close(fd);
  return 0;
}
