// Rank rendezvous: a key-value store every rank can reach. Ranks publish what their peers need
// (connection information, memory keys) under agreed keys and wait for the peers' keys.
//
// The interface is the one torch's c10d::Store offers (set, get that blocks until the key
// exists, with a timeout), so a PyTorch backend can wrap the store torch passes in with a
// ten-line adapter. Three implementations:
//   - MemoryStore: in one process (ranks as threads; tests);
//   - FileStore: one file per key in a directory on a filesystem every rank sees (atomic
//     rename, so a reader never sees half a value);
//   - TcpStore: rank 0 runs TcpStoreServer, every rank (rank 0 too) is a client; a small
//     length-prefixed protocol over one TCP connection per client.
// Every blocking call has a deadline and says which key it waited for.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "mrc/error.hpp"

namespace mrc::coll {

class Store {
 public:
  virtual ~Store() = default;
  virtual Result<Ok, Error> set(const std::string& key, const std::string& value) = 0;
  // The value of `key`, or nothing if it does not exist yet; never waits.
  virtual Result<std::optional<std::string>, Error> try_get(const std::string& key) = 0;
  // Waits until `key` exists (up to `timeout`), then returns its value. By default, try_get
  // with a growing pause (1 ms to 20 ms) between tries.
  virtual Result<std::string, Error> get(const std::string& key, std::chrono::milliseconds timeout);

 protected:
  // Where the store is, for messages ("file store DIR", "tcp store HOST:PORT").
  virtual std::string where() const = 0;
};

// The error of a get that timed out, naming the key and the store.
Error key_timeout(const std::string& key, std::chrono::milliseconds timeout,
                  const std::string& where);

class MemoryStore final : public Store {
 public:
  Result<Ok, Error> set(const std::string& key, const std::string& value) override;
  Result<std::optional<std::string>, Error> try_get(const std::string& key) override;
  Result<std::string, Error> get(const std::string& key,
                                 std::chrono::milliseconds timeout) override;

 private:
  std::string where() const override { return "memory store"; }
  std::mutex mutex_;
  std::condition_variable changed_;
  std::map<std::string, std::string> values_;
};

class FileStore final : public Store {
 public:
  // Creates the directory if needed.
  static Result<std::unique_ptr<FileStore>, Error> open(const std::string& directory);
  Result<Ok, Error> set(const std::string& key, const std::string& value) override;
  Result<std::optional<std::string>, Error> try_get(const std::string& key) override;

 private:
  std::string where() const override { return "file store " + directory_; }
  explicit FileStore(std::string directory) : directory_(std::move(directory)) {}
  std::string path_of(const std::string& key) const;
  std::string directory_;
};

// Serves a TcpStore on a port (all IPv4 addresses) from its own thread until destroyed.
class TcpStoreServer {
 public:
  static constexpr int kMaxClients = 1024;
  // Port 0 picks a free port (see port()).
  static Result<std::unique_ptr<TcpStoreServer>, Error> start(uint16_t port);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;
  uint16_t port() const { return port_; }

 private:
  TcpStoreServer() = default;
  void serve();

  int listen_fd_ = -1;
  int stop_fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

class TcpStore final : public Store {
 public:
  // Connects to a TcpStoreServer, retrying for up to `timeout` while it starts.
  static Result<std::unique_ptr<TcpStore>, Error> connect(const std::string& host, uint16_t port,
                                                          std::chrono::milliseconds timeout);
  ~TcpStore() override;
  Result<Ok, Error> set(const std::string& key, const std::string& value) override;
  Result<std::optional<std::string>, Error> try_get(const std::string& key) override;

 private:
  std::string where() const override { return where_; }
  TcpStore() = default;
  // The value, or nothing if a get found no such key yet.
  Result<std::optional<std::string>, Error> request(char kind, const std::string& key,
                                                    const std::string& value);

  std::mutex mutex_;
  int fd_ = -1;
  std::string where_;
};

// "file:DIRECTORY" or "tcp:HOST:PORT" (a client; the server must run elsewhere, e.g. rank 0).
Result<std::unique_ptr<Store>, Error> open_store(const std::string& spec,
                                                 std::chrono::milliseconds timeout);

}  // namespace mrc::coll
