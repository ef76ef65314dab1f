// MPTCP-like coupled subflows (see mptcp.h). Sequence numbers count packets (one MSS = the MTU
// of payload; a message's last packet may be shorter and a packet never spans two messages).
// Every data packet is ACKed at once on its subflow with the subflow's cumulative ACK, the
// connection's data ACK and the echoed send time (no delayed ACKs, no SACK).
#include "sim/mptcp.h"

#include <algorithm>
#include <cmath>

#include "util/prng.h"

namespace mrc::sim {

double lia_increase(std::span<const double> cwnd, std::span<const double> rtt_s, size_t i) {
  double total = 0, best = 0, sum = 0;
  for (size_t k = 0; k < cwnd.size(); ++k) {
    total += cwnd[k];
    best = std::max(best, cwnd[k] / (rtt_s[k] * rtt_s[k]));
    sum += cwnd[k] / rtt_s[k];
  }
  if (total <= 0 || sum <= 0) return 1 / cwnd[i];
  const double alpha = total * best / (sum * sum);
  return std::min(alpha / total, 1 / cwnd[i]);
}

MptcpConn::MptcpConn(BaselineHost& host, uint32_t id, const QpConfig& qp)
    : BaselineConn(host, id), config_(host.config().mptcp), mtu_(qp.mtu_bytes) {
  const uint32_t n = std::max<uint32_t>(1, config_.subflows);
  subflows_.resize(n);
  for (uint32_t i = 0; i < n; ++i) {
    Subflow& sf = subflows_[i];
    sf.index = static_cast<uint16_t>(i);
    sf.plane = PlaneId(static_cast<uint8_t>(i % host.planes()));
    sf.ev = Ev(static_cast<uint32_t>(
        0xC000 | (mix64((uint64_t{host.id()} << 40) | (uint64_t{id} << 16) | i) & 0x3FFF)));
    sf.cwnd = config_.initial_window_packets;
    sf.rto = config_.rto_min;
  }
}

bool MptcpConn::post(const BaseWr& wr) {
  if (failed_) return false;
  next_dsn_ = queue_message(wr, next_dsn_, mtu_);
  host_.touch(id_);
  return true;
}

// ---------------------------------------------------------------------------- sender

PacketPtr MptcpConn::poll_transmit(Instant now, PlaneId plane) {
  if (failed_) return nullptr;
  Subflow* order[64];
  size_t n = 0;
  for (Subflow& sf : subflows_) {
    if (sf.plane == plane && !sf.dead && n < 64) order[n++] = &sf;
  }
  std::sort(order, order + n, [](const Subflow* a, const Subflow* b) {
    return a->srtt != b->srtt ? a->srtt < b->srtt : a->index < b->index;
  });
  for (size_t i = 0; i < n; ++i) {
    if (PacketPtr p = send_on(now, *order[i])) return p;
  }
  return nullptr;
}

// Now if some live subflow on the plane would send (send_on's conditions), else never; a
// reinjected DSN already data-acknowledged counts, so this may say now when poll_transmit
// then finds nothing (the host re-reads the connection after asking).
Instant MptcpConn::send_ready_at(Instant now, PlaneId plane) const {
  if (failed_) return Instant::never();
  const bool data = !reinject_.empty() || next_new_ < next_dsn_;
  for (const Subflow& sf : subflows_) {
    if (sf.plane != plane || sf.dead) continue;
    if (sf.retransmit_head && sf.snd_una < sf.max_sent) return now;
    const uint64_t in_flight = sf.snd_nxt - sf.snd_una;
    if (static_cast<double>(in_flight) + 1 > std::floor(sf.cwnd)) continue;
    if (sf.snd_nxt < sf.max_sent || data) return now;
  }
  return Instant::never();
}

// The subflow's own retransmission first (fast retransmit of its head, then SSNs rewound by an
// RTO), then reinjected data, then new data; only within the window, except the fast retransmit.
PacketPtr MptcpConn::send_on(Instant now, Subflow& sf) {
  if (sf.retransmit_head && sf.snd_una < sf.max_sent) {
    sf.retransmit_head = false;
    ++stats_.retransmits;
    ++stats_.plane_retransmits[sf.plane.value];
    return build(now, sf, sf.snd_una, sf.dsn_of.front());
  }
  const uint64_t in_flight = sf.snd_nxt - sf.snd_una;
  if (static_cast<double>(in_flight) + 1 > std::floor(sf.cwnd)) return nullptr;
  if (sf.snd_nxt < sf.max_sent) {
    const uint64_t ssn = sf.snd_nxt++;
    ++stats_.retransmits;
    ++stats_.plane_retransmits[sf.plane.value];
    return build(now, sf, ssn, sf.dsn_of[ssn - sf.snd_una]);
  }
  while (!reinject_.empty() && reinject_.front() < data_una_) reinject_.pop_front();
  uint64_t dsn = 0;
  if (!reinject_.empty()) {
    dsn = reinject_.front();
    reinject_.pop_front();
    ++stats_.reinjected;
  } else if (next_new_ < next_dsn_) {
    dsn = next_new_++;
  } else {
    return nullptr;
  }
  sf.dsn_of.push_back(dsn);
  const uint64_t ssn = sf.snd_nxt++;
  sf.max_sent = sf.snd_nxt;
  return build(now, sf, ssn, dsn);
}

PacketPtr MptcpConn::build(Instant now, Subflow& sf, uint64_t ssn, uint64_t dsn) {
  const Message* m = message_of(dsn);
  BaseHeader h;
  h.subflow = sf.index;
  h.seq = ssn;
  h.dsn = dsn;
  if (m != nullptr) {
    const uint64_t k = dsn - m->first;
    h.offset = m->wr.remote_offset + k * mtu_;
    h.length = static_cast<uint32_t>(
        std::min<uint64_t>(mtu_, m->wr.length - std::min(m->wr.length, k * mtu_)));
    if (k + 1 == m->packets) {
      h.flags |= kFlagLast;
      if (m->wr.imm) h.flags |= kFlagImm, h.immediate = m->wr.immediate;
    }
  }  // else: already data-acknowledged (a stale retransmission): an empty keepalive of the SSN
  if (sf.rto_at.is_never()) sf.rto_at = now + sf.rto;
  return make_data(now, sf.plane, sf.ev, h,
                   m != nullptr ? m->wr.source + (dsn - m->first) * mtu_ : nullptr);
}

// ---------------------------------------------------------------------------- receiver

void MptcpConn::on_packet(Instant now, const BaseHeader& h, std::span<const uint8_t> payload,
                          const SimPacket& packet) {
  if (h.subflow >= subflows_.size()) return;
  if (static_cast<BaseKind>(h.kind) == BaseKind::kData) {
    receive_data(now, h, payload, packet);
  } else if (static_cast<BaseKind>(h.kind) == BaseKind::kAck) {
    on_ack(now, h);
  }
}

void MptcpConn::receive_data(Instant now, const BaseHeader& h, std::span<const uint8_t> payload,
                             const SimPacket& packet) {
  (void)now;
  if (packet.trimmed) {
    ++stats_.trimmed_discarded;
    return;
  }
  if (packet.ecn_ce) ++stats_.ecn_marks_received;
  Subflow& sf = subflows_[h.subflow];
  const uint64_t window = 4ull * config_.max_window_packets;
  if (h.seq == sf.rcv_nxt) {
    ++sf.rcv_nxt;
    while (!sf.out_of_order.empty() && *sf.out_of_order.begin() == sf.rcv_nxt) {
      sf.out_of_order.erase(sf.out_of_order.begin());
      ++sf.rcv_nxt;
    }
  } else if (h.seq > sf.rcv_nxt && h.seq - sf.rcv_nxt < window) {
    sf.out_of_order.insert(h.seq);
  }
  const bool known = h.dsn < data_rcv_nxt_ || arrived_.count(h.dsn) != 0;
  if (known || h.length == 0) {
    if (known) ++stats_.duplicates;
  } else if (h.dsn - data_rcv_nxt_ < window * subflows_.size() && place(h, payload)) {
    arrived_[h.dsn] = Arrived{(h.flags & kFlagLast) != 0, (h.flags & kFlagImm) != 0, h.immediate};
    deliver_in_order();
  }
  BaseHeader ack;
  ack.kind = static_cast<uint8_t>(BaseKind::kAck);
  ack.subflow = h.subflow;
  ack.ack = sf.rcv_nxt;
  ack.data_ack = data_rcv_nxt_;
  ack.echo_ns = h.echo_ns;
  send_control(packet.plane, sf.ev, ack);
}

void MptcpConn::deliver_in_order() {
  for (auto it = arrived_.begin(); it != arrived_.end() && it->first == data_rcv_nxt_;) {
    if (it->second.last && it->second.imm) {
      Completion c;
      c.opcode = WcOpcode::kRecvRdmaWithImm;
      c.has_immediate = true;
      c.qpn = Qpn(id_);
      c.immediate = it->second.immediate;
      host_.complete_recv(c);
    }
    ++data_rcv_nxt_;
    it = arrived_.erase(it);
  }
}

// ---------------------------------------------------------------------------- ACKs

void MptcpConn::on_ack(Instant now, const BaseHeader& h) {
  if (failed_) return;
  Subflow& sf = subflows_[h.subflow];
  if (h.data_ack > data_una_ && h.data_ack <= next_new_) {
    data_una_ = h.data_ack;
    complete_through(data_una_);
  }
  if (sf.dead) return;
  if (h.echo_ns > 0 && h.echo_ns <= now.ns) sample_rtt(sf, Duration{now.ns - h.echo_ns});
  if (h.ack > sf.snd_una && h.ack <= sf.max_sent) {
    on_new_ack(now, sf, h.ack);
  } else if (h.ack == sf.snd_una && sf.snd_una < sf.max_sent) {
    on_dupack(sf);
  }
}

void MptcpConn::on_new_ack(Instant now, Subflow& sf, uint64_t ack) {
  const uint64_t acked = ack - sf.snd_una;
  for (uint64_t i = 0; i < acked && !sf.dsn_of.empty(); ++i) sf.dsn_of.pop_front();
  sf.snd_una = ack;
  sf.snd_nxt = std::max(sf.snd_nxt, sf.snd_una);
  sf.dupacks = 0;
  sf.backoff = 0;
  sf.rto = std::max(config_.rto_min, sf.srtt + sf.rttvar * 4);
  sf.rto_at = sf.snd_una < sf.max_sent ? now + sf.rto : Instant::never();
  if (sf.in_recovery) {
    if (ack >= sf.recover) {
      sf.in_recovery = false;
      sf.cwnd = sf.ssthresh;
    } else {
      sf.retransmit_head = true;  // NewReno partial ACK: the next hole
    }
    return;
  }
  grow(sf, acked);
}

void MptcpConn::on_dupack(Subflow& sf) {
  ++sf.dupacks;
  if (sf.in_recovery) {
    sf.cwnd = std::min<double>(sf.cwnd + 1, config_.max_window_packets);  // window inflation
    return;
  }
  if (sf.dupacks != 3) return;
  const double flight = static_cast<double>(sf.max_sent - sf.snd_una);
  sf.ssthresh = std::max(flight / 2, 2.0);
  sf.cwnd = sf.ssthresh + 3;
  sf.in_recovery = true;
  sf.recover = sf.max_sent;
  sf.retransmit_head = true;
  ++stats_.fast_retransmits;
}

// Slow start per subflow; congestion avoidance coupled by LIA (or Reno's 1/cwnd uncoupled).
void MptcpConn::grow(Subflow& sf, uint64_t acked) {
  const double max_window = config_.max_window_packets;
  for (uint64_t i = 0; i < acked; ++i) {
    if (sf.cwnd < sf.ssthresh) {
      sf.cwnd += 1;
      continue;
    }
    if (!config_.coupled) {
      sf.cwnd += 1 / sf.cwnd;
      continue;
    }
    double cwnd[64], rtt[64];
    size_t n = 0, self = 0;
    for (const Subflow& o : subflows_) {
      if (o.dead || n == 64) continue;
      if (&o == &sf) self = n;
      cwnd[n] = o.cwnd;
      const Duration r = o.has_rtt ? o.srtt : config_.rto_min;
      rtt[n++] = std::max<double>(1e-9, static_cast<double>(r.ns) * 1e-9);
    }
    sf.cwnd +=
        lia_increase(std::span<const double>(cwnd, n), std::span<const double>(rtt, n), self);
  }
  sf.cwnd = std::min(sf.cwnd, max_window);
}

void MptcpConn::sample_rtt(Subflow& sf, Duration rtt) {
  if (!sf.has_rtt) {
    sf.has_rtt = true;
    sf.srtt = rtt;
    sf.rttvar = Duration{rtt.ns / 2};
    return;
  }
  const int64_t err = std::abs(rtt.ns - sf.srtt.ns);
  sf.rttvar = Duration{(3 * sf.rttvar.ns + err) / 4};
  sf.srtt = Duration{(7 * sf.srtt.ns + rtt.ns) / 8};
}

// ---------------------------------------------------------------------------- timers

Instant MptcpConn::next_deadline(Instant now) const {
  (void)now;
  Instant d = Instant::never();
  for (const Subflow& sf : subflows_) {
    if (!sf.dead) d = std::min(d, sf.rto_at);
  }
  return d;
}

void MptcpConn::on_timer(Instant now) {
  if (failed_) return;
  for (Subflow& sf : subflows_) {
    if (!sf.dead && sf.rto_at <= now) on_subflow_timeout(now, sf);
  }
}

void MptcpConn::on_subflow_timeout(Instant now, Subflow& sf) {
  ++stats_.timeouts;
  ++sf.backoff;
  if (sf.backoff == 1) reinject(sf);
  if (sf.backoff >= config_.subflow_dead_after) {
    sf.dead = true;
    sf.rto_at = Instant::never();
    reinject(sf);
    if (std::all_of(subflows_.begin(), subflows_.end(), [](const Subflow& s) { return s.dead; }))
      fail();
    return;
  }
  const double flight = static_cast<double>(sf.max_sent - sf.snd_una);
  sf.ssthresh = std::max(flight / 2, 2.0);
  sf.cwnd = 1;
  sf.snd_nxt = sf.snd_una;  // resend the subflow's window from its oldest packet
  sf.in_recovery = false;
  sf.retransmit_head = false;
  sf.dupacks = 0;
  sf.rto = std::min(config_.rto_max, sf.rto * 2);
  sf.rto_at = now + sf.rto;
}

// Queues the subflow's data not yet data-acknowledged for the other subflows.
void MptcpConn::reinject(const Subflow& sf) {
  for (const uint64_t dsn : sf.dsn_of) {
    if (dsn >= data_una_) reinject_.push_back(dsn);
  }
  std::sort(reinject_.begin(), reinject_.end());
  reinject_.erase(std::unique(reinject_.begin(), reinject_.end()), reinject_.end());
}

void MptcpConn::fail() {
  failed_ = true;
  fail_messages();
}

}  // namespace mrc::sim
