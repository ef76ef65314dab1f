// A switch output port and the cable it drives, as seen by one packet arriving at it: strict
// priority for control packets and trimmed headers, ECN marking by data-queue occupancy, and
// on overflow either drop-tail or trimming (cut the payload, keep the headers, send them ahead
// in the priority queue so the receiver learns of the loss at once). Every queue has a byte
// limit, so memory stays bounded whatever the traffic.
#include "sim/link.h"

#include <algorithm>
#include <cmath>

#include "mrc/assert.hpp"

namespace mrc::sim {

void LinkStats::add(const LinkStats& o) {
  packets_sent += o.packets_sent;
  bytes_sent += o.bytes_sent;
  dropped_overflow += o.dropped_overflow;
  dropped_fault += o.dropped_fault;
  dropped_down += o.dropped_down;
  dropped_path += o.dropped_path;
  dropped_nic += o.dropped_nic;
  dropped_control += o.dropped_control;
  ecn_marked += o.ecn_marked;
  trimmed += o.trimmed;
  trimmed_forced += o.trimmed_forced;
  duplicated += o.duplicated;
  corrupted += o.corrupted;
  reordered += o.reordered;
  max_queue_bytes = std::max(max_queue_bytes, o.max_queue_bytes);
  pfc_pauses += o.pfc_pauses;
  pfc_paused_ns += o.pfc_paused_ns;
  pfc_max_held_bytes = std::max(pfc_max_held_bytes, o.pfc_max_held_bytes);
  pfc_headroom_overruns += o.pfc_headroom_overruns;
}

void PacketFifo::push(PacketPtr packet) {
  if (count_ == ring_.size()) {
    std::vector<PacketPtr> bigger(std::max<size_t>(8, ring_.size() * 2));
    for (size_t i = 0; i < count_; ++i) {
      bigger[i] = std::move(ring_[(head_ + i) & (ring_.size() - 1)]);
    }
    ring_ = std::move(bigger);
    head_ = 0;
  }
  ring_[(head_ + count_) & (ring_.size() - 1)] = std::move(packet);
  ++count_;
}

PacketPtr PacketFifo::pop() {
  if (count_ == 0) return nullptr;
  PacketPtr packet = std::move(ring_[head_]);
  head_ = (head_ + 1) & (ring_.size() - 1);
  --count_;
  return packet;
}

Link::Link(LinkId id_, PlaneId plane_, const Topology::LinkEnds& ends, const LinkConfig& config,
           bool ecn_enabled, uint64_t seed)
    : id(id_),
      plane(plane_),
      link_class(ends.link_class),
      from(ends.from),
      to(ends.to),
      propagation(config.propagation),
      config_(&config),
      rate_kbps_(std::llround(config.rate_gbps * 1e6)),
      ecn_enabled_(ecn_enabled && config.ecn_threshold_bytes > 0),
      prng(seed) {
  MRC_ASSERT(rate_kbps_ > 0);
  MRC_ASSERT(config.propagation.ns >= 0);
}

bool Link::trim(SimPacket& packet) {
  if (!packet.trimmable || packet.trimmed || packet.trim_to_bytes == 0) return false;
  if (packet.trim_to_bytes < packet.bytes.size()) packet.bytes.resize(packet.trim_to_bytes);
  packet.trimmed = true;
  packet.icrc_deferred = false;  // cut off with the payload
  packet.trimmed_last_hop = link_class == LinkClass::kHostDown;
  ++stats.trimmed;
  return true;
}

bool Link::enqueue(PacketPtr& packet) {
  MRC_DASSERT(packet != nullptr);
  if (packet->trimmed || packet->high_priority) return admit_priority(packet);
  const uint64_t wire = packet->wire_bytes();
  const uint64_t after = data_bytes_ + wire;
  if (config_->overflow == OverflowPolicy::kTrim && !config_->lossless) {
    const uint64_t trim_at =
        config_->trim_threshold_bytes != 0
            ? std::min(config_->trim_threshold_bytes, config_->queue_limit_bytes)
            : config_->queue_limit_bytes;
    if (after > trim_at && trim(*packet)) return admit_priority(packet);
  }
  if (after > config_->queue_limit_bytes && !config_->lossless) return false;
  if (ecn_enabled_ && packet->ecn_capable && ecn_mark_now()) {
    if (!packet->ecn_ce) ++stats.ecn_marked;
    packet->ecn_ce = true;
  }
  data_bytes_ = after;
  data_.push(std::move(packet));
  note_occupancy();
  return true;
}

// Step marking above the threshold, or a linear ramp up to ecn_max_bytes (a random draw only
// on the ramp, so step-marking links never touch their random stream).
bool Link::ecn_mark_now() {
  const uint64_t low = config_->ecn_threshold_bytes;
  if (data_bytes_ <= low) return false;
  const uint64_t high = config_->ecn_max_bytes;
  if (high <= low || data_bytes_ >= high) return true;
  const double ramp = static_cast<double>(data_bytes_ - low) / static_cast<double>(high - low);
  return prng.chance(config_->ecn_max_probability * ramp);
}

void Link::set_rate_fraction(double fraction) {
  MRC_ASSERT(fraction > 0 && fraction <= 1);
  rate_kbps_ = std::max<int64_t>(1, std::llround(config_->rate_gbps * 1e6 * fraction));
}

bool Link::admit_priority(PacketPtr& packet) {
  const uint64_t wire = packet->wire_bytes();
  if (priority_bytes_ + wire > config_->priority_queue_limit_bytes && !config_->lossless)
    return false;
  priority_bytes_ += wire;
  priority_.push(std::move(packet));
  note_occupancy();
  return true;
}

void Link::note_occupancy() {
  stats.max_queue_bytes = std::max(stats.max_queue_bytes, queued_bytes());
}

// A queue holds a packet exactly when it holds bytes (no packet has zero wire bytes), and the
// byte counts share the link's second line with its counters: a hop through an idle port does
// not load the queues.
PacketPtr Link::dequeue() {
  if (priority_bytes_ != 0) {
    PacketPtr packet = priority_.pop();
    priority_bytes_ -= packet->wire_bytes();
    return packet;
  }
  if (data_bytes_ != 0) {
    PacketPtr packet = data_.pop();
    data_bytes_ -= packet->wire_bytes();
    return packet;
  }
  return nullptr;
}

void Link::flush(std::vector<PacketPtr>& out) {
  while (PacketPtr packet = dequeue()) out.push_back(std::move(packet));
  MRC_ASSERT(data_bytes_ == 0 && priority_bytes_ == 0);
}

}  // namespace mrc::sim
