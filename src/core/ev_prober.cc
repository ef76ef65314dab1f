// EvProber: connectionless controller EV probes (QPN 0). See ev_prober.h.
#include "core/ev_prober.h"

#include "mrc/assert.hpp"

namespace mrc {

namespace {

size_t encode_endpoint(const wire::EndpointRequest* request, const wire::EndpointResponse* response,
                       std::span<uint8_t> out) {
  wire::ControlPacket c;
  c.bth.opcode =
      request != nullptr ? wire::Opcode::kEndpointRequest : wire::Opcode::kEndpointResponse;
  c.bth.dest_qp = Qpn(0);
  if (request != nullptr) {
    c.body = *request;
  } else {
    c.body = *response;
  }
  const size_t n = wire::encode(wire::Packet{c}, out, /*defer_icrc=*/true);  // Endpoint seals
  MRC_ASSERT(n > 0);
  return n;
}

}  // namespace

bool EvProber::probe(uint32_t peer, PlaneId plane, Ev ev, uint32_t request_id) {
  if (probes_.size() >= kMaxProbes) return false;
  probes_.push_back(Probe{request_id, peer, plane, ev, Instant::never()});
  ++unsent_;
  ++to_send_;
  return true;
}

std::optional<EvProbeAnswer> EvProber::take_answer() {
  if (answers_.empty()) return std::nullopt;
  EvProbeAnswer answer = answers_.front();
  answers_.pop_front();
  return answer;
}

void EvProber::forget() {
  probes_.clear();
  answers_.clear();
  to_send_ -= unsent_;
  unsent_ = 0;
}

void EvProber::on_request(Instant now, const wire::EndpointRequest& request, const RxMeta& meta,
                          uint32_t ports_up) {
  (void)now;
  if (request.op != wire::EndpointOp::kEvProbe) return;  // port status goes to QPs
  if (responses_.size() >= kMaxResponses) {
    ++responses_dropped_;
    return;
  }
  wire::EndpointResponse response;
  response.op = request.op;
  response.port_status_mask = ports_up;
  response.request_id = request.request_id;
  response.echoed_timestamp = request.tx_timestamp;
  responses_.push_back(Response{response, meta});
  ++to_send_;
}

void EvProber::on_response(Instant now, const wire::EndpointResponse& response,
                           const RxMeta& meta) {
  if (response.op != wire::EndpointOp::kEvProbe) return;
  for (size_t i = 0; i < probes_.size(); ++i) {
    const Probe& p = probes_[i];
    if (p.request_id != response.request_id || p.sent_at == Instant::never()) continue;
    if (answers_.size() < kMaxProbes)
      answers_.push_back(EvProbeAnswer{p.request_id, meta.plane, now - p.sent_at});
    probes_.erase(probes_.begin() + static_cast<std::ptrdiff_t>(i));
    return;
  }
}

size_t EvProber::poll(Instant now, PlaneId plane, std::span<uint8_t> out, TxMeta& meta) {
  for (auto it = responses_.begin(); it != responses_.end(); ++it) {
    if (it->to.plane != plane) continue;
    meta = TxMeta{plane, it->to.ev, it->to.peer, false, 0};
    meta.reply = true;
    meta.reply_to = it->to.source;
    const size_t n = encode_endpoint(nullptr, &it->body, out);
    responses_.erase(it);
    --to_send_;
    return n;
  }
  if (unsent_ == 0) return 0;
  for (Probe& p : probes_) {
    if (p.sent_at != Instant::never() || p.plane != plane) continue;
    wire::EndpointRequest request;
    request.op = wire::EndpointOp::kEvProbe;
    request.request_id = p.request_id;
    request.tx_timestamp = wire::timestamp_of(now);
    p.sent_at = now;
    --unsent_;
    --to_send_;
    meta = TxMeta{plane, p.ev, p.peer, false, 0};
    return encode_endpoint(&request, nullptr, out);
  }
  return 0;
}

}  // namespace mrc
