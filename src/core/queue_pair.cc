// Queue pair: state machine, dispatch of received packets to the requester and responder,
// transmit arbitration (control first, then the requester), plane status. See queue_pair.h.
#include "core/queue_pair.h"

#include <algorithm>

#include "mrc/assert.hpp"
#include "util/prng.h"

namespace mrc {

namespace {
constexpr Duration kPortStatusRetry{100'000};
constexpr uint32_t kPortStatusMaxAttempts = 64;
}  // namespace

const char* to_string(QpState s) {
  switch (s) {
    case QpState::kReset:
      return "RESET";
    case QpState::kInit:
      return "INIT";
    case QpState::kRtr:
      return "RTR";
    case QpState::kRts:
      return "RTS";
    case QpState::kError:
      return "ERROR";
  }
  return "?";
}

const char* to_string(QpError e) {
  switch (e) {
    case QpError::kBadTransition:
      return "state transition not allowed from the current state";
    case QpError::kBadConfig:
      return "invalid queue-pair configuration";
    case QpError::kUnknownQp:
      return "no such queue pair";
    case QpError::kTooManyQps:
      return "queue-pair table is full";
    case QpError::kBadProtectionDomain:
      return "protection domain does not exist";
    case QpError::kNoCompletionQueue:
      return "a completion queue is required";
  }
  return "?";
}

QueuePair::QueuePair(Qpn qpn, const QpConfig& config, int planes, uint64_t seed, uint32_t pd,
                     CompletionQueue* send_cq, CompletionQueue* recv_cq,
                     const MemoryRegionTable* mrs)
    : qpn_(qpn),
      all_planes_((1u << planes) - 1),
      local_ports_((1u << planes) - 1),
      peer_ports_((1u << planes) - 1),
      config_(config),
      planes_(planes),
      seed_(seed),
      pd_(pd),
      send_cq_(send_cq),
      recv_cq_(recv_cq),
      mrs_(mrs) {
  MRC_ASSERT(planes >= 1 && planes <= kMaxPlanes);
  auto valid = config_.validate(planes);
  if (!valid.ok()) config_error_ = valid.error().message;
}

Result<Ok, QpError> QueuePair::set_config(const QpConfig& config) {
  changed();
  if (state_ != QpState::kReset && state_ != QpState::kInit) return Err{QpError::kBadTransition};
  if (auto valid = config.validate(planes_); !valid.ok()) {
    config_error_ = valid.error().message;
    return Err{QpError::kBadConfig};
  }
  config_ = config;
  config_error_.clear();
  return Ok{};
}

Result<Ok, QpError> QueuePair::set_requester_config(const QpConfig& config) {
  changed();
  if (state_ != QpState::kRtr) return set_config(config);
  QpConfig next = config_;
  next.mpr = config.mpr;
  next.max_wimm = config.max_wimm;
  next.timeout = config.timeout;
  next.retry_linear = config.retry_linear;
  next.retry_exp = config.retry_exp;
  if (auto valid = next.validate(planes_); !valid.ok()) {
    config_error_ = valid.error().message;
    return Err{QpError::kBadConfig};
  }
  config_ = next;
  config_error_.clear();
  return Ok{};
}

Result<Ok, QpError> QueuePair::to_init() {
  changed();
  if (state_ != QpState::kReset) return Err{QpError::kBadTransition};
  // The configuration in force, not the last one offered: a refused set_config changes nothing.
  if (!config_.validate(planes_).ok()) return Err{QpError::kBadConfig};
  state_ = QpState::kInit;
  return Ok{};
}

Result<Ok, QpError> QueuePair::to_rtr(const RtrAttributes& attributes) {
  changed();
  if (state_ != QpState::kInit) return Err{QpError::kBadTransition};
  remote_ = attributes;
  peer_ports_ = attributes.peer_ports_up & all_planes_;
  EvSetConfig ev;
  ev.planes = planes_;
  ev.active_count = config_.ev_count;
  ev.backup_per_plane = config_.ev_backup_per_plane;
  ev.min_active = config_.ev_min_active;
  ev.probe_interval = Duration{config_.ev_probe_interval_ns};
  ev.revive_probes = config_.ev_revive_probes;
  ev.loss_strike_uses = config_.ev_loss_strike_uses;
  ev.port_base = config_.ev_port_base;
  ev.port_stride = config_.ev_ports_per_plane;
  ev.explicit_evs = config_.ev_list;
  ev.path_policy = config_.path_policy;
  ev.health = config_.health;
  ev.p2c = config_.p2c;
  ev.hedge = config_.hedge;
  ev.watchdog = config_.path_watchdog;
  uint64_t mix = seed_ ^ (static_cast<uint64_t>(qpn_.value) << 32);
  evs_.emplace(ev, Prng::splitmix64(mix));
  cc_ = make_congestion_controller(config_);
  MRC_ASSERT(cc_ != nullptr && !requester_);  // validate() admitted the algorithm; RTS is next
  responder_.emplace(config_, stats_, control_);
  responder_->set_incast_detector(incast_, schedule_index_);
  responder_->start(attributes.expected_psn, qpn_, attributes.dest_qp, pd_, mrs_);
  for (uint64_t wr_id : early_receives_) responder_->post_recv(wr_id);
  early_receives_.clear();
  if (secure() && !config_.security.keys_later) {
    // The configured secrets serve one connection: the packet counters start again from 0 at
    // every RTR, and a GCM nonce must never repeat under a key. So the QP keeps no copy, and
    // once reset it needs new secrets (set_config) or keys after RTR (set_keys).
    protection_ = std::make_unique<PacketProtection>(config_.security);
    wipe(config_.security.send_secret);
    wipe(config_.security.receive_secret);
    config_.security.keys_later = true;
  }
  state_ = QpState::kRtr;
  return Ok{};
}

Result<Ok, QpError> QueuePair::to_rts(const RtsAttributes& attributes) {
  changed();
  if (state_ != QpState::kRtr) return Err{QpError::kBadTransition};
  // RTR built the EV set, the congestion controller and the responder the requester shares.
  MRC_ASSERT(evs_ && cc_ != nullptr && responder_ && !requester_);
  requester_.emplace(config_, stats_, *evs_, *cc_);
  requester_->set_usable_planes(usable_planes());
  requester_->start(attributes.initial_psn, qpn_, remote_.dest_qp);
  requester_->set_completion_queue(send_cq_);
  state_ = QpState::kRts;
  return Ok{};
}

Result<Ok, QpError> QueuePair::set_keys(
    const std::array<uint8_t, kTrafficSecretBytes>& send_secret,
    const std::array<uint8_t, kTrafficSecretBytes>& receive_secret) {
  changed();
  const bool connected = state_ == QpState::kRtr || state_ == QpState::kRts;
  // A QP awaiting keys in RTR or RTS is a keys_later one (to_rtr keyed the others).
  if (!connected || !awaiting_keys()) return Err{QpError::kBadTransition};
  SecurityConfig security = config_.security;
  security.send_secret = send_secret;
  security.receive_secret = receive_secret;
  protection_ = std::make_unique<PacketProtection>(security);
  return Ok{};
}

void QueuePair::to_error() {
  changed();
  if (state_ == QpState::kError || state_ == QpState::kReset) {
    state_ = state_ == QpState::kReset ? QpState::kReset : QpState::kError;
    return;
  }
  if (requester_) {
    const WcStatus first =
        requester_->failed() ? requester_->failure_status() : WcStatus::kWrFlushError;
    requester_->flush(first, send_cq_);
    MRC_ASSERT(requester_->outstanding_work_requests() == 0 && requester_->in_flight_bytes() == 0);
  }
  if (responder_) responder_->flush(recv_cq_);
  MRC_ASSERT(!responder_ ||
             (responder_->posted_receives() == 0 && responder_->pending_wimm() == 0));
  responder_pending_ = false;
  for (uint64_t wr_id : early_receives_) {
    Completion c;
    c.wr_id = wr_id;
    c.qpn = qpn_;
    c.status = WcStatus::kWrFlushError;
    c.opcode = WcOpcode::kRecvRdmaWithImm;
    if (recv_cq_ != nullptr) recv_cq_->push(c);
  }
  early_receives_.clear();
  control_.clear();
  port_status_unanswered_ = false;
  state_ = QpState::kError;
}

void QueuePair::to_reset() {
  changed();
  requester_.reset();
  responder_.reset();
  protection_.reset();
  responder_pending_ = false;
  cc_.reset();
  evs_.reset();
  early_receives_.clear();
  control_.clear();
  port_status_unanswered_ = false;
  state_ = QpState::kReset;
}

Result<Ok, PostError> QueuePair::post_send(const SendWr& wr) {
  changed();
  if (state_ != QpState::kRts) return Err{PostError::kQpState};
  return requester_->post(wr, *mrs_, pd_);
}

Result<Ok, PostError> QueuePair::post_recv(uint64_t wr_id) {
  // A full receive queue changes nothing: the schedule need not re-read the QP (a driver that
  // keeps its receive queue topped up finds it full at every other call).
  if ((state_ == QpState::kRtr || state_ == QpState::kRts) && responder_->receive_queue_full())
    return Err{PostError::kQueueFull};
  changed();
  if (state_ == QpState::kInit) {  // held until the responder exists (RTR)
    if (early_receives_.size() >= config_.max_recv_wr) return Err{PostError::kQueueFull};
    early_receives_.push_back(wr_id);
    return Ok{};
  }
  if (state_ != QpState::kRtr && state_ != QpState::kRts) return Err{PostError::kQpState};
  if (!responder_->post_recv(wr_id)) return Err{PostError::kQueueFull};
  deliver();
  return Ok{};
}

// ---- receive ---------------------------------------------------------------------------

void QueuePair::handle(Instant now, const wire::Packet& packet, const RxMeta& meta) {
  changed();
  const auto* data = std::get_if<wire::DataPacket>(&packet);
  if (state_ != QpState::kRtr && state_ != QpState::kRts) {
    ++stats_.drops[static_cast<size_t>(DropReason::kQpState)];
    return;
  }
  if (data != nullptr) {
    responder_->on_data(now, *data, meta);
    responder_pending_ = responder_->pending_wimm() > 0;
  } else {
    handle_control(now, std::get<wire::ControlPacket>(packet), meta);
  }
  after_event(now);
}

void QueuePair::handle_control(Instant now, const wire::ControlPacket& packet, const RxMeta& meta) {
  if (const auto* sack = std::get_if<wire::Sack>(&packet.body)) {
    if (requester_) requester_->on_sack(now, *sack);
  } else if (const auto* nack = std::get_if<wire::Nack>(&packet.body)) {
    if (requester_) requester_->on_nack(now, *nack);
  } else if (const auto* ack = std::get_if<wire::Ack>(&packet.body)) {
    if (requester_ && ack->syndrome == wire::kAethNakRemoteAccess)
      requester_->on_access_nak(packet.bth.psn);
  } else if (const auto* probe = std::get_if<wire::Probe>(&packet.body)) {
    responder_->on_probe(now, *probe, meta);
  } else if (const auto* request = std::get_if<wire::EndpointRequest>(&packet.body)) {
    handle_endpoint_request(*request, meta);
  } else if (const auto* response = std::get_if<wire::EndpointResponse>(&packet.body)) {
    if (response->op == wire::EndpointOp::kPortStatusUpdate &&
        response->request_id == port_status_request_id_) {
      port_status_unanswered_ = false;
      port_status_next_at_ = Instant::never();
    }
  }
  // Other AETH ACKs (RoCE cumulative ACKs) carry nothing SACKs do not; they are accepted and
  // ignored.
}

void QueuePair::handle_endpoint_request(const wire::EndpointRequest& request, const RxMeta& meta) {
  (void)meta;
  if (request.op == wire::EndpointOp::kPortStatusUpdate) set_peer_ports(request.port_status_mask);
  wire::EndpointResponse response;
  response.op = request.op;
  response.port_status_mask = local_ports_;
  response.request_id = request.request_id;
  response.echoed_timestamp = request.tx_timestamp;
  ControlItem item;
  item.packet.bth.opcode = wire::Opcode::kEndpointResponse;
  item.packet.bth.dest_qp = remote_.dest_qp;
  item.packet.body = response;
  if (!control_.push(item)) ++stats_.control_queue_overflows;
}

void QueuePair::set_peer_ports(uint32_t mask) {
  const uint32_t old_usable = usable_planes();
  peer_ports_ = mask & all_planes_;
  if (requester_) requester_->set_usable_planes(usable_planes());
  const uint32_t lost = old_usable & ~usable_planes();
  for (int p = 0; p < planes_; ++p) {
    if ((lost >> p) & 1 && requester_) requester_->on_plane_down(PlaneId(static_cast<uint8_t>(p)));
  }
}

void QueuePair::set_local_ports(uint32_t mask, Instant now) {
  changed();
  const uint32_t old_usable = usable_planes();
  const bool changed = (mask & all_planes_) != local_ports_;
  local_ports_ = mask & all_planes_;
  if (requester_) requester_->set_usable_planes(usable_planes());
  const uint32_t lost = old_usable & ~usable_planes();
  for (int p = 0; p < planes_; ++p) {
    if ((lost >> p) & 1 && requester_) requester_->on_plane_down(PlaneId(static_cast<uint8_t>(p)));
  }
  if (changed && (state_ == QpState::kRtr || state_ == QpState::kRts)) queue_port_status(now);
}

void QueuePair::queue_port_status(Instant now) {
  wire::EndpointRequest request;
  request.op = wire::EndpointOp::kPortStatusUpdate;
  request.port_status_mask = local_ports_;
  request.request_id = ++port_status_request_id_;
  request.tx_timestamp = wire::timestamp_of(now);
  ControlItem item;
  item.packet.bth.opcode = wire::Opcode::kEndpointRequest;
  item.packet.bth.dest_qp = remote_.dest_qp;
  item.packet.body = request;
  if (!control_.push(item)) ++stats_.control_queue_overflows;
  if (!port_status_unanswered_) port_status_attempts_ = 0;
  port_status_unanswered_ = true;
  port_status_next_at_ = now + kPortStatusRetry;
}

// ---- transmit ------------------------------------------------------------------------------

size_t QueuePair::poll_control(PlaneId plane, std::span<uint8_t> out, TxMeta& meta) {
  if (control_.empty()) return 0;
  const uint16_t slot = evs_->next(plane);
  if (slot == EvSet::kNoSlot) return 0;
  const wire::ControlPacket& packet = control_.front().packet;
  const size_t n = wire::encode(wire::Packet{packet}, out, /*defer_icrc=*/true);
  MRC_ASSERT(n > 0);
  const EvSet::Slot& ev = evs_->slot(slot);
  meta = TxMeta{plane, ev.ev, remote_.peer, false, 0};
  if (const auto* sack = std::get_if<wire::Sack>(&packet.body))
    meta.answers = Ev(sack->echoed_entropy);
  if (const auto* nack = std::get_if<wire::Nack>(&packet.body))
    meta.answers = Ev(nack->echoed_entropy);
  control_.pop();
  return n;
}

// A secure QP writes its plain packet a security header further on and seals it there
// (PacketProtection::seal); the trimmable length then includes that header.
size_t QueuePair::poll_transmit(Instant now, PlaneId plane, std::span<uint8_t> out, TxMeta& meta) {
  if (!protection_) return awaiting_keys() ? 0 : poll_plain(now, plane, out, meta);
  if (out.size() < kSecureOverheadBytes) return 0;
  const size_t n = poll_plain(
      now, plane, out.subspan(wire::kSechBytes, out.size() - kSecureOverheadBytes), meta);
  if (n == 0) return 0;
  if (meta.header_bytes != 0) meta.header_bytes += wire::kSechBytes;
  return protection_->seal(out, n);
}

size_t QueuePair::poll_plain(Instant now, PlaneId plane, std::span<uint8_t> out, TxMeta& meta) {
  changed();
  if (state_ != QpState::kRtr && state_ != QpState::kRts) return 0;
  if (((usable_planes() >> plane.value) & 1) == 0) return 0;
  if (size_t n = poll_control(plane, out, meta)) return n;
  if (!requester_) return 0;
  const size_t n = requester_->poll(now, plane, out, meta);
  meta.peer = remote_.peer;
  return n;
}

bool QueuePair::wants_to_send(Instant now) const {
  return send_ready_at() <= now;
}

// Mirrors poll_transmit: with the control queue empty and nothing for the requester (no
// retransmission, probe or new data; Requester::wants_to_send does not depend on the time),
// only an EV probe can produce a packet, and EvSet::probe_due finds none before next_probe_at.
Instant QueuePair::send_ready_at() const {
  if ((state_ != QpState::kRtr && state_ != QpState::kRts) || awaiting_keys())
    return Instant::never();
  if (!control_.empty() || (requester_ && requester_->wants_to_send(Instant::never())))
    return Schedule::kReadyNow;
  // Only the requester's calls and evs() change probe times (not EvSet::next).
  return evs_ ? evs_->next_probe_at() : Instant::never();
}

// ---- timers --------------------------------------------------------------------------------

// A pure function of the QP's state: the endpoint's schedule reads it after every call that may
// change that state.
Instant QueuePair::next_deadline() const {
  if ((state_ != QpState::kRtr && state_ != QpState::kRts) || awaiting_keys())
    return Instant::never();
  Instant deadline = responder_->next_deadline();
  if (requester_) deadline = std::min(deadline, requester_->next_deadline());
  if (port_status_unanswered_) deadline = std::min(deadline, port_status_next_at_);
  return deadline;
}

void QueuePair::on_timer(Instant now) {
  changed();
  if (state_ != QpState::kRtr && state_ != QpState::kRts) return;
  responder_->on_timer(now);
  if (requester_) requester_->on_timer(now);
  if (port_status_unanswered_ && now >= port_status_next_at_) {
    if (++port_status_attempts_ >= kPortStatusMaxAttempts) {
      port_status_unanswered_ = false;  // the peer is unreachable; the retry timer decides
      port_status_next_at_ = Instant::never();
    } else {
      queue_port_status(now);
    }
  }
  after_event(now);
}

void QueuePair::deliver() {
  if (!responder_pending_) return;  // nothing the responder could deliver
  responder_->deliver(recv_cq_);
  responder_pending_ = responder_->pending_wimm() > 0;
}

void QueuePair::after_event(Instant now) {
  (void)now;
  deliver();
  if (requester_ && requester_->failed()) to_error();
}

EvSet* QueuePair::evs() {
  changed();
  return evs_ ? &*evs_ : nullptr;
}

QpStats QueuePair::stats() const {
  if (cc_) stats_.window_bytes = cc_->window_bytes();
  if (requester_) stats_.in_flight_bytes = requester_->in_flight_bytes();
  return stats_;
}

}  // namespace mrc
