// The engine side of the ns-3 cross-check, behind an interface that compiles as C++17: ns-3
// 3.37's headers do not compile as C++20 (template-ids as constructor names), and src/core
// needs C++20. xcheck_engine.cc (C++20) holds every host's mrc::Endpoint and the workload
// runner/checker of src/sim/run.cc; mrc_ns3.cc (C++17) is the ns-3 side.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace xcheck {

// A switch output port's queueing, from the scenario's LinkConfig (wire bytes, as src/sim).
struct LinkParams {
  double rate_gbps = 0;
  int64_t propagation_ns = 0;
  uint64_t queue_limit = 0;     // data queue limit
  uint64_t trim_at = 0;         // trim a data packet that would take the data queue above this
  uint64_t ecn_threshold = 0;   // step ECN marking above this (0: none)
  uint64_t priority_limit = 0;  // control + trimmed headers
  bool trim = true;             // false: drop-tail
};

// A leaf-spine cable direction going down (failed) or up at a time.
struct LinkFault {
  int64_t at_ns = 0;
  uint32_t leaf = 0;
  uint32_t spine = 0;
  bool leaf_to_spine = true;
  bool failed = true;
};

struct ScenarioInfo {
  std::string name;
  uint64_t seed = 0;
  uint32_t hosts = 0;
  uint32_t hosts_per_leaf = 0;
  uint32_t spines = 0;
  bool spray = false;  // else per-flow (5-tuple) ECMP
  uint64_t ecmp_salt = 0;
  LinkParams host_link;    // leaf -> host output port (ECN only with ecn_last_hop)
  LinkParams fabric_link;  // leaf <-> spine output ports
  int64_t time_limit_ns = 0;
  uint32_t mtu_wire_bytes = 0;    // a full data packet on the wire, as the simulator counts it
  std::vector<LinkFault> faults;  // including the heal
};

struct TxInfo {
  uint32_t peer = 0;  // destination host
  uint32_t ev = 0;    // the UDP source port
  bool is_data = false;
  uint32_t header_bytes = 0;  // data: the length after trimming
};

struct RxInfo {
  uint32_t ev = 0;  // the UDP source port it arrived with
  bool ecn_ce = false;
  bool trimmed = false;
  uint32_t peer = 0;  // source host
};

class Engine {
 public:
  // Loads a scenario file (`mrc sim` format); `error` says why not. seed 0 keeps the file's.
  static std::unique_ptr<Engine> load(const std::string& path, uint64_t seed, std::string& error);
  virtual ~Engine() = default;
  virtual const ScenarioInfo& info() const = 0;
  static constexpr uint16_t kEvPortBase = 10000;  // EVs are UDP source ports from here
  static size_t max_datagram();

  // The engine of `host`, driven as src/sim/host.cc drives it.
  virtual size_t poll_transmit(uint32_t host, int64_t now, uint8_t* out, size_t cap,
                               TxInfo& tx) = 0;
  virtual void handle_datagram(uint32_t host, int64_t now, const uint8_t* data, size_t n,
                               const RxInfo& rx) = 0;
  virtual void handle_timeout(uint32_t host, int64_t now) = 0;
  virtual int64_t next_deadline(uint32_t host) const = 0;  // INT64_MAX: none

  // Connects the queue pairs and posts the workload (same draws as src/sim/run.cc).
  virtual void start() = 0;
  // Polls completions and posts what became ready; true once every flow has settled.
  virtual bool tick() = 0;
  // Called whenever a host's completion queue becomes non-empty (src/sim/run.cc polls at that
  // instant, as an application polling its CQs would).
  virtual void set_on_completion(std::function<void()> f) = 0;
  // Checks the run (bytes equal their source, exactly once, in-order immediates) and returns
  // the engine's part of the JSON report: "ok": ..., "failure": ..., ... (no braces).
  virtual std::string check_and_report(bool completed) = 0;
};

}  // namespace xcheck
