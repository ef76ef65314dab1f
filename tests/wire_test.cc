// Tests of the wire codec (src/core/wire): round trips of every packet type, byte-exact layouts
// checked against hand-computed bytes, every DecodeError from a crafted datagram, robustness
// against truncation, garbage and bit flips, trimmed decoding, and the ICRC implementations
// against known CRC-32 check values, a bit-at-a-time reference, and each other.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#if defined(__unix__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "core/wire/icrc.h"
#include "core/wire/packet.h"
#include "util/bytes.h"
#include "util/prng.h"

namespace mrc::wire {
namespace {

using Bytes = std::vector<uint8_t>;

constexpr Opcode kDataOpcodes[] = {Opcode::kWriteFirst, Opcode::kWriteMiddle,
                                   Opcode::kWriteLast,  Opcode::kWriteLastImm,
                                   Opcode::kWriteOnly,  Opcode::kWriteOnlyImm};
constexpr Opcode kControlOpcodes[] = {Opcode::kAck,
                                      Opcode::kEndpointRequest,
                                      Opcode::kEndpointResponse,
                                      Opcode::kSack,
                                      Opcode::kNack,
                                      Opcode::kProbe};
constexpr NackReason kNackReasons[] = {NackReason::kTrimmed,        NackReason::kTrimmedLastHop,
                                       NackReason::kNoBitmap,       NackReason::kNoPacketBuffer,
                                       NackReason::kNoResource,     NackReason::kPsnOutOfWindow,
                                       NackReason::kUnexpectedEvent};

// ---- Helpers ----------------------------------------------------------------------------------

Bytes encode_bytes(const Packet& packet) {
  Bytes out(kMaxDatagramBytes + 64);
  const size_t n = encode(packet, out);
  EXPECT_GT(n, 0u);
  out.resize(n);
  return out;
}

// Rewrites the ICRC of a datagram whose bytes were edited by hand.
void reseal(Bytes& datagram) {
  ASSERT_GE(datagram.size(), kIcrcBytes);
  seal(datagram, datagram.size() - kIcrcBytes);
}

// Bit-at-a-time CRC-32 straight from the definition, independent of the table and CLMUL code.
uint32_t reference_crc32(std::span<const uint8_t> bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (uint8_t b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ ((crc & 1u) ? 0xEDB88320u : 0u);
  }
  return ~crc;
}

std::span<const uint8_t> as_bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

Bth random_bth(Prng& rng, Opcode op) {
  Bth b;
  b.opcode = op;
  b.solicited = rng.chance(0.5);
  b.migration = rng.chance(0.5);
  b.partition_key = static_cast<uint16_t>(rng.next_u32());
  b.dest_qp = Qpn(rng.next_u32() & kQpnMask);
  b.ack_request = rng.chance(0.5);
  b.reserved_r = rng.chance(0.5);
  b.retransmit = rng.chance(0.5);
  b.timestamp_present = rng.chance(0.5);
  b.psn = Psn(rng.next_u32());
  return b;
}

DataHeader random_data_header(Prng& rng, Opcode op, bool timestamp_present) {
  DataHeader h;
  h.bth = random_bth(rng, op);
  h.bth.timestamp_present = timestamp_present;
  h.meth = {static_cast<uint16_t>(rng.next_u32()), static_cast<uint16_t>(rng.next_u32())};
  if (timestamp_present) {
    h.tseth = {static_cast<uint16_t>(rng.next_u32()), rng.chance(0.5),
               static_cast<uint8_t>(rng.below(16))};
  }
  h.reth = {rng.next_u64(), rng.next_u32(), rng.next_u32()};
  if (has_immediate(op)) h.immediate = rng.next_u32();
  return h;
}

Sack random_sack(Prng& rng) {
  Sack s;
  s.skip_mode = static_cast<SkipMode>(rng.below(3));
  s.probe_response = rng.chance(0.5);
  s.ack_psn_offset = static_cast<int16_t>(rng.next_u32());
  s.echoed_entropy = rng.next_u32();
  s.source_pdc = static_cast<uint16_t>(rng.next_u32());
  s.dest_pdc = static_cast<uint16_t>(rng.next_u32());
  s.cumulative_psn = Psn(rng.next_u32());
  s.cc_type = static_cast<uint8_t>(rng.below(16));
  s.cc_flags = static_cast<uint8_t>(rng.below(16));
  s.mpr = static_cast<uint8_t>(rng.next_u32());
  s.sack_offset = static_cast<int16_t>(rng.next_u32());
  s.bitmap = rng.next_u64();
  s.cc.echoed_timestamp = static_cast<uint16_t>(rng.next_u32());
  s.cc.out_of_order_count = static_cast<uint16_t>(rng.below(1u << 15));
  s.cc.rc = rng.chance(0.5);
  s.cc.receiver_cwnd_penalty = static_cast<uint8_t>(rng.below(128));
  s.cc.received_bytes = static_cast<uint32_t>(rng.below(1u << 24));
  return s;
}

Nack random_nack(Prng& rng) {
  Nack n;
  n.reason = kNackReasons[rng.below(std::size(kNackReasons))];
  n.vendor_info = static_cast<uint8_t>(rng.next_u32());
  n.echoed_entropy = rng.next_u32();
  n.source_pdc = static_cast<uint16_t>(rng.next_u32());
  n.dest_pdc = static_cast<uint16_t>(rng.next_u32());
  n.nack_psn = Psn(rng.next_u32());
  n.cc_type = static_cast<uint8_t>(rng.below(16));
  n.cc_flags = static_cast<uint8_t>(rng.below(16));
  n.echoed_timestamp = static_cast<uint16_t>(rng.next_u32());
  return n;
}

Probe random_probe(Prng& rng) {
  Probe p;
  p.vendor_info = static_cast<uint8_t>(rng.next_u32());
  p.probe_id = static_cast<uint16_t>(rng.next_u32());
  p.source_pdc = static_cast<uint16_t>(rng.next_u32());
  p.dest_pdc = static_cast<uint16_t>(rng.next_u32());
  p.tx_timestamp = static_cast<uint16_t>(rng.next_u32());
  p.service_time_request = rng.chance(0.5);
  p.format = static_cast<uint8_t>(rng.below(16));
  return p;
}

EndpointRequest random_endpoint_request(Prng& rng) {
  EndpointRequest r;
  r.op = static_cast<EndpointOp>(rng.below(2));
  r.vendor_info = static_cast<uint8_t>(rng.next_u32());
  r.port_status_mask = rng.next_u32();
  r.request_id = rng.next_u32();
  r.tx_timestamp = static_cast<uint16_t>(rng.next_u32());
  r.service_time_request = rng.chance(0.5);
  r.format = static_cast<uint8_t>(rng.below(16));
  return r;
}

EndpointResponse random_endpoint_response(Prng& rng) {
  EndpointResponse r;
  r.op = static_cast<EndpointOp>(rng.below(2));
  r.port_status_mask = rng.next_u32();
  r.request_id = rng.next_u32();
  r.service_time_ns = rng.next_u32();
  r.echoed_timestamp = static_cast<uint16_t>(rng.next_u32());
  return r;
}

ControlPacket random_control(Prng& rng, Opcode op) {
  ControlPacket c{random_bth(rng, op), Ack{}};
  switch (op) {
    case Opcode::kAck:
      c.body = Ack{static_cast<uint8_t>(rng.next_u32()), rng.next_u32() & 0xFFFFFFu};
      break;
    case Opcode::kEndpointRequest:
      c.body = random_endpoint_request(rng);
      break;
    case Opcode::kEndpointResponse:
      c.body = random_endpoint_response(rng);
      break;
    case Opcode::kSack:
      c.body = random_sack(rng);
      break;
    case Opcode::kNack:
      c.body = random_nack(rng);
      break;
    case Opcode::kProbe:
      c.body = random_probe(rng);
      break;
    default:
      ADD_FAILURE() << "not a control opcode";
  }
  return c;
}

// The datagram lengths of §1.1 of docs/PROTOCOL.md, minus BTH and ICRC.
size_t control_body_bytes(Opcode op) {
  switch (op) {
    case Opcode::kAck:
      return 4;
    case Opcode::kEndpointRequest:
      return 16;
    case Opcode::kEndpointResponse:  // 36, as a SACK
    case Opcode::kSack:
      return 36;
    case Opcode::kNack:
      return 20;
    case Opcode::kProbe:
      return 16;
    default:
      ADD_FAILURE() << "not a control opcode";
      return 0;
  }
}

void expect_same_packet(const Packet& a, const Packet& b) {
  ASSERT_EQ(a.index(), b.index());
  if (const auto* da = std::get_if<DataPacket>(&a)) {
    const auto& db = std::get<DataPacket>(b);
    EXPECT_EQ(da->header, db.header);
    EXPECT_TRUE(
        std::equal(da->payload.begin(), da->payload.end(), db.payload.begin(), db.payload.end()));
  } else {
    const auto& ca = std::get<ControlPacket>(a);
    const auto& cb = std::get<ControlPacket>(b);
    EXPECT_EQ(ca.bth, cb.bth);
    EXPECT_TRUE(ca.body == cb.body);
  }
}

DecodeError decode_error(std::span<const uint8_t> datagram, DecodeOptions options = {}) {
  auto r = decode(datagram, options);
  EXPECT_FALSE(r.ok());
  return r.ok() ? DecodeError::kTooShort : r.error();
}

// One valid datagram of every kind, for the robustness tests.
std::vector<Bytes> sample_datagrams(Prng& rng, Bytes& payload_storage) {
  payload_storage.resize(300);
  for (auto& b : payload_storage) b = static_cast<uint8_t>(rng.next_u32());
  std::vector<Bytes> out;
  for (Opcode op : kDataOpcodes) {
    for (bool ts : {false, true}) {
      const size_t len = rng.below(payload_storage.size());
      out.push_back(encode_bytes(
          DataPacket{random_data_header(rng, op, ts), std::span(payload_storage).first(len)}));
    }
  }
  for (Opcode op : kControlOpcodes) out.push_back(encode_bytes(random_control(rng, op)));
  return out;
}

// ---- Round trips ------------------------------------------------------------------------------

TEST(WireRoundTrip, EveryDataOpcodeWithAndWithoutTimestamp) {
  Prng rng(1);
  Bytes payload(kMaxPayloadBytes);
  for (auto& b : payload) b = static_cast<uint8_t>(rng.next_u32());
  for (Opcode op : kDataOpcodes) {
    for (bool ts : {false, true}) {
      for (size_t len : {size_t{0}, size_t{1}, size_t{17}, size_t{4096}, kMaxPayloadBytes}) {
        SCOPED_TRACE(std::string(to_string(op)) + " ts=" + std::to_string(ts) +
                     " len=" + std::to_string(len));
        const DataPacket sent{random_data_header(rng, op, ts), std::span(payload).first(len)};
        const Bytes wire = encode_bytes(sent);
        const size_t header = data_header_bytes(op, ts);
        EXPECT_EQ(header, 12u + 4 + (ts ? 4 : 0) + 16 + (has_immediate(op) ? 4 : 0));
        EXPECT_EQ(wire.size(), header + len + kIcrcBytes);
        auto got = decode(wire);
        ASSERT_TRUE(got.ok()) << to_string(got.error());
        expect_same_packet(Packet{sent}, got.value());
        const auto& data = std::get<DataPacket>(got.value());
        EXPECT_EQ(data.payload.data(), wire.data() + header);  // points into the datagram
      }
    }
  }
}

TEST(WireRoundTrip, EveryControlType) {
  Prng rng(2);
  for (int i = 0; i < 200; ++i) {
    for (Opcode op : kControlOpcodes) {
      SCOPED_TRACE(to_string(op));
      const ControlPacket sent = random_control(rng, op);
      const Bytes wire = encode_bytes(sent);
      EXPECT_EQ(wire.size(), kBthBytes + control_body_bytes(op) + kIcrcBytes);
      auto got = decode(wire);
      ASSERT_TRUE(got.ok()) << to_string(got.error());
      expect_same_packet(Packet{sent}, got.value());
    }
  }
}

TEST(WireRoundTrip, EveryNackReasonAndSkipMode) {
  Prng rng(3);
  for (NackReason reason : kNackReasons) {
    ControlPacket c{random_bth(rng, Opcode::kNack), random_nack(rng)};
    std::get<Nack>(c.body).reason = reason;
    auto got = decode(encode_bytes(c));
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(std::get<Nack>(std::get<ControlPacket>(got.value()).body).reason, reason);
  }
  for (SkipMode mode : {SkipMode::kNone, SkipMode::kSkipOnce, SkipMode::kAlwaysSkip}) {
    ControlPacket c{random_bth(rng, Opcode::kSack), random_sack(rng)};
    std::get<Sack>(c.body).skip_mode = mode;
    auto got = decode(encode_bytes(c));
    ASSERT_TRUE(got.ok());
    EXPECT_EQ(std::get<Sack>(std::get<ControlPacket>(got.value()).body).skip_mode, mode);
  }
}

TEST(WireRoundTrip, WriteDataHeaderPlusSealEqualsEncode) {
  Prng rng(4);
  Bytes payload(1000, 0xA5);
  for (Opcode op : kDataOpcodes) {
    for (bool ts : {false, true}) {
      const DataPacket packet{random_data_header(rng, op, ts), payload};
      const Bytes expected = encode_bytes(packet);
      Bytes buffer(kMaxDatagramBytes);
      const size_t header = write_data_header(packet.header, buffer);
      EXPECT_EQ(header, data_header_bytes(op, ts));
      std::memcpy(buffer.data() + header, payload.data(), payload.size());
      const size_t length = seal(buffer, header + payload.size());
      buffer.resize(length);
      EXPECT_EQ(buffer, expected);
    }
  }
}

// ICRC offload: seal_deferred reserves the ICRC's place (zeros), the datagram fails the ICRC
// check until a datapath seals it, and sealed it equals the engine-sealed packet.
TEST(WireRoundTrip, SealDeferredLeavesAZeroIcrcThatSealFillsIn) {
  Prng rng(6);
  Bytes payload(3000, 0x3C);
  const DataPacket packet{random_data_header(rng, Opcode::kWriteOnly, true), payload};
  const Bytes expected = encode_bytes(packet);
  Bytes buffer(kMaxDatagramBytes, 0xFF);
  const size_t header = write_data_header(packet.header, buffer);
  std::memcpy(buffer.data() + header, payload.data(), payload.size());
  const size_t length = seal_deferred(buffer, header + payload.size());
  buffer.resize(length);
  ASSERT_EQ(length, expected.size());
  EXPECT_EQ(load_be32(buffer.data() + length - kIcrcBytes), 0u);
  EXPECT_FALSE(decode(buffer).ok());
  DecodeOptions trusted;
  trusted.verify_icrc = false;
  EXPECT_TRUE(decode(buffer, trusted).ok());
  seal(buffer, length - kIcrcBytes);
  EXPECT_EQ(buffer, expected);
}

TEST(WireRoundTrip, EncodeReturnsZeroWhenBufferTooSmall) {
  Prng rng(5);
  Bytes payload(100, 1);
  const Packet data = DataPacket{random_data_header(rng, Opcode::kWriteOnlyImm, true), payload};
  const Packet sack = random_control(rng, Opcode::kSack);
  for (const Packet& p : {data, sack}) {
    const size_t needed = encode_bytes(p).size();
    for (size_t n = 0; n < needed; ++n) {
      Bytes out(n);
      EXPECT_EQ(encode(p, out), 0u) << n;
    }
    Bytes out(needed);
    EXPECT_EQ(encode(p, out), needed);
  }
}

TEST(WireRoundTrip, WideValuesAreMaskedToTheirFields) {
  ControlPacket c{Bth{}, Sack{}};
  c.bth.opcode = Opcode::kSack;
  c.bth.dest_qp = Qpn(0xFF123456);
  Sack& s = c.body.emplace<Sack>();
  s.cc_type = 0x1F;
  s.cc_flags = 0xF3;
  s.cc.out_of_order_count = 0xFFFF;
  s.cc.receiver_cwnd_penalty = 0xFF;
  s.cc.received_bytes = 0x12345678;
  auto got = decode(encode_bytes(c));
  ASSERT_TRUE(got.ok());
  const auto& control = std::get<ControlPacket>(got.value());
  EXPECT_EQ(control.bth.dest_qp, Qpn(0x123456));
  const auto& d = std::get<Sack>(control.body);
  EXPECT_EQ(d.cc_type, 0xF);
  EXPECT_EQ(d.cc_flags, 0x3);
  EXPECT_EQ(d.cc.out_of_order_count, 0x7FFF);
  EXPECT_EQ(d.cc.receiver_cwnd_penalty, 0x7F);
  EXPECT_EQ(d.cc.received_bytes, 0x345678u);

  ControlPacket a{Bth{}, Ack{7, 0xAB123456}};
  a.bth.opcode = Opcode::kAck;
  auto got_ack = decode(encode_bytes(a));
  ASSERT_TRUE(got_ack.ok());
  EXPECT_EQ(std::get<Ack>(std::get<ControlPacket>(got_ack.value()).body).msn, 0x123456u);
}

TEST(WireRoundTrip, ToStringCoversEveryEnumerator) {
  std::set<std::string_view> names;
  for (Opcode op : kDataOpcodes) names.insert(to_string(op));
  for (Opcode op : kControlOpcodes) names.insert(to_string(op));
  EXPECT_EQ(names.size(), 12u);
  names.clear();
  for (NackReason r : kNackReasons) names.insert(to_string(r));
  EXPECT_EQ(names.size(), std::size(kNackReasons));
  names.clear();
  for (int e = 0; e <= static_cast<int>(DecodeError::kSecured); ++e) {
    names.insert(to_string(static_cast<DecodeError>(e)));
  }
  EXPECT_EQ(names.size(), 10u);
}

// ---- Exact byte layouts -----------------------------------------------------------------------

TEST(WireLayout, BthAndDataHeaders) {
  DataHeader h;
  h.bth.opcode = Opcode::kWriteLastImm;  // 0xC9
  h.bth.migration = true;
  h.bth.solicited = false;
  h.bth.partition_key = 0x8001;
  h.bth.dest_qp = Qpn(0x123456);
  h.bth.ack_request = true;
  h.bth.retransmit = true;
  h.bth.timestamp_present = true;
  h.bth.psn = Psn(0xABCDEF);
  h.meth = {0x0102, 0x0304};
  h.tseth = {0xBEEF, true, 0x3};
  h.reth = {0x0011223344556677ull, 0x8899AABB, 0x00010000};
  h.immediate = 0xCAFEBABE;
  const Bytes expected = {
      0xC9, 0x80, 0x80, 0x01, 0x00, 0x12, 0x34, 0x56, 0xB0, 0xAB, 0xCD, 0xEF,  // BTH
      0x01, 0x02, 0x03, 0x04,                                                  // METH
      0xBE, 0xEF, 0x80, 0x03,                                                  // TSETH
      0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,                          // RETH VA
      0x88, 0x99, 0xAA, 0xBB, 0x00, 0x01, 0x00, 0x00,                          // rkey, len
      0xCA, 0xFE, 0xBA, 0xBE,                                                  // ImmDt
  };
  Bytes out(kMaxDataHeaderBytes, 0xEE);
  ASSERT_EQ(write_data_header(h, out), expected.size());
  EXPECT_EQ(out, expected);

  // The other BTH flags: SE, R; and a header without TSETH or immediate.
  DataHeader g;
  g.bth.opcode = Opcode::kWriteMiddle;
  g.bth.solicited = true;
  g.bth.reserved_r = true;
  g.bth.partition_key = 0xFFFF;
  g.bth.dest_qp = Qpn(1);
  g.bth.psn = Psn(2);
  const Bytes expected_g = {0xC7, 0x40, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01, 0x40, 0x00, 0x00, 0x02};
  Bytes out_g(32, 0xEE);
  ASSERT_EQ(write_data_header(g, out_g), 32u);
  EXPECT_EQ(Bytes(out_g.begin(), out_g.begin() + 12), expected_g);
  EXPECT_EQ(Bytes(out_g.begin() + 12, out_g.end()), Bytes(20, 0x00));
}

TEST(WireLayout, SethAndCcState) {
  ControlPacket c{Bth{}, Sack{}};
  c.bth.opcode = Opcode::kSack;
  c.bth.partition_key = 0x1234;
  c.bth.dest_qp = Qpn(0x000102);
  c.bth.psn = Psn(0x000003);
  Sack& s = c.body.emplace<Sack>();
  s.skip_mode = SkipMode::kAlwaysSkip;
  s.probe_response = true;
  s.ack_psn_offset = -2;
  s.echoed_entropy = 0xDEADBEEF;
  s.source_pdc = 0x0102;
  s.dest_pdc = 0x0304;
  s.cumulative_psn = Psn(0x00ABCD);
  s.cc_type = 2;
  s.cc_flags = 5;
  s.mpr = 0x10;
  s.sack_offset = 3;
  s.bitmap = 0x0123456789ABCDEFull;
  s.cc = {0x1234, 0x0056, true, 5, 0xABCDEF};
  const Bytes expected = {
      0xDC, 0x00, 0x12, 0x34, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x03,  // BTH
      0x00, 0x42, 0xFF, 0xFE,                                                  // m=2, pr, offset
      0xDE, 0xAD, 0xBE, 0xEF,                                                  // echoed EV
      0x01, 0x02, 0x03, 0x04,                                                  // spdcid, dpdcid
      0x00, 0x00, 0xAB, 0xCD,                                                  // cumulative PSN
      0x25, 0x10, 0x00, 0x03,                                                  // cc, mpr, sack_off
      0x01, 0x23, 0x45, 0x67, 0x89, 0xAB, 0xCD, 0xEF,                          // bitmap
      0x12, 0x34, 0x00, 0x56,                                                  // CC_STATE word 0
      0x85, 0xAB, 0xCD, 0xEF,                                                  // CC_STATE word 1
  };
  const Bytes wire = encode_bytes(c);
  ASSERT_EQ(wire.size(), expected.size() + kIcrcBytes);
  EXPECT_EQ(Bytes(wire.begin(), wire.end() - 4), expected);
  EXPECT_EQ(load_be32(wire.data() + expected.size()), reference_crc32(expected));
}

TEST(WireLayout, Neth) {
  ControlPacket c{Bth{}, Nack{}};
  c.bth.opcode = Opcode::kNack;
  c.bth.partition_key = 0xFFFF;
  c.bth.dest_qp = Qpn(0x000010);
  c.bth.psn = Psn(0);
  Nack& n = c.body.emplace<Nack>();
  n.reason = NackReason::kPsnOutOfWindow;
  n.vendor_info = 0x77;
  n.echoed_entropy = 0xCAFEF00D;
  n.source_pdc = 0x0A0B;
  n.dest_pdc = 0x0C0D;
  n.nack_psn = Psn(0x123456);
  n.cc_type = 2;
  n.cc_flags = 1;
  n.echoed_timestamp = 0xBEEF;
  const Bytes expected = {
      0xDD, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00,  // BTH
      0x00, 0x00, 0x0B, 0x77, 0xCA, 0xFE, 0xF0, 0x0D, 0x0A, 0x0B, 0x0C, 0x0D,  // NETH 0-11
      0x00, 0x12, 0x34, 0x56, 0x21, 0x00, 0xBE, 0xEF,                          // NETH 12-19
  };
  const Bytes wire = encode_bytes(c);
  ASSERT_EQ(wire.size(), expected.size() + kIcrcBytes);
  EXPECT_EQ(Bytes(wire.begin(), wire.end() - 4), expected);
  EXPECT_EQ(load_be32(wire.data() + expected.size()), reference_crc32(expected));
}

TEST(WireLayout, PethErthEethAeth) {
  Bth bth;
  bth.partition_key = 0;
  bth.opcode = Opcode::kProbe;
  const Bytes probe =
      encode_bytes(ControlPacket{bth, Probe{0x11, 0x2233, 0x4455, 0x6677, 0x8899, true, 0x0C}});
  EXPECT_EQ(Bytes(probe.begin() + 12, probe.end() - 4),
            (Bytes{0x00, 0x00, 0x00, 0x11, 0x22, 0x33, 0x00, 0x00, 0x44, 0x55, 0x66, 0x77, 0x88,
                   0x99, 0x80, 0x0C}));

  bth.opcode = Opcode::kEndpointRequest;
  const Bytes erth = encode_bytes(ControlPacket{
      bth, EndpointRequest{EndpointOp::kEvProbe, 0x42, 0x000000F0, 0x01020304, 0x0506, false, 1}});
  EXPECT_EQ(Bytes(erth.begin() + 12, erth.end() - 4),
            (Bytes{0x00, 0x01, 0x00, 0x42, 0x00, 0x00, 0x00, 0xF0, 0x01, 0x02, 0x03, 0x04, 0x05,
                   0x06, 0x00, 0x01}));

  bth.opcode = Opcode::kEndpointResponse;
  const Bytes eeth = encode_bytes(ControlPacket{
      bth, EndpointResponse{EndpointOp::kEvProbe, 0x0000000F, 0xA1A2A3A4, 0x00000BB8, 0x7788}});
  Bytes expected_eeth(36, 0x00);
  expected_eeth[1] = 0x10;
  const uint8_t mid[] = {0x00, 0x00, 0x00, 0x0F, 0xA1, 0xA2, 0xA3, 0xA4, 0x00, 0x00, 0x0B, 0xB8};
  std::copy(std::begin(mid), std::end(mid), expected_eeth.begin() + 4);
  expected_eeth[28] = 0x77;
  expected_eeth[29] = 0x88;
  EXPECT_EQ(Bytes(eeth.begin() + 12, eeth.end() - 4), expected_eeth);

  bth.opcode = Opcode::kAck;
  const Bytes aeth = encode_bytes(ControlPacket{bth, Ack{0x1F, 0x00ABCDEF}});
  EXPECT_EQ(Bytes(aeth.begin() + 12, aeth.end() - 4), (Bytes{0x1F, 0xAB, 0xCD, 0xEF}));
}

TEST(WireLayout, ReservedBitsAreIgnoredOnRead) {
  Prng rng(6);
  for (Opcode op : kControlOpcodes) {
    const ControlPacket c = random_control(rng, op);
    Bytes wire = encode_bytes(c);
    wire[4] = 0xFF;   // BTH reserved byte
    wire[8] |= 0x07;  // BTH reserved bits of the flags byte (bit 3 is S: secure packets)
    reseal(wire);
    auto got = decode(wire);
    ASSERT_TRUE(got.ok()) << to_string(op);
    expect_same_packet(Packet{c}, got.value());
  }
  // SETH and NETH reserved bytes.
  const ControlPacket sack = random_control(rng, Opcode::kSack);
  Bytes wire = encode_bytes(sack);
  wire[12 + 0] = 0xFF;   // type / next header
  wire[12 + 1] |= 0x9D;  // everything in byte 1 except m and pr
  wire[12 + 12] = 0xFF;
  wire[12 + 30] |= 0x80;  // CC_STATE reserved bit 15 of word 0
  reseal(wire);
  auto got = decode(wire);
  ASSERT_TRUE(got.ok());
  expect_same_packet(Packet{sack}, got.value());
}

// ---- Decode errors ----------------------------------------------------------------------------

TEST(WireDecodeError, TooShort) {
  Prng rng(7);
  const Bytes ack = encode_bytes(random_control(rng, Opcode::kAck));
  for (size_t n = 0; n < kBthBytes + kIcrcBytes; ++n) {
    EXPECT_EQ(decode_error(std::span(ack).first(n)), DecodeError::kTooShort) << n;
    EXPECT_EQ(decode_error(std::span(ack).first(n), {.trimmed = true}), DecodeError::kTooShort);
  }
}

TEST(WireDecodeError, UnknownOpcode) {
  Prng rng(8);
  Bytes wire = encode_bytes(random_control(rng, Opcode::kAck));
  for (int op = 0; op < 256; ++op) {
    const bool known = (op >= 0xC6 && op <= 0xCB) || op == 0xD1 || op == 0xD8 || op == 0xD9 ||
                       op == 0xDC || op == 0xDD || op == 0xDE;
    if (known) continue;
    wire[0] = static_cast<uint8_t>(op);
    EXPECT_EQ(decode_error(wire), DecodeError::kUnknownOpcode) << op;
  }
}

TEST(WireDecodeError, BadTransportVersionAndPadCount) {
  Prng rng(9);
  for (uint8_t version = 1; version < 16; ++version) {
    ControlPacket c = random_control(rng, Opcode::kSack);
    c.bth.transport_version = version;
    c.bth.pad_count = 1;  // version is checked first
    EXPECT_EQ(decode_error(encode_bytes(c)), DecodeError::kBadTransportVersion);
  }
  for (uint8_t pad = 1; pad < 4; ++pad) {
    DataHeader h = random_data_header(rng, Opcode::kWriteOnly, false);
    h.bth.pad_count = pad;
    Bytes wire = encode_bytes(DataPacket{h, {}});
    EXPECT_EQ(decode_error(wire), DecodeError::kBadPadCount);
    wire.resize(20);  // pad is checked before header completeness
    EXPECT_EQ(decode_error(wire), DecodeError::kBadPadCount);
  }
}

TEST(WireDecodeError, TruncatedHeader) {
  Prng rng(10);
  for (Opcode op : kControlOpcodes) {
    const Bytes wire = encode_bytes(random_control(rng, op));
    for (size_t n = kBthBytes + kIcrcBytes; n < wire.size(); ++n) {
      EXPECT_EQ(decode_error(std::span(wire).first(n)), DecodeError::kTruncatedHeader)
          << to_string(op) << " " << n;
    }
  }
  for (Opcode op : kDataOpcodes) {
    for (bool ts : {false, true}) {
      const Bytes wire = encode_bytes(DataPacket{random_data_header(rng, op, ts), {}});
      for (size_t n = kBthBytes + kIcrcBytes; n < wire.size(); ++n) {
        EXPECT_EQ(decode_error(std::span(wire).first(n)), DecodeError::kTruncatedHeader);
      }
      const size_t header = data_header_bytes(op, ts);
      for (size_t n = kBthBytes + kIcrcBytes; n < header; ++n) {
        EXPECT_EQ(decode_error(std::span(wire).first(n), {.trimmed = true}),
                  DecodeError::kTruncatedHeader);
      }
    }
  }
}

TEST(WireDecodeError, BadIcrc) {
  Prng rng(11);
  Bytes payload(64, 0x5A);
  Bytes wire =
      encode_bytes(DataPacket{random_data_header(rng, Opcode::kWriteFirst, true), payload});
  wire[50] ^= 0x01;
  EXPECT_EQ(decode_error(wire), DecodeError::kBadIcrc);
  EXPECT_TRUE(decode(wire, {.verify_icrc = false}).ok());
  Bytes nack = encode_bytes(random_control(rng, Opcode::kNack));
  nack.back() ^= 0x80;  // the ICRC itself
  EXPECT_EQ(decode_error(nack), DecodeError::kBadIcrc);
  EXPECT_TRUE(decode(nack, {.verify_icrc = false}).ok());
}

TEST(WireDecodeError, TrailingBytes) {
  Prng rng(12);
  for (Opcode op : kControlOpcodes) {
    Bytes wire = encode_bytes(random_control(rng, op));
    const Bytes original = wire;
    wire.insert(wire.end() - 4, uint8_t{0});
    reseal(wire);
    EXPECT_EQ(decode_error(wire), DecodeError::kTrailingBytes) << to_string(op);
    EXPECT_EQ(decode_error(wire, {.trimmed = true}), DecodeError::kTrailingBytes);
    // With the ICRC wrong as well, the ICRC is reported: it is checked first.
    wire.back() ^= 1;
    EXPECT_EQ(decode_error(wire), DecodeError::kBadIcrc);
    EXPECT_EQ(decode_error(wire, {.verify_icrc = false}), DecodeError::kTrailingBytes);
  }
}

TEST(WireDecodeError, PayloadTooLong) {
  Prng rng(13);
  const DataHeader h = random_data_header(rng, Opcode::kWriteMiddle, true);
  Bytes wire(kMaxDatagramBytes + 16, 0x33);
  const size_t header = write_data_header(h, wire);
  for (size_t payload : {kMaxPayloadBytes, kMaxPayloadBytes + 1, kMaxPayloadBytes + 7}) {
    Bytes copy(wire.begin(), wire.begin() + static_cast<std::ptrdiff_t>(header + payload + 4));
    seal(copy, header + payload);
    auto r = decode(copy);
    if (payload <= kMaxPayloadBytes) {
      EXPECT_TRUE(r.ok());
    } else {
      EXPECT_EQ(decode_error(copy), DecodeError::kPayloadTooLong);
      EXPECT_TRUE(decode(copy, {.trimmed = true}).ok());  // trimmed: payload ignored
    }
  }
}

TEST(WireDecodeError, BadReservedField) {
  Prng rng(14);
  // NACK reasons outside the enum.
  const std::set<int> defined = {0x01, 0x02, 0x06, 0x07, 0x0A, 0x0B, 0x19};
  for (int reason = 0; reason < 256; ++reason) {
    ControlPacket c = random_control(rng, Opcode::kNack);
    std::get<Nack>(c.body).reason = static_cast<NackReason>(reason);
    const Bytes wire = encode_bytes(c);
    if (defined.count(reason) != 0) {
      EXPECT_TRUE(decode(wire).ok()) << reason;
    } else {
      EXPECT_EQ(decode_error(wire), DecodeError::kBadReservedField) << reason;
    }
  }
  // SACK m == 3.
  ControlPacket sack = random_control(rng, Opcode::kSack);
  std::get<Sack>(sack.body).skip_mode = static_cast<SkipMode>(3);
  Bytes wire = encode_bytes(sack);
  EXPECT_EQ(decode_error(wire), DecodeError::kBadReservedField);
  wire[20] ^= 1;  // a bad ICRC is reported before the reserved field
  EXPECT_EQ(decode_error(wire), DecodeError::kBadIcrc);
  // Endpoint ops 2 and 3, request and response.
  for (uint8_t op : {uint8_t{2}, uint8_t{3}}) {
    ControlPacket req = random_control(rng, Opcode::kEndpointRequest);
    std::get<EndpointRequest>(req.body).op = static_cast<EndpointOp>(op);
    EXPECT_EQ(decode_error(encode_bytes(req)), DecodeError::kBadReservedField);
    ControlPacket resp = random_control(rng, Opcode::kEndpointResponse);
    std::get<EndpointResponse>(resp.body).op = static_cast<EndpointOp>(op);
    EXPECT_EQ(decode_error(encode_bytes(resp)), DecodeError::kBadReservedField);
  }
}

TEST(WireDecodeError, CheckOrder) {
  Prng rng(15);
  // Unknown opcode beats bad version; version beats pad; pad beats truncation; truncation beats
  // ICRC (the ICRC is not even located).
  Bytes wire = encode_bytes(random_control(rng, Opcode::kSack));
  wire[1] = 0x3F;
  wire[0] = 0x00;
  EXPECT_EQ(decode_error(wire), DecodeError::kUnknownOpcode);
  wire[0] = 0xDC;
  EXPECT_EQ(decode_error(wire), DecodeError::kBadTransportVersion);
  wire[1] = 0x30;
  EXPECT_EQ(decode_error(wire), DecodeError::kBadPadCount);
  wire[1] = 0x00;
  wire.resize(30);
  EXPECT_EQ(decode_error(wire), DecodeError::kTruncatedHeader);
}

// ---- Trimmed packets --------------------------------------------------------------------------

TEST(WireTrimmed, DataHeaderIsDecodedWithoutPayloadOrIcrc) {
  Prng rng(16);
  Bytes payload(4096);
  for (auto& b : payload) b = static_cast<uint8_t>(rng.next_u32());
  for (Opcode op : kDataOpcodes) {
    for (bool ts : {false, true}) {
      const DataHeader h = random_data_header(rng, op, ts);
      const Bytes wire = encode_bytes(DataPacket{h, payload});
      const size_t header = data_header_bytes(op, ts);
      for (size_t cut : {header, header + 1, header + 100, wire.size() - 2, wire.size()}) {
        Bytes trimmed(wire.begin(), wire.begin() + static_cast<std::ptrdiff_t>(cut));
        if (cut > header) trimmed.back() ^= 0xFF;  // whatever follows the header is not checked
        auto got = decode(trimmed, {.trimmed = true});
        ASSERT_TRUE(got.ok()) << to_string(got.error());
        const auto& data = std::get<DataPacket>(got.value());
        EXPECT_EQ(data.header, h);
        EXPECT_TRUE(data.payload.empty());
      }
      // Without the trimmed option the same cut packet is an error.
      EXPECT_EQ(decode_error(std::span(wire).first(header)), DecodeError::kTruncatedHeader);
      EXPECT_EQ(decode_error(std::span(wire).first(header + 100)), DecodeError::kBadIcrc);
    }
  }
}

TEST(WireTrimmed, ControlPacketsIgnoreTheOption) {
  Prng rng(17);
  for (Opcode op : kControlOpcodes) {
    const ControlPacket c = random_control(rng, op);
    Bytes wire = encode_bytes(c);
    auto got = decode(wire, {.trimmed = true});
    ASSERT_TRUE(got.ok());
    expect_same_packet(Packet{c}, got.value());
    wire[13] ^= 0x04;
    EXPECT_EQ(decode_error(wire, {.trimmed = true}), DecodeError::kBadIcrc);
    EXPECT_EQ(decode_error(std::span(wire).first(wire.size() - 1), {.trimmed = true}),
              DecodeError::kTruncatedHeader);
  }
}

// ---- Robustness -------------------------------------------------------------------------------

// Decodes `bytes` from an exactly-sized heap copy (so a sanitizer sees any over-read) with every
// option combination; every success must survive an encode/decode round trip unchanged.
void decode_all_ways(std::span<const uint8_t> bytes) {
  const Bytes copy(bytes.begin(), bytes.end());
  for (DecodeOptions options : {DecodeOptions{false, true}, DecodeOptions{false, false},
                                DecodeOptions{true, true}, DecodeOptions{true, false}}) {
    auto got = decode(copy, options);
    if (!got.ok()) continue;
    Bytes again(kMaxDatagramBytes);
    const size_t n = encode(got.value(), again);
    ASSERT_GT(n, 0u);
    again.resize(n);
    auto redecoded = decode(again);
    ASSERT_TRUE(redecoded.ok()) << to_string(redecoded.error());
    expect_same_packet(got.value(), redecoded.value());
  }
}

TEST(WireRobust, EveryTruncationOfEveryPacketType) {
  Prng rng(18);
  Bytes payload;
  for (const Bytes& wire : sample_datagrams(rng, payload)) {
    for (size_t n = 0; n < wire.size(); ++n) {
      decode_all_ways(std::span(wire).first(n));
      const Bytes prefix(wire.begin(), wire.begin() + static_cast<std::ptrdiff_t>(n));
      EXPECT_FALSE(decode(prefix).ok()) << "prefix of " << n << " bytes accepted";
    }
    decode_all_ways(wire);
    EXPECT_TRUE(decode(wire).ok());
  }
}

TEST(WireRobust, EverySingleBitFlipIsCaught) {
  Prng rng(19);
  Bytes payload;
  for (const Bytes& wire : sample_datagrams(rng, payload)) {
    for (size_t bit = 0; bit < wire.size() * 8; ++bit) {
      Bytes flipped = wire;
      flipped[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
      auto got = decode(flipped);
      ASSERT_FALSE(got.ok()) << "flip of bit " << bit << " accepted";
      const size_t byte = bit / 8;
      if (byte >= 2 && byte != 8) {
        EXPECT_EQ(got.error(), DecodeError::kBadIcrc) << bit;
      } else if (byte == 8) {
        // The ts flag changes the header length of data packets; the S flag makes it a secure
        // packet, which only the engine's packet protection opens.
        EXPECT_TRUE(got.error() == DecodeError::kBadIcrc ||
                    got.error() == DecodeError::kTruncatedHeader ||
                    got.error() == DecodeError::kSecured);
      }
      decode_all_ways(flipped);
    }
  }
}

TEST(WireRobust, RandomGarbage) {
  Prng rng(20);
  constexpr uint8_t kOpcodes[] = {0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xCB,
                                  0xD1, 0xD8, 0xD9, 0xDC, 0xDD, 0xDE};
  int accepted = 0;
  for (int i = 0; i < 200000; ++i) {
    Bytes bytes(rng.below(120));
    for (auto& b : bytes) b = static_cast<uint8_t>(rng.next_u32());
    // Mostly plausible headers, so the garbage reaches the deeper checks.
    if (!bytes.empty() && rng.chance(0.9)) bytes[0] = kOpcodes[rng.below(std::size(kOpcodes))];
    if (bytes.size() > 1 && rng.chance(0.8)) bytes[1] &= 0xC0;
    if (bytes.size() >= 16 && rng.chance(0.5)) reseal(bytes);
    decode_all_ways(bytes);
    accepted += decode(bytes).ok() ? 1 : 0;
  }
  EXPECT_GT(accepted, 1000);  // the generator does reach the success path
}

TEST(WireRobust, RandomMultiByteCorruption) {
  Prng rng(21);
  Bytes payload;
  const std::vector<Bytes> samples = sample_datagrams(rng, payload);
  for (int i = 0; i < 50000; ++i) {
    Bytes wire = samples[rng.below(samples.size())];
    const int edits = 1 + static_cast<int>(rng.below(4));
    for (int e = 0; e < edits; ++e) {
      wire[rng.below(wire.size())] = static_cast<uint8_t>(rng.next_u32());
    }
    if (rng.chance(0.3)) wire.resize(rng.below(wire.size() + 1));
    decode_all_ways(wire);
  }
}

// ---- ICRC -------------------------------------------------------------------------------------

TEST(WireIcrc, CheckValues) {
  EXPECT_EQ(icrc32(as_bytes("123456789")), 0xCBF43926u);
  EXPECT_EQ(icrc32({}), 0x00000000u);
  EXPECT_EQ(icrc32(as_bytes("a")), 0xE8B7BE43u);
  EXPECT_EQ(icrc32(as_bytes("The quick brown fox jumps over the lazy dog")), 0x414FA339u);
  EXPECT_EQ(detail::icrc32_portable(as_bytes("123456789")), 0xCBF43926u);
  EXPECT_EQ(reference_crc32(as_bytes("123456789")), 0xCBF43926u);
  const Bytes zeros(4096, 0);
  EXPECT_EQ(icrc32(zeros), reference_crc32(zeros));
  const Bytes ones(4096, 0xFF);
  EXPECT_EQ(icrc32(ones), reference_crc32(ones));
}

TEST(WireIcrc, SealStoresTheCrcBigEndian) {
  Prng rng(22);
  for (int i = 0; i < 100; ++i) {
    Bytes data(rng.below(2000) + 12);
    for (auto& b : data) b = static_cast<uint8_t>(rng.next_u32());
    const size_t length = data.size();
    data.resize(length + 4);
    seal(data, length);
    EXPECT_EQ(load_be32(data.data() + length), reference_crc32(std::span(data).first(length)));
  }
}

// Lengths around every path boundary (16, 64, 128, 192, 256, 512 bytes) plus random ones, at
// every alignment of a 64-byte line.
std::vector<size_t> crc_test_lengths(Prng& rng) {
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 600; ++n) lengths.push_back(n);
  for (size_t n : {1023, 1024, 1025, 4095, 4096, 4097, 4136, 9044, 9048}) lengths.push_back(n);
  for (int i = 0; i < 200; ++i) lengths.push_back(rng.below(10000));
  return lengths;
}

TEST(WireIcrc, AllImplementationsAgreeOnRandomLengthsAndAlignments) {
  Prng rng(23);
  Bytes buffer(10000 + 64);
  for (auto& b : buffer) b = static_cast<uint8_t>(rng.next_u32());
  const bool clmul = detail::clmul_available();
  const bool vclmul = detail::vclmul_available();
  int checked = 0;
  for (size_t n : crc_test_lengths(rng)) {
    for (size_t align = 0; align < 64; align += (n < 700 ? 7 : 1)) {
      const std::span<const uint8_t> bytes(buffer.data() + align, n);
      const uint32_t expected = detail::icrc32_portable(bytes);
      if (align % 16 == 0 && n % 3 == 0) {
        ASSERT_EQ(expected, reference_crc32(bytes)) << n;
      }
      ASSERT_EQ(icrc32(bytes), expected) << n << " @" << align;
      if (clmul) {
        ASSERT_EQ(detail::icrc32_clmul(bytes), expected) << n << " @" << align;
      }
      if (vclmul) {
        ASSERT_EQ(detail::icrc32_vclmul(bytes), expected) << n << " @" << align;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 10000);
  if (!clmul) GTEST_SKIP() << "no PCLMULQDQ on this CPU: only the portable CRC was checked";
  if (!vclmul) GTEST_SKIP() << "no VPCLMULQDQ on this CPU: the AVX-512 CRC was not checked";
}

// Every implementation the CPU has, each checked against the bit-at-a-time reference.
void expect_all_match_reference(std::span<const uint8_t> bytes, const std::string& where) {
  const uint32_t expected = reference_crc32(bytes);
  ASSERT_EQ(detail::icrc32_portable(bytes), expected) << where;
  ASSERT_EQ(icrc32(bytes), expected) << where;
  if (detail::clmul_available()) {
    ASSERT_EQ(detail::icrc32_clmul(bytes), expected) << "pclmul " << where;
  }
  if (detail::vclmul_available()) {
    ASSERT_EQ(detail::icrc32_vclmul(bytes), expected) << "vpclmul " << where;
  }
}

// Every length up to 1 KiB -- each front padding (mod 16, 64 and 256 bytes, which decides where
// the initial register goes) and each short/long path -- at alignments spread over a 64-byte line.
TEST(WireIcrc, EveryLengthUpTo1KiBMatchesTheBitReference) {
  Prng rng(25);
  Bytes buffer(1024 + 64);
  for (auto& b : buffer) b = static_cast<uint8_t>(rng.next_u32());
  for (size_t align : {0, 1, 3, 8, 13, 31, 47, 63}) {
    for (size_t n = 0; n <= 1024; ++n) {
      expect_all_match_reference(std::span(buffer).subspan(align, n),
                                 std::to_string(n) + " @" + std::to_string(align));
      if (HasFatalFailure()) return;
    }
  }
}

TEST(WireIcrc, LargeRandomLengthsMatchTheBitReference) {
  Prng rng(26);
  Bytes buffer(70000 + 64);
  for (auto& b : buffer) b = static_cast<uint8_t>(rng.next_u32());
  std::vector<size_t> lengths = {4132, 4136, 9036, 65536, 65537, 70000};
  for (int i = 0; i < 60; ++i) lengths.push_back(1025 + rng.below(70000 - 1025));
  for (size_t n : lengths) {
    const size_t align = rng.below(64);
    expect_all_match_reference(std::span(buffer).subspan(align, n),
                               std::to_string(n) + " @" + std::to_string(align));
    if (HasFatalFailure()) return;
  }
}

#if defined(__unix__)
// The vector paths pad the message in front by loading bytes before it under a mask, and must
// read nothing past its end: messages that start right after, or end right before, an
// inaccessible page would fault if they touched it.
TEST(WireIcrc, NoAccessOutsideTheMessageNextToInaccessiblePages) {
  const auto page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  constexpr size_t kDataPages = 3;
  void* mapping =
      mmap(nullptr, (kDataPages + 2) * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(mapping, MAP_FAILED);
  auto* const first = static_cast<uint8_t*>(mapping) + page;  // guard page before and after
  ASSERT_EQ(mprotect(first, kDataPages * page, PROT_READ | PROT_WRITE), 0);
  const std::span<uint8_t> data(first, kDataPages * page);
  Prng rng(27);
  for (auto& b : data) b = static_cast<uint8_t>(rng.next_u32());
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 600; ++n) lengths.push_back(n);
  for (size_t n : {1023, 1024, 1025, 4096, 4132, 4133, 8191, 8192, 9036}) lengths.push_back(n);
  for (size_t n : lengths) {
    if (n > data.size()) continue;
    expect_all_match_reference(data.first(n), "after a guard page, " + std::to_string(n));
    expect_all_match_reference(data.last(n), "before a guard page, " + std::to_string(n));
    if (HasFatalFailure()) break;
  }
  munmap(mapping, (kDataPages + 2) * page);
}
#endif

TEST(WireIcrc, SingleBitErrorsChangeTheCrcOnEveryPath) {
  Prng rng(24);
  Bytes data(4136);
  for (auto& b : data) b = static_cast<uint8_t>(rng.next_u32());
  const uint32_t base = icrc32(data);
  for (size_t bit = 0; bit < data.size() * 8; bit += 13) {
    data[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    const uint32_t crc = icrc32(data);
    EXPECT_NE(crc, base);
    EXPECT_EQ(crc, detail::icrc32_portable(data));
    data[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
  }
}

}  // namespace
}  // namespace mrc::wire
