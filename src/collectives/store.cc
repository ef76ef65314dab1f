// Key-value stores for rank rendezvous (see store.h).
//
// TcpStore protocol, one request at a time per connection: kind (1 byte: 'S' set, 'G' get),
// key length (u32, little end first), key, value length (u32), value. The reply is a status
// ('K' found/stored, 'N' not yet there) with a length-prefixed value. A get that finds
// nothing is retried by the client with a growing pause (1 ms to 20 ms) until its deadline, so
// the server never holds a request and a vanished client costs it nothing.
#include "collectives/store.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include "util/errno_map.h"

namespace mrc::coll {

namespace {

constexpr size_t kMaxKeyBytes = 4096;
constexpr size_t kMaxValueBytes = 1 << 20;

using Clock = std::chrono::steady_clock;

}  // namespace

Error key_timeout(const std::string& key, std::chrono::milliseconds timeout,
                  const std::string& where) {
  return Error{Errc::kTimedOut, "store: key '" + key + "' did not appear within " +
                                    std::to_string(timeout.count()) + " ms (" + where +
                                    "; did every rank start, with the same world size?)"};
}

Result<std::string, Error> Store::get(const std::string& key, std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  auto pause = std::chrono::milliseconds(1);
  for (;;) {
    auto r = try_get(key);
    if (!r.ok()) return Err{r.error()};
    if (r.value().has_value()) return std::move(*r.value());
    if (Clock::now() >= deadline) return Err{key_timeout(key, timeout, where())};
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
}

// ---- MemoryStore ----------------------------------------------------------------------------

Result<Ok, Error> MemoryStore::set(const std::string& key, const std::string& value) {
  {
    std::lock_guard lock(mutex_);
    values_[key] = value;
  }
  changed_.notify_all();
  return Ok{};
}

Result<std::string, Error> MemoryStore::get(const std::string& key,
                                            std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  const bool found = changed_.wait_for(lock, timeout, [&] { return values_.count(key) > 0; });
  if (!found) return Err{key_timeout(key, timeout, where())};
  return values_[key];
}

Result<std::optional<std::string>, Error> MemoryStore::try_get(const std::string& key) {
  std::lock_guard lock(mutex_);
  const auto it = values_.find(key);
  if (it == values_.end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

// ---- FileStore ------------------------------------------------------------------------------

Result<std::unique_ptr<FileStore>, Error> FileStore::open(const std::string& directory) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec || !std::filesystem::is_directory(directory))
    return fail(Errc::kIo,
                "file store: cannot create directory '" + directory + "': " + ec.message());
  return std::unique_ptr<FileStore>(new FileStore(directory));
}

std::string FileStore::path_of(const std::string& key) const {
  // Keys contain '/'; a file name must not. Every other byte outside [A-Za-z0-9._-] too.
  std::string name;
  for (unsigned char ch : key) {
    if (std::isalnum(ch) || ch == '.' || ch == '_' || ch == '-') {
      name += static_cast<char>(ch);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", ch);
      name += hex;
    }
  }
  return directory_ + "/" + name;
}

Result<Ok, Error> FileStore::set(const std::string& key, const std::string& value) {
  const std::string path = path_of(key);
  const std::string temporary =
      path + ".tmp." + std::to_string(getpid()) + "." +
      std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(value.data(), static_cast<std::streamsize>(value.size()));
    if (!out) return fail(Errc::kIo, "file store: cannot write '" + temporary + "'");
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0)
    return Err{system_error("file store: cannot rename to '" + path + "'", errno)};
  return Ok{};
}

Result<std::optional<std::string>, Error> FileStore::try_get(const std::string& key) {
  std::ifstream in(path_of(key), std::ios::binary);
  if (!in) return std::optional<std::string>();
  std::ostringstream content;
  content << in.rdbuf();
  return std::optional<std::string>(content.str());
}

// ---- TcpStore wire helpers ------------------------------------------------------------------

namespace {

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xFF);
}

uint32_t get_u32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i)
    v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

bool write_all(int fd, const std::string& bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool read_exact(int fd, char* out, size_t length) {
  size_t done = 0;
  while (done < length) {
    const ssize_t n = read(fd, out + done, length - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// A whole request at the front of `buffer`? Returns its length (0: not yet; SIZE_MAX: bad).
size_t request_length(const std::string& buffer) {
  if (buffer.size() < 5) return 0;
  const uint32_t key_bytes = get_u32(buffer.data() + 1);
  if (key_bytes > kMaxKeyBytes) return SIZE_MAX;
  if (buffer.size() < 9 + key_bytes) return 0;
  const uint32_t value_bytes = get_u32(buffer.data() + 5 + key_bytes);
  if (value_bytes > kMaxValueBytes) return SIZE_MAX;
  const size_t total = 9 + key_bytes + value_bytes;
  return buffer.size() < total ? 0 : total;
}

}  // namespace

// ---- TcpStoreServer -------------------------------------------------------------------------

Result<std::unique_ptr<TcpStoreServer>, Error> TcpStoreServer::start(uint16_t port) {
  std::unique_ptr<TcpStoreServer> s(new TcpStoreServer());
  s->listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  const int on = 1;
  setsockopt(s->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_ANY);
  if (bind(s->listen_fd_, reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
      listen(s->listen_fd_, 128) != 0)
    return Err{system_error("tcp store: cannot listen on TCP port " + std::to_string(port), errno)};
  socklen_t length = sizeof sa;
  getsockname(s->listen_fd_, reinterpret_cast<sockaddr*>(&sa), &length);
  s->port_ = ntohs(sa.sin_port);
  s->stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  s->thread_ = std::thread([raw = s.get()] { raw->serve(); });
  return s;
}

TcpStoreServer::~TcpStoreServer() {
  if (stop_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) close(listen_fd_);
  if (stop_fd_ >= 0) close(stop_fd_);
}

namespace {

// Answers every whole request in `buffer`; false if the client sent garbage or went away.
bool answer_requests(int fd, std::string& buffer, std::map<std::string, std::string>& values) {
  for (size_t length; (length = request_length(buffer)) != 0;) {
    if (length == SIZE_MAX) return false;
    const uint32_t key_bytes = get_u32(buffer.data() + 1);
    const std::string key = buffer.substr(5, key_bytes);
    std::string reply;
    if (buffer[0] == 'S') {
      values[key] = buffer.substr(9 + key_bytes, length - 9 - key_bytes);
      reply = "K";
      put_u32(reply, 0);
    } else {
      auto it = values.find(key);
      reply = it == values.end() ? "N" : "K";
      put_u32(reply, it == values.end() ? 0 : static_cast<uint32_t>(it->second.size()));
      if (it != values.end()) reply += it->second;
    }
    buffer.erase(0, length);
    if (!write_all(fd, reply)) return false;
  }
  return true;
}

}  // namespace

void TcpStoreServer::serve() {
  std::map<std::string, std::string> values;
  std::vector<pollfd> fds{{stop_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
  std::vector<std::string> buffers(2);
  for (;;) {
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) return;
    if (fds[0].revents != 0) break;
    if ((fds[1].revents & POLLIN) && fds.size() < kMaxClients + 2) {
      const int client = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      const int on = 1;
      if (client >= 0) {
        setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        fds.push_back({client, POLLIN, 0});
        buffers.emplace_back();
      }
    }
    for (size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      char chunk[16384];
      const ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
      if (n > 0) buffers[i].append(chunk, static_cast<size_t>(n));
      if (n <= 0 || !answer_requests(fds[i].fd, buffers[i], values)) {
        close(fds[i].fd);
        fds.erase(fds.begin() + static_cast<ptrdiff_t>(i));
        buffers.erase(buffers.begin() + static_cast<ptrdiff_t>(i));
        --i;
      }
    }
  }
  for (size_t i = 2; i < fds.size(); ++i) close(fds[i].fd);
}

// ---- TcpStore -------------------------------------------------------------------------------

Result<std::unique_ptr<TcpStore>, Error> TcpStore::connect(const std::string& host, uint16_t port,
                                                           std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string where = host + ":" + std::to_string(port);
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found)
    return fail(Errc::kNotFound, "tcp store: cannot resolve '" + host + "'");
  std::unique_ptr<TcpStore> store(new TcpStore());
  store->where_ = "tcp store " + where;
  const auto deadline = Clock::now() + timeout;
  int last_errno = 0;
  while (store->fd_ < 0 && Clock::now() < deadline) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (::connect(fd, found->ai_addr, found->ai_addrlen) == 0) {
      const int on = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
      store->fd_ = fd;
      break;
    }
    last_errno = errno;
    close(fd);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  freeaddrinfo(found);
  if (store->fd_ < 0)
    return fail(Errc::kPeerFailed, "tcp store: cannot reach " + where + ": " +
                                       std::strerror(last_errno) +
                                       " (is rank 0 running and serving the store there?)");
  return store;
}

TcpStore::~TcpStore() {
  if (fd_ >= 0) close(fd_);
}

Result<std::optional<std::string>, Error> TcpStore::request(char kind, const std::string& key,
                                                            const std::string& value) {
  if (key.size() > kMaxKeyBytes || value.size() > kMaxValueBytes)
    return fail(Errc::kInvalidArgument, "tcp store: key or value too long for '" + key + "'");
  std::string frame(1, kind);
  put_u32(frame, static_cast<uint32_t>(key.size()));
  frame += key;
  put_u32(frame, static_cast<uint32_t>(value.size()));
  frame += value;
  char header[5];
  std::lock_guard lock(mutex_);
  if (fd_ < 0 || !write_all(fd_, frame) || !read_exact(fd_, header, sizeof header))
    return fail(Errc::kPeerFailed, where_ + ": connection lost (did rank 0 exit?)");
  const uint32_t length = get_u32(header + 1);
  if (length > kMaxValueBytes) return fail(Errc::kPeerFailed, where_ + ": malformed reply");
  std::string reply(length, '\0');
  if (!read_exact(fd_, reply.data(), length))
    return fail(Errc::kPeerFailed, where_ + ": connection lost");
  if (header[0] == 'N') return std::optional<std::string>();  // not there yet
  return std::optional<std::string>(std::move(reply));
}

Result<Ok, Error> TcpStore::set(const std::string& key, const std::string& value) {
  auto r = request('S', key, value);
  if (!r.ok()) return Err{r.error()};
  return Ok{};
}

Result<std::optional<std::string>, Error> TcpStore::try_get(const std::string& key) {
  return request('G', key, {});
}

Result<std::unique_ptr<Store>, Error> open_store(const std::string& spec,
                                                 std::chrono::milliseconds timeout) {
  if (spec.rfind("file:", 0) == 0) {
    auto s = FileStore::open(spec.substr(5));
    if (!s.ok()) return Err{s.error()};
    return std::unique_ptr<Store>(std::move(s.value()));
  }
  if (spec.rfind("tcp:", 0) == 0) {
    const size_t colon = spec.rfind(':');
    const std::string host = spec.substr(4, colon - 4);
    const int port = colon > 4 ? std::atoi(spec.c_str() + colon + 1) : 0;
    if (host.empty() || port <= 0 || port > 65535)
      return fail(Errc::kInvalidArgument, "store '" + spec + "': expected tcp:HOST:PORT");
    auto s = TcpStore::connect(host, static_cast<uint16_t>(port), timeout);
    if (!s.ok()) return Err{s.error()};
    return std::unique_ptr<Store>(std::move(s.value()));
  }
  return fail(Errc::kInvalidArgument,
              "store '" + spec + "': expected file:DIRECTORY or tcp:HOST:PORT");
}

}  // namespace mrc::coll
