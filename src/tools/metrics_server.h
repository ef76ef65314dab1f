// A small HTTP server for Prometheus: GET /metrics returns the latest published snapshot (404
// for any other path). It runs on its own thread and never touches the engine: the thread that
// drives the engine renders the text (render_metrics) and publishes it, at most every
// `refresh` through maybe_publish(), so a scrape sees state at most that old.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "mrc/error.hpp"

namespace mrc::tools {

class MetricsServer {
 public:
  // Listens on bind:port now (so a port in use is reported before any work starts) and serves
  // on a background thread. Port 0 picks a free port (see port()).
  static Result<std::unique_ptr<MetricsServer>, Error> start(const std::string& bind,
                                                             uint16_t port);
  ~MetricsServer();  // stops serving and joins the thread
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  uint16_t port() const;
  // Replaces the snapshot that scrapes return.
  void publish(std::string text);
  // Calls render() and publishes its text if `refresh` has passed since the last publish.
  void maybe_publish(const std::function<std::string()>& render);
  void set_refresh(std::chrono::milliseconds refresh) { refresh_ = refresh; }

 private:
  struct Impl;
  explicit MetricsServer(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
  std::chrono::milliseconds refresh_{100};
  std::chrono::steady_clock::time_point last_publish_{};
};

}  // namespace mrc::tools
