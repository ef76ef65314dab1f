// udp_gso_blast: the raw-UDP ceiling that mrc's datapath is compared against in
// bench/compare.sh (docs/BENCHMARKS.md, "Comparison with TCP and MPTCP on the namespace testbed").
//
//   udp_gso_blast send --bind 198.18.0.2 --to 198.18.0.1:9000 --segment 4136 --duration 8
//   udp_gso_blast recv --bind 198.18.0.1:9000 [--idle-ms 500] [--max-seconds 60]
//
// The sender writes datagrams of --segment bytes as fast as one blocking socket allows, several
// per system call with UDP GSO (UDP_SEGMENT: one sendmsg carries up to 64 KB, the kernel cuts it
// into --segment-sized datagrams). There is no reliability, pacing or flow control: it is the
// most a single UDP sender can push, not a transport. The receiver counts datagrams with
// recvmmsg (64 per call, no UDP_GRO: on the testbed's links, whose segmentation offloads are off,
// every datagram is an skb of its own for mrc's GRO socket too) from the first datagram until
// --idle-ms pass without one (--gro: with UDP_GRO, a burst per buffer, as over links with
// offloads on: bench/compare.sh --offloads). Both
// print one JSON line with their counts, rate and CPU time (getrusage). Not linked into the engine;
// plain POSIX.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "udp_gso_blast: %s\n", what.c_str());
  std::exit(2);
}

sockaddr_in parse_address(const std::string& text, uint16_t default_port) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  const size_t colon = text.find(':');
  const std::string host = text.substr(0, colon);
  sa.sin_port = htons(colon == std::string::npos
                          ? default_port
                          : static_cast<uint16_t>(std::atoi(text.c_str() + colon + 1)));
  if (inet_pton(AF_INET, host.c_str(), &sa.sin_addr) != 1) die("not an IPv4 address: " + text);
  return sa;
}

double cpu_seconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

void print_rusage_tail() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  std::printf(", \"cpu_user_s\": %.3f, \"cpu_sys_s\": %.3f}\n", cpu_seconds(ru.ru_utime),
              cpu_seconds(ru.ru_stime));
}

int open_socket(const sockaddr_in& bind_to) {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die(std::string("socket: ") + std::strerror(errno));
  const int buffer = 8 << 20;
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buffer, sizeof buffer) != 0)
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buffer, sizeof buffer) != 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
  if (bind(fd, reinterpret_cast<const sockaddr*>(&bind_to), sizeof bind_to) != 0)
    die(std::string("bind: ") + std::strerror(errno));
  return fd;
}

int run_send(const sockaddr_in& local, const sockaddr_in& to, int segment, double duration_s,
             int per_call) {
  const int fd = open_socket(local);
  if (segment < 64 || segment > 8972) die("--segment must be 64..8972 bytes");
  int segments = per_call > 0 ? per_call : 65000 / segment;  // one call stays under 64 KB
  if (segments < 1) segments = 1;
  if (segments > 1 && setsockopt(fd, IPPROTO_UDP, UDP_SEGMENT, &segment, sizeof segment) != 0)
    die(std::string("UDP_SEGMENT: ") + std::strerror(errno) + " (kernel without UDP GSO?)");
  if (connect(fd, reinterpret_cast<const sockaddr*>(&to), sizeof to) != 0)
    die(std::string("connect: ") + std::strerror(errno));
  std::vector<uint8_t> buffer(static_cast<size_t>(segment) * static_cast<size_t>(segments));
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<uint8_t>(i * 131 + 7);
  uint64_t calls = 0, bytes = 0, errors = 0;
  const auto start = Clock::now();
  const auto stop = start + std::chrono::duration<double>(duration_s);
  while (Clock::now() < stop) {
    for (int k = 0; k < 16; ++k) {  // read the clock every 16 calls
      const ssize_t n = send(fd, buffer.data(), buffer.size(), 0);
      if (n < 0) {
        ++errors;  // ECONNREFUSED before the receiver binds, ENOBUFS: count and go on
        continue;
      }
      ++calls;
      bytes += static_cast<uint64_t>(n);
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::printf(
      "{\"role\": \"send\", \"segment\": %d, \"segments_per_call\": %d, \"calls\": %llu, "
      "\"errors\": %llu, "
      "\"bytes\": %llu, \"datagrams\": %llu, \"seconds\": %.6f, \"gbit_per_s\": %.4f",
      segment, segments, static_cast<unsigned long long>(calls),
      static_cast<unsigned long long>(errors), static_cast<unsigned long long>(bytes),
      static_cast<unsigned long long>(bytes / static_cast<uint64_t>(segment)), seconds,
      static_cast<double>(bytes) * 8 / seconds / 1e9);
  print_rusage_tail();
  close(fd);
  return 0;
}

// How many datagrams one received buffer holds: one, or with UDP_GRO its length over the
// segment size the kernel reports.
uint64_t datagrams_in(mmsghdr& m) {
  for (cmsghdr* c = CMSG_FIRSTHDR(&m.msg_hdr); c != nullptr; c = CMSG_NXTHDR(&m.msg_hdr, c)) {
    if (c->cmsg_level != IPPROTO_UDP || c->cmsg_type != UDP_GRO) continue;
    int segment = 0;
    std::memcpy(&segment, CMSG_DATA(c), sizeof segment);
    if (segment > 0)
      return (m.msg_len + static_cast<unsigned>(segment) - 1) / static_cast<unsigned>(segment);
  }
  return 1;
}

int run_recv(const sockaddr_in& local, int idle_ms, double max_seconds, bool gro) {
  const int fd = open_socket(local);
  constexpr int kBatch = 64;
  const size_t kBuffer = gro ? 65536 : 9216;  // with UDP_GRO a buffer holds a burst of datagrams
  const int on = 1;
  if (gro && setsockopt(fd, IPPROTO_UDP, UDP_GRO, &on, sizeof on) != 0)
    die(std::string("UDP_GRO: ") + std::strerror(errno) + " (kernel without UDP GRO?)");
  std::vector<uint8_t> storage(kBatch * kBuffer);
  alignas(cmsghdr) char control[kBatch][CMSG_SPACE(sizeof(int))];
  mmsghdr messages[kBatch];
  iovec iov[kBatch];
  timeval timeout{0, 50'000};  // wake every 50 ms to check the idle and overall limits
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  uint64_t bytes = 0, datagrams = 0, calls = 0;
  bool started = false;
  Clock::time_point first{}, last{};
  const auto give_up = Clock::now() + std::chrono::duration<double>(max_seconds);
  for (;;) {
    for (int i = 0; i < kBatch; ++i) {
      iov[i] = {storage.data() + static_cast<size_t>(i) * kBuffer, kBuffer};
      std::memset(&messages[i], 0, sizeof messages[i]);
      messages[i].msg_hdr.msg_iov = &iov[i];
      messages[i].msg_hdr.msg_iovlen = 1;
      messages[i].msg_hdr.msg_control = control[i];
      messages[i].msg_hdr.msg_controllen = sizeof control[i];
    }
    const int n = recvmmsg(fd, messages, kBatch, MSG_WAITFORONE, nullptr);
    const auto now = Clock::now();
    if (n > 0) {
      if (!started) first = now;
      started = true;
      last = now;
      ++calls;
      for (int i = 0; i < n; ++i) {
        bytes += messages[i].msg_len;
        datagrams += datagrams_in(messages[i]);
      }
    } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      die(std::string("recvmmsg: ") + std::strerror(errno));
    }
    if (started && now - last > std::chrono::milliseconds(idle_ms)) break;
    if (now > give_up) break;
  }
  const double seconds = started ? std::chrono::duration<double>(last - first).count() : 0;
  std::printf(
      "{\"role\": \"recv\", \"calls\": %llu, \"bytes\": %llu, \"datagrams\": %llu, \"seconds\": "
      "%.6f, \"gbit_per_s\": %.4f",
      static_cast<unsigned long long>(calls), static_cast<unsigned long long>(bytes),
      static_cast<unsigned long long>(datagrams), seconds,
      seconds > 0 ? static_cast<double>(bytes) * 8 / seconds / 1e9 : 0.0);
  print_rusage_tail();
  close(fd);
  return datagrams > 0 ? 0 : 1;
}

void usage() {
  std::fprintf(
      stderr,
      "usage: udp_gso_blast send --bind IP --to IP:PORT [--segment BYTES] [--duration S] "
      "[--per-call N]\n"
      "       udp_gso_blast recv --bind IP:PORT [--idle-ms MS] [--max-seconds S] [--gro]\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage(), 2;
  const std::string mode = argv[1];
  std::string bind_text, to_text;
  int segment = 4136, idle_ms = 500, per_call = 0;
  double duration = 5, max_seconds = 120;
  bool gro = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--bind")
      bind_text = value();
    else if (a == "--to")
      to_text = value();
    else if (a == "--segment")
      segment = std::atoi(value().c_str());
    else if (a == "--duration")
      duration = std::atof(value().c_str());
    else if (a == "--per-call")
      per_call = std::atoi(value().c_str());
    else if (a == "--idle-ms")
      idle_ms = std::atoi(value().c_str());
    else if (a == "--max-seconds")
      max_seconds = std::atof(value().c_str());
    else if (a == "--gro")
      gro = true;
    else
      return usage(), 2;
  }
  if (bind_text.empty()) return usage(), 2;
  if (mode == "send") {
    if (to_text.empty()) return usage(), 2;
    return run_send(parse_address(bind_text, 0), parse_address(to_text, 9000), segment, duration,
                    per_call);
  }
  if (mode == "recv") return run_recv(parse_address(bind_text, 9000), idle_ms, max_seconds, gro);
  return usage(), 2;
}
