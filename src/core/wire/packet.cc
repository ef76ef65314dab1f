// The MRC wire codec: encoders and the decoder for every packet type declared in packet.h.
//
// Each header has one put_* function (struct -> bytes) and one get_* function (bytes -> struct),
// written against the byte offsets documented in docs/PROTOCOL.md ("Wire format"). Encoders mask
// every value to its field width and write reserved bits as zero; decoders ignore reserved bits
// but reject enumerated fields holding values the spec does not define. decode() establishes
// that all the bytes it will read exist before it reads them, in the fixed order of checks
// documented in packet.h and PROTOCOL.md (length, opcode, version, pad, header completeness,
// ICRC, the rest), so the error it reports does not depend on incidental code order.
//
// Data packets are the hot path (one write_data_header + seal per packet sent, one decode per
// packet received): nothing here allocates or throws, and the only per-byte work is the ICRC.
#include "core/wire/packet.h"

#include <cstring>

#include "util/bytes.h"

namespace mrc::wire {
namespace {

constexpr size_t kSethOnlyBytes = 28;  // SETH without the CC_STATE that follows it

// BTH byte 1 and byte 8 bits.
constexpr uint8_t kBthMigration = 0x80;
constexpr uint8_t kBthSolicited = 0x40;
constexpr uint8_t kBthPadMask = 0x30;
constexpr int kBthPadShift = 4;
constexpr uint8_t kBthVersionMask = 0x0F;
constexpr uint8_t kBthAckRequest = 0x80;
constexpr uint8_t kBthReservedR = 0x40;
constexpr uint8_t kBthRetransmit = 0x20;
constexpr uint8_t kBthTimestamp = 0x10;

// The 16-bit word shared by TSETH, PETH and ERTH: tsr (bit 15) | reserved | ftype (bits 3-0).
constexpr uint16_t kTsrBit = 0x8000;
constexpr uint8_t kFormatMask = 0x0F;

constexpr uint8_t u8(uint32_t v) {
  return static_cast<uint8_t>(v);
}
constexpr uint8_t flag(bool set, uint8_t bit) {
  return set ? bit : uint8_t{0};
}

constexpr uint16_t timestamp_word(bool tsr, uint8_t format) {
  return static_cast<uint16_t>((tsr ? kTsrBit : 0u) | (format & kFormatMask));
}

bool is_known_opcode(uint8_t b) {
  switch (static_cast<Opcode>(b)) {
    case Opcode::kWriteFirst:
    case Opcode::kWriteMiddle:
    case Opcode::kWriteLast:
    case Opcode::kWriteLastImm:
    case Opcode::kWriteOnly:
    case Opcode::kWriteOnlyImm:
    case Opcode::kAck:
    case Opcode::kEndpointRequest:
    case Opcode::kEndpointResponse:
    case Opcode::kSack:
    case Opcode::kNack:
    case Opcode::kProbe:
      return true;
  }
  return false;
}

bool is_known_nack_reason(uint8_t b) {
  switch (static_cast<NackReason>(b)) {
    case NackReason::kTrimmed:
    case NackReason::kTrimmedLastHop:
    case NackReason::kNoBitmap:
    case NackReason::kNoPacketBuffer:
    case NackReason::kNoResource:
    case NackReason::kPsnOutOfWindow:
    case NackReason::kUnexpectedEvent:
      return true;
  }
  return false;
}

// Extension-header bytes after the BTH of a control packet.
size_t control_body_bytes(Opcode op) {
  switch (op) {
    case Opcode::kAck:
      return kAckBytes;
    case Opcode::kEndpointRequest:
      return kEndpointRequestBytes;
    case Opcode::kEndpointResponse:
      return kEndpointResponseBytes;
    case Opcode::kSack:
      return kSackBytes;
    case Opcode::kNack:
      return kNackBytes;
    case Opcode::kProbe:
      return kProbeBytes;
    default:
      break;
  }
  MRC_ASSERT(false && "not a control opcode");
  return 0;
}

// ---- BTH -------------------------------------------------------------------------------------

void put_bth(const Bth& b, uint8_t* p) {
  p[0] = static_cast<uint8_t>(b.opcode);
  p[1] =
      u8(flag(b.migration, kBthMigration) | flag(b.solicited, kBthSolicited) |
         ((b.pad_count << kBthPadShift) & kBthPadMask) | (b.transport_version & kBthVersionMask));
  store_be16(p + 2, b.partition_key);
  p[4] = 0;
  store_be24(p + 5, b.dest_qp.value & kQpnMask);
  p[8] = u8(flag(b.ack_request, kBthAckRequest) | flag(b.reserved_r, kBthReservedR) |
            flag(b.retransmit, kBthRetransmit) | flag(b.timestamp_present, kBthTimestamp));
  store_be24(p + 9, b.psn.value);
}

// The get_* functions fill a struct in place rather than returning one: building a header field by
// field in a temporary and then copying it costs a store-forwarding stall per wide load.
void get_bth(const uint8_t* p, Bth* b) {
  b->opcode = static_cast<Opcode>(p[0]);
  b->migration = (p[1] & kBthMigration) != 0;
  b->solicited = (p[1] & kBthSolicited) != 0;
  b->pad_count = u8((p[1] & kBthPadMask) >> kBthPadShift);
  b->transport_version = u8(p[1] & kBthVersionMask);
  b->partition_key = load_be16(p + 2);
  b->dest_qp = Qpn(load_be24(p + 5));
  b->ack_request = (p[8] & kBthAckRequest) != 0;
  b->reserved_r = (p[8] & kBthReservedR) != 0;
  b->retransmit = (p[8] & kBthRetransmit) != 0;
  b->timestamp_present = (p[8] & kBthTimestamp) != 0;
  b->psn = Psn(load_be24(p + 9));
}

// ---- Data headers: METH, TSETH, RETH, ImmDt ---------------------------------------------------

size_t put_data_header(const DataHeader& h, uint8_t* p) {
  uint8_t* const start = p;
  put_bth(h.bth, p);
  p += kBthBytes;
  store_be16(p, h.meth.rq_msn);
  store_be16(p + 2, h.meth.msn);
  p += kMethBytes;
  if (h.bth.timestamp_present) {
    store_be16(p, h.tseth.tx_timestamp);
    store_be16(p + 2, timestamp_word(h.tseth.service_time_request, h.tseth.format));
    p += kTsethBytes;
  }
  store_be64(p, h.reth.virtual_address);
  store_be32(p + 8, h.reth.rkey);
  store_be32(p + 12, h.reth.dma_length);
  p += kRethBytes;
  if (has_immediate(h.bth.opcode)) {
    store_be32(p, h.immediate);
    p += kImmBytes;
  }
  return static_cast<size_t>(p - start);
}

// REQUIRES: the whole header (data_header_bytes) is readable at p; h is default-initialized.
void get_data_header(const uint8_t* p, DataHeader* h) {
  get_bth(p, &h->bth);
  p += kBthBytes;
  h->meth.rq_msn = load_be16(p);
  h->meth.msn = load_be16(p + 2);
  p += kMethBytes;
  if (h->bth.timestamp_present) {
    h->tseth.tx_timestamp = load_be16(p);
    const uint16_t word = load_be16(p + 2);
    h->tseth.service_time_request = (word & kTsrBit) != 0;
    h->tseth.format = u8(word & kFormatMask);
    p += kTsethBytes;
  }
  h->reth.virtual_address = load_be64(p);
  h->reth.rkey = load_be32(p + 8);
  h->reth.dma_length = load_be32(p + 12);
  p += kRethBytes;
  if (has_immediate(h->bth.opcode)) h->immediate = load_be32(p);
}

// ---- SACK: SETH (28 B) + CC_STATE (8 B) --------------------------------------------------------

constexpr uint8_t kSkipModeMask = 0x03;
constexpr int kSkipModeShift = 5;
constexpr uint8_t kProbeResponseBit = 0x02;
constexpr uint32_t kOooMask = 0x7FFF;
constexpr uint32_t kRcBit = 0x80000000u;
constexpr uint32_t kPenaltyMask = 0x7F;
constexpr int kPenaltyShift = 24;
constexpr uint32_t kReceivedBytesMask = 0xFFFFFF;

uint8_t cc_byte(uint8_t cc_type, uint8_t cc_flags) {
  return u8(((cc_type & 0x0Fu) << 4) | (cc_flags & 0x0Fu));
}

void put_sack(const Sack& s, uint8_t* p) {
  p[0] = 0;
  p[1] = u8(((static_cast<uint32_t>(s.skip_mode) & kSkipModeMask) << kSkipModeShift) |
            flag(s.probe_response, kProbeResponseBit));
  store_be16(p + 2, static_cast<uint16_t>(s.ack_psn_offset));
  store_be32(p + 4, s.echoed_entropy);
  store_be16(p + 8, s.source_pdc);
  store_be16(p + 10, s.dest_pdc);
  p[12] = 0;
  store_be24(p + 13, s.cumulative_psn.value);
  p[16] = cc_byte(s.cc_type, s.cc_flags);
  p[17] = s.mpr;
  store_be16(p + 18, static_cast<uint16_t>(s.sack_offset));
  store_be64(p + 20, s.bitmap);
  uint8_t* const cc = p + kSethOnlyBytes;
  store_be32(cc, (uint32_t{s.cc.echoed_timestamp} << 16) | (s.cc.out_of_order_count & kOooMask));
  store_be32(cc + 4, (s.cc.rc ? kRcBit : 0u) |
                         ((s.cc.receiver_cwnd_penalty & kPenaltyMask) << kPenaltyShift) |
                         (s.cc.received_bytes & kReceivedBytesMask));
}

uint8_t sack_skip_mode(const uint8_t* p) {
  return u8((p[1] >> kSkipModeShift) & kSkipModeMask);
}

// REQUIRES: sack_defined(p).
void get_sack(const uint8_t* p, Sack* s) {
  s->skip_mode = static_cast<SkipMode>(sack_skip_mode(p));
  s->probe_response = (p[1] & kProbeResponseBit) != 0;
  s->ack_psn_offset = static_cast<int16_t>(load_be16(p + 2));
  s->echoed_entropy = load_be32(p + 4);
  s->source_pdc = load_be16(p + 8);
  s->dest_pdc = load_be16(p + 10);
  s->cumulative_psn = Psn(load_be24(p + 13));
  s->cc_type = u8(p[16] >> 4);
  s->cc_flags = u8(p[16] & 0x0Fu);
  s->mpr = p[17];
  s->sack_offset = static_cast<int16_t>(load_be16(p + 18));
  s->bitmap = load_be64(p + 20);
  const uint8_t* const cc = p + kSethOnlyBytes;
  const uint32_t word0 = load_be32(cc);
  const uint32_t word1 = load_be32(cc + 4);
  s->cc.echoed_timestamp = static_cast<uint16_t>(word0 >> 16);
  s->cc.out_of_order_count = static_cast<uint16_t>(word0 & kOooMask);
  s->cc.rc = (word1 & kRcBit) != 0;
  s->cc.receiver_cwnd_penalty = u8((word1 >> kPenaltyShift) & kPenaltyMask);
  s->cc.received_bytes = word1 & kReceivedBytesMask;
}

// ---- NACK: NETH (20 B) ------------------------------------------------------------------------

void put_nack(const Nack& n, uint8_t* p) {
  p[0] = 0;
  p[1] = 0;
  p[2] = static_cast<uint8_t>(n.reason);
  p[3] = n.vendor_info;
  store_be32(p + 4, n.echoed_entropy);
  store_be16(p + 8, n.source_pdc);
  store_be16(p + 10, n.dest_pdc);
  p[12] = 0;
  store_be24(p + 13, n.nack_psn.value);
  p[16] = cc_byte(n.cc_type, n.cc_flags);
  p[17] = 0;
  store_be16(p + 18, n.echoed_timestamp);
}

// REQUIRES: is_known_nack_reason(p[2]).
void get_nack(const uint8_t* p, Nack* n) {
  n->reason = static_cast<NackReason>(p[2]);
  n->vendor_info = p[3];
  n->echoed_entropy = load_be32(p + 4);
  n->source_pdc = load_be16(p + 8);
  n->dest_pdc = load_be16(p + 10);
  n->nack_psn = Psn(load_be24(p + 13));
  n->cc_type = u8(p[16] >> 4);
  n->cc_flags = u8(p[16] & 0x0Fu);
  n->echoed_timestamp = load_be16(p + 18);
}

// ---- Probe: PETH (16 B) -----------------------------------------------------------------------

void put_probe(const Probe& r, uint8_t* p) {
  std::memset(p, 0, kProbeBytes);
  p[3] = r.vendor_info;
  store_be16(p + 4, r.probe_id);
  store_be16(p + 8, r.source_pdc);
  store_be16(p + 10, r.dest_pdc);
  store_be16(p + 12, r.tx_timestamp);
  store_be16(p + 14, timestamp_word(r.service_time_request, r.format));
}

void get_probe(const uint8_t* p, Probe* r) {
  r->vendor_info = p[3];
  r->probe_id = load_be16(p + 4);
  r->source_pdc = load_be16(p + 8);
  r->dest_pdc = load_be16(p + 10);
  r->tx_timestamp = load_be16(p + 12);
  const uint16_t word = load_be16(p + 14);
  r->service_time_request = (word & kTsrBit) != 0;
  r->format = u8(word & kFormatMask);
}

// ---- Endpoint request / response: ERTH (16 B), EETH (36 B) ------------------------------------

constexpr uint8_t kEndpointOpMask = 0x03;
constexpr int kEethOpShift = 4;

uint8_t erth_op(const uint8_t* p) {
  return u8(p[1] & kEndpointOpMask);
}
uint8_t eeth_op(const uint8_t* p) {
  return u8((p[1] >> kEethOpShift) & kEndpointOpMask);
}
bool is_known_endpoint_op(uint8_t raw) {
  return raw <= static_cast<uint8_t>(EndpointOp::kEvProbe);
}

void put_endpoint_request(const EndpointRequest& r, uint8_t* p) {
  std::memset(p, 0, kEndpointRequestBytes);
  p[1] = u8(static_cast<uint32_t>(r.op) & kEndpointOpMask);
  p[3] = r.vendor_info;
  store_be32(p + 4, r.port_status_mask);
  store_be32(p + 8, r.request_id);
  store_be16(p + 12, r.tx_timestamp);
  store_be16(p + 14, timestamp_word(r.service_time_request, r.format));
}

// REQUIRES: is_known_endpoint_op(erth_op(p)).
void get_endpoint_request(const uint8_t* p, EndpointRequest* r) {
  r->op = static_cast<EndpointOp>(erth_op(p));
  r->vendor_info = p[3];
  r->port_status_mask = load_be32(p + 4);
  r->request_id = load_be32(p + 8);
  r->tx_timestamp = load_be16(p + 12);
  const uint16_t word = load_be16(p + 14);
  r->service_time_request = (word & kTsrBit) != 0;
  r->format = u8(word & kFormatMask);
}

void put_endpoint_response(const EndpointResponse& r, uint8_t* p) {
  std::memset(p, 0, kEndpointResponseBytes);
  p[1] = u8((static_cast<uint32_t>(r.op) & kEndpointOpMask) << kEethOpShift);
  store_be32(p + 4, r.port_status_mask);
  store_be32(p + 8, r.request_id);
  store_be32(p + 12, r.service_time_ns);
  store_be16(p + 28, r.echoed_timestamp);
}

// REQUIRES: is_known_endpoint_op(eeth_op(p)).
void get_endpoint_response(const uint8_t* p, EndpointResponse* r) {
  r->op = static_cast<EndpointOp>(eeth_op(p));
  r->port_status_mask = load_be32(p + 4);
  r->request_id = load_be32(p + 8);
  r->service_time_ns = load_be32(p + 12);
  r->echoed_timestamp = load_be16(p + 28);
}

// ---- ACK: AETH (4 B) --------------------------------------------------------------------------

void put_ack(const Ack& a, uint8_t* p) {
  p[0] = a.syndrome;
  store_be24(p + 1, a.msn & 0xFFFFFFu);
}

void get_ack(const uint8_t* p, Ack* a) {
  a->syndrome = p[0];
  a->msn = load_be24(p + 1);
}

// ---- Control packets --------------------------------------------------------------------------

// The opcode that carries each control body type.
struct OpcodeOf {
  Opcode operator()(const Ack&) const { return Opcode::kAck; }
  Opcode operator()(const EndpointRequest&) const { return Opcode::kEndpointRequest; }
  Opcode operator()(const EndpointResponse&) const { return Opcode::kEndpointResponse; }
  Opcode operator()(const Sack&) const { return Opcode::kSack; }
  Opcode operator()(const Nack&) const { return Opcode::kNack; }
  Opcode operator()(const Probe&) const { return Opcode::kProbe; }
};

// Writes a control body at p.
struct PutBody {
  uint8_t* p;
  void operator()(const Ack& b) const { put_ack(b, p); }
  void operator()(const EndpointRequest& b) const { put_endpoint_request(b, p); }
  void operator()(const EndpointResponse& b) const { put_endpoint_response(b, p); }
  void operator()(const Sack& b) const { put_sack(b, p); }
  void operator()(const Nack& b) const { put_nack(b, p); }
  void operator()(const Probe& b) const { put_probe(b, p); }
};

size_t encode_control(const ControlPacket& packet, std::span<uint8_t> out, bool defer_icrc) {
  const Opcode op = std::visit(OpcodeOf{}, packet.body);
  MRC_ASSERT(op == packet.bth.opcode);
  const size_t length = kBthBytes + control_body_bytes(op);
  if (out.size() < length + kIcrcBytes) return 0;
  put_bth(packet.bth, out.data());
  std::visit(PutBody{out.data() + kBthBytes}, packet.body);
  return defer_icrc ? seal_deferred(out, length) : seal(out, length);
}

size_t encode_data(const DataPacket& packet, std::span<uint8_t> out, bool defer_icrc) {
  MRC_ASSERT(is_data(packet.header.bth.opcode));
  MRC_ASSERT(packet.payload.size() <= kMaxPayloadBytes);
  const size_t header =
      data_header_bytes(packet.header.bth.opcode, packet.header.bth.timestamp_present);
  const size_t length = header + packet.payload.size();
  if (out.size() < length + kIcrcBytes) return 0;
  put_data_header(packet.header, out.data());
  if (!packet.payload.empty()) {
    std::memcpy(out.data() + header, packet.payload.data(), packet.payload.size());
  }
  return defer_icrc ? seal_deferred(out, length) : seal(out, length);
}

// ---- Decoding ---------------------------------------------------------------------------------

// Decoded packets are built in the return slot (one named result, so no copy of it is made). The
// slot starts as a copy of a constant rather than a freshly default-constructed temporary: the
// temporary's field-by-field stores, read back at once by the wide loads of the copy into the
// slot, would each stall store forwarding (~30 ns per decode, measured).
constexpr Packet kEmptyDataPacket{std::in_place_type<DataPacket>};
constexpr Packet kEmptyControlPacket{std::in_place_type<ControlPacket>};

// REQUIRES: the datagram passed every check; the header is readable at p.
Result<Packet, DecodeError> make_data_packet(const uint8_t* p, size_t header,
                                             size_t payload_bytes) {
  Result<Packet, DecodeError> result = kEmptyDataPacket;
  if (auto* data = std::get_if<DataPacket>(&result.value())) {
    get_data_header(p, &data->header);
    data->payload = std::span<const uint8_t>(p + header, payload_bytes);
  }
  return result;
}

Result<Packet, DecodeError> decode_data(std::span<const uint8_t> datagram, DecodeOptions options) {
  const uint8_t* p = datagram.data();
  const size_t header = data_header_bytes(static_cast<Opcode>(p[0]), (p[8] & kBthTimestamp) != 0);
  const size_t required = options.trimmed ? header : header + kIcrcBytes;
  if (datagram.size() < required) return Err{DecodeError::kTruncatedHeader};
  size_t payload_bytes = 0;
  if (!options.trimmed) {
    if (options.verify_icrc && !icrc_matches(datagram)) return Err{DecodeError::kBadIcrc};
    payload_bytes = datagram.size() - header - kIcrcBytes;
    if (payload_bytes > kMaxPayloadBytes) return Err{DecodeError::kPayloadTooLong};
  }
  return make_data_packet(p, header, payload_bytes);
}

// Whether the enumerated fields of a control body hold values the spec defines.
bool control_body_defined(Opcode op, const uint8_t* body) {
  switch (op) {
    case Opcode::kEndpointRequest:
      return is_known_endpoint_op(erth_op(body));
    case Opcode::kEndpointResponse:
      return is_known_endpoint_op(eeth_op(body));
    case Opcode::kSack:
      return sack_skip_mode(body) <= static_cast<uint8_t>(SkipMode::kAlwaysSkip);
    case Opcode::kNack:
      return is_known_nack_reason(body[2]);
    default:
      return true;
  }
}

// REQUIRES: the body is readable at p and control_body_defined(op, p).
void get_control_body(const uint8_t* p, Opcode op, decltype(ControlPacket::body)* body) {
  switch (op) {
    case Opcode::kAck:
      get_ack(p, &body->emplace<Ack>());
      break;
    case Opcode::kEndpointRequest:
      get_endpoint_request(p, &body->emplace<EndpointRequest>());
      break;
    case Opcode::kEndpointResponse:
      get_endpoint_response(p, &body->emplace<EndpointResponse>());
      break;
    case Opcode::kSack:
      get_sack(p, &body->emplace<Sack>());
      break;
    case Opcode::kNack:
      get_nack(p, &body->emplace<Nack>());
      break;
    case Opcode::kProbe:
      get_probe(p, &body->emplace<Probe>());
      break;
    default:
      MRC_ASSERT(false && "not a control opcode");
  }
}

// REQUIRES: the datagram passed every check, including control_body_defined.
Result<Packet, DecodeError> make_control_packet(const uint8_t* p) {
  Result<Packet, DecodeError> result = kEmptyControlPacket;
  if (auto* control = std::get_if<ControlPacket>(&result.value())) {
    get_bth(p, &control->bth);
    get_control_body(p + kBthBytes, control->bth.opcode, &control->body);
  }
  return result;
}

Result<Packet, DecodeError> decode_control(std::span<const uint8_t> datagram,
                                           DecodeOptions options) {
  // Control packets travel in a class that is never trimmed, so options.trimmed does not apply.
  const uint8_t* p = datagram.data();
  const size_t length = kBthBytes + control_body_bytes(static_cast<Opcode>(p[0])) + kIcrcBytes;
  if (datagram.size() < length) return Err{DecodeError::kTruncatedHeader};
  if (options.verify_icrc && !icrc_matches(datagram)) return Err{DecodeError::kBadIcrc};
  if (datagram.size() != length) return Err{DecodeError::kTrailingBytes};
  if (!control_body_defined(static_cast<Opcode>(p[0]), p + kBthBytes)) {
    return Err{DecodeError::kBadReservedField};
  }
  return make_control_packet(p);
}

}  // namespace

size_t data_header_bytes(Opcode op, bool timestamp_present) {
  return kBthBytes + kMethBytes + (timestamp_present ? kTsethBytes : 0) + kRethBytes +
         (has_immediate(op) ? kImmBytes : 0);
}

size_t plain_header_bytes(std::span<const uint8_t> datagram) {
  if (datagram.size() < kBthBytes + kIcrcBytes) return 0;
  const auto op = static_cast<Opcode>(datagram[0]);
  if (!is_data(op)) return datagram.size() - kIcrcBytes;
  const size_t header = data_header_bytes(op, (datagram[8] & kBthTimestamp) != 0);
  return header + kIcrcBytes <= datagram.size() ? header : 0;
}

bool icrc_matches(std::span<const uint8_t> datagram) {
  MRC_ASSERT(datagram.size() >= kIcrcBytes);
  const size_t covered = datagram.size() - kIcrcBytes;
  return icrc32(datagram.first(covered)) == load_be32(datagram.data() + covered);
}

size_t write_data_header(const DataHeader& h, std::span<uint8_t> out) {
  MRC_ASSERT(is_data(h.bth.opcode));
  MRC_ASSERT(out.size() >= data_header_bytes(h.bth.opcode, h.bth.timestamp_present));
  return put_data_header(h, out.data());
}

size_t seal(std::span<uint8_t> out, size_t length) {
  MRC_ASSERT(length <= out.size() && out.size() - length >= kIcrcBytes);
  store_be32(out.data() + length, icrc32(out.first(length)));
  return length + kIcrcBytes;
}

size_t seal_deferred(std::span<uint8_t> out, size_t length) {
  MRC_ASSERT(length <= out.size() && out.size() - length >= kIcrcBytes);
  store_be32(out.data() + length, 0);
  return length + kIcrcBytes;
}

size_t encode(const Packet& packet, std::span<uint8_t> out, bool defer_icrc) {
  if (const auto* data = std::get_if<DataPacket>(&packet)) {
    return encode_data(*data, out, defer_icrc);
  }
  return encode_control(std::get<ControlPacket>(packet), out, defer_icrc);
}

Result<Packet, DecodeError> decode(std::span<const uint8_t> datagram, DecodeOptions options) {
  if (datagram.size() < kBthBytes + kIcrcBytes) return Err{DecodeError::kTooShort};
  const uint8_t* p = datagram.data();
  if (!is_known_opcode(p[0])) return Err{DecodeError::kUnknownOpcode};
  if ((p[1] & kBthVersionMask) != 0) return Err{DecodeError::kBadTransportVersion};
  if ((p[1] & kBthPadMask) != 0) return Err{DecodeError::kBadPadCount};
  if ((p[8] & kBthSecureFlag) != 0) return Err{DecodeError::kSecured};
  if (is_data(static_cast<Opcode>(p[0]))) return decode_data(datagram, options);
  return decode_control(datagram, options);
}

std::string_view to_string(DecodeError e) {
  switch (e) {
    case DecodeError::kTooShort:
      return "too short";
    case DecodeError::kUnknownOpcode:
      return "unknown opcode";
    case DecodeError::kBadTransportVersion:
      return "bad transport version";
    case DecodeError::kTruncatedHeader:
      return "truncated header";
    case DecodeError::kBadIcrc:
      return "bad ICRC";
    case DecodeError::kTrailingBytes:
      return "trailing bytes";
    case DecodeError::kPayloadTooLong:
      return "payload too long";
    case DecodeError::kBadPadCount:
      return "bad pad count";
    case DecodeError::kBadReservedField:
      return "bad reserved field";
    case DecodeError::kSecured:
      return "secure packet";
  }
  return "unknown decode error";
}

std::string_view to_string(Opcode op) {
  switch (op) {
    case Opcode::kWriteFirst:
      return "WRITE_FIRST";
    case Opcode::kWriteMiddle:
      return "WRITE_MIDDLE";
    case Opcode::kWriteLast:
      return "WRITE_LAST";
    case Opcode::kWriteLastImm:
      return "WRITE_LAST_IMM";
    case Opcode::kWriteOnly:
      return "WRITE_ONLY";
    case Opcode::kWriteOnlyImm:
      return "WRITE_ONLY_IMM";
    case Opcode::kAck:
      return "ACK";
    case Opcode::kEndpointRequest:
      return "ENDPOINT_REQUEST";
    case Opcode::kEndpointResponse:
      return "ENDPOINT_RESPONSE";
    case Opcode::kSack:
      return "SACK";
    case Opcode::kNack:
      return "NACK";
    case Opcode::kProbe:
      return "PROBE";
  }
  return "UNKNOWN_OPCODE";
}

std::string_view to_string(NackReason r) {
  switch (r) {
    case NackReason::kTrimmed:
      return "TRIMMED";
    case NackReason::kTrimmedLastHop:
      return "TRIMMED_LASTHOP";
    case NackReason::kNoBitmap:
      return "NO_BITMAP";
    case NackReason::kNoPacketBuffer:
      return "NO_PKT_BUFFER";
    case NackReason::kNoResource:
      return "NO_RESOURCE";
    case NackReason::kPsnOutOfWindow:
      return "PSN_OOR_WINDOW";
    case NackReason::kUnexpectedEvent:
      return "UNEXP_EVENT";
  }
  return "UNKNOWN_NACK_REASON";
}

}  // namespace mrc::wire
