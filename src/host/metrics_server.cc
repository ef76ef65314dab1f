// MetricsServer (see metrics_server.h): a listening socket and a stop eventfd polled by one
// thread, which answers each connection in turn. The snapshot is a shared pointer swapped under
// a mutex, so a scrape copies it without holding the lock while it writes, and the engine's
// thread never waits on a slow client.
#include "host/metrics_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>

#include "util/errno_map.h"

namespace mrc::host {

struct MetricsServer::Impl {
  int listen_fd = -1;
  int stop_fd = -1;
  int port = 0;
  std::thread thread;
  std::mutex mutex;
  std::shared_ptr<const std::string> snapshot = std::make_shared<const std::string>();
  std::shared_ptr<const std::function<std::string()>> render;  // render_on_scrape()

  ~Impl() {
    if (listen_fd >= 0) close(listen_fd);
    if (stop_fd >= 0) close(stop_fd);
  }
  std::shared_ptr<const std::string> latest() {
    std::shared_ptr<const std::function<std::string()>> r;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (render == nullptr) return snapshot;
      r = render;
    }
    return std::make_shared<const std::string>((*r)());
  }
  void serve();
  void answer(int fd);
};

namespace {

constexpr int kClientTimeoutMs = 2000;
constexpr size_t kMaxRequestBytes = 8192;

// The request's head (up to the blank line), or "" if the client sent none in time.
std::string read_head(int fd) {
  std::string head;
  char buf[1024];
  while (head.find("\r\n\r\n") == std::string::npos && head.find("\n\n") == std::string::npos) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, kClientTimeoutMs) != 1 || head.size() > kMaxRequestBytes) return "";
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return "";
    head.append(buf, static_cast<size_t>(n));
  }
  return head;
}

void send_all(int fd, const std::string& data) {
  for (size_t sent = 0; sent < data.size();) {
    const ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return;  // the client left (or stalled past SO_SNDTIMEO): nothing to do
    sent += static_cast<size_t>(n);
  }
}

std::string response(const char* status, const char* type, const std::string& body) {
  return std::string("HTTP/1.1 ") + status + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         body;
}

}  // namespace

void MetricsServer::Impl::answer(int fd) {
  const timeval timeout{kClientTimeoutMs / 1000, 0};
  (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  const std::string head = read_head(fd);
  const size_t line_end = head.find_first_of("\r\n");
  const std::string line = head.substr(0, line_end);
  const bool get = line.rfind("GET ", 0) == 0 || line.rfind("HEAD ", 0) == 0;
  const size_t path_start = line.find(' ') + 1;
  const std::string path = line.substr(path_start, line.find(' ', path_start) - path_start);
  if (head.empty()) return;
  if (get && (path == "/metrics" || path.rfind("/metrics?", 0) == 0))
    send_all(fd, response("200 OK", "text/plain; version=0.0.4; charset=utf-8", *latest()));
  else
    send_all(fd, response("404 Not Found", "text/plain", "not found: metrics are at /metrics\n"));
}

void MetricsServer::Impl::serve() {
  for (;;) {
    pollfd p[2] = {{listen_fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    if (poll(p, 2, -1) < 0 && errno != EINTR) return;
    if (p[1].revents != 0) return;
    if ((p[0].revents & POLLIN) == 0) continue;
    const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    answer(fd);
    close(fd);
  }
}

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<MetricsServer>, Error> MetricsServer::start(const std::string& bind,
                                                                   uint16_t port) {
  const std::string what = "cannot listen on " + bind + ":" + std::to_string(port);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, bind.c_str(), &a.sin_addr) != 1)
    return fail(Errc::kInvalidArgument, what + ": not an IPv4 address");
  auto impl = std::make_unique<Impl>();
  impl->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (impl->listen_fd < 0) return Err{system_error(what, errno)};
  // SO_REUSEADDR only (not SO_REUSEPORT, which would let a second process listen on the same
  // port silently instead of failing).
  const int yes = 1;
  (void)setsockopt(impl->listen_fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  if (::bind(impl->listen_fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 ||
      listen(impl->listen_fd, 16) != 0)
    return Err{system_error(what, errno)};
  socklen_t len = sizeof a;
  getsockname(impl->listen_fd, reinterpret_cast<sockaddr*>(&a), &len);
  impl->port = ntohs(a.sin_port);
  impl->stop_fd = eventfd(0, EFD_CLOEXEC);
  if (impl->stop_fd < 0) return Err{system_error(what, errno)};
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->serve(); });
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

MetricsServer::~MetricsServer() {
  const uint64_t one = 1;
  (void)!write(impl_->stop_fd, &one, sizeof one);
  impl_->thread.join();
}

uint16_t MetricsServer::port() const {
  return static_cast<uint16_t>(impl_->port);
}

void MetricsServer::render_on_scrape(std::function<std::string()> render) {
  auto r = std::make_shared<const std::function<std::string()>>(std::move(render));
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->render = std::move(r);
}

void MetricsServer::publish(std::string text) {
  auto next = std::make_shared<const std::string>(std::move(text));
  std::lock_guard<std::mutex> lock(impl_->mutex);
  impl_->snapshot = std::move(next);
}

void MetricsServer::maybe_publish(const std::function<std::string()>& render) {
  const auto now = std::chrono::steady_clock::now();
  if (last_publish_ != std::chrono::steady_clock::time_point{} && now - last_publish_ < refresh_)
    return;
  last_publish_ = now;
  publish(render());
}

}  // namespace mrc::host
