// A small HTTP server for Prometheus: GET /metrics returns the latest published snapshot, or
// what a renderer returns; any other path is a 404. It runs on a thread of its own and serves
// one scrape at a time (HTTP/1.1 with Connection: close; a client that sends no request within
// two seconds is dropped), which is all a Prometheus scraper needs and keeps the libraries
// that serve metrics free of an HTTP dependency. Two ways to feed it:
//   - publish: the thread that drives the engine renders the text (render_metrics) and
//     publishes it, at most every `refresh` through maybe_publish(), so a scrape sees state at
//     most that old and the server never touches the engine (`mrc perf`);
//   - render_on_scrape: the server's thread renders at each scrape, taking the engines' locks
//     (host.h), for owners whose engines run on threads of their own.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "mrc/error.hpp"

namespace mrc::host {

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
  // Scrapes return what `render` returns, called on the server's thread at each scrape (it
  // must be thread-safe: two scrapes may render at once); the published snapshot is then unused.
  // For an owner whose engines run on threads of their own (host.h), which renders holding
  // their locks instead of publishing from a loop.
  void render_on_scrape(std::function<std::string()> render);
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

}  // namespace mrc::host
