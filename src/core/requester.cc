// Requester: the send path of a queue pair. The algorithm is described in requester.h; this
// file is organised as post -> poll (retransmit, probe, new data) -> acknowledgements (SACK,
// NACK) -> loss detection -> timers -> completion.
#include "core/requester.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "mrc/assert.hpp"

namespace mrc {

namespace {
// The in-flight byte counts equal the cost of the window's pending packets, overall and per
// plane (an O(window) check for debug builds).
template <typename Cost>
bool in_flight_matches(const SendWindow& window, uint64_t total,
                       const std::array<uint64_t, kMaxPlanes>& per_plane, Cost cost) {
  uint64_t sum = 0;
  std::array<uint64_t, kMaxPlanes> sums{};
  for (Psn psn = window.oldest(); psn != window.next(); psn += 1) {
    const SentPacket& p = window.at(psn);
    if (!p.pending()) continue;
    sum += cost(p);
    sums[p.plane.value] += cost(p);
  }
  return sum == total && sums == per_plane;
}
}  // namespace

const char* to_string(PostError e) {
  switch (e) {
    case PostError::kQpState:
      return "queue pair is not in a state that accepts this work request";
    case PostError::kQueueFull:
      return "queue is full";
    case PostError::kTooManySge:
      return "too many scatter/gather elements";
    case PostError::kBadLkey:
      return "lkey does not name a registered region of this PD";
    case PostError::kLocalOutOfBounds:
      return "scatter/gather element outside its memory region";
    case PostError::kAddressOverflow:
      return "remote address + length overflows";
  }
  return "?";
}

Requester::Requester(const QpConfig& config, QpStats& stats, EvSet& evs, CongestionController& cc)
    : config_(config),
      stats_(stats),
      evs_(evs),
      cc_(cc),
      sq_(std::min<uint32_t>(config.max_send_wr, 16)),
      sq_capacity_(config.max_send_wr),
      window_(static_cast<uint32_t>(config.mpr) * 128),
      retransmits_(static_cast<size_t>(config.mpr) * 128),
      tx_order_(static_cast<size_t>(config.mpr) * 128 * 2 + 64),
      ev_last_(evs.size()) {}

void Requester::start(Psn initial_psn, Qpn self_qp, Qpn dest_qp) {
  window_.reset(initial_psn);
  self_qp_ = self_qp;
  dest_qp_ = dest_qp;
  peer_window_psns_ = window_.capacity();
}

Result<Ok, PostError> Requester::post(const SendWr& wr, const MemoryRegionTable& mrs, uint32_t pd) {
  if (sq_tail_ - sq_head_ >= sq_capacity_) return Err{PostError::kQueueFull};
  if (wr.num_sge > config_.max_sge) return Err{PostError::kTooManySge};
  if (sq_tail_ - sq_head_ >= sq_.size()) grow_send_queue();
  WorkRequest& w = wr_at(sq_tail_);
  w.total_length = 0;
  for (uint32_t i = 0; i < wr.num_sge; ++i) {
    const Sge& s = wr.sg_list[i];
    auto ptr = mrs.lookup_local(s.lkey, pd, s.address, s.length);
    if (!ptr.ok()) {
      return Err{ptr.error() == MrError::kOutOfBounds ? PostError::kLocalOutOfBounds
                                                      : PostError::kBadLkey};
    }
    w.sge[i] = Gather{ptr.value(), s.length};
    w.total_length += s.length;
  }
  if (wr.remote_addr + w.total_length < wr.remote_addr) return Err{PostError::kAddressOverflow};
  w.wr_id = wr.wr_id;
  w.remote_addr = wr.remote_addr;
  w.bytes_packetized = 0;
  w.last_psn = Psn{};
  w.num_sge = static_cast<uint8_t>(wr.num_sge);
  w.packetized = false;
  w.rkey = wr.rkey;
  w.immediate = wr.immediate;
  w.with_imm = wr.opcode == SendOpcode::kWriteWithImm;
  w.signaled = wr.signaled;
  ++sq_tail_;
  // Send queue order: completed <= packetizing <= posted, and the ring holds every request.
  MRC_ASSERT(sq_head_ <= sq_next_send_ && sq_next_send_ <= sq_tail_);
  MRC_ASSERT(sq_tail_ - sq_head_ <= sq_.size() && sq_.size() <= sq_capacity_);
  return Ok{};
}

// The send queue starts small (most QPs of a many-QP host hold a few work requests) and doubles
// up to max_send_wr; the outstanding requests [head, tail) move to their slots in the new ring.
void Requester::grow_send_queue() {
  std::vector<WorkRequest> bigger(std::min<uint64_t>(sq_.size() * 2, sq_capacity_));
  MRC_ASSERT(bigger.size() > sq_tail_ - sq_head_);  // post() checked the capacity first
  for (uint64_t seq = sq_head_; seq < sq_tail_; ++seq) bigger[seq % bigger.size()] = wr_at(seq);
  sq_ = std::move(bigger);
}

// ---- transmit ---------------------------------------------------------------------------

// The congestion window is one per queue pair, but each plane may hold only its share of it in
// flight: an equal split among the planes that can send (port up at both ends, a usable EV),
// plus one packet. Without the split, whichever port asks first after an ACK takes the freed
// window, and a plane that is slow, queue-bound or silently dropping hoards it; with it, every
// plane runs at its own pace and a dead plane blocks only its own share until its packets are
// declared lost.
bool Requester::window_allows(PlaneId plane, uint32_t bytes) const {
  if (in_flight_bytes_ == 0) return true;
  const uint64_t window = cc_.window_bytes();
  if (in_flight_bytes_ + bytes > window) return false;
  const uint64_t mine = plane_in_flight_bytes_[plane.value];
  if (mine == 0) return true;
  uint64_t sending = 0;
  for (int p = 0; p < evs_.planes(); ++p) sending += can_send_on(PlaneId(static_cast<uint8_t>(p)));
  const uint64_t share = window / std::max<uint64_t>(sending, 1) + cost_of(config_.mtu_bytes);
  return mine + bytes <= share;
}

// What a new EV burst asks of the window before it starts: room for the whole burst (at most
// what the work request has left), as a sender avoids the silly window: a window opened by a few
// packets per plane would otherwise start a burst that it cuts after those few, and each piece
// leaves as a send of its own. Bursts of one ask for one packet, as before.
uint32_t Requester::burst_bytes(uint64_t remaining) const {
  const uint64_t k = std::max<uint16_t>(config_.ev_burst_packets, 1);
  const uint64_t packets =
      std::min<uint64_t>(k, (remaining + config_.mtu_bytes - 1) / config_.mtu_bytes);
  return static_cast<uint32_t>(std::max<uint64_t>(packets, 1) * cost_of(config_.mtu_bytes));
}

void Requester::add_in_flight(const SentPacket& p) {
  MRC_ASSERT(p.pending() && p.length <= config_.mtu_bytes);
  in_flight_bytes_ += cost_bytes(p);
  plane_in_flight_bytes_[p.plane.value] += cost_bytes(p);
  // A plane's share is part of the whole, and the whole lies within the window's packets.
  MRC_ASSERT(plane_in_flight_bytes_[p.plane.value] <= in_flight_bytes_);
  MRC_ASSERT(in_flight_bytes_ <= uint64_t{window_.outstanding()} * cost_of(config_.mtu_bytes));
}

void Requester::remove_in_flight(const SentPacket& p) {
  // Only what was added leaves: an underflow would open the window without bound.
  MRC_ASSERT(in_flight_bytes_ >= cost_bytes(p));
  MRC_ASSERT(plane_in_flight_bytes_[p.plane.value] >= cost_bytes(p));
  in_flight_bytes_ -= cost_bytes(p);
  plane_in_flight_bytes_[p.plane.value] -= cost_bytes(p);
}

bool Requester::wants_to_send(Instant now) const {
  (void)now;
  if (failed_) return false;
  return !retransmits_.empty() || tail_probe_pending_ || ev_probe_pending_ ||
         sq_next_send_ < sq_tail_;
}

size_t Requester::poll(Instant now, PlaneId plane, std::span<uint8_t> out, TxMeta& meta) {
  if (failed_) return 0;
  if (size_t n = poll_retransmit(now, plane, out, meta)) return n;
  if (size_t n = poll_probe(now, plane, out, meta)) return n;
  return poll_new(now, plane, out, meta);
}

size_t Requester::poll_retransmit(Instant now, PlaneId plane, std::span<uint8_t> out,
                                  TxMeta& meta) {
  while (!retransmits_.empty()) {
    const Psn psn = retransmits_.front();
    if (!window_.contains(psn) || window_.at(psn).state != SentPacket::State::kLost) {
      retransmits_.pop();  // acknowledged meanwhile
      continue;
    }
    SentPacket& p = window_.at(psn);
    if (resend_elsewhere(p, plane)) return 0;  // another plane's poll takes it this round
    if (!window_allows(plane, cost_bytes(p)) || tx_order_.full()) return 0;
    const uint16_t slot = evs_.next(plane, p.ev_slot);
    if (slot == EvSet::kNoSlot) return 0;
    retransmits_.pop();
    ++stats_.retransmits;
    ++stats_.planes[plane.value].retransmits;
    return transmit(now, psn, slot, out, meta);
  }
  return 0;
}

// Whether `plane` can carry a packet: its port up at both ends and one of its EVs usable.
bool Requester::can_send_on(PlaneId plane) const {
  return ((usable_planes_ >> plane.value) & 1) && evs_.has_usable(plane);
}

// A resend with nothing new to send (a tail, a latency-bound exchange) leaves by another plane
// than the copy it replaces, where another can carry it: the plane that lost one copy (cut
// silently, a spine down) is the likeliest to lose the next, and each lost copy of a tail costs
// a tail timer that doubles. With new data queued the resend goes by whichever plane asks
// first, as recovery in a bulk transfer must not wait for another plane's share of the window.
bool Requester::resend_elsewhere(const SentPacket& p, PlaneId plane) const {
  if (p.plane != plane || !nothing_new_to_send()) return false;
  for (int q = 0; q < evs_.planes(); ++q) {
    const PlaneId other(static_cast<uint8_t>(q));
    if (other != plane && can_send_on(other)) return true;
  }
  return false;
}

size_t Requester::poll_new(Instant now, PlaneId plane, std::span<uint8_t> out, TxMeta& meta) {
  if (sq_next_send_ == sq_tail_) return 0;
  const uint32_t limit = std::min(window_.capacity(), peer_window_psns_);
  if (window_.outstanding() >= limit || tx_order_.full()) return 0;
  const WorkRequest& w = wr_at(sq_next_send_);
  const uint64_t remaining = w.total_length - w.bytes_packetized;
  const uint32_t length = static_cast<uint32_t>(std::min<uint64_t>(remaining, config_.mtu_bytes));
  if (!window_allows(plane, in_burst(plane) ? cost_of(length) : burst_bytes(remaining))) return 0;
  const bool starts_imm_message = w.with_imm &&
                                  w.bytes_packetized % config_.max_message_bytes == 0 &&
                                  w.total_length - w.bytes_packetized <= config_.max_message_bytes;
  if (starts_imm_message && wimm_in_flight_ >= config_.max_wimm) return 0;
  const uint16_t slot = evs_.next_in_burst(plane, bursts_[plane.value], config_.ev_burst_packets);
  if (slot == EvSet::kNoSlot) return 0;
  const Psn psn = window_.next();
  SentPacket& p = window_.push();
  describe_next_packet(p);
  if (starts_imm_message) ++wimm_in_flight_;
  MRC_ASSERT(window_.outstanding() <= limit && wimm_in_flight_ <= config_.max_wimm);
  if (window_.outstanding() == 1) on_progress(now);  // the timers start with the first packet
  return transmit(now, psn, slot, out, meta);
}

// Fills `p` with the next segment of the work request being packetized and advances it.
void Requester::describe_next_packet(SentPacket& p) {
  WorkRequest& w = wr_at(sq_next_send_);
  const uint64_t m = config_.max_message_bytes;
  const uint64_t message_start = w.bytes_packetized / m * m;
  const uint64_t message_bytes = message_length(w, w.bytes_packetized);
  const uint64_t in_message = w.bytes_packetized - message_start;
  const uint32_t length =
      static_cast<uint32_t>(std::min<uint64_t>(message_bytes - in_message, config_.mtu_bytes));
  const bool first = in_message == 0;
  const bool last = in_message + length == message_bytes;
  const bool imm = w.with_imm && message_start + message_bytes == w.total_length;
  using wire::Opcode;
  p.opcode = first && last ? (imm ? Opcode::kWriteOnlyImm : Opcode::kWriteOnly)
             : first       ? Opcode::kWriteFirst
             : last        ? (imm ? Opcode::kWriteLastImm : Opcode::kWriteLast)
                           : Opcode::kWriteMiddle;
  if (first) ++next_msn_;
  p.msn = next_msn_;
  p.rq_msn = next_rq_msn_;
  if (imm && last) ++next_rq_msn_;
  p.wr_sequence = static_cast<uint32_t>(sq_next_send_);
  p.offset = w.bytes_packetized;
  p.length = length;
  w.bytes_packetized += length;
  // A packet is at most one MTU of one message, and never runs past its work request.
  MRC_ASSERT(length <= config_.mtu_bytes && w.bytes_packetized <= w.total_length);
  MRC_ASSERT(in_message + length <= message_bytes);
  if (w.bytes_packetized == w.total_length) {
    w.packetized = true;
    w.last_psn = window_.next() - 1;
    ++sq_next_send_;
  }
}

// The length of the wire message (a work request is cut into messages of max_message_bytes)
// that holds byte `offset` of `w`.
uint32_t Requester::message_length(const WorkRequest& w, uint64_t offset) const {
  const uint64_t m = config_.max_message_bytes;
  return static_cast<uint32_t>(std::min(m, w.total_length - offset / m * m));
}

void Requester::gather(const WorkRequest& w, uint64_t offset, uint32_t length, uint8_t* dst) const {
  uint32_t i = 0;
  while (i < w.num_sge && offset >= w.sge[i].length) offset -= w.sge[i++].length;
  while (length > 0) {
    MRC_ASSERT(i < w.num_sge);
    const uint32_t n = static_cast<uint32_t>(std::min<uint64_t>(w.sge[i].length - offset, length));
    if (w.sge[i].ptr != nullptr)
      std::memcpy(dst, w.sge[i].ptr + offset, n);  // null: a virtual region
    dst += n;
    length -= n;
    offset = 0;
    ++i;
  }
}

size_t Requester::transmit(Instant now, Psn psn, uint16_t slot, std::span<uint8_t> out,
                           TxMeta& meta) {
  // Only a new packet or one declared lost goes out: a copy in flight is never sent twice.
  MRC_ASSERT(window_.contains(psn));
  SentPacket& p = window_.at(psn);
  MRC_ASSERT(p.transmissions == 0 ? p.state == SentPacket::State::kInFlight
                                  : p.state == SentPacket::State::kLost);
  const EvSet::Slot& ev = evs_.slot(slot);
  MRC_ASSERT(slot < ev_last_.size() && (ev.state == EvState::kGood || ev.state == EvState::kSkip));
  LastOnEv& last = ev_last_[slot];
  p.prev_psn_on_ev = last.psn;
  p.prev_tx_on_ev = last.tx_sequence;
  p.tx_sequence = next_tx_sequence_++;
  last = {psn, p.tx_sequence};
  if (p.transmissions == 0) {
    p.first_ev = ev.ev;
    p.first_timestamp = wire::timestamp_of(now);
  }
  p.ev = ev.ev;
  p.ev_slot = slot;
  p.plane = ev.plane;
  p.sent_at = now;
  p.state = SentPacket::State::kInFlight;
  wire::DataHeader h;
  h.bth.opcode = p.opcode;
  h.bth.dest_qp = dest_qp_;
  h.bth.psn = psn;
  h.bth.retransmit = p.transmissions > 0;
  // Saturating: a count that wrapped to 0 would take a retransmission for a first transmission
  // (its first EV and timestamp overwritten, RACK's clock moved by it).
  if (p.transmissions < UINT8_MAX) ++p.transmissions;
  h.bth.timestamp_present = true;
  h.bth.ack_request = wire::is_last_of_message(p.opcode);
  h.bth.solicited = wire::has_immediate(p.opcode);
  h.meth = {p.rq_msn, p.msn};
  h.tseth.tx_timestamp = wire::timestamp_of(now);
  const WorkRequest& w = wr_of(p);
  h.reth = {w.remote_addr + p.offset, w.rkey, message_length(w, p.offset)};
  h.immediate = w.immediate;
  const size_t header = wire::write_data_header(h, out);
  MRC_ASSERT(out.size() >= header + p.length + wire::kIcrcBytes);
  gather(w, p.offset, p.length, out.data() + header);
  const size_t length = wire::seal_deferred(out, header + p.length);  // Endpoint seals
  const bool recorded = tx_order_.push({psn, p.tx_sequence});
  MRC_ASSERT(recorded);  // callers check tx_order_.full() first
  add_in_flight(p);
  meta = TxMeta{ev.plane, ev.ev, 0, true, static_cast<uint32_t>(header)};
  evs_.count_sent(slot, p.length);
  ++stats_.data_packets_sent;
  stats_.data_bytes_sent += p.length;
  ++stats_.planes[ev.plane.value].packets_sent;
  stats_.planes[ev.plane.value].bytes_sent += p.length;
  return length;
}

size_t Requester::poll_probe(Instant now, PlaneId plane, std::span<uint8_t> out, TxMeta& meta) {
  const uint16_t due = evs_.probe_due(plane, now);
  if (due != EvSet::kNoSlot) {
    evs_.on_probe_sent(due, now, Duration{stats_.rtt.smoothed_ns});
    ++stats_.ev_probes;
    ev_probe_pending_ = evs_.next_probe_at() <= now;
    return write_probe(now, due, out, meta);
  }
  // No probe due on this plane, and none on any other: the EV that was due has recovered (or
  // was denied) meanwhile. Drop the latch, so next_deadline() includes the next probe time
  // again; kept, it hid that time from a driver that sleeps until the deadline.
  if (ev_probe_pending_ && evs_.next_probe_at() > now) ev_probe_pending_ = false;
  if (!tail_probe_pending_) return 0;
  const uint16_t slot = evs_.next(plane);
  if (slot == EvSet::kNoSlot) return 0;
  tail_probe_pending_ = false;
  tail_probe_slot_ = slot;
  tail_probe_ev_ = evs_.slot(slot).ev;
  tail_probe_sent_at_ = now;
  ++stats_.tail_probes;
  return write_probe(now, slot, out, meta);
}

size_t Requester::write_probe(Instant now, uint16_t slot, std::span<uint8_t> out, TxMeta& meta) {
  wire::ControlPacket c;
  c.bth.opcode = wire::Opcode::kProbe;
  c.bth.dest_qp = dest_qp_;
  c.bth.psn = window_.next();
  wire::Probe probe;
  probe.probe_id = next_probe_id_++;
  probe.tx_timestamp = wire::timestamp_of(now);
  c.body = probe;
  const EvSet::Slot& ev = evs_.slot(slot);
  meta = TxMeta{ev.plane, ev.ev, 0, false, 0};
  return wire::encode(wire::Packet{c}, out, /*defer_icrc=*/true);
}

// ---- acknowledgements -----------------------------------------------------------------

bool Requester::ack_one(Psn psn, uint64_t& acked_bytes, Instant now, bool& late_original) {
  MRC_ASSERT(window_.contains(psn));  // callers bound the wire's PSNs to the window
  SentPacket& p = window_.at(psn);
  if (p.state == SentPacket::State::kAcked) return false;
  if (p.state == SentPacket::State::kLost) {
    on_false_loss(p);
  } else {
    remove_in_flight(p);
    if (acked_too_soon(p, now)) {
      late_original = true;
      count_spurious(p);
    }
  }
  if (++acks_since_false_loss_ >= 1024 && reorder_scale_ > kMinReorderScale) {
    --reorder_scale_;  // forget old reordering slowly
    acks_since_false_loss_ = 0;
  }
  p.state = SentPacket::State::kAcked;
  acked_bytes += p.length;
  if (p.transmissions == 1 && p.sent_at > newest_acked_sent_at_) newest_acked_sent_at_ = p.sent_at;
  return true;
}

void Requester::on_sack(Instant now, const wire::Sack& sack) {
  ++stats_.sacks_received;
  if (window_.next().since(sack.cumulative_psn) < 0 ||
      sack.cumulative_psn.since(window_.oldest()) < -static_cast<int32_t>(window_.capacity())) {
    ++stats_.drops[static_cast<size_t>(DropReason::kBadAck)];  // PSNs never sent
    return;
  }
  // SACKs take different reverse paths and may arrive out of order: an older one still carries
  // a useful bitmap and ECN echo, so only its cumulative point is ignored.
  const bool stale = sack.cumulative_psn.since(window_.oldest()) < 0;
  if (stale) ++stats_.stale_sacks;
  const Psn cum = stale ? window_.oldest() : sack.cumulative_psn;
  if (sack.mpr > 0) peer_window_psns_ = static_cast<uint32_t>(sack.mpr) * 128;
  uint64_t acked = 0;
  bool late_original = false;
  for (Psn psn = window_.oldest(); psn != cum; psn += 1) ack_one(psn, acked, now, late_original);
  const Psn base =
      sack.cumulative_psn + static_cast<uint32_t>(static_cast<int32_t>(sack.sack_offset));
  for (uint64_t bits = sack.bitmap; bits != 0; bits &= bits - 1) {  // the set bits, in order
    const Psn psn = base + static_cast<uint32_t>(std::countr_zero(bits));
    if (psn.since(cum) >= 0 && window_.contains(psn)) ack_one(psn, acked, now, late_original);
  }
  if (late_original) widen_reorder_window();
  const uint16_t echoed = evs_.slot_of(Ev(sack.echoed_entropy));
  if (echoed != EvSet::kNoSlot && sack.skip_mode == wire::SkipMode::kSkipOnce) evs_.on_ecn(echoed);
  if (echoed != EvSet::kNoSlot && sack.skip_mode == wire::SkipMode::kAlwaysSkip)
    evs_.on_loss(echoed, now);
  if (echoed != EvSet::kNoSlot && sack.skip_mode == wire::SkipMode::kNone && !sack.probe_response)
    evs_.on_clean_ack(echoed, now);
  if (sack.probe_response) {
    if (echoed != EvSet::kNoSlot && evs_.slot(echoed).state == EvState::kAssumedBad)
      evs_.on_probe_answered(echoed);
    else if (Ev(sack.echoed_entropy) == tail_probe_ev_)
      tail_probe_answered(now, sack);
  }
  const Psn trigger =
      sack.cumulative_psn + static_cast<uint32_t>(static_cast<int32_t>(sack.ack_psn_offset));
  Duration rtt{-1};
  if (!sack.probe_response && window_.contains(trigger)) {
    const SentPacket& t = window_.at(trigger);
    if (t.ev.value == sack.echoed_entropy &&
        wire::timestamp_of(t.sent_at) == sack.cc.echoed_timestamp) {
      rtt = now - t.sent_at;
      stats_.rtt.add(rtt.ns);
      if (echoed != EvSet::kNoSlot) evs_.on_rtt(echoed, rtt);
      walk_same_ev(now, trigger, base, sack);
    } else if (t.transmissions > 1 && t.first_ev.value == sack.echoed_entropy &&
               t.first_timestamp == sack.cc.echoed_timestamp && !acked_too_soon(t, now)) {
      on_spurious_retransmit(t);
    }
  }
  rack_scan(now);
  if (acked > 0) {
    on_progress(now);
    evs_.on_delivered(acked, now, Duration{stats_.rtt.smoothed_ns});
  }
  // Congestion control sees the network's delay: the responder's hold comes off the sample
  // (the loss timers keep the raw round trip: they wait for SACKs, held ones included).
  cc_.on_ack(AckSample{now, acked, wire::rtt_less_hold(rtt, sack.cc_flags),
                       sack.skip_mode != wire::SkipMode::kNone, in_flight_bytes_,
                       sack.cc.receiver_cwnd_penalty});
  window_.advance_oldest_to(cum);
  // Nothing outstanding, nothing in flight; debug builds recount the whole window.
  MRC_ASSERT(window_.outstanding() > 0 || in_flight_bytes_ == 0);
  MRC_DASSERT(in_flight_matches(window_, in_flight_bytes_, plane_in_flight_bytes_,
                                [this](const SentPacket& p) { return cost_bytes(p); }));
  complete_acknowledged();
}

// Every earlier transmission on the trigger's EV that is still unacknowledged was lost (paths
// are FIFO); the walk follows the per-EV chain back and stops at the first packet already
// settled, since everything before it was settled when it was.
void Requester::walk_same_ev(Instant now, Psn trigger, Psn bitmap_base, const wire::Sack& sack) {
  const SentPacket* p = &window_.at(trigger);
  for (uint32_t steps = 0; p->has_prev_on_ev() && steps < window_.capacity(); ++steps) {
    const Psn psn = p->prev_psn_on_ev;
    const uint64_t tx = p->prev_tx_on_ev;
    if (!window_.contains(psn)) return;
    SentPacket& q = window_.at(psn);
    if (q.tx_sequence != tx) return;  // retransmitted since, on another EV
    if (q.state == SentPacket::State::kAcked || q.state == SentPacket::State::kLost) return;
    const int32_t bit = psn.since(bitmap_base);
    const bool covered = bit >= 0 && bit < 64 && ((sack.bitmap >> bit) & 1) == 0;
    if (covered || psn.since(sack.cumulative_psn) < 0) {
      if (covered) {
        ++stats_.losses_same_ev;
        declare_lost(psn, stats_.losses_fast, Blame::kEv, now);
      }
    } else if (q.state == SentPacket::State::kInFlight) {
      const Duration grace{std::max<int64_t>(reorder_window().ns / 4, 1000)};
      if (suspects_.size() < kMaxSuspects) {
        q.state = SentPacket::State::kSuspect;
        suspects_.push_back({psn, tx, now + grace});
      }
    }
    p = &q;
  }
}

// Starts at srtt (spraying over paths whose queues differ makes srtt/2 fire on reordering) and
// widens (up to 8 srtt) each time a packet declared lost is acknowledged before its
// retransmission left or a retransmission proves spurious, as RACK adapts its reordering
// window; it narrows again slowly.
Duration Requester::reorder_window() const {
  const int64_t srtt = stats_.rtt.smoothed_ns;
  return Duration{std::max<int64_t>(srtt * reorder_scale_ / 4, 3000)};
}

// Reordering was mistaken for loss: double the window (up to kMaxReorderScale) and restart the
// count of acknowledgements after which it narrows again.
void Requester::widen_reorder_window() {
  acks_since_false_loss_ = 0;
  reorder_scale_ = std::min<uint32_t>(reorder_scale_ * 2, kMaxReorderScale);
}

// The packet was acknowledged although it had been declared lost and not yet sent again: the
// declaration was wrong (reordering, not loss). Widen the reordering window and give the EV
// back, since its path did not fail.
void Requester::on_false_loss(const SentPacket& p) {
  ++stats_.false_losses;
  widen_reorder_window();
  if (evs_.slot_of(p.ev) == p.ev_slot) evs_.revive(p.ev_slot);
}

// Eifel-style: after a retransmission the SACK echoes the first transmission, so that copy
// arrived and the retransmission was not needed (the loss was reordering, or its path only
// slow). As for a false loss: widen the reordering window and give the first EV back.
void Requester::on_spurious_retransmit(const SentPacket& p) {
  widen_reorder_window();
  count_spurious(p);
}

// A retransmission proved unneeded: counted, and the first EV, blamed for the loss, revived.
void Requester::count_spurious(const SentPacket& p) {
  ++stats_.spurious_retransmits;
  const uint16_t slot = evs_.slot_of(p.first_ev);
  if (slot != EvSet::kNoSlot) evs_.revive(slot);
}

// A resent packet acknowledged sooner after its last transmission than any round trip this
// QP has measured: the acknowledgement is for an earlier copy, which was late, not lost (Linux's
// RACK ignores such samples likewise). A SACK names only its trigger's copy; this catches the
// rest, such as the tail a slow receiver had not acknowledged when the tail timer resent it
// (each of those losses struck an EV, and two strikes retire one).
bool Requester::acked_too_soon(const SentPacket& p, Instant now) const {
  return p.transmissions > 1 && stats_.rtt.samples > 0 && (now - p.sent_at).ns < stats_.rtt.min_ns;
}

// RACK-style: walk transmissions in send order; one sent a reordering window before the newest
// acknowledged first transmission and still unacknowledged is lost. One clock for every plane:
// judging each plane by its own clock (tried) spared queued packets on a plane with deeper
// queues but delayed the recovery of real losses (64-host all-to-all, 1 % drop: the slowest
// flow took ~30 % longer); the adaptive window and spurious-retransmission detection handle
// the spread instead.
void Requester::rack_scan(Instant now) {
  const Duration reorder = reorder_window();
  while (!tx_order_.empty()) {
    const TxRecord r = tx_order_.front();
    const bool live = window_.contains(r.psn) && window_.at(r.psn).tx_sequence == r.tx_sequence &&
                      window_.at(r.psn).pending();
    if (live && !(window_.at(r.psn).sent_at + reorder < newest_acked_sent_at_)) return;
    if (live) {
      ++stats_.losses_rack;
      declare_lost(r.psn, stats_.losses_fast, Blame::kEv, now);
    }
    tx_order_.pop();
  }
}

// The probe's answer shows what the receiver lacks. A packet it lacks is lost if it left a
// reordering window before the probe (control packets overtake queued data: "before the probe"
// alone made queued packets look lost).
void Requester::tail_probe_answered(Instant now, const wire::Sack& sack) {
  const Instant sent_before = tail_probe_sent_at_ + Duration{-reorder_window().ns};
  const Psn base =
      sack.cumulative_psn + static_cast<uint32_t>(static_cast<int32_t>(sack.sack_offset));
  for (uint32_t i = 0; i < 64; ++i) {
    const Psn psn = base + i;
    if ((sack.bitmap >> i) & 1 || !window_.contains(psn)) continue;
    const SentPacket& p = window_.at(psn);
    if (p.pending() && p.sent_at < sent_before)
      declare_lost(psn, stats_.losses_probe, Blame::kEv, now);
  }
  tail_probe_ev_ = Ev(0);
}

void Requester::declare_lost(Psn psn, uint64_t& counter, Blame blame, Instant now) {
  MRC_ASSERT(window_.contains(psn));
  SentPacket& p = window_.at(psn);
  MRC_ASSERT(p.state != SentPacket::State::kAcked && p.state != SentPacket::State::kLost);
  remove_in_flight(p);
  p.state = SentPacket::State::kLost;
  ++counter;
  const bool queued = retransmits_.push(psn);
  MRC_ASSERT(queued);  // the queue holds a whole window
  if (blame != Blame::kNone && evs_.slot_of(p.ev) == p.ev_slot) {
    evs_.on_loss(p.ev_slot, now, blame == Blame::kTimeout);
    cc_.on_loss(now, p.length);
  }
}

void Requester::on_nack(Instant now, const wire::Nack& nack) {
  const auto reason = static_cast<size_t>(nack.reason) % kNackReasonSlots;
  ++stats_.nacks_received[reason];
  const Psn psn = nack.nack_psn;
  if (!window_.contains(psn)) {
    ++stats_.drops[static_cast<size_t>(DropReason::kBadAck)];
    return;
  }
  SentPacket& p = window_.at(psn);
  if (!p.pending() || p.ev.value != nack.echoed_entropy) return;  // stale: already handled
  switch (nack.reason) {
    case wire::NackReason::kTrimmed:
    case wire::NackReason::kTrimmedLastHop:
      if (evs_.slot_of(p.ev) == p.ev_slot) evs_.on_trim(p.ev_slot);
      cc_.on_trim(now, p.length);
      ++stats_.losses_nack;
      declare_lost(psn, stats_.losses_fast, Blame::kNone, now);
      break;
    case wire::NackReason::kPsnOutOfWindow:
      peer_window_psns_ = std::max<uint32_t>(1, static_cast<uint32_t>(psn.since(window_.oldest())));
      ++stats_.losses_nack;
      declare_lost(psn, stats_.losses_fast, Blame::kNone, now);
      break;
    default:  // no resources at the responder: try again after a while
      if (p.state == SentPacket::State::kInFlight && suspects_.size() < kMaxSuspects) {
        p.state = SentPacket::State::kSuspect;
        const Duration wait{std::max<int64_t>(stats_.rtt.smoothed_ns, 10'000)};
        suspects_.push_back({psn, p.tx_sequence, now + wait});
      }
      break;
  }
}

// Remembered, not acted on (see requester.h): the packet stays in flight and the timers go on.
void Requester::on_access_nak(Psn psn) {
  if (!window_.contains(psn) || window_.at(psn).state == SentPacket::State::kAcked) return;
  ++stats_.access_naks_received;
  access_nak_ = true;
  access_nak_wr_ = window_.at(psn).wr_sequence;
}

WcStatus Requester::failure_status() const {
  const bool oldest = sq_head_ < sq_tail_ && access_nak_wr_ == static_cast<uint32_t>(sq_head_);
  return access_nak_ && oldest ? WcStatus::kRemoteAccessError : WcStatus::kRetryExceeded;
}

void Requester::on_plane_down(PlaneId plane) {
  declare_lost_where([plane](const SentPacket& p) { return p.plane == plane; }, stats_.losses_port,
                     Blame::kNone, Instant{0});
  // Every packet of the plane that was in flight is now lost: the plane holds none of the window.
  MRC_ASSERT(plane_in_flight_bytes_[plane.value] == 0);
}

// ---- timers ------------------------------------------------------------------------------

void Requester::on_progress(Instant now) {
  last_progress_ = now;
  retries_ = 0;
  tail_probes_since_progress_ = 0;
}

// The OCP ACK timeout, but never below srtt + 4 rttvar: a software endpoint shares its CPU and
// can be descheduled for milliseconds, which a NIC never is; a timeout shorter than the RTT the
// QP actually sees only produces false losses.
Duration Requester::rto() const {
  const RttStats& r = stats_.rtt;
  const Duration base{std::max<int64_t>(config_.ack_timeout().ns,
                                        r.samples ? r.smoothed_ns + 4 * r.variation_ns : 0)};
  if (retries_ <= config_.retry_linear) return base;
  const uint32_t shift = std::min<uint32_t>(retries_ - config_.retry_linear, 20);
  return Duration{std::min<int64_t>(base.ns << shift, int64_t{1024} << 24)};
}

// max(2 srtt, srtt + 4 rttvar, 5 us), or a quarter of the ACK timeout before any RTT sample;
// with nothing new to send, max(1.5 srtt, 5 us): the tail is resent then (resend_tail), and
// every microsecond of it is the collective's completion time.
Duration Requester::base_probe_timeout() const {
  const RttStats& r = stats_.rtt;
  if (r.samples == 0) return Duration{config_.ack_timeout().ns / 4};
  if (nothing_new_to_send()) return Duration{std::max<int64_t>(r.smoothed_ns * 3 / 2, 5000)};
  return Duration{std::max({2 * r.smoothed_ns, r.smoothed_ns + 4 * r.variation_ns, int64_t{5000}})};
}

// Backed off per unanswered probe: without it, a path that never answered (no RTT sample yet)
// kept the deadline in the past and probed in a busy loop.
Duration Requester::probe_timeout() const {
  return Duration{base_probe_timeout().ns << std::min<uint32_t>(tail_probes_since_progress_, 16)};
}

Instant Requester::next_deadline() const {
  if (failed_) return Instant::never();
  // A due probe waits for a transmit opportunity (wants_to_send), not for a timer.
  Instant deadline = ev_probe_pending_ ? Instant::never() : evs_.next_probe_at();
  for (const Suspect& s : suspects_) deadline = std::min(deadline, s.deadline);
  if (window_.outstanding() == 0) return deadline;
  const Instant rto_at = last_progress_ + rto();
  deadline = std::min(deadline, rto_at);
  const Instant probe_at = last_progress_ + probe_timeout();
  if (!tail_probe_pending_ && probe_at < rto_at) deadline = std::min(deadline, probe_at);
  return deadline;
}

void Requester::check_suspects(Instant now) {
  size_t kept = 0;
  for (const Suspect& s : suspects_) {
    const bool live = window_.contains(s.psn) && window_.at(s.psn).tx_sequence == s.tx_sequence &&
                      window_.at(s.psn).state == SentPacket::State::kSuspect;
    if (!live) continue;
    if (s.deadline <= now) {
      ++stats_.losses_same_ev_late;
      declare_lost(s.psn, stats_.losses_fast, Blame::kEv, now);
    } else {
      suspects_[kept++] = s;
    }
  }
  suspects_.resize(kept);
}

void Requester::on_timer(Instant now) {
  if (failed_) return;
  if (evs_.next_probe_at() <= now) ev_probe_pending_ = true;
  check_suspects(now);
  if (window_.outstanding() == 0) return;
  if (now >= last_progress_ + rto()) {
    ++stats_.timeouts;
    ++retries_;
    const uint32_t limit = config_.retry_linear + config_.retry_exp;
    if (config_.retry_exp != kRetryInfinite && retries_ > limit) {
      failed_ = true;
      return;
    }
    evs_.on_timeout(now, Duration{stats_.rtt.smoothed_ns});
    declare_lost_where([](const SentPacket&) { return true; }, stats_.losses_timeout,
                       Blame::kTimeout, now);
    MRC_ASSERT(in_flight_bytes_ == 0);  // a timeout declares every pending packet lost
    order_retransmits();
    cc_.on_timeout(now);
    last_progress_ = now;
    tail_probes_since_progress_ = 0;
    return;
  }
  if (!tail_probe_pending_ && now >= last_progress_ + probe_timeout()) {
    ++tail_probes_since_progress_;
    if (nothing_new_to_send() && resend_tail(now)) return;
    tail_probe_pending_ = true;
  }
}

// After a timeout the window is down to a packet or two a round trip: the oldest loss goes
// first, so that each of them can move the cumulative point. (The queue's order was that of
// the loss declarations, which can put many packets the receiver already holds ahead of the
// one it waits for: a SACK of a duplicate far above the cumulative point acknowledges nothing
// new, so each of those cost a whole timeout.)
void Requester::order_retransmits() {
  retransmits_.clear();
  for (Psn psn = window_.oldest(); psn != window_.next(); psn += 1) {
    if (window_.at(psn).state != SentPacket::State::kLost) continue;
    const bool queued = retransmits_.push(psn);
    MRC_ASSERT(queued);  // the queue holds a whole window
  }
}

// The tail timer fired with nothing new to send: no later packet can be acknowledged, so RACK
// will never see these losses, and a probe would cost a round trip before the retransmission
// it leads to. The oldest packets still unacknowledged a smoothed RTT after they left, at most
// kMaxTailResend of them, are resent now (their SACKs, like a probe's, report what else is
// missing; a copy that was only late is recognised as spurious). The bound is for a receiver
// that is slow rather than lossy, as a software endpoint descheduled for milliseconds is:
// resending a whole window at every tail timer then only piled duplicates on it and declared
// hundreds of losses against healthy EVs. Returns whether anything was resent.
bool Requester::resend_tail(Instant now) {
  const Instant sent_before = now + Duration{-stats_.rtt.smoothed_ns};
  size_t budget = kMaxTailResend;
  return declare_lost_where(
             [sent_before, &budget](const SentPacket& p) {
               if (budget == 0 || p.sent_at >= sent_before) return false;
               --budget;
               return true;
             },
             stats_.losses_tail, Blame::kEv, now) > 0;
}

// ---- completion ----------------------------------------------------------------------------

void Requester::complete_acknowledged() {
  MRC_ASSERT(sq_head_ <= sq_next_send_ && sq_next_send_ <= sq_tail_);
  while (sq_head_ < sq_next_send_) {
    WorkRequest& w = wr_at(sq_head_);
    MRC_ASSERT(w.packetized);
    if (!w.last_psn.before(window_.oldest())) return;
    // Its packets have all left the window: the next request's end lies after this one's.
    // (Every request, even an empty one, has a packet of its own.)
    MRC_ASSERT(sq_head_ + 1 == sq_next_send_ || w.last_psn.before(wr_at(sq_head_ + 1).last_psn));
    // Work requests complete in the order they were posted, each once.
    MRC_ASSERT(!w.with_imm || wimm_in_flight_ > 0);
    if (w.with_imm) --wimm_in_flight_;
    ++stats_.work_requests_completed;
    if (w.signaled && cq_ != nullptr) {
      Completion c;
      c.wr_id = w.wr_id;
      c.qpn = self_qp_;
      c.opcode = WcOpcode::kRdmaWrite;
      c.byte_len = static_cast<uint32_t>(std::min<uint64_t>(w.total_length, UINT32_MAX));
      cq_->push(c);
    }
    if (access_nak_wr_ == static_cast<uint32_t>(sq_head_))
      access_nak_ = false;  // delivered after all
    ++sq_head_;
  }
  MRC_DASSERT(sq_head_ <= sq_next_send_);
}

void Requester::flush(WcStatus first, CompletionQueue* cq) {
  for (; sq_head_ < sq_tail_; ++sq_head_) {
    const WorkRequest& w = wr_at(sq_head_);
    Completion c;
    c.wr_id = w.wr_id;
    c.qpn = self_qp_;
    c.status = first;
    c.opcode = WcOpcode::kRdmaWrite;
    if (cq != nullptr) cq->push(c);
    first = WcStatus::kWrFlushError;
  }
  sq_next_send_ = sq_tail_ = sq_head_;
  access_nak_ = false;
  retransmits_.clear();
  tx_order_.clear();
  suspects_.clear();
  in_flight_bytes_ = 0;
  plane_in_flight_bytes_.fill(0);
  wimm_in_flight_ = 0;
  window_.reset(window_.next());
  MRC_ASSERT(outstanding_work_requests() == 0 && window_.outstanding() == 0);
}

}  // namespace mrc
