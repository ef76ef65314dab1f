// Fuzz target for the encoders: builds a packet of any type from the fuzz bytes with unmasked
// field values (wider than their fields, undefined enum values, nonzero version/pad), encodes
// it, and decodes it again. The decoder must return exactly the field values masked to their
// widths, or, for a value the spec does not define, exactly the DecodeError for it. Also checks
// that encode() refuses a buffer one byte too small.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "core/wire/packet.h"
#include "wire_fuzz_util.h"

namespace mrc::wire {
namespace {

using fuzz::ByteReader;

constexpr Opcode kOpcodes[] = {
    Opcode::kWriteFirst,       Opcode::kWriteMiddle,  Opcode::kWriteLast, Opcode::kWriteLastImm,
    Opcode::kWriteOnly,        Opcode::kWriteOnlyImm, Opcode::kAck,       Opcode::kEndpointRequest,
    Opcode::kEndpointResponse, Opcode::kSack,         Opcode::kNack,      Opcode::kProbe};

bool nack_reason_defined(uint8_t r) {
  return r == 0x01 || r == 0x02 || r == 0x06 || r == 0x07 || r == 0x0A || r == 0x0B || r == 0x19;
}

// A packet as built and what decoding its encoding must produce.
struct Case {
  Packet packet;
  Packet expected;
  std::optional<DecodeError> error;
};

Bth read_bth(ByteReader& in, Opcode op, Bth* expected, std::optional<DecodeError>* error) {
  Bth b;
  b.opcode = op;
  b.solicited = in.take_bool();
  b.migration = in.take_bool();
  b.pad_count = in.take<uint8_t>();
  b.transport_version = in.take<uint8_t>();
  b.partition_key = in.take<uint16_t>();
  b.dest_qp = Qpn(in.take<uint32_t>());
  b.ack_request = in.take_bool();
  b.reserved_r = in.take_bool();
  b.retransmit = in.take_bool();
  b.timestamp_present = in.take_bool();
  b.psn = Psn(in.take<uint32_t>());
  *expected = b;
  expected->pad_count &= 0x3;
  expected->transport_version &= 0xF;
  expected->dest_qp = Qpn(b.dest_qp.value & kQpnMask);
  if (expected->transport_version != 0) {
    *error = DecodeError::kBadTransportVersion;
  } else if (expected->pad_count != 0) {
    *error = DecodeError::kBadPadCount;
  }
  return b;
}

Case data_case(ByteReader& in, Opcode op) {
  DataHeader h;
  DataHeader want;
  std::optional<DecodeError> error;
  h.bth = read_bth(in, op, &want.bth, &error);
  h.meth = {in.take<uint16_t>(), in.take<uint16_t>()};
  h.tseth = {in.take<uint16_t>(), in.take_bool(), in.take<uint8_t>()};
  h.reth = {in.take<uint64_t>(), in.take<uint32_t>(), in.take<uint32_t>()};
  h.immediate = in.take<uint32_t>();
  want.meth = h.meth;
  if (h.bth.timestamp_present)
    want.tseth = {h.tseth.tx_timestamp, h.tseth.service_time_request,
                  static_cast<uint8_t>(h.tseth.format & 0xF)};
  want.reth = h.reth;
  if (has_immediate(op)) want.immediate = h.immediate;
  std::span<const uint8_t> payload = in.rest();
  if (payload.size() > kMaxPayloadBytes) payload = payload.first(kMaxPayloadBytes);
  return {DataPacket{h, payload}, DataPacket{want, payload}, error};
}

Sack read_sack(ByteReader& in, Sack* want, std::optional<DecodeError>* error) {
  Sack s;
  const auto mode = in.take<uint8_t>();
  s.skip_mode = static_cast<SkipMode>(mode);
  s.probe_response = in.take_bool();
  s.ack_psn_offset = in.take<int16_t>();
  s.echoed_entropy = in.take<uint32_t>();
  s.source_pdc = in.take<uint16_t>();
  s.dest_pdc = in.take<uint16_t>();
  s.cumulative_psn = Psn(in.take<uint32_t>());
  s.cc_type = in.take<uint8_t>();
  s.cc_flags = in.take<uint8_t>();
  s.mpr = in.take<uint8_t>();
  s.sack_offset = in.take<int16_t>();
  s.bitmap = in.take<uint64_t>();
  s.cc = {in.take<uint16_t>(), in.take<uint16_t>(), in.take_bool(), in.take<uint8_t>(),
          in.take<uint32_t>()};
  *want = s;
  want->skip_mode = static_cast<SkipMode>(mode & 0x3);
  want->cc_type &= 0xF;
  want->cc_flags &= 0xF;
  want->cc.out_of_order_count &= 0x7FFF;
  want->cc.receiver_cwnd_penalty &= 0x7F;
  want->cc.received_bytes &= 0xFFFFFF;
  if ((mode & 0x3) == 3 && !*error) *error = DecodeError::kBadReservedField;
  return s;
}

Nack read_nack(ByteReader& in, Nack* want, std::optional<DecodeError>* error) {
  Nack n;
  n.reason = static_cast<NackReason>(in.take<uint8_t>());
  n.vendor_info = in.take<uint8_t>();
  n.echoed_entropy = in.take<uint32_t>();
  n.source_pdc = in.take<uint16_t>();
  n.dest_pdc = in.take<uint16_t>();
  n.nack_psn = Psn(in.take<uint32_t>());
  n.cc_type = in.take<uint8_t>();
  n.cc_flags = in.take<uint8_t>();
  n.echoed_timestamp = in.take<uint16_t>();
  *want = n;
  want->cc_type &= 0xF;
  want->cc_flags &= 0xF;
  if (!nack_reason_defined(static_cast<uint8_t>(n.reason)) && !*error) {
    *error = DecodeError::kBadReservedField;
  }
  return n;
}

Probe read_probe(ByteReader& in, Probe* want) {
  Probe p{in.take<uint8_t>(),  in.take<uint16_t>(), in.take<uint16_t>(), in.take<uint16_t>(),
          in.take<uint16_t>(), in.take_bool(),      in.take<uint8_t>()};
  *want = p;
  want->format &= 0xF;
  return p;
}

EndpointOp read_op(ByteReader& in, EndpointOp* want, std::optional<DecodeError>* error) {
  const auto raw = in.take<uint8_t>();
  *want = static_cast<EndpointOp>(raw & 0x3);
  if ((raw & 0x3) > 1 && !*error) *error = DecodeError::kBadReservedField;
  return static_cast<EndpointOp>(raw);
}

Case control_case(ByteReader& in, Opcode op) {
  ControlPacket c{Bth{}, Ack{}};
  ControlPacket want{Bth{}, Ack{}};
  std::optional<DecodeError> error;
  c.bth = read_bth(in, op, &want.bth, &error);
  switch (op) {
    case Opcode::kAck: {
      const Ack a{in.take<uint8_t>(), in.take<uint32_t>()};
      c.body = a;
      want.body = Ack{a.syndrome, a.msn & 0xFFFFFFu};
      break;
    }
    case Opcode::kEndpointRequest: {
      EndpointRequest r;
      EndpointRequest w;
      r.op = read_op(in, &w.op, &error);
      r.vendor_info = in.take<uint8_t>();
      r.port_status_mask = in.take<uint32_t>();
      r.request_id = in.take<uint32_t>();
      r.tx_timestamp = in.take<uint16_t>();
      r.service_time_request = in.take_bool();
      r.format = in.take<uint8_t>();
      const EndpointOp op_want = w.op;
      w = r;
      w.op = op_want;
      w.format &= 0xF;
      c.body = r;
      want.body = w;
      break;
    }
    case Opcode::kEndpointResponse: {
      EndpointResponse r;
      EndpointOp op_want{};
      r.op = read_op(in, &op_want, &error);
      r.port_status_mask = in.take<uint32_t>();
      r.request_id = in.take<uint32_t>();
      r.service_time_ns = in.take<uint32_t>();
      r.echoed_timestamp = in.take<uint16_t>();
      EndpointResponse w = r;
      w.op = op_want;
      c.body = r;
      want.body = w;
      break;
    }
    case Opcode::kSack:
      c.body = read_sack(in, &want.body.emplace<Sack>(), &error);
      break;
    case Opcode::kNack:
      c.body = read_nack(in, &want.body.emplace<Nack>(), &error);
      break;
    default:
      c.body = read_probe(in, &want.body.emplace<Probe>());
      break;
  }
  return {c, want, error};
}

}  // namespace
}  // namespace mrc::wire

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mrc::wire;
  fuzz::ByteReader in(data, size);
  const Opcode op = kOpcodes[in.take<uint8_t>() % std::size(kOpcodes)];
  const Case c = is_data(op) ? data_case(in, op) : control_case(in, op);

  std::vector<uint8_t> wire(kMaxDatagramBytes);
  const size_t n = encode(c.packet, wire);
  WIRE_FUZZ_CHECK(n > 0);
  std::vector<uint8_t> too_small(n - 1);
  WIRE_FUZZ_CHECK(encode(c.packet, too_small) == 0);
  wire.resize(n);

  auto decoded = decode(wire);
  if (c.error) {
    WIRE_FUZZ_CHECK(!decoded.ok() && decoded.error() == *c.error);
    return 0;
  }
  WIRE_FUZZ_CHECK(decoded.ok());
  WIRE_FUZZ_CHECK(fuzz::same_packet(decoded.value(), c.expected));
  return 0;
}
