// A host: N shards, each a device with its own engine, sockets and thread, and its metrics
// endpoint (host.h).
#include "host/host.h"

#include <unistd.h>

#include "host/port_plan.h"

namespace mrc::host {

Result<DeviceConfig, Error> Host::shard_config(const DeviceConfig& config, uint32_t s) {
  DeviceConfig c = config;
  c.shard = s;
  if (s == 0) return c;
  // Shard s is thread s of the plan's slot 0 (each plane's address may carry its own port).
  host::PortPlan plan;
  plan.ev_port_base = config.ev_port_base;
  plan.planes = config.planes.size();
  const host::PortSpan ev = plan.ev_ports(0, s);
  if (ev.last() > 65535)
    return fail(Errc::kInvalidArgument,
                "thread " + std::to_string(s) + " would take EV source ports " +
                    std::to_string(ev.first) + "-" + std::to_string(ev.last()) +
                    ", past 65535: lower " + config.ev_port_setting + " or use fewer threads");
  c.ev_port_base = static_cast<uint16_t>(ev.first);
  for (PlaneAddress& a : c.planes) {
    plan.port = a.port;
    const uint32_t port = plan.receive_port(0, s);
    if (port > 65535)
      return fail(Errc::kInvalidArgument, "thread " + std::to_string(s) +
                                              " would listen on UDP port " + std::to_string(port) +
                                              ", past 65535: lower " + config.port_setting +
                                              " or use fewer threads");
    a.port = static_cast<uint16_t>(port);
  }
  c.seed = config.seed + s;
  return c;
}

Result<std::unique_ptr<Host>, Error> Host::open(const DeviceConfig& config, uint32_t threads,
                                                std::mutex* first_lock) {
  if (threads < 1 || threads > kMaxDeviceThreads)
    return fail(Errc::kInvalidArgument, "threads = " + std::to_string(threads) +
                                            ": a device runs 1 to " +
                                            std::to_string(kMaxDeviceThreads) + " engine threads");
  std::unique_ptr<Host> group(new Host());
  DeviceConfig shared = config;
  shared.shards = threads;
  for (uint32_t s = 0; s < threads; ++s) {
    auto c = shard_config(shared, s);
    if (!c.ok()) return Err{c.error()};
    auto device = Device::open(c.value(), s == 0 ? first_lock : nullptr);
    if (!device.ok())
      return threads == 1 ? Err{device.error()}
                          : fail(device.error(), "thread " + std::to_string(s) + " of " +
                                                     std::to_string(threads) + ": ");
    group->shards_.push_back(std::move(device.value()));
  }
  return group;
}

uint32_t Host::alloc_pd() {
  uint32_t pd = 0;
  for (auto& shard : shards_) {
    std::lock_guard lock(shard->lock());
    pd = shard->endpoint().memory().alloc_pd();  // the same in every shard: each did the same calls
  }
  return pd;
}

Result<MemoryRegionInfo, Error> Host::register_region(uint32_t pd, void* address, uint64_t length,
                                                      uint32_t access) {
  MemoryRegionInfo first{};
  for (uint32_t s = 0; s < size(); ++s) {
    Device& shard = *shards_[s];
    std::unique_lock lock(shard.lock());
    auto r = shard.endpoint().memory().register_region(pd, address, length, access);
    if (!r.ok()) {
      lock.unlock();
      deregister_in_first(s, first.lkey);
      return Err{to_error(r.error())};
    }
    if (s == 0) first = r.value();
    if (r.value().lkey != first.lkey || r.value().rkey != first.rkey) {
      MRC_ASSERT(shard.endpoint().memory().deregister(r.value().lkey).ok());  // just made
      lock.unlock();
      deregister_in_first(s, first.lkey);
      return fail(Errc::kInvalidState, "thread " + std::to_string(s) +
                                           " gave the region other keys than thread 0 (regions "
                                           "registered in one thread's engine directly?): refused");
    }
  }
  return first;
}

// Undoes a registration in shards 0..shards-1 (those it had reached).
void Host::deregister_in_first(uint32_t shards, uint32_t lkey) {
  for (uint32_t s = 0; s < shards; ++s) {
    std::lock_guard lock(shards_[s]->lock());
    MRC_ASSERT(shards_[s]->endpoint().memory().deregister(lkey).ok());  // registered above
  }
}

Result<Ok, Error> Host::deregister(uint32_t lkey) {
  Result<Ok, Error> result = Ok{};
  for (auto& shard : shards_) {
    std::lock_guard lock(shard->lock());
    auto r = shard->endpoint().memory().deregister(lkey);
    if (!r.ok() && result.ok()) result = Err{to_error(r.error())};
  }
  return result;
}

bool Host::dealloc_pd(uint32_t pd) {
  for (uint32_t s = 0; s < size(); ++s) {
    std::lock_guard lock(shards_[s]->lock());
    const bool freed = shards_[s]->endpoint().memory().dealloc_pd(pd);
    if (s == 0 && !freed) return false;
    MRC_ASSERT(freed);  // shard 0 had no region in it, so neither has any other
  }
  return true;
}

UdpPlaneStats Host::plane_stats(int p) const {
  UdpPlaneStats sum;
  for (uint32_t s = 0; s < size(); ++s) {
    std::lock_guard lock(shards_[s]->lock());
    const UdpPlaneStats one = shards_[s]->host().plane_stats(p);
    if (s == 0)
      sum = one;
    else
      sum += one;
  }
  return sum;
}

void Host::on_completions(
    const std::function<void(uint32_t, std::span<const uint32_t>)>& completions, bool wake_first) {
  for (uint32_t s = 0; s < size(); ++s) {
    Device* first = s != 0 && wake_first ? shards_[0].get() : nullptr;
    shards_[s]->on_completions([completions, s, first](std::span<const uint32_t> tags) {
      completions(s, tags);
      if (first != nullptr) first->wake();
    });
  }
}

void Host::on_round(const std::function<void(uint32_t)>& round) {
  for (uint32_t s = 0; s < size(); ++s) shards_[s]->on_round([round, s] { round(s); });
}

void Host::start_threads(uint32_t first) {
  for (uint32_t s = first; s < size(); ++s) shards_[s]->start_thread();
}

void Host::stop_threads() {
  for (auto& shard : shards_) shard->stop_thread();
}

Host::~Host() {
  stop_threads();
}

void Host::with_all_locked(const std::function<void()>& fn) {
  std::vector<std::unique_lock<std::mutex>> locks;
  locks.reserve(shards_.size());
  for (auto& shard : shards_) locks.emplace_back(shard->lock());
  fn();
}

std::string Host::metrics_text(const MetricsOptions& options) {
  std::string text;
  with_all_locked([&] {
    if (size() == 1) {
      text = render_metrics(shards_[0]->endpoint(), &shards_[0]->host(), options);
      return;
    }
    std::vector<MetricsSource> sources;
    for (auto& shard : shards_) sources.push_back({&shard->endpoint(), &shard->host()});
    text = render_metrics(sources, options);
  });
  return text;
}

Result<Ok, Error> Host::capture(const std::string& path, uint64_t max_bytes) {
  std::string file = path;
  for (size_t at = file.find("%p"); at != std::string::npos; at = file.find("%p", at))
    file.replace(at, 2, std::to_string(getpid()));
  auto writer = io::PcapWriter::open(file, max_bytes);
  if (!writer.ok()) return Err{writer.error()};
  for (auto& shard : shards_) {
    std::lock_guard lock(shard->lock());
    shard->host().set_capture(writer.value().get());
  }
  capture_ = std::move(writer.value());  // (an earlier one goes now: no shard writes to it)
  capture_path_ = file;
  capture_max_bytes_ = max_bytes;
  return Ok{};
}

std::string Host::capture_note(const std::string& budget_setting) const {
  if (!capture_) return "";
  std::string note =
      "capture: " + std::to_string(capture_->records()) + " datagrams in " + capture_path_;
  if (capture_->full())
    note += " (then " + std::to_string(capture_->dropped()) + " not written: " + budget_setting +
            " " + std::to_string(capture_max_bytes_ >> 20) + " reached)";
  return note;
}

Result<Ok, Error> Host::serve_metrics(const std::string& bind, uint16_t port,
                                      MetricsOptions options) {
  auto server = MetricsServer::start(bind, port);
  if (!server.ok()) return Err{server.error()};
  metrics_ = std::move(server.value());
  metrics_->render_on_scrape(
      [this, options = std::move(options)] { return metrics_text(options); });
  return Ok{};
}

}  // namespace mrc::host
