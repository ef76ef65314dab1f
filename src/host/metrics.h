// Prometheus text exposition (format 0.0.4) of one engine and its UDP datapath: counters and
// gauges per queue pair, per plane and per EV. Names, labels and types are listed in
// docs/METRICS.md. Rendering reads engine state, so call it from the thread that drives the
// engine (the engine is not thread-safe); MetricsServer (metrics_server.h) serves the text.
#pragma once

#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/endpoint.h"
#include "io/udp_host.h"

namespace mrc::host {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

struct MetricsOptions {
  MetricLabels labels;  // put on every series, first (e.g. {"role", "client"})
  bool all_evs =
      false;  // false: only EVs with activity (packets, probes, state changes) or not GOOD
};

// The whole exposition; `host` may be null (engine only, e.g. under the simulator or in tests),
// then the per-plane UDP families are left out.
std::string render_metrics(Endpoint& endpoint, const io::UdpHost* host,
                           const MetricsOptions& options);

// The exposition of several engines of one process (the shards of a device group,
// host/host.h): every series of source i also carries thread="i".
struct MetricsSource {
  Endpoint* endpoint = nullptr;
  const io::UdpHost* host = nullptr;
};
std::string render_metrics(std::span<const MetricsSource> sources, const MetricsOptions& options);

// Builds exposition text: families keep the order of their first sample and each is written
// once, HELP and TYPE first, so samples may be added in any order.
class MetricsWriter {
 public:
  explicit MetricsWriter(MetricLabels base) : base_(std::move(base)) {}
  // The labels put first on the samples added from now on.
  void set_base(MetricLabels base) { base_ = std::move(base); }
  void counter(const std::string& name, const char* help, const MetricLabels& labels,
               uint64_t value);
  void gauge(const std::string& name, const char* help, const MetricLabels& labels, double value);
  std::string text() const;

 private:
  struct Family {
    std::string name, help, type;
    std::string samples;
  };
  Family& family(const std::string& name, const char* help, const char* type);
  std::string series(const std::string& name, const MetricLabels& labels) const;

  MetricLabels base_;
  std::vector<Family> families_;
  std::unordered_map<std::string, size_t> index_;
};

// A label value with \, " and newline escaped as the format requires.
std::string escape_label_value(const std::string& value);

}  // namespace mrc::host
