// Responder: the receive path of a queue pair; see responder.h for the algorithm.
#include "core/responder.h"

#include <algorithm>
#include <cstring>

#include "mrc/assert.hpp"

namespace mrc {

Responder::Responder(const QpConfig& config, QpStats& stats, ControlQueue& control)
    : config_(config),
      stats_(stats),
      control_(control),
      window_(static_cast<uint32_t>(config.mpr_dest) * 128, Psn(0)),
      rq_(config.max_recv_wr),
      wimm_(config.max_wimm_dest) {}

void Responder::start(Psn expected_psn, Qpn self_qp, Qpn dest_qp, uint32_t pd,
                      const MemoryRegionTable* mrs) {
  window_.reset(expected_psn);
  self_qp_ = self_qp;
  dest_qp_ = dest_qp;
  pd_ = pd;
  mrs_ = mrs;
  trigger_psn_ = expected_psn - 1;
  MRC_ASSERT(mrs_ != nullptr && !wimm_.empty());
  MRC_ASSERT(window_.cumulative() == expected_psn && window_.out_of_order() == 0);
}

bool Responder::post_recv(uint64_t wr_id) {
  const bool posted = rq_.push(wr_id);
  MRC_ASSERT(rq_.size() <= config_.max_recv_wr);
  return posted;
}

bool Responder::length_ok(const wire::DataPacket& packet) const {
  const wire::Opcode op = packet.header.bth.opcode;
  const size_t n = packet.payload.size();
  const uint32_t dma = packet.header.reth.dma_length;
  if (n > config_.mtu_bytes || n > dma) return false;
  if (op == wire::Opcode::kWriteFirst || op == wire::Opcode::kWriteMiddle)
    return n == config_.mtu_bytes && dma > config_.mtu_bytes;
  if (op == wire::Opcode::kWriteOnly || op == wire::Opcode::kWriteOnlyImm) return n == dma;
  return n > 0 || dma == 0;  // LAST: at least one byte
}

bool Responder::place(const wire::DataPacket& packet) {
  const wire::Reth& reth = packet.header.reth;
  // Called only after length_ok(): at most one MTU, within the message the RETH describes.
  MRC_ASSERT(packet.payload.size() <= config_.mtu_bytes &&
             packet.payload.size() <= reth.dma_length);
  if (packet.payload.empty()) return true;
  auto placed = mrs_->place(reth.rkey, pd_, reth.virtual_address, packet.payload);
  if (!placed.ok()) {
    switch (placed.error()) {
      case MrError::kOutOfBounds:
        drop(DropReason::kOutOfBounds);
        break;
      case MrError::kAccessDenied:
        drop(DropReason::kAccessDenied);
        break;
      default:
        drop(DropReason::kBadKey);
        break;
    }
    return false;
  }
  return true;
}

// Ring slot for a WRITE-with-immediate's RQ message sequence number, or -1 if it lies outside
// the max_wimm_dest messages the responder tracks.
int Responder::wimm_slot(uint16_t rq_msn) const {
  const uint16_t offset = static_cast<uint16_t>(rq_msn - next_rq_msn_);
  if (offset >= wimm_.size()) return -1;
  MRC_ASSERT(wimm_head_ < wimm_.size());
  return static_cast<int>((wimm_head_ + offset) % wimm_.size());
}

void Responder::on_data(Instant now, const wire::DataPacket& packet, const RxMeta& meta) {
  const Psn psn = packet.header.bth.psn;
  const uint16_t ts = packet.header.bth.timestamp_present ? packet.header.tseth.tx_timestamp : 0;
  switch (window_.classify(psn)) {
    case ReceiveWindow::Verdict::kDuplicate:
      drop(DropReason::kDuplicate);
      if (may_answer_unsolicited(now))
        send_sack(now, false, Trigger{psn, meta.ev.value, ts, now}, wire::SkipMode::kNone);
      return;
    case ReceiveWindow::Verdict::kOutOfWindow:
      drop(DropReason::kOutOfWindow);
      if (may_answer_unsolicited(now)) send_nack(wire::NackReason::kPsnOutOfWindow, psn, meta, ts);
      return;
    case ReceiveWindow::Verdict::kNew:
      break;
  }
  if (meta.trimmed) {
    ++stats_.trims_received;
    if (incast_ != nullptr) incast_->note_trim(now, incast_id_, Duration{config_.incast_window_ns});
    send_nack(wire::NackReason::kTrimmed, psn, meta, ts);
    return;
  }
  if (!length_ok(packet)) return drop(DropReason::kBadLength);
  const bool imm = wire::has_immediate(packet.header.bth.opcode);
  const int slot = imm ? wimm_slot(packet.header.meth.rq_msn) : -1;
  if (imm && (slot < 0 || wimm_[slot].valid)) {
    drop(DropReason::kWimmOverflow);
    send_nack(wire::NackReason::kNoResource, psn, meta, ts);
    return;
  }
  if (!place(packet)) {
    if (may_answer_unsolicited(now)) send_access_nak(psn);
    return;
  }
  if (imm) {
    MRC_ASSERT(slot >= 0 && static_cast<size_t>(slot) < wimm_.size() && !wimm_[slot].valid);
    wimm_[slot] = {true, psn, packet.header.immediate, packet.header.reth.dma_length};
    ++wimm_pending_;
    MRC_ASSERT(wimm_pending_ <= wimm_.size());
  }
  window_.mark(psn);
  // Placed once: the same PSN is a duplicate from now on, until the window moves past it.
  MRC_DASSERT(window_.classify(psn) == ReceiveWindow::Verdict::kDuplicate);
  ++stats_.data_packets_received;
  stats_.data_bytes_placed += packet.payload.size();
  ++stats_.planes[meta.plane.value].packets_received;
  stats_.planes[meta.plane.value].bytes_received += packet.payload.size();
  received_bytes_ += static_cast<uint32_t>(packet.payload.size());
  note_received(now, packet, meta);
}

// Coalescing (see responder.h): decide whether this packet's arrival sends a SACK now.
void Responder::note_received(Instant now, const wire::DataPacket& packet, const RxMeta& meta) {
  const Psn psn = packet.header.bth.psn;
  const Psn cum = window_.cumulative();
  if (unreported_ > 0) {
    const Psn low = unreported_low_.since(cum) < 0 ? cum : unreported_low_;
    const Psn high = psn.since(unreported_high_) > 0 ? psn : unreported_high_;
    if (high.since(low) >= 64) send_pending_sack(now, wire::SkipMode::kNone);
  }
  if (unreported_ == 0) {
    unreported_low_ = unreported_high_ = psn;
    sack_deadline_ = now + Duration{config_.ack_delay_ns};
  }
  if (psn.since(unreported_low_) < 0) unreported_low_ = psn;
  if (psn.since(unreported_high_) > 0) unreported_high_ = psn;
  ++unreported_;
  trigger_psn_ = psn;
  trigger_ev_ = meta.ev.value;
  trigger_timestamp_ = packet.header.bth.timestamp_present ? packet.header.tseth.tx_timestamp : 0;
  trigger_at_ = now;
  // The unreported range is ordered and holds this packet; a timer is set for it.
  MRC_ASSERT(unreported_high_.since(unreported_low_) >= 0 && psn.since(unreported_low_) >= 0);
  MRC_ASSERT(sack_deadline_ != Instant::never());
  if (meta.ecn_ce) ++stats_.ecn_marks_received;
  const bool now_please =
      meta.ecn_ce || packet.header.bth.ack_request || unreported_ >= config_.sack_every();
  if (now_please) {
    send_pending_sack(now, meta.ecn_ce ? wire::SkipMode::kSkipOnce : wire::SkipMode::kNone);
  }
}

bool Responder::may_answer_unsolicited(Instant now) {
  if (answer_tokens_ < kAnswerBurst) {
    const int64_t earned = (now - answer_refilled_at_).ns / kAnswerInterval.ns;
    if (earned > 0) {
      answer_tokens_ =
          static_cast<uint32_t>(std::min<int64_t>(kAnswerBurst, answer_tokens_ + earned));
      answer_refilled_at_ = answer_refilled_at_ + Duration{earned * kAnswerInterval.ns};
    }
  }
  if (answer_tokens_ == 0) {
    ++stats_.answers_limited;
    return false;
  }
  if (answer_tokens_-- == kAnswerBurst) answer_refilled_at_ = now;  // the bucket starts to refill
  MRC_ASSERT(answer_tokens_ < kAnswerBurst);
  return true;
}

void Responder::send_sack(Instant now, bool probe_response, const Trigger& trigger,
                          wire::SkipMode skip) {
  const Psn cum = window_.cumulative();
  wire::Sack s;
  s.skip_mode = skip;
  s.probe_response = probe_response;
  s.echoed_entropy = trigger.ev;
  s.cumulative_psn = cum;
  s.mpr = config_.mpr_dest;
  s.cc_flags = wire::sack_hold_code(now - trigger.at);
  s.cc.receiver_cwnd_penalty =
      incast_ != nullptr && incast_->incast(now) ? config_.incast_penalty : 0;
  s.ack_psn_offset =
      static_cast<int16_t>(std::clamp<int32_t>(trigger.psn.since(cum), -32768, 32767));
  Psn base = cum;
  if (!probe_response && unreported_ > 0 && unreported_high_.since(cum) >= 64)
    base = unreported_high_ - 63;
  // The bitmap starts at or above the cumulative point and ends inside the window.
  MRC_DASSERT(base.since(cum) >= 0 && base.since(cum) < 32768);
  s.sack_offset = static_cast<int16_t>(base.since(cum));
  s.bitmap = window_.bitmap(base);
  // The cumulative PSN is the first one missing: a bitmap starting there never reports it.
  MRC_ASSERT(base != cum || (s.bitmap & 1) == 0);
  s.cc.echoed_timestamp = trigger.timestamp;
  s.cc.out_of_order_count =
      static_cast<uint16_t>(std::min<uint32_t>(window_.out_of_order(), 0x7FFF));
  s.cc.received_bytes = received_bytes_ & 0xFFFFFF;
  ControlItem item;
  item.packet.bth.opcode = wire::Opcode::kSack;
  item.packet.bth.dest_qp = dest_qp_;
  item.packet.bth.psn = cum;
  item.packet.body = s;
  push_control(item, stats_.sacks_sent);
  if (!probe_response) {
    unreported_ = 0;
    sack_deadline_ = Instant::never();
  }
}

void Responder::send_nack(wire::NackReason reason, Psn psn, const RxMeta& meta,
                          uint16_t timestamp) {
  wire::Nack n;
  n.reason = reason;
  n.echoed_entropy = meta.ev.value;
  n.nack_psn = psn;
  n.echoed_timestamp = timestamp;
  ControlItem item;
  item.packet.bth.opcode = wire::Opcode::kNack;
  item.packet.bth.dest_qp = dest_qp_;
  item.packet.bth.psn = psn;
  item.packet.body = n;
  push_control(item, stats_.nacks_sent[static_cast<size_t>(reason) % kNackReasonSlots]);
}

// Says why the packet at `psn` will never be placed; the requester only remembers it (it fails
// the QP at its retry limit as for a lost packet, and names the error then: requester.h).
void Responder::send_access_nak(Psn psn) {
  ControlItem item;
  item.packet.bth.opcode = wire::Opcode::kAck;
  item.packet.bth.dest_qp = dest_qp_;
  item.packet.bth.psn = psn;
  item.packet.body = wire::Ack{wire::kAethNakRemoteAccess, 0};  // MSN: mrc's requester reads none
  push_control(item, stats_.access_naks_sent);
}

void Responder::push_control(const ControlItem& item, uint64_t& sent_counter) {
  if (control_.push(item)) {
    ++sent_counter;
  } else {
    ++stats_.control_queue_overflows;  // the next SACK repeats what this one said
  }
}

void Responder::on_probe(Instant now, const wire::Probe& probe, const RxMeta& meta) {
  send_sack(now, true, Trigger{trigger_psn_, meta.ev.value, probe.tx_timestamp, now},
            wire::SkipMode::kNone);
}

void Responder::on_timer(Instant now) {
  if (unreported_ > 0 && now >= sack_deadline_) send_pending_sack(now, wire::SkipMode::kNone);
}

void Responder::deliver(CompletionQueue* cq) {
  bool delivered = false;
  Psn previous;
  while (wimm_pending_ > 0 && !rq_.empty() && cq != nullptr && cq->size() < cq->capacity()) {
    PendingWimm& w = wimm_[wimm_head_];
    if (!w.valid || !w.last_psn.before(window_.cumulative())) return;
    // Completions leave in send order: each message ends after the one delivered before it.
    MRC_ASSERT(!delivered || previous.before(w.last_psn));
    delivered = true;
    previous = w.last_psn;
    Completion c;
    c.wr_id = rq_.front();
    c.qpn = self_qp_;
    c.opcode = WcOpcode::kRecvRdmaWithImm;
    c.has_immediate = true;
    c.immediate = w.immediate;
    c.byte_len = w.length;
    const bool pushed = cq->push(c);
    MRC_ASSERT(pushed);  // the loop checked for room
    rq_.pop();
    w.valid = false;
    --wimm_pending_;
    ++next_rq_msn_;
    wimm_head_ = (wimm_head_ + 1) % wimm_.size();
    ++stats_.wimm_delivered;
  }
}

void Responder::flush(CompletionQueue* cq) {
  for (; !rq_.empty(); rq_.pop()) {
    Completion c;
    c.wr_id = rq_.front();
    c.qpn = self_qp_;
    c.status = WcStatus::kWrFlushError;
    c.opcode = WcOpcode::kRecvRdmaWithImm;
    if (cq != nullptr) cq->push(c);
  }
  MRC_DASSERT(rq_.empty());
  for (PendingWimm& w : wimm_) w.valid = false;
  wimm_pending_ = 0;
  unreported_ = 0;
  sack_deadline_ = Instant::never();
}

}  // namespace mrc
