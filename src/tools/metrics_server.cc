// MetricsServer (see metrics_server.h) on cpp-httplib: one listening thread and two workers.
// The snapshot is a shared pointer swapped under a mutex, so a scrape copies it without
// holding the lock while it writes, and the engine thread never waits on a slow client.
#include "tools/metrics_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <thread>

#include "util/errno_map.h"

namespace mrc::tools {

struct MetricsServer::Impl {
  httplib::Server server;
  std::thread thread;
  std::atomic<bool> finished{false};
  std::mutex mutex;
  std::shared_ptr<const std::string> snapshot = std::make_shared<const std::string>();
  int port = 0;

  std::shared_ptr<const std::string> latest() {
    std::lock_guard<std::mutex> lock(mutex);
    return snapshot;
  }
};

namespace {

// Only SO_REUSEADDR: httplib's default adds SO_REUSEPORT, which would let a second process
// listen on the same port silently instead of failing.
void socket_options(int fd) {
  const int yes = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
}

// httplib says only that binding failed; binding a plain IPv4 socket the same way gives the
// reason (address in use, not a local address, ...).
Error bind_failure(const std::string& bind, uint16_t port) {
  const std::string what = "cannot listen on " + bind + ":" + std::to_string(port);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  if (inet_pton(AF_INET, bind.c_str(), &a.sin_addr) != 1)
    return Error{Errc::kInvalidArgument, what + ": not an IPv4 address"};
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return system_error(what, errno);
  socket_options(fd);
  Error error{Errc::kIo, what};
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0)
    error = system_error(what, errno);
  close(fd);
  return error;
}

// A peer that closes mid-response must not kill the process with SIGPIPE: block it in the
// server threads (the workers inherit the mask from the listening thread that creates them).
void block_sigpipe() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

}  // namespace

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<MetricsServer>, Error> MetricsServer::start(const std::string& bind,
                                                                   uint16_t port) {
  auto impl = std::make_unique<Impl>();
  Impl* raw = impl.get();
  httplib::Server& s = impl->server;
  s.set_socket_options(socket_options);
  s.new_task_queue = [] { return new httplib::ThreadPool(2); };
  s.set_keep_alive_timeout(2);
  s.Get("/metrics", [raw](const httplib::Request&, httplib::Response& res) {
    res.set_content(*raw->latest(), "text/plain; version=0.0.4; charset=utf-8");
  });
  s.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 404) res.set_content("not found: metrics are at /metrics\n", "text/plain");
  });
  impl->port = port == 0 ? s.bind_to_any_port(bind) : (s.bind_to_port(bind, port) ? port : -1);
  if (impl->port <= 0) return Err{bind_failure(bind, port)};
  impl->thread = std::thread([raw] {
    block_sigpipe();
    raw->server.listen_after_bind();
    raw->finished = true;
  });
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

MetricsServer::~MetricsServer() {
  // stop() is a no-op until the thread has entered its accept loop: wait for that first.
  while (!impl_->server.is_running() && !impl_->finished)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  impl_->server.stop();
  impl_->thread.join();
}

uint16_t MetricsServer::port() const {
  return static_cast<uint16_t>(impl_->port);
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

}  // namespace mrc::tools
