// Endpoint: demultiplexes datagrams to queue pairs by destination QPN, arbitrates transmit
// opportunities round-robin over queue pairs, and aggregates deadlines. See endpoint.h.
#include "core/endpoint.h"

#include <algorithm>
#include <bit>
#include <utility>

#include "mrc/assert.hpp"
#include "util/bytes.h"

namespace mrc {

Endpoint::Endpoint(const EndpointConfig& config)
    : config_(config),
      ports_up_(static_cast<uint16_t>((1u << config.planes) - 1)),
      memory_(config.max_memory_regions),
      index_bits_(static_cast<uint32_t>(
          std::bit_width(kFirstQpn + std::max<uint32_t>(config.max_queue_pairs, 1) - 1))),
      qpn_tags_(config.qpn_seed) {
  MRC_ASSERT(index_bits_ < 24);  // room for a tag in the 24-bit QPN
  MRC_ASSERT(config.qpn_partitions >= 1 && config.qpn_partitions <= 16 &&
             config.qpn_partition < config.qpn_partitions);
  MRC_ASSERT(index_bits_ + partition_bits() < 24);  // room for the partition too
  MRC_ASSERT(config.planes >= 1 && config.planes <= kMaxPlanes);
}

static_assert(kMaxPlanes <= 16);  // Endpoint::ports_up_

uint32_t Endpoint::qpn_partition_of(Qpn qpn, uint32_t partitions, uint32_t max_queue_pairs) {
  const auto index_bits =
      static_cast<uint32_t>(std::bit_width(kFirstQpn + std::max<uint32_t>(max_queue_pairs, 1) - 1));
  const auto partition_bits = static_cast<uint32_t>(std::bit_width(partitions - 1));
  return (qpn.value >> index_bits) & ((1u << partition_bits) - 1);
}

CompletionQueue* Endpoint::create_cq(uint32_t capacity) {
  cqs_.push_back(std::make_unique<CompletionQueue>(std::max<uint32_t>(capacity, 1)));
  return cqs_.back().get();
}

Result<QueuePair*, QpError> Endpoint::create_qp(const QpConfig& config, uint32_t pd,
                                                CompletionQueue* send_cq,
                                                CompletionQueue* recv_cq) {
  if (!memory_.pd_valid(pd)) return Err{QpError::kBadProtectionDomain};
  if (send_cq == nullptr || recv_cq == nullptr) return Err{QpError::kNoCompletionQueue};
  if (!config.validate(config_.planes).ok()) return Err{QpError::kBadConfig};
  if (qps_.size() >= config_.max_queue_pairs) return Err{QpError::kTooManyQps};
  const uint32_t random_bits = 24 - index_bits_ - partition_bits();
  const uint32_t random =
      config_.qpn_seed == 0 ? 0 : static_cast<uint32_t>(qpn_tags_.below(1u << random_bits));
  const uint32_t tag = (random << partition_bits()) | config_.qpn_partition;
  const Qpn qpn((tag << index_bits_) | (kFirstQpn + static_cast<uint32_t>(qps_.size())));
  qps_.push_back(std::make_unique<QueuePair>(qpn, config, config_.planes, config_.seed, pd, send_cq,
                                             recv_cq, &memory_));
  schedule_->add();
  qps_.back()->attach(schedule_.get(), static_cast<uint32_t>(qps_.size() - 1), incast_.get());
  qps_.back()->set_local_ports(ports_up_, Instant{0});
  return qps_.back().get();
}

std::optional<uint32_t> Endpoint::index_of(Qpn qpn) const {
  const uint32_t low = qpn.value & ((1u << index_bits_) - 1);
  if (low < kFirstQpn || low - kFirstQpn >= qps_.size()) return std::nullopt;
  const uint32_t index = low - kFirstQpn;
  if (!qps_[index] || qps_[index]->qpn() != qpn) return std::nullopt;
  return index;
}

Result<Ok, QpError> Endpoint::destroy_qp(Qpn qpn) {
  const auto found = index_of(qpn);
  if (!found) return Err{QpError::kUnknownQp};
  const uint32_t index = *found;
  qps_[index].reset();
  schedule_->touch(index);
  return Ok{};
}

QueuePair* Endpoint::qp(Qpn qpn) {
  const auto index = index_of(qpn);
  return index ? qps_[*index].get() : nullptr;
}

void Endpoint::handle_datagram(Instant now, std::span<const uint8_t> datagram, const RxMeta& meta) {
  ++stats_.datagrams_received;
  if (wire::is_secure(datagram)) {
    handle_secure(now, datagram, meta);
    return;
  }
  wire::DecodeOptions options;
  options.trimmed = meta.trimmed;
  options.verify_icrc = !meta.icrc_checked;
  auto decoded = wire::decode(datagram, options);
  if (!decoded.ok()) return count(decoded.error());
  const wire::Packet& packet = decoded.value();
  if (handle_endpoint_packet(now, packet, meta)) return;
  const Qpn dest = std::holds_alternative<wire::DataPacket>(packet)
                       ? std::get<wire::DataPacket>(packet).header.bth.dest_qp
                       : std::get<wire::ControlPacket>(packet).bth.dest_qp;
  QueuePair* target = qp(dest);
  if (target == nullptr || meta.plane.value >= config_.planes) {
    ++stats_.unknown_qp;
    return;
  }
  if (target->secure()) {
    count(SecurityDrop::kPlainToSecure);
    return;
  }
  target->handle(now, packet, meta);
}

// A secure datagram reaches its QP only opened: verified (ICRC, key epoch, replay window, tag),
// its plain headers in open_buffer_ and, in encrypt mode, its payload decrypted there (an
// authenticated-only payload is read where it arrived). Whatever fails is counted here and goes
// no further, so the QP it names sees nothing of it and sends no answer.
void Endpoint::handle_secure(Instant now, std::span<const uint8_t> datagram, const RxMeta& meta) {
  if (datagram.size() < wire::kBthBytes + wire::kIcrcBytes)
    return count(wire::DecodeError::kTooShort);
  if (datagram.size() > wire::kMaxDatagramBytes) return count(wire::DecodeError::kPayloadTooLong);
  // As for plain packets, the ICRC first (a trimmed packet carries none).
  if (!meta.trimmed && !meta.icrc_checked && !wire::icrc_matches(datagram))
    return count(wire::DecodeError::kBadIcrc);
  const Qpn dest{load_be24(datagram.data() + 5)};
  QueuePair* target = qp(dest);
  if (target == nullptr || meta.plane.value >= config_.planes) {
    ++stats_.unknown_qp;
    return;
  }
  if (!target->secure()) return count(SecurityDrop::kSecureToPlain);
  if (target->protection() == nullptr) return count(SecurityDrop::kNoKey);
  if (meta.trimmed) return count(SecurityDrop::kTrimmed);
  if (open_buffer_.empty()) open_buffer_.resize(wire::kMaxDatagramBytes);
  const auto opened = target->protection()->open(datagram, open_buffer_);
  if (!opened.ok()) return count(opened.error());
  wire::DecodeOptions options;
  options.verify_icrc = false;
  auto decoded = wire::decode(std::span(open_buffer_).first(opened.value().length), options);
  if (!decoded.ok()) return count(decoded.error());
  if (auto* data = std::get_if<wire::DataPacket>(&decoded.value())) {
    MRC_ASSERT(data->payload.size() == opened.value().payload.size());
    data->payload = opened.value().payload;
  }
  target->handle(now, decoded.value(), meta);
}

void Endpoint::count(SecurityDrop drop) {
  ++stats_.security_drops[static_cast<size_t>(drop)];
}

void Endpoint::count(wire::DecodeError error) {
  ++stats_.decode_errors[static_cast<size_t>(error) % stats_.decode_errors.size()];
}

// QPN 0: an EV probe request (answered whatever QPs exist) or the answer to one of ours.
bool Endpoint::handle_endpoint_packet(Instant now, const wire::Packet& packet, const RxMeta& meta) {
  const auto* control = std::get_if<wire::ControlPacket>(&packet);
  if (control == nullptr || control->bth.dest_qp.value != 0 || meta.plane.value >= config_.planes)
    return false;
  if (const auto* request = std::get_if<wire::EndpointRequest>(&control->body)) {
    prober_.on_request(now, *request, meta, ports_up_);
  } else if (const auto* response = std::get_if<wire::EndpointResponse>(&control->body)) {
    prober_.on_response(now, *response, meta);
  } else {
    ++stats_.unknown_qp;
  }
  return true;
}

// Every packet's producer leaves its ICRC field zero; here it is sealed, or left to the
// datapath with ICRC offload (EndpointConfig::icrc_offload).
size_t Endpoint::poll_transmit(Instant now, PlaneId plane, std::span<uint8_t> out, TxMeta& meta) {
  const size_t n = next_datagram(now, plane, out, meta);
  if (n == 0) return 0;
  ++stats_.datagrams_sent;
  if (config_.icrc_offload) {
    meta.icrc_deferred = true;
  } else {
    wire::seal(out, n - wire::kIcrcBytes);
  }
  return n;
}

// A destroyed QP's slot reads as a QP with nothing to do.
void Endpoint::read_touched() const {
  schedule_->refresh([this](uint32_t index, std::span<Instant> ready_at) {
    const QueuePair* qp = qps_[index].get();
    ready_at[0] = qp != nullptr ? qp->send_ready_at() : Instant::never();
    return qp != nullptr ? qp->next_deadline() : Instant::never();
  });
}

void Endpoint::update_schedule(Instant now) const {
  read_touched();
  schedule_->promote(now);
}

size_t Endpoint::next_datagram(Instant now, PlaneId plane, std::span<uint8_t> out, TxMeta& meta) {
  if (!port_up(plane)) return 0;
  if (prober_.wants_to_send()) {
    if (const size_t n = prober_.poll(now, plane, out, meta)) return n;
  }
  if (qps_.empty()) return 0;
  update_schedule(now);
  // Round robin from the cursor over the QPs that may send: [cursor, count), then [0, cursor).
  // The others would produce nothing and change nothing (QueuePair::send_ready_at). A turn is
  // one packet, or with EndpointConfig::burst_turns a QP's whole EV burst; a QP that cannot
  // send passes the turn on.
  const auto count = static_cast<uint32_t>(qps_.size());
  const uint32_t cursor = transmit_cursor_;
  for (const auto& [from, to] : {std::pair{cursor, count}, std::pair{0u, cursor}}) {
    for (uint32_t i = next_candidate(from, to); i < to; i = next_candidate(i + 1, to)) {
      if (qps_[i] == nullptr) continue;
      const size_t n = qps_[i]->poll_transmit(now, plane, out, meta);
      if (n == 0) continue;
      transmit_cursor_ = qps_[i]->in_burst(plane) && config_.burst_turns ? i : (i + 1) % count;
      return n;
    }
  }
  return 0;
}

// The QPs are independent, so calling the due ones in index order is what a scan over all of
// them would do.
void Endpoint::handle_timeout(Instant now) {
  update_schedule(now);
  due_.clear();
  schedule_->due(now, due_);
  for (const uint32_t index : due_) {
    QueuePair* qp = qps_[index].get();
    if (qp != nullptr && qp->next_deadline() <= now) qp->on_timer(now);
  }
}

Instant Endpoint::next_deadline() const {
  read_touched();
  return schedule_->next_deadline();
}

// From the schedule's candidates (a superset of the QPs that would send): O(touched QPs)
// instead of a call to every QP.
bool Endpoint::wants_to_send(Instant now) const {
  if (prober_.wants_to_send()) return true;
  update_schedule(now);
  const auto count = static_cast<uint32_t>(qps_.size());
  return schedule_->next_ready(0, 0, count) < count;
}

void Endpoint::set_port_up(PlaneId plane, bool up, Instant now) {
  MRC_ASSERT(plane.value < config_.planes);
  const auto bit = static_cast<uint16_t>(1u << plane.value);
  ports_up_ = up ? (ports_up_ | bit) : (ports_up_ & ~bit);
  for (auto& qp : qps_)
    if (qp) qp->set_local_ports(ports_up_, now);
}

}  // namespace mrc
