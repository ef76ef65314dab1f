// A device: engine, UDP datapath, progress thread, peers, EV ports and CQ events (device.h).
#include "io/device.h"

#include <arpa/inet.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "core/wire/packet.h"

namespace mrc::io {

Result<std::unique_ptr<Device>, Error> Device::open(const DeviceConfig& config,
                                                    std::mutex* shared_lock) {
  if (config.planes.empty())
    return fail(Errc::kInvalidArgument, "a device needs at least one plane address");
  UdpHostConfig hc;
  hc.planes = config.planes;
  hc.ev_port_base = config.ev_port_base;
  hc.ev_ports_per_plane = ev_source_ports_per_plane(config.planes.size());
  hc.impairment = config.impairment;
  hc.gso = hc.gro = config.gso;
  hc.backend = config.backend;
  hc.srv6_paths = config.srv6_paths;
  hc.busy_poll = config.busy_poll;
  hc.seed = config.seed;
  std::random_device os_random;  // unpredictable_ids: the OS's entropy, not a seed
  const auto draw = [&] { return (uint64_t{os_random()} << 32) | os_random(); };
  hc.qpn_seed = config.unpredictable_ids ? draw() | 1 : 0;
  hc.qpn_partition = config.shard;
  hc.qpn_partitions = config.shards;
  const uint64_t psn_seed = config.unpredictable_ids ? draw() : 0;
  hc.port_setting = config.port_setting;
  hc.ev_port_setting = config.ev_port_setting;
  auto host = UdpHost::open(hc);
  if (!host.ok()) return Err{host.error()};
  std::unique_ptr<Device> device(new Device(config, shared_lock, psn_seed));
  device->host_ = std::move(host.value());
  Device* raw = device.get();
  device->host_->set_side_channel(
      secure::kKeyOfferOpcode,
      [raw](std::span<const uint8_t> d, const SocketAddress& from, bool icrc_checked) {
        raw->on_key_offer(d, from, icrc_checked);
      });
  return device;
}

Device::~Device() {
  stop_thread();
}

void Device::stop_thread() {
  stopping_.store(true);
  host_->wake();
  // Destroyed on its own thread (exit handlers run where a signal landed): that thread cannot be
  // joined, and ends with the process.
  if (thread_.joinable() && thread_.get_id() == std::this_thread::get_id())
    thread_.detach();
  else if (thread_.joinable())
    thread_.join();
}

void Device::configure(QpConfig& c, SecureMode secure) const {
  c.ev_port_base = config_.ev_port_base;
  c.ev_ports_per_plane = ev_source_ports_per_plane(config_.planes.size());
  if (c.ack_every_packets == 0) c.ack_every_packets = kUdpDefaultAckEvery;
  if (c.nscc.target_delay_ns == 0) c.nscc.target_delay_ns = kUdpDefaultTargetDelayNs;
  if (c.mtu_bytes > max_mtu_bytes(secure)) c.set_mtu(max_mtu_bytes(secure));
  if (c.ev_burst_packets == 0) c.ev_burst_packets = default_ev_burst(c.mtu_bytes);
}

// A default burst leaves as one GSO send: kUdpDefaultEvBurst packets, or as many full-sized
// datagrams as one send carries if fewer (7 of 8192-byte payloads), secure ones included.
uint16_t default_ev_burst(uint32_t mtu_bytes) {
  const size_t datagram =
      mtu_bytes + wire::kMaxDataHeaderBytes + wire::kSechBytes + wire::kTagBytes + wire::kIcrcBytes;
  const size_t fit = std::max<size_t>(1, kMaxGsoBytes / datagram);
  return static_cast<uint16_t>(std::min<size_t>(kUdpDefaultEvBurst, fit));
}

// A packet must fit the datapath's datagram (the xdp backend's frames hold less than UDP), a
// secure one with its security header and tag.
uint32_t Device::max_mtu_bytes(SecureMode secure) const {
  const size_t overhead = secure != SecureMode::kOff ? kSecureOverheadBytes : 0;
  return static_cast<uint32_t>(host_->max_datagram_bytes() - wire::kMaxDataHeaderBytes -
                               wire::kIcrcBytes - overhead);
}

Psn Device::initial_psn() {
  if (config_.unpredictable_ids) return Psn(psns_.next_u32() & Psn::kMask);
  next_psn_ += 0x10001;
  return Psn(next_psn_ & Psn::kMask);
}

CompletionQueue* Device::create_cq(uint32_t capacity) {
  CompletionQueue* cq = endpoint().create_cq(capacity);
  cq->set_notifier(this, static_cast<uint32_t>(is_ready_.size()));
  is_ready_.push_back(false);
  ready_.reserve(is_ready_.size());
  return cq;
}

// Called by the engine, holding the lock, when a push makes a CQ non-empty.
void Device::on_nonempty(uint32_t tag) {
  if (tag >= is_ready_.size() || is_ready_[tag]) return;
  is_ready_[tag] = true;
  ready_.push_back(tag);
}

void Device::on_completions(std::function<void(std::span<const uint32_t>)> completions) {
  completions_ = std::move(completions);
}

void Device::on_round(std::function<void()> round) {
  round_ = std::move(round);
}

Result<Ok, Error> Device::agree_keys(const QueuePair& qp, std::span<const uint8_t> key,
                                     uint32_t peer, Qpn peer_qpn, const std::string& peer_name) {
  auto started = keys_.start(host_->now(), qp.config().security.mode, key, qp.qpn().value, peer,
                             peer_qpn.value, peer_name);
  run_key_agreements();
  return started;
}

// A KEY OFFER goes to the agreements, unless it names a plain QP connected to its sender: the
// two ends' secure modes then differ, and the plain QP (which authenticates nothing anyway)
// fails now, with both named, rather than after its retries.
void Device::on_key_offer(std::span<const uint8_t> datagram, const SocketAddress& from,
                          bool icrc_checked) {
  const auto offer = secure::decode_key_offer(datagram, icrc_checked);
  QueuePair* qp = offer ? endpoint().qp(Qpn(offer->dest_qpn)) : nullptr;
  const bool connected =
      qp != nullptr && (qp->state() == QpState::kRtr || qp->state() == QpState::kRts);
  if (!connected || qp->secure() || qp->remote().dest_qp.value != offer->source_qpn) {
    keys_.on_offer(host_->now(), offer ? &*offer : nullptr);
    return;
  }
  qp->to_error();
  if (key_failed_)
    key_failed_(qp->qpn(), "the peer at " + address_text(from) + " (queue pair " +
                               std::to_string(offer->source_qpn) + ") is in secure mode " +
                               to_string(offer->offer.mode) +
                               ", this end is not: both ends need the same secure mode");
}

// Sends what the agreements have to send and hands their outcomes to the QPs.
void Device::run_key_agreements() {
  keys_.on_timer(host_->now());
  for (const secure::InbandKeys::Outgoing& o : keys_.take_outgoing())
    host_->send_side(o.peer, o.datagram);
  for (const secure::InbandKeys::Outcome& o : keys_.take_outcomes()) {
    QueuePair* qp = endpoint().qp(Qpn(o.qpn));
    if (qp == nullptr) continue;
    if (o.agreed) {
      (void)qp->set_keys(o.keys.send_secret, o.keys.receive_secret);  // refused if reset since
      continue;
    }
    qp->to_error();
    if (key_failed_) key_failed_(Qpn(o.qpn), o.error);
  }
}

// One round of the datapath and of the API's hooks, holding the lock; true if there was work.
bool Device::round() {
  const bool busy = host_->run_once();
  if (keys_.active()) run_key_agreements();
  if (!ready_.empty()) {
    if (completions_) completions_(ready_);
    for (uint32_t tag : ready_) is_ready_[tag] = false;
    ready_.clear();
  }
  if (round_) round_();
  return busy;
}

void Device::post_done() {
  if (sleepers_.load() == 0) return;
  (void)round();
  if (std::min(host_->wake_at(), keys_.next_deadline()) < sleeping_until_) host_->wake();
}

namespace {
thread_local bool device_thread = false;
}  // namespace

void Device::start_thread() {
  thread_ = std::thread([this] {
    device_thread = true;
    loop();
  });
}

bool Device::on_progress_thread() {
  return device_thread;
}

void Device::loop() {
  while (!stopping_.load(std::memory_order_relaxed)) {
    if (caller_driving()) {
      std::unique_lock standby(standby_lock_);
      standby_.wait_for(standby, std::chrono::nanoseconds(kCallerHandoff.ns / 2),
                        [this] { return !caller_driving(); });
      continue;
    }
    if (!step(Duration::from_ms(10))) return;
  }
}

void Device::hand_back() {
  if (caller_round_ns_.exchange(INT64_MIN / 2, std::memory_order_relaxed) == INT64_MIN / 2) return;
  std::lock_guard standby(standby_lock_);  // (a thread between its check and its wait hears it)
  standby_.notify_one();
}

bool Device::caller_driving() const {
  return host_->now().ns - caller_round_ns_.load(std::memory_order_relaxed) < kCallerHandoff.ns;
}

void Device::progress(Duration max_wait) {
  if (thread_.joinable()) caller_round_ns_.store(host_->now().ns, std::memory_order_relaxed);
  (void)step(max_wait);
}

// One round holding the lock, then, if it found nothing to do, a sleep without the lock until
// work comes, a deadline passes or `max_wait` elapses. False once the device is stopping.
bool Device::step(Duration max_wait) {
  bool busy = false;
  Instant until;
  {
    std::lock_guard guard(*lock_);
    if (stopping_.load(std::memory_order_relaxed)) return false;
    busy = round();
    until = std::min(host_->wake_at(), host_->now() + max_wait);
    until = std::min(until, keys_.next_deadline());
    if (!busy) {
      sleepers_.fetch_add(1);  // (under the lock: see post_done)
      sleeping_until_ = until;
    }
  }
  if (!busy) {
    host_->sleep_until(until);
    sleepers_.fetch_sub(1);
  }
  return true;
}

}  // namespace mrc::io
