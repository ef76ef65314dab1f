// RoCEv2 RC with go-back-N and DCQCN (see roce.h). PSNs are 64-bit here (no 24-bit wrap to
// model); the QP's path is fixed at creation: its port (plane) from the QP id and host, its
// "UDP source port" (the EV) from a hash of both, in the RoCEv2 range 0xC000-0xFFFF.
#include "sim/roce.h"

#include <algorithm>

#include "util/prng.h"

namespace mrc::sim {

// ---------------------------------------------------------------------------- Dcqcn

Dcqcn::Dcqcn(const DcqcnConfig& config, double line_rate_gbps)
    : config_(config), line_(line_rate_gbps), rc_(line_rate_gbps), rt_(line_rate_gbps) {}

void Dcqcn::on_cnp(Instant now) {
  if (!config_.enabled) return;
  rt_ = rc_;
  rc_ = std::max(config_.min_rate_gbps, rc_ * (1 - alpha_ / 2));
  alpha_ = (1 - config_.g) * alpha_ + config_.g;
  timer_count_ = byte_count_ = 0;
  bytes_ = 0;
  alpha_at_ = now + config_.alpha_period;
  increase_at_ = now + config_.increase_period;
}

void Dcqcn::on_sent(uint64_t bytes) {
  if (!limited()) return;
  bytes_ += bytes;
  if (bytes_ >= config_.byte_counter) {
    bytes_ = 0;
    ++byte_count_;
    increase();
  }
}

void Dcqcn::on_timer(Instant now) {
  if (alpha_at_ <= now) {
    alpha_ *= 1 - config_.g;
    alpha_at_ = limited() ? now + config_.alpha_period : Instant::never();
  }
  if (increase_at_ <= now) {
    ++timer_count_;
    increase();
    increase_at_ = limited() ? now + config_.increase_period : Instant::never();
  }
  if (!limited()) alpha_at_ = increase_at_ = Instant::never();  // back at line rate: idle
}

Instant Dcqcn::next_deadline() const {
  return std::min(alpha_at_, increase_at_);
}

void Dcqcn::increase() {
  const uint32_t f = config_.fast_recovery_steps;
  if (std::max(timer_count_, byte_count_) < f) {
    // fast recovery: back towards the rate before the cut
  } else if (std::min(timer_count_, byte_count_) > f) {
    rt_ += config_.hyper_gbps * (std::min(timer_count_, byte_count_) - f);
  } else {
    rt_ += config_.additive_gbps;
  }
  rt_ = std::min(rt_, line_);
  rc_ = std::min(line_, (rt_ + rc_) / 2);
  if (line_ - rc_ < 1e-6) rc_ = line_;
}

// ---------------------------------------------------------------------------- RoceQp

RoceQp::RoceQp(BaselineHost& host, uint32_t id, const QpConfig& qp)
    : BaselineConn(host, id),
      mtu_(qp.mtu_bytes),
      ack_every_(qp.sack_every()),
      rto_(qp.ack_timeout()),
      retry_limit_(qp.retry_linear),
      plane_(static_cast<uint8_t>((host.id() + id - 1) % host.planes())),
      ev_(static_cast<uint32_t>(0xC000 | (mix64((uint64_t{host.id()} << 32) | id) & 0x3FFF))),
      dcqcn_(host.config().dcqcn, host.port_rate_gbps()) {}

bool RoceQp::post(const BaseWr& wr) {
  if (failed_) return false;
  next_psn_ = queue_message(wr, next_psn_, mtu_);
  host_.touch(id_);
  return true;
}

PacketPtr RoceQp::poll_transmit(Instant now, PlaneId plane) {
  if (failed_ || plane != plane_ || snd_nxt_ >= next_psn_ || now < next_send_at_) return nullptr;
  if (snd_nxt_ - snd_una_ >= kPsnWindow) return nullptr;
  const Message* m = message_of(snd_nxt_);
  if (m == nullptr) return nullptr;
  const uint64_t k = snd_nxt_ - m->first;
  BaseHeader h;
  h.seq = snd_nxt_;
  h.offset = m->wr.remote_offset + k * mtu_;
  h.length = static_cast<uint32_t>(
      std::min<uint64_t>(mtu_, m->wr.length - std::min(m->wr.length, k * mtu_)));
  if (k + 1 == m->packets) {
    h.flags |= kFlagLast;
    if (m->wr.imm) h.flags |= kFlagImm, h.immediate = m->wr.immediate;
  }
  PacketPtr packet = make_data(now, plane_, ev_, h, m->wr.source + k * mtu_);
  if (snd_nxt_ < max_sent_) {
    ++stats_.retransmits;
    ++stats_.plane_retransmits[plane_.value];
  }
  ++snd_nxt_;
  max_sent_ = std::max(max_sent_, snd_nxt_);
  if (rto_at_.is_never()) rto_at_ = now + rto_;
  dcqcn_.on_sent(packet->wire_bytes());
  if (dcqcn_.limited()) {  // pace at the current rate; at line rate the port is the limit
    const double ns = static_cast<double>(packet->wire_bytes()) * 8 / dcqcn_.rate_gbps();
    next_send_at_ = now + Duration{static_cast<int64_t>(ns)};
  }
  return packet;
}

// Exactly the conditions under which poll_transmit returns a packet, but pacing in the future.
Instant RoceQp::send_ready_at(Instant now, PlaneId plane) const {
  (void)now;
  if (failed_ || plane != plane_ || snd_nxt_ >= next_psn_ || snd_nxt_ - snd_una_ >= kPsnWindow)
    return Instant::never();
  if (message_of(snd_nxt_) == nullptr) return Instant::never();
  return next_send_at_;
}

void RoceQp::on_packet(Instant now, const BaseHeader& h, std::span<const uint8_t> payload,
                       const SimPacket& packet) {
  switch (static_cast<BaseKind>(h.kind)) {
    case BaseKind::kData:
      receive_data(now, h, payload, packet);
      break;
    case BaseKind::kAck:
      on_ack(now, h.ack);
      break;
    case BaseKind::kNak:
      ++stats_.naks_received;
      on_ack(now, h.ack);
      if (!failed_ && h.ack >= snd_una_ && h.ack < snd_nxt_) snd_nxt_ = h.ack;  // go back N
      break;
    case BaseKind::kCnp:
      ++stats_.cnps_received;
      ++stats_.rate_cuts;
      dcqcn_.on_cnp(now);
      break;
  }
}

// The responder: in-order PSNs only. One NAK per gap; duplicates are ACKed again (coalesced).
void RoceQp::receive_data(Instant now, const BaseHeader& h, std::span<const uint8_t> payload,
                          const SimPacket& packet) {
  if (packet.trimmed) {  // no trimming support: the cut packet fails its ICRC
    ++stats_.trimmed_discarded;
    return;
  }
  if (packet.ecn_ce) {
    ++stats_.ecn_marks_received;
    if (host_.config().dcqcn.enabled &&
        (last_cnp_.is_never() || now - last_cnp_ >= host_.config().dcqcn.cnp_interval)) {
      last_cnp_ = now;
      ++stats_.cnps_sent;
      BaseHeader cnp;
      cnp.kind = static_cast<uint8_t>(BaseKind::kCnp);
      send_control(packet.plane, ev_, cnp);
    }
  }
  BaseHeader reply;
  if (h.seq > epsn_) {
    ++stats_.out_of_order_dropped;
    if (nak_sent_) return;
    nak_sent_ = true;
    ++stats_.naks_sent;
    reply.kind = static_cast<uint8_t>(BaseKind::kNak);
    reply.ack = epsn_;
    send_control(packet.plane, ev_, reply);
    return;
  }
  if (h.seq < epsn_) {
    ++stats_.duplicates;
  } else {
    if (!place(h, payload)) return;  // out of bounds: not ours to place
    ++epsn_;
    nak_sent_ = false;
    if ((h.flags & (kFlagLast | kFlagImm)) == (kFlagLast | kFlagImm)) {
      Completion c;
      c.opcode = WcOpcode::kRecvRdmaWithImm;
      c.has_immediate = true;
      c.qpn = Qpn(id_);
      c.immediate = h.immediate;
      host_.complete_recv(c);
    }
  }
  if (++unacked_ < ack_every_ && (h.flags & kFlagLast) == 0) return;
  unacked_ = 0;
  reply.kind = static_cast<uint8_t>(BaseKind::kAck);
  reply.ack = epsn_;
  send_control(packet.plane, ev_, reply);
}

void RoceQp::on_ack(Instant now, uint64_t next_expected) {
  if (failed_ || next_expected <= snd_una_ || next_expected > max_sent_) return;
  snd_una_ = next_expected;
  snd_nxt_ = std::max(snd_nxt_, snd_una_);
  retries_ = 0;
  rto_at_ = snd_una_ < max_sent_ ? now + rto_ : Instant::never();
  complete_through(snd_una_);
}

Instant RoceQp::next_deadline(Instant now) const {
  Instant d = std::min(rto_at_, dcqcn_.next_deadline());
  if (!failed_ && snd_nxt_ < next_psn_ && next_send_at_ > now) d = std::min(d, next_send_at_);
  return d;
}

void RoceQp::on_timer(Instant now) {
  dcqcn_.on_timer(now);
  if (rto_at_ > now) return;
  ++stats_.timeouts;
  if (++retries_ > retry_limit_) {
    fail();
    return;
  }
  snd_nxt_ = snd_una_;  // go back to the oldest unacknowledged packet
  rto_at_ = now + rto_;
}

void RoceQp::fail() {
  failed_ = true;
  rto_at_ = Instant::never();
  fail_messages();
}

}  // namespace mrc::sim
