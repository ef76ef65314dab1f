// A device: engine, UDP datapath, progress thread, peers, EV ports and CQ events (device.h).
#include "io/device.h"

#include <algorithm>

namespace mrc::io {

Result<std::unique_ptr<Device>, std::string> Device::open(const DeviceConfig& config, std::mutex* shared_lock) {
  if (config.planes.empty()) return Err{std::string("a device needs at least one plane address")};
  UdpHostConfig hc;
  hc.planes = config.planes;
  hc.ev_port_base = config.ev_port_base;
  hc.ev_ports_per_plane = static_cast<uint16_t>(ev_source_ports(config.planes.size()) / config.planes.size());
  hc.impairment = config.impairment;
  hc.gso = hc.gro = config.gso;
  hc.seed = config.seed;
  auto host = UdpHost::open(hc);
  if (!host.ok()) return Err{host.error()};
  std::unique_ptr<Device> device(new Device(config, shared_lock));
  device->host_ = std::move(host.value());
  return device;
}

Device::~Device() {
  {
    std::lock_guard guard(*lock_);
    stopping_ = true;
  }
  host_->wake();
  if (thread_.joinable()) thread_.join();
}

uint32_t Device::peer(const std::vector<PlaneAddress>& planes) {
  const auto same = [&](const std::vector<PlaneAddress>& known) {
    return std::equal(known.begin(), known.end(), planes.begin(), planes.end(),
                      [](const PlaneAddress& a, const PlaneAddress& b) {
                        return a.address.s_addr == b.address.s_addr && a.port == b.port;
                      });
  };
  for (size_t i = 0; i < peers_.size(); ++i)
    if (same(peers_[i])) return peer_handles_[i];
  peers_.push_back(planes);
  peer_handles_.push_back(host_->add_peer(planes));
  return peer_handles_.back();
}

void Device::configure(QpConfig& c) const {
  c.ev_port_base = config_.ev_port_base;
  c.ev_ports_per_plane = static_cast<uint16_t>(ev_source_ports(config_.planes.size()) / config_.planes.size());
  if (c.ev_burst_packets == 0) c.ev_burst_packets = kUdpDefaultEvBurst;
  if (c.nscc.target_delay_ns == 0) c.nscc.target_delay_ns = kUdpDefaultTargetDelayNs;
}

CompletionQueue* Device::create_cq(uint32_t capacity) {
  CompletionQueue* cq = endpoint().create_cq(capacity);
  cq->set_notifier(this, cqs_++);
  is_ready_.push_back(false);
  ready_.reserve(cqs_);
  return cq;
}

// Called by the engine, holding the lock, when a push makes a CQ non-empty.
void Device::on_nonempty(uint32_t tag) {
  if (tag >= cqs_ || is_ready_[tag]) return;
  is_ready_[tag] = true;
  ready_.push_back(tag);
}

void Device::on_completions(std::function<void(std::span<const uint32_t>)> completions) {
  completions_ = std::move(completions);
}

void Device::on_round(std::function<void()> round) { round_ = std::move(round); }

// One round of the datapath and of the API's hooks, holding the lock; true if there was work.
bool Device::round() {
  const bool busy = host_->run_once();
  if (!ready_.empty()) {
    if (completions_) completions_(ready_);
    for (uint32_t tag : ready_) is_ready_[tag] = false;
    ready_.clear();
  }
  if (round_) round_();
  return busy;
}

void Device::start_thread() {
  thread_ = std::thread([this] { loop(); });
}

void Device::loop() {
  for (;;) {
    Instant until;
    bool busy = false;
    {
      std::lock_guard guard(*lock_);
      if (stopping_) return;
      busy = round();
      until = std::min(host_->wake_at(), host_->now() + Duration::from_ms(10));
    }
    if (!busy) host_->sleep_until(until);
  }
}

void Device::progress(Duration max_wait) {
  bool busy = false;
  Instant until;
  {
    std::lock_guard guard(*lock_);
    busy = round();
    until = std::min(host_->wake_at(), host_->now() + max_wait);
  }
  if (!busy) host_->sleep_until(until);
}

}  // namespace mrc::io
