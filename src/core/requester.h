// The sending half of a queue pair: send queue, segmentation, EV choice, loss detection and
// retransmission, the retransmission timer and retry limits, sender completions.
//
// Segmentation: a work request is cut into MTU packets, grouped into wire messages of at most
// max_message_bytes (FIRST/MIDDLE/LAST or ONLY opcodes; only the last message of a
// WRITE-with-immediate carries the immediate). Every packet carries METH, TSETH and a RETH with
// its own remote address, so the responder can place it on arrival in any order.
//
// Loss detection, fastest first:
//  1. NACK(trimmed): retransmit at once; the EV is only SKIPped (congestion, not failure).
//  2. Per-EV ordering: packets on one EV follow one path in order, so when a SACK shows a
//     packet was received, every earlier unacknowledged packet on the same EV is lost. It is
//     declared at once if the SACK's bitmap covers it, else after a short grace for SACKs
//     overtaking each other on the reverse paths.
//  3. Cross-path (RACK-style): a packet sent more than a reordering window before the newest
//     acknowledged one is lost. Catches failures where the dead EV carries nothing later.
//  4. Tail: with data in flight and no progress for ~2 RTT, a reliability probe asks the
//     responder for its state; packets it has not got and that were sent before the probe are
//     lost. When there is nothing new to send (the end of a message: no later packet can ever
//     be acknowledged, so 2 and 3 cannot fire), the timer is 1.5 smoothed RTTs and instead of
//     a probe it resends the oldest packets unacknowledged for a smoothed RTT (at most 8), as
//     TCP's tail loss probe resends the last segment: the repair takes one round trip instead
//     of two, and the resent packets' SACKs report the rest. Under random loss the flows that
//     finish last are those whose last packets were lost, so this sets the completion time of
//     a collective.
//  5. Retransmission timeout: OCP ACK timeout, `retry_linear` retries at a fixed interval then
//     `retry_exp` with exponential backoff; past that the QP fails and every outstanding work
//     request completes with an error: the oldest with kRetryExceeded, or kRemoteAccessError if
//     the responder NAKed one of its packets in flight with "remote access error" (a bad rkey,
//     access or bounds). Such a NAK is only remembered: it does not fail the QP sooner than the
//     retries would, so an injected NAK can at most change the name of a failure that happens
//     anyway (docs/PROTOCOL.md 2.8).
// A real loss (2-5) is reported to the EV set (a second loss on the same EV soon after retires
// it, see ev_set.h) and the packet goes out again on another EV.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/cc/congestion_controller.h"
#include "core/completion_queue.h"
#include "core/ev_set.h"
#include "core/memory_region.h"
#include "core/send_window.h"
#include "core/work_request.h"
#include "mrc/config.hpp"
#include "mrc/result.hpp"
#include "mrc/stats.hpp"

namespace mrc {

// Where and how the I/O layer must send a datagram the engine produced.
struct TxMeta {
  PlaneId plane{0};
  Ev ev{0};
  uint32_t peer = 0;          // opaque peer handle given at connect time
  bool is_data = false;       // trimmable data class (else: control, high priority)
  uint32_t header_bytes = 0;  // for data: the length a trimming switch cuts it to
  // An answer to a connectionless request (EvProber): send it back to the request's sender,
  // reply_to = that datagram's RxMeta::source, rather than to a peer handle's address.
  bool reply = false;
  uint64_t reply_to = 0;
  // A data packet whose ICRC field the engine left zero (ICRC offload, EndpointConfig): the
  // datapath computes it (wire::seal over the datagram minus its last 4 bytes) or, like the
  // simulator's fabric, carries the bytes unchanged and vouches for them at the receiver.
  bool icrc_deferred = false;
  // A SACK or NACK: the EV of the data packet it answers (its echoed entropy). The engine sends
  // it on its own rotation's EV; a datapath whose paths are the same both ways (SRv6: an EV's
  // source port names its path, srv6.h) may send it back the way that data came, which a
  // failure that left the data's path alive leaves alive too.
  std::optional<Ev> answers{};
};

class Requester {
 public:
  Requester(const QpConfig& config, QpStats& stats, EvSet& evs, CongestionController& cc);

  void start(Psn initial_psn, Qpn self_qp, Qpn dest_qp);
  Result<Ok, PostError> post(const SendWr& wr, const MemoryRegionTable& mrs, uint32_t pd);

  // Produces the next packet for `plane` into `out` (>= mtu + headers); returns its length or 0.
  size_t poll(Instant now, PlaneId plane, std::span<uint8_t> out, TxMeta& meta);
  bool wants_to_send(Instant now) const;
  // Whether the plane's EV burst (QpConfig::ev_burst_packets) has packets left: new data on
  // this plane would go on the same EV as the last.
  bool in_burst(PlaneId plane) const { return bursts_[plane.value].left > 0; }

  void on_sack(Instant now, const wire::Sack& sack);
  void on_nack(Instant now, const wire::Nack& nack);
  // An AETH NAK "remote access error" (wire::kAethNakRemoteAccess) naming `psn`.
  void on_access_nak(Psn psn);
  void on_plane_down(PlaneId plane);
  // Planes whose ports are up at both ends (bit p = plane p); the window is shared among them.
  void set_usable_planes(uint32_t mask) { usable_planes_ = mask; }
  // Data packets carry their payload's length but not its bytes (EndpointConfig).
  void on_timer(Instant now);
  Instant next_deadline() const;

  bool failed() const { return failed_; }
  // The status of the oldest work request once failed(): kRemoteAccessError if the responder
  // NAKed one of its packets with "remote access error", else kRetryExceeded.
  WcStatus failure_status() const;
  // Completes every outstanding work request with an error (the oldest with `first`).
  void flush(WcStatus first, CompletionQueue* cq);
  void set_completion_queue(CompletionQueue* cq) { cq_ = cq; }
  uint64_t outstanding_work_requests() const { return sq_tail_ - sq_head_; }
  uint64_t in_flight_bytes() const { return in_flight_bytes_; }
  uint64_t in_flight_bytes(PlaneId plane) const { return plane_in_flight_bytes_[plane.value]; }
  Duration reorder_window() const;
  static constexpr uint32_t kMinReorderScale = 4;
  static constexpr uint32_t kMaxReorderScale = 32;

 private:
  // A posted work request as the send queue holds it; `post` writes only the gather elements
  // used.
  struct Gather {
    const uint8_t* ptr = nullptr;
    uint32_t length = 0;
  };
  struct WorkRequest {
    uint64_t wr_id = 0;
    uint64_t remote_addr = 0;
    uint64_t total_length = 0;
    uint64_t bytes_packetized = 0;
    uint32_t rkey = 0;
    uint32_t immediate = 0;
    Psn last_psn;
    uint8_t num_sge = 0;
    bool with_imm = false;
    bool signaled = true;
    bool packetized = false;
    std::array<Gather, kMaxSge> sge;
  };
  struct TxRecord {
    Psn psn;
    uint64_t tx_sequence;
  };
  struct Suspect {
    Psn psn;
    uint64_t tx_sequence;
    Instant deadline;
  };

  WorkRequest& wr_at(uint64_t seq) { return sq_[seq % sq_.size()]; }
  // The work request a packet of the window belongs to: it is in [sq_head_, sq_tail_), fewer
  // than 2^32 requests, so the low 32 bits the record keeps name it.
  const WorkRequest& wr_of(const SentPacket& p) {
    return wr_at(sq_head_ + static_cast<uint32_t>(p.wr_sequence - static_cast<uint32_t>(sq_head_)));
  }
  void grow_send_queue();
  size_t poll_retransmit(Instant now, PlaneId plane, std::span<uint8_t> out, TxMeta& meta);
  size_t poll_new(Instant now, PlaneId plane, std::span<uint8_t> out, TxMeta& meta);
  size_t poll_probe(Instant now, PlaneId plane, std::span<uint8_t> out, TxMeta& meta);
  bool window_allows(PlaneId plane, uint32_t bytes) const;
  uint32_t burst_bytes(uint64_t remaining) const;
  void add_in_flight(const SentPacket& p);
  void remove_in_flight(const SentPacket& p);
  void describe_next_packet(SentPacket& p);
  size_t transmit(Instant now, Psn psn, uint16_t slot, std::span<uint8_t> out, TxMeta& meta);
  uint32_t message_length(const WorkRequest& w, uint64_t offset) const;
  void gather(const WorkRequest& wr, uint64_t offset, uint32_t length, uint8_t* dst) const;
  size_t write_probe(Instant now, uint16_t slot, std::span<uint8_t> out, TxMeta& meta);

  // `late_original`: set when the packet proves a retransmission spurious (acked_too_soon).
  bool ack_one(Psn psn, uint64_t& acked_bytes, Instant now, bool& late_original);
  bool acked_too_soon(const SentPacket& p, Instant now) const;
  void walk_same_ev(Instant now, Psn trigger, Psn bitmap_base, const wire::Sack& sack);
  void rack_scan(Instant now);
  void tail_probe_answered(Instant now, const wire::Sack& sack);
  bool resend_tail(Instant now);
  void order_retransmits();
  bool nothing_new_to_send() const { return sq_next_send_ == sq_tail_; }
  bool can_send_on(PlaneId plane) const;
  bool resend_elsewhere(const SentPacket& p, PlaneId plane) const;
  static constexpr size_t kMaxTailResend = 8;  // packets resent per tail timer (resend_tail)
  // What a loss is held against: nothing (a trim, a plane that went down), the packet's EV, or
  // its EV as a timeout (which a path policy cannot excuse; see ev_set.h).
  enum class Blame : uint8_t { kNone, kEv, kTimeout };
  void declare_lost(Psn psn, uint64_t& counter, Blame blame, Instant now);
  // Declares lost every pending packet of the window that `which` selects; returns how many.
  template <typename Which>
  size_t declare_lost_where(Which which, uint64_t& counter, Blame blame, Instant now) {
    size_t n = 0;
    for (Psn psn = window_.oldest(); psn != window_.next(); psn += 1) {
      if (!window_.at(psn).pending() || !which(window_.at(psn))) continue;
      declare_lost(psn, counter, blame, now);
      ++n;
    }
    return n;
  }
  void on_false_loss(const SentPacket& p);
  void on_spurious_retransmit(const SentPacket& p);
  void count_spurious(const SentPacket& p);
  void widen_reorder_window();
  void check_suspects(Instant now);
  void complete_acknowledged();
  void on_progress(Instant now);
  Duration rto() const;
  Duration base_probe_timeout() const;
  Duration probe_timeout() const;
  // What a packet of `length` payload bytes counts against the window: its payload and an
  // allowance for its headers.
  static constexpr uint32_t cost_of(uint32_t length) { return length + 64; }
  uint32_t cost_bytes(const SentPacket& p) const { return cost_of(p.length); }

  const QpConfig& config_;
  QpStats& stats_;
  EvSet& evs_;
  CongestionController& cc_;
  CompletionQueue* cq_ = nullptr;

  std::vector<WorkRequest> sq_;  // ring by sequence; grows by doubling up to sq_capacity_
  uint64_t sq_capacity_ = 0;     // max_send_wr
  uint64_t sq_head_ = 0;         // oldest incomplete
  uint64_t sq_next_send_ = 0;    // being packetized
  uint64_t sq_tail_ = 0;         // next free
  uint16_t next_msn_ = 0;
  uint16_t next_rq_msn_ = 0;
  uint32_t wimm_in_flight_ = 0;

  SendWindow window_;
  RetransmitQueue retransmits_;
  BoundedFifo<TxRecord> tx_order_;  // every transmission, in order (RACK scan)
  // Packets awaiting the grace of per-EV loss detection: at most kMaxSuspects (beyond that a
  // packet waits for RACK or the tail probe instead); grown on demand, as most QPs never have one.
  static constexpr size_t kMaxSuspects = 1024;
  std::vector<Suspect> suspects_;
  // Per EV slot, the last packet sent on it: one record (a packet's random slot is one cache
  // line here, not one in each of two arrays).
  struct LastOnEv {
    Psn psn;
    uint64_t tx_sequence = 0;  // 0 = nothing sent on this slot yet
  };
  std::vector<LastOnEv> ev_last_;
  // Per plane, the EV burst new data is going out on (QpConfig::ev_burst_packets). A burst ends
  // early when its EV stops being GOOD.
  std::array<EvSet::Burst, kMaxPlanes> bursts_{};

  Qpn self_qp_{0};
  Qpn dest_qp_{0};
  uint32_t peer_window_psns_ = 0;
  uint64_t next_tx_sequence_ = 1;
  uint64_t in_flight_bytes_ = 0;
  std::array<uint64_t, kMaxPlanes> plane_in_flight_bytes_{};
  uint32_t usable_planes_ = 0xFFFFFFFFu;
  // Per plane: the planes are separate fabrics whose queues differ by up to a whole buffer,
  // so RACK compares a packet only with later ones on its own plane.
  Instant newest_acked_sent_at_{INT64_MIN / 2};
  Instant last_progress_{0};
  uint32_t retries_ = 0;
  uint32_t tail_probes_since_progress_ = 0;
  bool tail_probe_pending_ = false;
  bool ev_probe_pending_ = false;
  uint16_t tail_probe_slot_ = EvSet::kNoSlot;
  Ev tail_probe_ev_{0};
  Instant tail_probe_sent_at_{0};
  uint16_t next_probe_id_ = 1;
  bool failed_ = false;
  uint32_t reorder_scale_ = kMinReorderScale;  // reorder window = srtt * scale / 4
  uint32_t acks_since_false_loss_ = 0;
  // The work request (wr_sequence) one of whose packets in flight got an access NAK, if any.
  bool access_nak_ = false;
  uint32_t access_nak_wr_ = 0;
};

}  // namespace mrc
