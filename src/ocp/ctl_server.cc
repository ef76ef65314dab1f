// The control server of a device (ctl_server.h): one thread per served device, polling its
// listening socket, its clients and the EV watch log. Requests are read into a bounded buffer
// per client (kCtlRequestMax; a longer line is answered with an error and the client dropped),
// handled one at a time by ctl_ops.cc, and answered with one line. Watching clients get every
// new EV state change; one that does not keep up (its socket buffer full) is dropped, so a
// stuck client never holds the server or the engine.
//
// A socket already at the path is removed if nobody answers on it (a process that died); if a
// live process answers, this one does not serve (the device name is configured twice).
#include "ocp/ctl_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "ocp/ctl_ops.h"
#include "ocp/ctl_remote.h"
#include "ocp/ctl_socket.h"
#include "ocp/ocp_internal.h"

namespace mrc::ocp {

struct Client {
  int fd = -1;
  std::string buffer;
  bool watching = false;
  uint64_t seen = 0;                                                     // last watch event sent
  std::shared_ptr<CtlSession> session = std::make_shared<CtlSession>();  // forwarded calls' objects
};

struct CtlServer::Impl {
  Nic& nic;
  mrc_context ctx;  // the controller's context: acts on nic, receives no events
  std::string path;
  int listen_fd = -1;
  int stop_fd = -1;
  std::vector<Client> clients;
  std::thread thread;

  explicit Impl(Nic& n) : nic(n) { ctx.nic = &n; }
  void run();
  void accept_client();
  bool read_client(Client& c);  // false: drop the client
  bool send_line(Client& c, const std::string& line);
  void send_watch_events();
  void drop_closed();  // forgets closed clients and what their forwarded calls created
};

namespace {

int open_listener(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    std::fprintf(stderr, "mrc: control socket path too long: %s\n", path.c_str());
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  struct stat st {};
  if (lstat(path.c_str(), &st) == 0) {
    const int probe = ctl_connect(path);
    if (probe >= 0 || !S_ISSOCK(st.st_mode)) {
      if (probe >= 0) close(probe);
      std::fprintf(stderr, "mrc: %s is in use (%s); this process does not serve its controller\n",
                   path.c_str(), probe >= 0 ? "another process serves it" : "not a socket");
      return -1;
    }
    unlink(path.c_str());  // stale: its process is gone
  }
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  if (bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      chmod(path.c_str(), 0600) != 0 || listen(fd, kCtlMaxClients) != 0) {
    std::fprintf(stderr, "mrc: cannot serve the controller on %s: %s\n", path.c_str(),
                 std::strerror(errno));
    close(fd);
    return -1;
  }
  return fd;
}

bool peer_allowed(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return false;
  return cred.uid == geteuid() || cred.uid == 0;
}

}  // namespace

void CtlServer::Impl::accept_client() {
  const int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return;
  Client c;
  c.fd = fd;
  if (!peer_allowed(fd)) {
    send_line(c, R"({"ok":false,"errno":13,"error":"EACCES","message":"another user's process"})");
    close(fd);
    return;
  }
  if (static_cast<int>(clients.size()) >= kCtlMaxClients) {
    send_line(
        c,
        R"({"ok":false,"errno":11,"error":"EAGAIN","message":"too many controller connections"})");
    close(fd);
    return;
  }
  clients.push_back(std::move(c));
}

bool CtlServer::Impl::send_line(Client& c, const std::string& line) {
  std::string out = line + "\n";
  size_t done = 0;
  for (int stalls = 0; done < out.size();) {
    const ssize_t n = send(c.fd, out.data() + done, out.size() - done, MSG_NOSIGNAL);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN && !c.watching &&
        ++stalls < 1000) {  // a large answer: wait up to ~1 s
      pollfd p{c.fd, POLLOUT, 0};
      (void)poll(&p, 1, 1);
      continue;
    }
    return false;
  }
  return true;
}

bool CtlServer::Impl::read_client(Client& c) {
  char chunk[1024];
  const ssize_t n = recv(c.fd, chunk, sizeof chunk, MSG_DONTWAIT);
  if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return false;
  if (n > 0) c.buffer.append(chunk, static_cast<size_t>(n));
  for (size_t end; (end = c.buffer.find('\n')) != std::string::npos;) {
    if (end > kCtlRequestMax) break;  // refused below
    const std::string line = c.buffer.substr(0, end);
    c.buffer.erase(0, end + 1);
    CtlSession& session = *c.session;
    const auto response = ctl_handle(nic, ctx, line, session);
    const bool watch = session.watch;
    if (watch && !c.watching) {
      std::lock_guard events(nic.events_mutex);
      c.seen = nic.watch_seq;  // events from now on
    }
    c.watching |= watch;
    if (!send_line(c, response.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)))
      return false;
  }
  if (c.buffer.size() > kCtlRequestMax) {  // a line longer than the limit, ended or not
    send_line(
        c, R"({"ok":false,"errno":7,"error":"E2BIG","message":"request line longer than 1 MiB"})");
    return false;
  }
  return true;
}

void CtlServer::Impl::send_watch_events() {
  uint64_t count = 0;
  (void)!read(nic.watch_wake_fd, &count, sizeof count);
  std::vector<WatchEvent> events;
  {
    std::lock_guard events_lock(nic.events_mutex);
    events.assign(nic.watch_log.begin(), nic.watch_log.end());
  }
  for (Client& c : clients) {
    if (!c.watching) continue;
    for (const WatchEvent& e : events) {
      if (e.seq <= c.seen) continue;
      if (e.seq > c.seen + 1)  // fell out of the bounded log before we got to send it
        send_line(c, nlohmann::json{{"event", "lost"}, {"count", e.seq - c.seen - 1}}.dump());
      c.seen = e.seq;
      if (!send_line(c, ctl_watch_line(e).dump())) {
        close(c.fd);
        c.fd = -1;
        break;
      }
    }
  }
  drop_closed();
}

void CtlServer::Impl::drop_closed() {
  for (Client& c : clients)
    if (c.fd < 0) end_session(*c.session);
  std::erase_if(clients, [](const Client& c) { return c.fd < 0; });
}

void CtlServer::Impl::run() {
  std::vector<pollfd> fds;
  for (;;) {
    fds.assign({{stop_fd, POLLIN, 0}, {listen_fd, POLLIN, 0}, {nic.watch_wake_fd, POLLIN, 0}});
    for (const Client& c : clients) fds.push_back({c.fd, POLLIN, 0});
    if (poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[0].revents) return;
    for (size_t i = 3; i < fds.size(); ++i)
      if (fds[i].revents && !read_client(clients[i - 3])) {
        close(clients[i - 3].fd);
        clients[i - 3].fd = -1;
      }
    drop_closed();
    if (fds[2].revents) send_watch_events();
    if (fds[1].revents) accept_client();
  }
}

CtlServer::CtlServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

std::unique_ptr<CtlServer> CtlServer::start(Nic& nic) {
  const std::string dir = ctl_socket_dir();
  if (const std::string problem = ctl_prepare_dir(dir); !problem.empty()) {
    std::fprintf(stderr, "mrc: controller socket not served: %s\n", problem.c_str());
    return nullptr;
  }
  auto impl = std::make_unique<Impl>(nic);
  impl->path = ctl_socket_path(nic.spec->name);
  impl->listen_fd = open_listener(impl->path);
  if (impl->listen_fd < 0) return nullptr;
  impl->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  {
    auto locks = nic.lock_all();
    std::lock_guard events(nic.events_mutex);
    nic.watch_wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    nic.contexts.push_back(&impl->ctx);  // so EV event CQs of remote controllers get events
  }
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->run(); });
  return std::unique_ptr<CtlServer>(new CtlServer(std::move(impl)));
}

CtlServer::~CtlServer() {
  const uint64_t one = 1;
  (void)!write(impl_->stop_fd, &one, sizeof one);
  if (impl_->thread.joinable()) impl_->thread.join();
  for (Client& c : impl_->clients) {
    close(c.fd);
    end_session(*c.session);
  }
  unlink(impl_->path.c_str());
  close(impl_->listen_fd);
  close(impl_->stop_fd);
  auto locks = impl_->nic.lock_all();
  std::lock_guard events(impl_->nic.events_mutex);
  auto& contexts = impl_->nic.contexts;
  contexts.erase(std::remove(contexts.begin(), contexts.end(), &impl_->ctx), contexts.end());
  close(impl_->nic.watch_wake_fd);
  impl_->nic.watch_wake_fd = -1;
}

}  // namespace mrc::ocp
