// Plain counter structs, per queue pair, per plane and per endpoint, returned by value and
// readable at any time. Per-EV counters live in EvSet::Slot::stats.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "mrc/types.hpp"

namespace mrc {

struct RttStats {
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  int64_t sum_ns = 0;
  uint64_t samples = 0;
  int64_t smoothed_ns = 0;
  int64_t variation_ns = 0;
  void add(int64_t rtt_ns);
  int64_t avg_ns() const { return samples ? sum_ns / static_cast<int64_t>(samples) : 0; }
};

struct PlaneStats {
  uint64_t packets_sent = 0;
  uint64_t bytes_sent = 0;  // payload bytes of data packets
  uint64_t packets_received = 0;
  uint64_t bytes_received = 0;  // payload bytes placed
  uint64_t retransmits = 0;
};

// Why a received packet was not placed.
enum class DropReason : uint8_t {
  kDecode,  // malformed, bad ICRC (see EndpointStats::decode_errors)
  kUnknownQp,
  kQpState,  // QP not in a state that accepts it
  kDuplicate,
  kOutOfWindow,
  kBadKey,
  kOutOfBounds,
  kAccessDenied,
  kBadLength,     // payload length inconsistent with opcode / MTU / message length
  kWimmOverflow,  // more WRITE-with-immediate messages in flight than max_wimm_dest
  kBadAck,        // SACK/NACK for PSNs never sent
  kUnknownEv,     // echo of an EV that is not ours
  kCount
};
const char* to_string(DropReason r);

inline constexpr int kNackReasonSlots = 32;

// A QP's counters: what packets and completions update, the RTT statistics, then per plane.
struct QpStats {
  uint64_t data_packets_sent = 0;
  uint64_t data_bytes_sent = 0;
  uint64_t retransmits = 0;
  uint64_t data_packets_received = 0;
  uint64_t data_bytes_placed = 0;
  uint64_t sacks_sent = 0;
  uint64_t sacks_received = 0;
  uint64_t stale_sacks = 0;  // arrived after a newer SACK (reverse-path reordering)
  uint64_t wimm_delivered = 0;
  uint64_t work_requests_completed = 0;
  RttStats rtt;
  std::array<PlaneStats, kMaxPlanes> planes{};
  std::array<uint64_t, kNackReasonSlots> nacks_sent{};  // index = NACK reason code
  std::array<uint64_t, kNackReasonSlots> nacks_received{};
  uint64_t access_naks_sent = 0;      // IBTA NAKs "remote access error" (bad key, access, bounds)
  uint64_t access_naks_received = 0;  //   and those that named a packet still in flight
  uint64_t trims_received = 0;        // trimmed packets seen as responder
  uint64_t ecn_marks_received = 0;
  uint64_t losses_fast = 0;           // all of the next four
  uint64_t losses_nack = 0;           //   a NACK (trimmed, out of window)
  uint64_t losses_same_ev = 0;        //   per-EV ordering, shown by the SACK's bitmap
  uint64_t losses_same_ev_late = 0;   // per-EV ordering, after the grace for SACK reordering
  uint64_t losses_rack = 0;           //   sent a reordering window before a newer acknowledged one
  uint64_t losses_probe = 0;          // declared from a tail-loss probe answer
  uint64_t losses_tail = 0;           // resent by the tail timer with nothing new to send
  uint64_t losses_timeout = 0;        // declared by the retransmission timer
  uint64_t losses_port = 0;           // in flight on a plane that went down
  uint64_t false_losses = 0;          // declared lost, then acknowledged before being sent again
  uint64_t spurious_retransmits = 0;  // a SACK echoed the copy before the retransmission
  uint64_t timeouts = 0;
  uint64_t tail_probes = 0;
  uint64_t ev_probes = 0;
  uint64_t control_queue_overflows = 0;
  uint64_t answers_limited = 0;  // duplicate SACKs / out-of-window NACKs held back (Responder)
  std::array<uint64_t, static_cast<size_t>(DropReason::kCount)> drops{};
  uint64_t window_bytes = 0;
  uint64_t in_flight_bytes = 0;
};

// Why a datagram for a secure QP, or a secure datagram, was refused (core/packet_protection.h).
// Counted by the endpoint, not the QP: a refused packet leaves the QP it names untouched.
enum class SecurityDrop : uint8_t {
  kPlainToSecure,  // a plain packet for a secure QP
  kSecureToPlain,  // a secure packet for a QP without secure mode
  kTrimmed,        // trimmed in the fabric: its tag is gone, it cannot be verified
  kTruncated,      // shorter than its headers, security header and tag
  kOldKey,         // a key epoch the receiver no longer (or does not yet) hold
  kReplay,         // a packet counter already seen, or older than the replay window
  kBadTag,         // forged or modified: the AES-GCM tag does not match
  kNoKey,          // for a QP whose keys are not agreed yet (SecurityConfig::keys_later)
  kCount
};
const char* to_string(SecurityDrop d);

struct EndpointStats {
  uint64_t datagrams_received = 0;
  uint64_t datagrams_sent = 0;
  std::array<uint64_t, 16> decode_errors{};  // index = wire::DecodeError
  uint64_t unknown_qp = 0;
  std::array<uint64_t, static_cast<size_t>(SecurityDrop::kCount)> security_drops{};
};

}  // namespace mrc
