// The receiving half of a queue pair: PSN window checks, placement, duplicate suppression,
// in-order WRITE-with-immediate completions, SACK coalescing, and NACKs.
//
// A data packet is placed only after every check passes: QP state, PSN inside the window
// (behind it: a duplicate, answered with a SACK; beyond it: NACK PSN_OOR_WINDOW), not already
// received, payload length consistent with the opcode and MTU, and RETH key / protection domain
// / access / bounds via the memory-region table (a packet failing that check is dropped and
// answered with an IBTA NAK "remote access error", wire::kAethNakRemoteAccess). A trimmed packet
// (payload cut by a switch) is not placed but NACKed at once so the sender retransmits without
// waiting. WRITE-with-immediate messages are tracked by their RQ message sequence number in a
// ring of max_wimm_dest entries; each completes (consuming a posted receive) when the
// cumulative PSN has passed its last packet, which delivers completions in send order and
// guarantees that all data written before it, by any message, is in memory. SACKs are coalesced
// (every ack_every_packets packets or after ack_delay) but sent at once for an ECN mark, the end of
// a message, a duplicate or a probe; coalescing never lets a received PSN go unreported: when the
// pending SACK could no longer cover every unreported PSN, it is sent first. Each SACK carries how
// long it was held after its trigger arrived (wire::sack_hold_code), so the requester's congestion
// control sees the network's delay and not the coalescing timer. A SACK's trigger fields (PSN
// offset, EV, timestamp) all describe one packet: the last new one, or the duplicate that caused
// it.
//
// Answers to packets that did not advance the window (a duplicate's SACK, a NACK for a PSN
// beyond it, an access NAK) are rate-limited by a token bucket: kAnswerBurst at once, then one
// per kAnswerInterval. Such packets are what a forged or replayed flood consists of, and each
// answer goes to the legitimate peer; as TCP limits its challenge ACKs (RFC 5961 §7), a flood
// must not become a flood of SACKs and NACKs. Answers held back are counted
// (QpStats::answers_limited); the peer learns the same from the next regular SACK.
#pragma once

#include <cstdint>
#include <vector>

#include "core/completion_queue.h"
#include "core/control_queue.h"
#include "core/incast_detector.h"
#include "core/memory_region.h"
#include "core/receive_window.h"
#include "core/wire/packet.h"
#include "mrc/config.hpp"
#include "mrc/stats.hpp"
#include "util/bounded_fifo.h"

namespace mrc {

// What the I/O layer learned about a received datagram outside its bytes.
struct RxMeta {
  PlaneId plane{0};
  Ev ev{0};             // entropy the packet arrived with (UDP source port / flow label)
  bool ecn_ce = false;  // IP ECN field was Congestion Experienced
  bool trimmed = false;
  uint32_t peer = 0;
  uint64_t source = 0;  // the datapath's token for the sender (UdpHost: IPv4 << 16 | UDP port)
  // The datapath has checked the ICRC (offload), or vouches that the bytes are exactly what the
  // sender's engine wrote: the endpoint does not check it again. A datapath that cannot say so
  // leaves it false, and the endpoint checks every ICRC.
  bool icrc_checked = false;
};

class Responder {
 public:
  Responder(const QpConfig& config, QpStats& stats, ControlQueue& control);

  void start(Psn expected_psn, Qpn self_qp, Qpn dest_qp, uint32_t pd, const MemoryRegionTable* mrs);
  void on_data(Instant now, const wire::DataPacket& packet, const RxMeta& meta);
  // The endpoint's incast detector (may be null) and this QP's id in it.
  void set_incast_detector(IncastDetector* detector, uint32_t id) {
    incast_ = detector;
    incast_id_ = id;
  }
  void on_probe(Instant now, const wire::Probe& probe, const RxMeta& meta);
  bool post_recv(uint64_t wr_id);
  bool receive_queue_full() const { return rq_.full(); }
  // Moves deliverable WRITE-with-immediate completions into `cq` (while it has room).
  void deliver(CompletionQueue* cq);
  void on_timer(Instant now);
  Instant next_deadline() const { return sack_deadline_; }
  void flush(CompletionQueue* cq);
  Psn cumulative() const { return window_.cumulative(); }
  size_t posted_receives() const { return rq_.size(); }
  size_t pending_wimm() const { return wimm_pending_; }

 private:
  IncastDetector* incast_ = nullptr;
  uint32_t incast_id_ = 0;
  struct PendingWimm {
    bool valid = false;
    Psn last_psn;
    uint32_t immediate = 0;
    uint32_t length = 0;
  };
  void drop(DropReason reason) { ++stats_.drops[static_cast<size_t>(reason)]; }
  bool length_ok(const wire::DataPacket& packet) const;
  bool place(const wire::DataPacket& packet);
  int wimm_slot(uint16_t rq_msn) const;
  void note_received(Instant now, const wire::DataPacket& packet, const RxMeta& meta);
  // `trigger_at`: when the packet whose EV and timestamp are echoed arrived (the hold).
  // The packet a SACK answers: its PSN, EV and timestamp are echoed, and `at` (when it arrived)
  // gives the hold.
  struct Trigger {
    Psn psn;
    uint32_t ev = 0;
    uint16_t timestamp = 0;
    Instant at{0};
  };
  void send_sack(Instant now, bool probe_response, const Trigger& trigger, wire::SkipMode skip);
  void send_pending_sack(Instant now, wire::SkipMode skip) {
    send_sack(now, false, Trigger{trigger_psn_, trigger_ev_, trigger_timestamp_, trigger_at_},
              skip);
  }
  // Takes a token for an answer to a packet that did not advance the window (see above).
  bool may_answer_unsolicited(Instant now);
  void send_nack(wire::NackReason reason, Psn psn, const RxMeta& meta, uint16_t timestamp);
  void send_access_nak(Psn psn);
  void push_control(const ControlItem& item, uint64_t& sent_counter);

  const QpConfig& config_;
  QpStats& stats_;
  ControlQueue& control_;
  const MemoryRegionTable* mrs_ = nullptr;
  uint32_t pd_ = 0;
  Qpn self_qp_{0};
  Qpn dest_qp_{0};
  ReceiveWindow window_;

  BoundedFifo<uint64_t> rq_;       // posted receive wr_ids
  std::vector<PendingWimm> wimm_;  // ring indexed by rq_msn
  uint16_t next_rq_msn_ = 0;
  size_t wimm_head_ = 0;  // ring slot of next_rq_msn_
  size_t wimm_pending_ = 0;

  // Coalescing state: the unreported PSN range and the last packet (the SACK's trigger).
  uint32_t unreported_ = 0;
  Psn unreported_low_;
  Psn unreported_high_;
  Psn trigger_psn_;
  uint32_t trigger_ev_ = 0;
  uint16_t trigger_timestamp_ = 0;
  Instant trigger_at_{0};
  Instant sack_deadline_ = Instant::never();
  uint32_t received_bytes_ = 0;
  // The unsolicited-answer bucket: tokens left, and when the last token was added.
  static constexpr uint32_t kAnswerBurst = 16;
  static constexpr Duration kAnswerInterval{64'000};
  uint32_t answer_tokens_ = kAnswerBurst;
  Instant answer_refilled_at_{0};
};

}  // namespace mrc
