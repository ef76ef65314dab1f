// The requester's record of every packet in [oldest unacknowledged PSN, next PSN): what it
// carries (which work request, which bytes), where it went (EV slot, plane), when, and whether
// it is in flight, acknowledged or waiting to be retransmitted. A power-of-two ring indexed by
// PSN: O(1) lookups, memory bounded by the PSN window. The ring starts at 64 records and doubles
// when a push needs room (up to the window), so a QP that sends little never touches the pages
// of a whole window; only the records of [oldest, next) exist, and only those are read. Each
// record also links to the previous transmission on the same EV, which is how per-EV ordering
// turns "a later packet on this path arrived" into "this earlier one was lost" without a per-EV
// list.
#pragma once

#include <cstdint>
#include <vector>

#include "core/wire/packet.h"
#include "mrc/types.hpp"
#include "util/bounded_fifo.h"

namespace mrc {

// A packet's record, written when it is sent and read when it is acknowledged. What its work
// request holds (the remote address, the immediate, the rkey, the length of the packet's
// message) is read there, not copied here.
struct SentPacket {
  enum class State : uint8_t { kInFlight, kAcked, kLost, kSuspect };

  uint64_t tx_sequence = 0;    // per-QP transmission counter of the latest transmission
  uint64_t prev_tx_on_ev = 0;  // tx_sequence of the previous transmission on the same EV (0: none)
  Instant sent_at;
  uint64_t offset = 0;       // byte offset of this packet's payload within the work request
  uint32_t wr_sequence = 0;  // the work request's sequence in the send queue, low 32 bits
                             //   (Requester::wr_of: fewer than 2^32 are ever outstanding)
  Psn prev_psn_on_ev;
  uint32_t length = 0;
  Ev ev{0};
  Ev first_ev{0};                // EV and wire timestamp of the first transmission: a SACK
  uint16_t first_timestamp = 0;  //   echoing them after a retransmission shows it arrived
  uint16_t ev_slot = 0;
  uint16_t msn = 0;
  uint16_t rq_msn = 0;
  PlaneId plane{0};
  wire::Opcode opcode = wire::Opcode::kWriteOnly;
  State state = State::kInFlight;
  uint8_t transmissions = 0;
  // Sent and not yet settled: in flight, or suspected lost (see Requester::walk_same_ev).
  bool pending() const { return state == State::kInFlight || state == State::kSuspect; }
  bool has_prev_on_ev() const { return prev_tx_on_ev != 0; }
};

class SendWindow {
 public:
  explicit SendWindow(uint32_t capacity_psns);
  void reset(Psn initial);

  Psn oldest() const { return oldest_; }  // snd_una
  Psn next() const { return next_; }      // next new PSN
  uint32_t outstanding() const { return static_cast<uint32_t>(next_.since(oldest_)); }
  uint32_t capacity() const { return capacity_; }
  bool contains(Psn psn) const {
    const int32_t d = psn.since(oldest_);
    return d >= 0 && d < next_.since(oldest_);
  }

  // Appends a record for PSN next() and returns it (growing the ring if it is full).
  // REQUIRES outstanding() < capacity().
  SentPacket& push();
  SentPacket& at(Psn psn) { return ring_[psn.value & mask_]; }
  const SentPacket& at(Psn psn) const { return ring_[psn.value & mask_]; }
  // Drops acknowledged records from the front; returns how many.
  uint32_t advance_oldest_to(Psn psn);

 private:
  void grow();

  std::vector<SentPacket> ring_;
  uint32_t mask_ = 0;
  uint32_t capacity_ = 0;
  Psn oldest_;
  Psn next_;
};

// PSNs awaiting retransmission.
using RetransmitQueue = BoundedFifo<Psn>;

}  // namespace mrc
