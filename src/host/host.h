// A device group: N devices (io/device.h) of one host, each a shard with its own engine, its
// own sockets, its own progress thread and its own lock, so that N cores run the datapath at
// once with no lock shared on the per-packet path. A queue pair lives in one shard for its
// whole life: the group places new QPs round-robin, so a run with several QPs spreads over
// the shards. What a QP's user sees of other shards is only what every shard holds the same:
//   - protection domains and memory regions are created in every shard, in the same order,
//     so each has the same ids and keys everywhere (a registration that would differ, or
//     fails in one shard, is undone in all and refused);
//   - shard s listens on each plane's port + s and takes its EV source ports from the s-th
//     range after ev_port_base (ev_source_ports() each), so a peer reaches a QP at its shard's
//     ports, which the QP's connection information carries;
//   - the impairment and the plane schedule are every shard's, each with its own seed.
// One thread (threads = 1) is a single device with the ports it always had.
// The host also serves its Prometheus metrics (host/metrics.h) when asked: rendered at each
// scrape, holding every shard's lock in turn, so no engine thread does work for a scrape that
// never comes.
// And it captures, when asked, every shard's datagrams into one pcap file (capture()). It stops
// every shard's thread before it closes any shard, since a round's hooks may reach another.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "host/metrics.h"
#include "host/metrics_server.h"
#include "io/device.h"
#include "io/pcap_file.h"

namespace mrc::host {

using io::Device;
using io::DeviceConfig;
using io::PlaneAddress;
using mrc::kMaxDeviceThreads;
using mrc::UdpPlaneStats;

class Host {
 public:
  // Opens `threads` shards (1..kMaxDeviceThreads); the error names the shard that failed and
  // why, and what to change. `first_lock`: the lock shard 0 runs under, if the owner guards its
  // own objects with it (the OCP device); null: shard 0's own.
  // Stops every shard's thread before any shard closes: a round's hooks may touch another shard
  // (a completion waking shard 0, an owner's hook reading shard 0's planes).
  ~Host();
  static Result<std::unique_ptr<Host>, Error> open(const DeviceConfig& config, uint32_t threads,
                                                   std::mutex* first_lock = nullptr);
  // What shard `s` of a group opened with `config` is opened with: its ports and its seed.
  static Result<DeviceConfig, Error> shard_config(const DeviceConfig& config, uint32_t s);

  uint32_t size() const { return static_cast<uint32_t>(shards_.size()); }
  Device& shard(uint32_t s) { return *shards_[s]; }
  const Device& shard(uint32_t s) const { return *shards_[s]; }
  int planes() const { return shards_[0]->planes(); }

  // The shard of the next QP (round-robin). Not thread-safe: the owner serializes QP creation.
  uint32_t place_qp() { return next_shard_++ % size(); }
  // Plane p's counters summed over the shards, each read holding its lock (`up` is shard 0's:
  // the shards' planes go down and up together).
  UdpPlaneStats plane_stats(int p) const;

  // In every shard, each holding its lock: the same ids and keys everywhere.
  uint32_t alloc_pd();
  Result<MemoryRegionInfo, Error> register_region(uint32_t pd, void* address, uint64_t length,
                                                  uint32_t access);
  Result<Ok, Error> deregister(uint32_t lkey);
  // False (and nothing freed) while a region uses the domain: regions are in every shard alike,
  // so every shard answers the same.
  bool dealloc_pd(uint32_t pd);

  // Hooks every shard's completion events: `completions(s, tags)` is called holding shard s's
  // lock. With `wake_first`, a round of another shard that completed something also wakes
  // shard 0, for a caller that drives shard 0 itself and sleeps in its progress().
  void on_completions(const std::function<void(uint32_t, std::span<const uint32_t>)>& completions,
                      bool wake_first);
  // Hooks the end of every shard's rounds: `round(s)` is called holding shard s's lock.
  void on_round(const std::function<void(uint32_t)>& round);
  // Starts the progress threads of shards `first`.. (1: shard 0 is driven by its owner).
  void start_threads(uint32_t first);
  // Stops every shard's progress thread (Device::stop_thread): after it, no hook runs. For an
  // owner whose hooks reach the host through a pointer it is about to clear.
  void stop_threads();
  // Runs `fn` holding every shard's lock, taken in shard order (the one order, so no deadlock).
  void with_all_locked(const std::function<void()>& fn);

  // The metrics text of every shard now, holding their locks: one engine's series, or with
  // several shards each series with its thread="s".
  std::string metrics_text(const MetricsOptions& options);
  // Serves metrics_text() at http://bind:port/metrics (port 0: a free one) until the host is
  // destroyed; the error names the address and why (a port in use).
  Result<Ok, Error> serve_metrics(const std::string& bind, uint16_t port, MetricsOptions options);
  // The port metrics are served on, 0 if they are not.
  uint16_t metrics_port() const { return metrics_ != nullptr ? metrics_->port() : 0; }

  // Writes every datagram each shard sends and receives to the pcap file at `path` ("%p" in it
  // becomes the process id) until the host is destroyed, at most `max_bytes` of records; the
  // error names the file and why.
  Result<Ok, Error> capture(const std::string& path, uint64_t max_bytes);
  // What the capture holds, for a summary ("" without one): "capture: N datagrams in PATH",
  // and how many were not written once `budget_setting` (how the front door spells the budget)
  // was reached.
  std::string capture_note(const std::string& budget_setting) const;

 private:
  Host() = default;
  void deregister_in_first(uint32_t shards, uint32_t lkey);
  std::unique_ptr<io::PcapWriter> capture_;  // before shards_: outlives them (they write into it)
  std::string capture_path_;
  uint64_t capture_max_bytes_ = 0;
  std::vector<std::unique_ptr<Device>> shards_;
  uint32_t next_shard_ = 0;
  std::unique_ptr<MetricsServer> metrics_;  // after shards_: stops serving before they close
};

}  // namespace mrc::host
