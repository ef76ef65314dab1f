// The MRC wire format: every packet type, as plain structs, with one encoder and one decoder.
//
// Layout follows OCP MRC 1.0 as far as the public sources know it (see docs/PROTOCOL.md, which
// lists every field and marks where the sources leave a choice to us). A datagram is the UDP
// payload: BTH (12 B), then the extension headers the opcode calls for, then the payload, then a
// 4-byte ICRC (CRC-32 over everything before it). All fields are network byte order.
//
//   data (0xC6..0xCB): BTH | METH | [TSETH if bth.timestamp_present] | RETH | [ImmDt] | payload
//   ACK        (0xD1): BTH | AETH
//   EP request (0xD8): BTH | ERTH
//   EP response(0xD9): BTH | EETH
//   SACK       (0xDC): BTH | SETH | CC_STATE
//   NACK       (0xDD): BTH | NETH
//   probe      (0xDE): BTH | PETH
//
// decode() accepts any byte string: it never reads out of bounds, never crashes, and on
// rejection says exactly why (DecodeError). It does not interpret fields against connection
// state (window, keys, bounds); the engine does that.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <variant>

#include "mrc/result.hpp"
#include "mrc/types.hpp"

namespace mrc::wire {

enum class Opcode : uint8_t {
  kWriteFirst = 0xC6,
  kWriteMiddle = 0xC7,
  kWriteLast = 0xC8,
  kWriteLastImm = 0xC9,
  kWriteOnly = 0xCA,
  kWriteOnlyImm = 0xCB,
  kAck = 0xD1,
  kEndpointRequest = 0xD8,
  kEndpointResponse = 0xD9,
  kSack = 0xDC,
  kNack = 0xDD,
  kProbe = 0xDE,
};

constexpr bool is_data(Opcode op) {
  return static_cast<uint8_t>(op) >= 0xC6 && static_cast<uint8_t>(op) <= 0xCB;
}
constexpr bool has_immediate(Opcode op) {
  return op == Opcode::kWriteLastImm || op == Opcode::kWriteOnlyImm;
}
constexpr bool is_last_of_message(Opcode op) {
  return op == Opcode::kWriteLast || op == Opcode::kWriteLastImm || op == Opcode::kWriteOnly ||
         op == Opcode::kWriteOnlyImm;
}
constexpr bool is_first_of_message(Opcode op) {
  return op == Opcode::kWriteFirst || op == Opcode::kWriteOnly || op == Opcode::kWriteOnlyImm;
}

enum class NackReason : uint8_t {
  kTrimmed = 0x01,
  kTrimmedLastHop = 0x02,
  kNoBitmap = 0x06,
  kNoPacketBuffer = 0x07,
  kNoResource = 0x0A,
  kPsnOutOfWindow = 0x0B,
  kUnexpectedEvent = 0x19,
};

// SACK "m" field: what the receiver asks the sender to do with the echoed EV.
enum class SkipMode : uint8_t { kNone = 0, kSkipOnce = 1, kAlwaysSkip = 2 };

enum class EndpointOp : uint8_t { kPortStatusUpdate = 0, kEvProbe = 1 };

// Base Transport Header, 12 bytes.
struct Bth {
  Opcode opcode = Opcode::kWriteOnly;
  bool solicited = false;         // SE
  bool migration = false;         // M
  uint8_t pad_count = 0;          // 2 bits
  uint8_t transport_version = 0;  // 4 bits; must be 0
  uint16_t partition_key = 0xFFFF;
  Qpn dest_qp{0};                  // 24 bits
  bool ack_request = false;        // A
  bool reserved_r = false;         // R
  bool retransmit = false;         // rtx: this packet is a retransmission
  bool timestamp_present = false;  // ts: a TSETH follows METH (data packets)
  Psn psn{0};
  bool operator==(const Bth&) const = default;
};

// Message Extended Transport Header, 4 bytes: 16-bit receive-queue message sequence number
// (counts WRITE-with-immediate messages, which consume receive WQEs) and 16-bit message sequence
// number (counts all messages).
struct Meth {
  uint16_t rq_msn = 0;
  uint16_t msn = 0;
  bool operator==(const Meth&) const = default;
};

// Requestor timestamp header, 4 bytes: 16-bit transmit timestamp (units of kTimestampUnitNs).
struct Tseth {
  uint16_t tx_timestamp = 0;
  bool service_time_request = false;  // tsr
  uint8_t format = 1;                 // ftype, 4 bits
  bool operator==(const Tseth&) const = default;
};
inline constexpr int64_t kTimestampUnitNs = 64;
constexpr uint16_t timestamp_of(Instant t) {
  return static_cast<uint16_t>(static_cast<uint64_t>(t.ns) / kTimestampUnitNs);
}

// RDMA Extended Transport Header, 16 bytes, carried in EVERY data packet: the virtual address
// this packet's payload goes to, the remote key, and the DMA length of the whole message.
struct Reth {
  uint64_t virtual_address = 0;
  uint32_t rkey = 0;
  uint32_t dma_length = 0;
  bool operator==(const Reth&) const = default;
};

struct DataHeader {
  Bth bth;
  Meth meth;
  Tseth tseth;  // meaningful only if bth.timestamp_present
  Reth reth;
  uint32_t immediate = 0;  // meaningful only if has_immediate(bth.opcode)
  bool operator==(const DataHeader&) const = default;
};

struct DataPacket {
  DataHeader header;
  std::span<const uint8_t> payload;
};

// Congestion-control state that follows SETH, 8 bytes.
struct CcState {
  uint16_t echoed_timestamp = 0;    // TSETH timestamp of the packet that triggered this SACK
  uint16_t out_of_order_count = 0;  // 15 bits
  bool rc = false;
  uint8_t receiver_cwnd_penalty = 0;  // rcv_cwnd_pen, 7 bits: receiver back-pressure 0..127
  uint32_t received_bytes = 0;        // 24 bits, modular
  bool operator==(const CcState&) const = default;
};

// Reliability SACK header (28 bytes) + CC_STATE (8 bytes).
struct Sack {
  SkipMode skip_mode = SkipMode::kNone;
  bool probe_response = false;  // pr: this SACK answers a reliability probe
  int16_t ack_psn_offset = 0;   // PSN of the packet that triggered it = cumulative + offset
  uint32_t echoed_entropy = 0;  // EV of the packet that triggered it
  uint16_t source_pdc = 0;      // spdcid
  uint16_t dest_pdc = 0;        // dpdcid
  Psn cumulative_psn{0};        // every PSN before this one has been received
  uint8_t cc_type = 0;          // 4 bits
  uint8_t cc_flags = 0;         // 4 bits
  uint8_t mpr = 0;              // receiver's window in units of 128 PSNs
  int16_t sack_offset = 0;      // bitmap bit 0 is PSN cumulative + sack_offset
  uint64_t bitmap = 0;          // bit i set: PSN base+i received
  CcState cc;
  bool operator==(const Sack&) const = default;
};

// Our use of the SACK's 4 cc_flags bits: how long the responder held the SACK after its
// trigger arrived, in units of kSackHoldUnitNs, rounded down; kSackHoldSaturated: that long or
// longer. The requester's congestion control subtracts it from the RTT sample (QUIC's ACK
// Delay); 0, what SACKs without the field carry, claims no hold.
inline constexpr int64_t kSackHoldUnitNs = 1024;
inline constexpr uint8_t kSackHoldSaturated = 15;
constexpr uint8_t sack_hold_code(Duration held) {
  if (held.ns <= 0) return 0;
  const int64_t units = held.ns / kSackHoldUnitNs;
  return static_cast<uint8_t>(units >= kSackHoldSaturated ? kSackHoldSaturated : units);
}
constexpr Duration sack_hold_of(uint8_t code) {
  return Duration{(code & 0x0F) * kSackHoldUnitNs};
}
// A SACK's round trip less its hold: the network's part, or -1 (no sample) if the hold is
// unknown (saturated) or there was no round trip to begin with.
constexpr Duration rtt_less_hold(Duration rtt, uint8_t code) {
  if (rtt.ns <= 0 || (code & 0x0F) == kSackHoldSaturated) return Duration{-1};
  const int64_t less = rtt.ns - sack_hold_of(code).ns;
  return Duration{less > 1 ? less : 1};
}

// Reliability NACK header, 20 bytes.
struct Nack {
  NackReason reason = NackReason::kTrimmed;
  uint8_t vendor_info = 0;
  uint32_t echoed_entropy = 0;
  uint16_t source_pdc = 0;
  uint16_t dest_pdc = 0;
  Psn nack_psn{0};
  uint8_t cc_type = 2;   // 4 bits
  uint8_t cc_flags = 0;  // 4 bits
  uint16_t echoed_timestamp = 0;
  bool operator==(const Nack&) const = default;
};

// Reliability probe header, 16 bytes: elicits a SACK (with pr set) on the probe's EV.
struct Probe {
  uint8_t vendor_info = 0;
  uint16_t probe_id = 0;
  uint16_t source_pdc = 0;
  uint16_t dest_pdc = 0;
  uint16_t tx_timestamp = 0;
  bool service_time_request = false;
  uint8_t format = 1;  // 4 bits
  bool operator==(const Probe&) const = default;
};

// Endpoint request header (ERTH), 16 bytes: port status update or EV probe.
struct EndpointRequest {
  EndpointOp op = EndpointOp::kPortStatusUpdate;  // 2 bits
  uint8_t vendor_info = 0;
  uint32_t port_status_mask = 0;  // bit p set: the sender's port on plane p is up
  uint32_t request_id = 0;        // our use of the reserved word: matches the response
  uint16_t tx_timestamp = 0;
  bool service_time_request = false;
  uint8_t format = 1;
  bool operator==(const EndpointRequest&) const = default;
};

// Endpoint response header (EETH), 36 bytes.
struct EndpointResponse {
  EndpointOp op = EndpointOp::kPortStatusUpdate;  // 2 bits
  uint32_t port_status_mask = 0;  // the responder's own port status (our use of a reserved word)
  uint32_t request_id = 0;        // echoed from the request (our use of a reserved word)
  uint32_t service_time_ns = 0;   // responder service time (our use of a reserved word)
  uint16_t echoed_timestamp = 0;
  bool operator==(const EndpointResponse&) const = default;
};

// IBTA ACK extended transport header, 4 bytes (RoCE-style cumulative ACK).
struct Ack {
  uint8_t syndrome = 0;
  uint32_t msn = 0;  // 24 bits
  bool operator==(const Ack&) const = default;
};

// AETH syndrome of an IBTA NAK "remote access error" (011 00010): a WRITE whose RETH failed the
// responder's memory-region check (key, protection domain, access, bounds); BTH PSN = that
// packet's. The only AETH syndrome mrc's requester reads.
inline constexpr uint8_t kAethNakRemoteAccess = 0x62;

struct ControlPacket {
  Bth bth;
  std::variant<Ack, EndpointRequest, EndpointResponse, Sack, Nack, Probe> body;
};

using Packet = std::variant<DataPacket, ControlPacket>;

enum class DecodeError : uint8_t {
  kTooShort,             // shorter than BTH + ICRC
  kUnknownOpcode,        // opcode is not an MRC opcode
  kBadTransportVersion,  // BTH tver is not 0
  kTruncatedHeader,      // datagram ends inside the extension headers the opcode requires
  kBadIcrc,              // ICRC does not match
  kTrailingBytes,        // a control packet longer than its headers + ICRC
  kPayloadTooLong,       // data payload longer than kMaxPayloadBytes
  kBadPadCount,          // BTH pad count set (MRC sends no padding)
  kBadReservedField,     // an enumerated field holds a value the spec does not define
  kSecured,              // a secure packet (BTH S flag): opened by the engine's packet protection
};
std::string_view to_string(DecodeError e);
std::string_view to_string(Opcode op);
std::string_view to_string(NackReason r);

inline constexpr size_t kBthBytes = 12;
inline constexpr size_t kMethBytes = 4;
inline constexpr size_t kTsethBytes = 4;
inline constexpr size_t kRethBytes = 16;
inline constexpr size_t kImmBytes = 4;
inline constexpr size_t kSackBytes = 28 + 8;
inline constexpr size_t kNackBytes = 20;
inline constexpr size_t kProbeBytes = 16;
inline constexpr size_t kEndpointRequestBytes = 16;
inline constexpr size_t kEndpointResponseBytes = 36;
inline constexpr size_t kAckBytes = 4;
inline constexpr size_t kIcrcBytes = 4;
inline constexpr size_t kMaxPayloadBytes = 9000;
// Secure packets (docs/PROTOCOL.md, "Secure packets"; core/packet_protection.h): BTH byte 8
// bit 3 (S) set, an 8-byte security header (SECH: key epoch, packet counter) right after the
// BTH, and a 16-byte AES-GCM tag before the ICRC.
inline constexpr uint8_t kBthSecureFlag = 0x08;
inline constexpr size_t kSechBytes = 8;
inline constexpr size_t kTagBytes = 16;
constexpr bool is_secure(std::span<const uint8_t> datagram) {
  return datagram.size() > 8 && (datagram[8] & kBthSecureFlag) != 0;
}
// Largest data header: BTH + METH + TSETH + RETH + ImmDt.
inline constexpr size_t kMaxDataHeaderBytes =
    kBthBytes + kMethBytes + kTsethBytes + kRethBytes + kImmBytes;
inline constexpr size_t kMaxDatagramBytes = kMaxDataHeaderBytes + kMaxPayloadBytes + kIcrcBytes;

// Length of BTH + extension headers for a data packet with this opcode.
size_t data_header_bytes(Opcode op, bool timestamp_present);

// Bytes of BTH and extension headers at the start of a plain datagram (headers, payload,
// ICRC): a data packet's follow from its opcode and ts flag; anything else is taken as headers
// only. 0 if the datagram is shorter than BTH + ICRC or than the headers + ICRC it calls for.
size_t plain_header_bytes(std::span<const uint8_t> datagram);

// True if the datagram's last 4 bytes are the ICRC of the bytes before them.
// REQUIRES: datagram.size() >= kIcrcBytes.
bool icrc_matches(std::span<const uint8_t> datagram);

// Hot-path encoding for data packets: write the headers at the start of `out` and return their
// length; the caller then places the payload right after them and calls seal().
// REQUIRES: is_data(h.bth.opcode), out.size() >= data_header_bytes(...).
size_t write_data_header(const DataHeader& h, std::span<uint8_t> out);

// Appends the ICRC over out[0, length) at out[length]; returns length + kIcrcBytes.
// REQUIRES: out.size() >= length + kIcrcBytes.
size_t seal(std::span<uint8_t> out, size_t length);
// Reserves the ICRC's place at out[length] (zeros) for a datapath that computes it (ICRC
// offload); returns length + kIcrcBytes. seal() over the same bytes then yields the packet.
size_t seal_deferred(std::span<uint8_t> out, size_t length);

// Encodes any packet (headers, payload, ICRC) into `out`; returns the datagram length, or 0 if
// `out` is too small. `defer_icrc`: leave the ICRC field zero for the datapath to fill, as
// seal_deferred() does (ICRC offload). REQUIRES: the packet's bth.opcode agrees with its body
// type.
size_t encode(const Packet& packet, std::span<uint8_t> out, bool defer_icrc = false);

struct DecodeOptions {
  // Trimmed packets arrive without their payload and ICRC: the header is decoded, the payload
  // is empty, and the ICRC is not checked. The datapath sets this from the packet's class.
  bool trimmed = false;
  bool verify_icrc = true;
};

// Decodes one datagram. On success, a DataPacket's payload points into `datagram`.
Result<Packet, DecodeError> decode(std::span<const uint8_t> datagram, DecodeOptions options = {});

// CRC-32 (IEEE 802.3 polynomial, reflected, as RoCEv2's ICRC) of `bytes`.
uint32_t icrc32(std::span<const uint8_t> bytes);

}  // namespace mrc::wire
