// What entering the kernel costs on this host, beside the datapath's own per-packet work: the
// cheapest system call there is, a receive on an empty UDP socket (what a datapath round pays
// for each plane that has nothing for it), and a zero-timeout epoll_wait over four sockets (the
// alternative of asking once which planes have data). On a kernel UDP datapath the count of
// these calls per byte moved, times this cost, is a floor under its CPU per byte that no
// user-space change to the engine removes; docs/BENCHMARKS.md puts the two together.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <vector>

namespace {

// A non-blocking UDP socket bound to an ephemeral port of 127.0.0.1, or -1.
int bound_udp_socket() {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// recvmmsg's arguments as the datapath passes them: 16 buffers of 64 KiB.
struct Receive {
  static constexpr int kMessages = 16;
  std::vector<char> buffers = std::vector<char>(static_cast<size_t>(kMessages) * 65536);
  std::array<iovec, kMessages> iov{};
  std::array<mmsghdr, kMessages> messages{};
  Receive() {
    for (int i = 0; i < kMessages; ++i) {
      iov[i] = {buffers.data() + static_cast<size_t>(i) * 65536, 65536};
      messages[i].msg_hdr.msg_iov = &iov[i];
      messages[i].msg_hdr.msg_iovlen = 1;
    }
  }
  int from(int fd) { return recvmmsg(fd, messages.data(), kMessages, MSG_DONTWAIT, nullptr); }
};

void BM_Getppid(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(getppid());
}
BENCHMARK(BM_Getppid);

// Arg: how many sockets a round polls (1, or 4 as over four planes).
void BM_EmptyRecvmmsg(benchmark::State& state) {
  std::vector<int> fds(static_cast<size_t>(state.range(0)));
  for (int& fd : fds) fd = bound_udp_socket();
  for (int fd : fds)
    if (fd < 0) return state.SkipWithError("no UDP socket on 127.0.0.1");
  Receive r;
  for (auto _ : state)
    for (int fd : fds) benchmark::DoNotOptimize(r.from(fd));
  for (int fd : fds) close(fd);
}
BENCHMARK(BM_EmptyRecvmmsg)->Arg(1)->Arg(4);

void BM_EpollWaitNothingReady(benchmark::State& state) {
  const int ep = epoll_create1(0);
  std::array<int, 4> fds{};
  for (int& fd : fds) {
    fd = bound_udp_socket();
    epoll_event e{};
    e.events = EPOLLIN;
    if (ep < 0 || fd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e) != 0)
      return state.SkipWithError("no epoll over UDP sockets");
  }
  std::array<epoll_event, 4> ready{};
  for (auto _ : state) benchmark::DoNotOptimize(epoll_wait(ep, ready.data(), 4, 0));
  for (int fd : fds) close(fd);
  close(ep);
}
BENCHMARK(BM_EpollWaitNothingReady);

}  // namespace

BENCHMARK_MAIN();
