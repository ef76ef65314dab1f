// TCP out-of-band exchange of JSON lines (see oob.h).
#include "tools/oob.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "util/errno_map.h"

namespace mrc::tools {

OobChannel::~OobChannel() {
  if (fd_ >= 0) close(fd_);
  if (listen_fd_ >= 0) close(listen_fd_);
}

Result<OobChannel, Error> OobChannel::accept_one(uint16_t port) {
  OobChannel c;
  // Both families on one socket: IPv4 clients arrive as IPv4-mapped addresses.
  c.listen_fd_ = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int on = 1, off = 0;
  setsockopt(c.listen_fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  setsockopt(c.listen_fd_, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof off);
  sockaddr_in6 sa{};
  sa.sin6_family = AF_INET6;
  sa.sin6_port = htons(port);
  sa.sin6_addr = in6addr_any;
  if (bind(c.listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
      listen(c.listen_fd_, 1) != 0) {
    const int e = errno;
    return fail(errc_of_errno(e), "cannot listen on TCP port " + std::to_string(port) + ": " +
                                      std::strerror(e) + " (choose another with --oob-port)");
  }
  c.fd_ = accept(c.listen_fd_, nullptr, nullptr);
  if (c.fd_ < 0) return Err{system_error("accept", errno)};
  setsockopt(c.fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  return c;
}

Result<OobChannel, Error> OobChannel::connect_to(const std::string& host, uint16_t port,
                                                 int timeout_ms) {
  OobChannel c;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* result = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &result) != 0 ||
      result == nullptr) {
    return fail(Errc::kInvalidArgument, "cannot resolve server address '" + host + "'");
  }
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int last_errno = 0;
  while (std::chrono::steady_clock::now() < give_up) {
    const int fd = socket(result->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, result->ai_addr, result->ai_addrlen) == 0) {
      c.fd_ = fd;
      break;
    }
    last_errno = errno;
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  freeaddrinfo(result);
  if (c.fd_ < 0) {
    return fail(Errc::kPeerFailed, "cannot reach the mrc perf server at " + host + ":" +
                                       std::to_string(port) + ": " + std::strerror(last_errno) +
                                       " (is `mrc perf --server` running there, with the same "
                                       "--oob-port?)");
  }
  const int on = 1;
  setsockopt(c.fd_, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
  return c;
}

bool OobChannel::send(const nlohmann::json& message) {
  const std::string line = message.dump() + "\n";
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = write(fd_, line.data() + done, line.size() - done);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool OobChannel::receive(nlohmann::json& message) {
  for (;;) {
    const size_t newline = pending_.find('\n');
    if (newline != std::string::npos) {
      const std::string line = pending_.substr(0, newline);
      pending_.erase(0, newline + 1);
      message = nlohmann::json::parse(line, nullptr, false);
      return !message.is_discarded();
    }
    char buf[4096];
    const ssize_t n = read(fd_, buf, sizeof buf);
    if (n <= 0) return false;
    pending_.append(buf, static_cast<size_t>(n));
  }
}

bool OobChannel::try_receive(nlohmann::json& message) {
  char buf[4096];
  const ssize_t n = recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
  if (n > 0) pending_.append(buf, static_cast<size_t>(n));
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) closed_ = true;
  if (pending_.find('\n') == std::string::npos) return false;
  return receive(message);
}

}  // namespace mrc::tools
