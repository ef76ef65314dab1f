// BaselineHost: the datapath shared by the baseline transports (see baseline.h). A port that
// goes idle sends its oldest control packet if any (ACK/NAK/CNP, high priority, never trimmed),
// else asks the connections in round-robin order for a data packet allowed now on that plane;
// one pending timer event at the earliest connection deadline (older ones ignored by
// generation), as SimHost does for the engine.
#include "sim/baseline.h"

#include <algorithm>
#include <cstring>

#include "core/wire/packet.h"
#include "mrc/assert.hpp"
#include "sim/mptcp.h"
#include "sim/roce.h"
#include "util/bytes.h"

namespace mrc::sim {

const char* to_string(TransportKind kind) {
  switch (kind) {
    case TransportKind::kMrc:
      return "mrc";
    case TransportKind::kRoce:
      return "roce";
    case TransportKind::kRocePfc:
      return "roce_pfc";
    case TransportKind::kMptcp:
      return "mptcp";
  }
  return "?";
}

namespace {

// Header, payload and a 4-byte ICRC over both, as the MRC engine's (wire::seal; RoCE's
// invariant CRC: a corrupted packet is discarded by the receiving NIC). With ICRC offload the
// field is left to the datapath (SimPacket::icrc_deferred).
// Sized once and written with memcpy (PacketBytes grows without zeroing; see packet.h).
// With a virtual payload the body keeps whatever bytes the buffer held.
void encode(const BaseHeader& h, const uint8_t* payload, SimPacket& packet, bool icrc_offload,
            bool virtual_payload = false) {
  PacketBytes& bytes = packet.bytes;
  const size_t body = h.length > 0 && payload != nullptr ? h.length : 0;
  bytes.resize(kBaseHeaderBytes + body + kBaseIcrcBytes);
  std::memcpy(bytes.data(), &h, kBaseHeaderBytes);
  if (body > 0 && !virtual_payload) std::memcpy(bytes.data() + kBaseHeaderBytes, payload, body);
  packet.icrc_deferred = icrc_offload;
  if (icrc_offload) {
    wire::seal_deferred(bytes, kBaseHeaderBytes + body);
  } else {
    wire::seal(bytes, kBaseHeaderBytes + body);
  }
}

bool icrc_ok(std::span<const uint8_t> bytes) {
  if (bytes.size() < kBaseHeaderBytes + kBaseIcrcBytes) return false;
  const size_t covered = bytes.size() - kBaseIcrcBytes;
  return load_be32(bytes.data() + covered) == wire::icrc32(bytes.first(covered));
}

}  // namespace

// ---------------------------------------------------------------------------- BaselineConn

BaselineConn::BaselineConn(BaselineHost& host, uint32_t id) : host_(host), id_(id) {
  stats_.plane_bytes_sent.assign(host.planes(), 0);
  stats_.plane_retransmits.assign(host.planes(), 0);
}

uint64_t BaselineConn::queue_message(const BaseWr& wr, uint64_t next, uint32_t mtu) {
  const uint64_t packets = std::max<uint64_t>(1, (wr.length + mtu - 1) / mtu);
  messages_.push_back(Message{wr, next, packets});
  return next + packets;
}

const BaselineConn::Message* BaselineConn::message_of(uint64_t seq) const {
  const auto it = std::upper_bound(messages_.begin(), messages_.end(), seq,
                                   [](uint64_t s, const Message& m) { return s < m.first; });
  if (it == messages_.begin()) return nullptr;
  const Message& m = *std::prev(it);
  return seq < m.first + m.packets ? &m : nullptr;
}

void BaselineConn::complete_through(uint64_t acked) {
  while (!messages_.empty() && messages_.front().first + messages_.front().packets <= acked) {
    Completion c;
    c.wr_id = messages_.front().wr.wr_id;
    c.qpn = Qpn(id_);
    c.byte_len = static_cast<uint32_t>(messages_.front().wr.length);
    host_.complete_send(c);
    messages_.pop_front();
  }
}

void BaselineConn::fail_messages() {
  for (const Message& m : messages_) {
    Completion c;
    c.wr_id = m.wr.wr_id;
    c.status = WcStatus::kRetryExceeded;
    c.qpn = Qpn(id_);
    host_.complete_send(c);
  }
  messages_.clear();
}

bool BaselineConn::place(const BaseHeader& h, std::span<const uint8_t> payload) {
  if (payload.size() != h.length || target_ == nullptr || h.offset > target_size_ ||
      target_size_ - h.offset < h.length) {
    return false;
  }
  if (!host_.virtual_payload()) std::memcpy(target_ + h.offset, payload.data(), payload.size());
  stats_.data_bytes_placed += payload.size();
  return true;
}

PacketPtr BaselineConn::make_data(Instant now, PlaneId plane, Ev ev, BaseHeader h,
                                  const uint8_t* payload) {
  h.kind = static_cast<uint8_t>(BaseKind::kData);
  h.dest_conn = peer_conn_;
  h.echo_ns = now.ns;
  auto packet = make_packet();
  packet->dest_host = peer_host_;
  packet->plane = plane;
  packet->ev = ev;
  packet->trimmable = true;
  packet->trim_to_bytes = kBaseHeaderBytes;
  encode(h, payload, *packet, host_.icrc_offload(), host_.virtual_payload());
  ++stats_.data_packets_sent;
  stats_.data_bytes_sent += h.length;
  stats_.plane_bytes_sent[plane.value] += h.length;
  return packet;
}

void BaselineConn::send_control(PlaneId plane, Ev ev, const BaseHeader& h) {
  auto packet = make_packet();
  packet->dest_host = peer_host_;
  packet->plane = plane;
  packet->ev = ev;
  packet->trimmable = false;
  packet->high_priority = true;
  BaseHeader c = h;
  c.dest_conn = peer_conn_;
  c.length = 0;
  encode(c, nullptr, *packet, host_.icrc_offload());
  host_.queue_control(plane, std::move(packet));
}

// ---------------------------------------------------------------------------- BaselineHost

BaselineHost::BaselineHost(HostId id, EventQueue& events, Fabric& fabric,
                           const TransportConfig& config, uint32_t mtu_bytes)
    : id_(id),
      events_(events),
      fabric_(fabric),
      config_(config),
      mtu_(mtu_bytes),
      schedule_(fabric.planes()) {
  control_.resize(fabric.planes());
  next_conn_.assign(fabric.planes(), 0);
}

BaselineConn& BaselineHost::add_connection(const QpConfig& qp) {
  const uint32_t id = static_cast<uint32_t>(conns_.size()) + 1;
  if (config_.kind == TransportKind::kMptcp) {
    conns_.push_back(std::make_unique<MptcpConn>(*this, id, qp));
  } else {
    conns_.push_back(std::make_unique<RoceQp>(*this, id, qp));
  }
  schedule_.add();
  every_timer_.push_back(0);
  every_timer_listed_.push_back(0);
  return *conns_.back();
}

BaselineConn* BaselineHost::connection(uint32_t id) {
  if (id == 0 || id > conns_.size()) return nullptr;
  return conns_[id - 1].get();
}

size_t BaselineHost::drain(std::deque<Completion>& from, std::vector<Completion>& out) {
  const size_t n = std::min(from.size(), out.size());
  for (size_t i = 0; i < n; ++i) {
    out[i] = from.front();
    from.pop_front();
  }
  return n;
}

void BaselineHost::queue_control(PlaneId plane, PacketPtr packet) {
  std::deque<PacketPtr>& q = control_[plane.value];
  if (q.size() >= kControlQueuePackets) {
    ++control_dropped_;
    return;
  }
  q.push_back(std::move(packet));
}

void BaselineHost::on_deliver(PlaneId plane, PacketPtr packet) {
  (void)plane;
  // A trimmed packet reaches the transport (which counts it as a loss: no trimming support);
  // any other must pass the ICRC.
  const bool check_icrc = !packet->trimmed && !packet->icrc_deferred;
  if (packet->bytes.size() < kBaseHeaderBytes || (check_icrc && !icrc_ok(packet->bytes))) {
    ++corrupt_dropped_;
    return;
  }
  BaseHeader h;
  std::memcpy(&h, packet->bytes.data(), kBaseHeaderBytes);
  if (BaselineConn* conn = connection(h.dest_conn)) {
    const size_t trailer = packet->trimmed ? 0 : kBaseIcrcBytes;
    const std::span<const uint8_t> payload(packet->bytes.data() + kBaseHeaderBytes,
                                           packet->bytes.size() - kBaseHeaderBytes - trailer);
    conn->on_packet(events_.now(), h, payload, *packet);
    touch(h.dest_conn);
  }
  kick();
}

void BaselineHost::on_port_ready(PlaneId plane) {
  transmit_on(plane);
  arm_timer();
}

void BaselineHost::on_port_state(PlaneId plane, bool up) {
  (void)plane;
  (void)up;
  kick();
}

void BaselineHost::kick() {
  for (uint32_t p = 0; p < fabric_.planes(); ++p) transmit_on(PlaneId(static_cast<uint8_t>(p)));
  arm_timer();
}

void BaselineHost::transmit_on(PlaneId plane) {
  if (!fabric_.port_idle(id_, plane) || !fabric_.port_up(id_, plane)) return;
  std::deque<PacketPtr>& control = control_[plane.value];
  if (!control.empty()) {
    PacketPtr packet = std::move(control.front());
    control.pop_front();
    fabric_.transmit(id_, plane, std::move(packet));
    return;
  }
  // The connections that may send now, in round-robin order: the ones a scan over all of them
  // would have found a packet at (the others would have returned none).
  const size_t n = conns_.size();
  size_t& next = next_conn_[plane.value];
  read_touched(events_.now());
  schedule_.promote(events_.now());
  scratch_.clear();
  schedule_.ready_in_turn(plane.value, static_cast<uint32_t>(n == 0 ? 0 : next % n), scratch_);
  for (const uint32_t index : scratch_) {
    BaselineConn& conn = *conns_[index];
    PacketPtr packet = conn.poll_transmit(events_.now(), plane);
    schedule_.touch(index);
    if (packet) {
      next = (index + 1) % n;
      fabric_.transmit(id_, plane, std::move(packet));
      return;
    }
  }
}

// A connection that may send at or before `now` reads as ready now; a later time waits in the
// plane's heap until the schedule is promoted past it.
void BaselineHost::read_touched(Instant now) {
  schedule_.refresh([&](uint32_t index, std::span<Instant> ready_at) {
    const BaselineConn& conn = *conns_[index];
    for (uint32_t p = 0; p < ready_at.size(); ++p) {
      const Instant at = conn.send_ready_at(now, PlaneId(static_cast<uint8_t>(p)));
      ready_at[p] = !at.is_never() && at <= now ? Schedule::kReadyNow : at;
    }
    every_timer_[index] = conn.wants_every_timer() ? 1 : 0;
    if (every_timer_[index] != 0 && every_timer_listed_[index] == 0) {
      every_timer_listed_[index] = 1;
      every_timer_list_.push_back(index);
    }
    return conn.next_deadline(now);
  });
}

void BaselineHost::arm_timer() {
  read_touched(events_.now());
  const Instant deadline = schedule_.next_deadline();
  if (deadline.is_never() || deadline >= timer_at_) return;
  timer_at_ = deadline;
  const uint64_t generation = ++timer_generation_;
  events_.schedule(deadline, [this, generation] { on_timer(generation); });
}

void BaselineHost::on_timer(uint64_t generation) {
  if (generation != timer_generation_) return;
  timer_at_ = Instant::never();
  const Instant now = events_.now();
  read_touched(now);
  std::vector<uint32_t> due;
  schedule_.due(now, due);
  // And the connections that want every timer, due or not (those that stopped leave the list).
  size_t kept = 0;
  for (const uint32_t index : every_timer_list_) {
    if (every_timer_[index] == 0) {
      every_timer_listed_[index] = 0;
      continue;
    }
    every_timer_list_[kept++] = index;
    due.push_back(index);
  }
  every_timer_list_.resize(kept);
  std::sort(due.begin(), due.end());
  due.erase(std::unique(due.begin(), due.end()), due.end());
  for (const uint32_t index : due) {
    conns_[index]->on_timer(now);
    schedule_.touch(index);
  }
  kick();
}

BaselinePair connect_baseline(BaselineHost& a, BaselineHost& b, const QpConfig& qp) {
  BaselineConn& ca = a.add_connection(qp);
  BaselineConn& cb = b.add_connection(qp);
  ca.set_peer(b.id(), cb.id());
  cb.set_peer(a.id(), ca.id());
  return {&ca, &cb};
}

}  // namespace mrc::sim
