// Out-of-band connection setup over TCP, as perftest does: each side sends one JSON line with
// what the other needs to bring its queue pairs to RTS (plane addresses, QPNs, initial PSNs,
// memory keys and addresses, test parameters) and reads the other's.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "mrc/error.hpp"
#include "mrc/result.hpp"

namespace mrc::tools {

class OobChannel {
 public:
  ~OobChannel();
  // Server: listen on `port` (all addresses) and accept one client.
  static Result<OobChannel, Error> accept_one(uint16_t port);
  // Client: connect to host:port, retrying for up to `timeout_ms` while the server starts.
  static Result<OobChannel, Error> connect_to(const std::string& host, uint16_t port,
                                              int timeout_ms);
  OobChannel(OobChannel&& o) noexcept : fd_(o.fd_), listen_fd_(o.listen_fd_) {
    o.fd_ = o.listen_fd_ = -1;
  }
  bool send(const nlohmann::json& message);
  // Blocks for one line; returns false on EOF, error or malformed JSON.
  bool receive(nlohmann::json& message);
  // Non-blocking: true and a message if a whole line is available.
  bool try_receive(nlohmann::json& message);
  // The peer closed the connection (or it failed): nothing more will arrive.
  bool closed() const { return closed_; }

 private:
  OobChannel() = default;
  int fd_ = -1;
  int listen_fd_ = -1;
  std::string pending_;
  bool closed_ = false;
};

}  // namespace mrc::tools
