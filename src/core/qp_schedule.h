// Which queue pairs of an endpoint have work, without asking all of them: the earliest QP
// deadline, the QPs whose timers are due, and the QPs that may produce a packet now, in the
// same round-robin order a scan over every QP would visit them.
//
// A QP's deadline and its readiness to send are pure functions of its state, and every call
// that may change that state tells the schedule (QueuePair::changed). The schedule re-reads
// only those QPs, once, before the next question. A QP that has nothing queued but an EV probe
// due later waits in a heap and becomes a candidate when the clock passes that time. Readiness
// is a superset: a candidate may still find its window full or its plane unusable, but a QP
// that is not a candidate would have produced nothing and changed nothing. An event then costs
// work for the QPs it touched (O(log n) heap updates each) and a bit-set walk over the QPs with
// work, instead of a call to every QP (BENCHMARKS.md, "Simulator speed"). The endpoint uses it
// from Endpoint::kScheduleFrom QPs on.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/types.h"
#include "util/small_vector.h"
#include "util/time_heap.h"

namespace mrc {

class QueuePair;

class QpSchedule {
 public:
  using Qps = std::vector<std::unique_ptr<QueuePair>>;
  // QueuePair::send_ready_at() of a QP with something to send whatever the time.
  static constexpr Instant kReadyNow{INT64_MIN};

  // A QP was added (index = previous count) or its state may have changed (or it was removed).
  void add();
  void touch(uint32_t index) {
    if (dirty_flag_[index]) return;
    dirty_flag_[index] = 1;
    dirty_.push_back(index);
  }

  // Re-reads every touched QP; call before the questions below. Inline, as most calls find
  // nothing touched (the out-of-line function's register saves were most of their cost).
  void refresh(const Qps& qps) {
    if (!dirty_.empty()) refresh_dirty(qps);
  }
  // Makes the QPs whose probe time has come candidates to send.
  void promote(Instant now);
  // The first candidate in [from, to), or `to` if none.
  uint32_t next_ready(uint32_t from, uint32_t to) const;

  // The earliest deadline of any QP (never if none).
  Instant next_deadline() const { return deadline_top_; }
  // The QPs whose deadline is at or before `now`, in index order (each is re-read afterwards).
  void due(Instant now, std::vector<uint32_t>& out);

 private:
  void refresh_dirty(const Qps& qps);
  void set_ready(uint32_t index, bool ready);
  static Instant top_at(const TimeHeap& heap) { return heap.empty() ? Instant::never() : heap.top_at(); }

  SmallVector<uint32_t, 4> dirty_;
  Instant deadline_top_ = Instant::never();  // the earliest of deadlines_
  Instant wake_top_ = Instant::never();      // the earliest of wakes_
  uint32_t ready_count_ = 0;                 // candidates: bits set in ready_
  uint32_t count_ = 0;
  SmallVector<uint8_t, 8> dirty_flag_;
  TimeHeap deadlines_;           // per QP, as last read
  SmallVector<uint64_t, 1> ready_;  // bit set of candidates
  TimeHeap wakes_;               // QPs with nothing queued but an EV probe due at that time
};

}  // namespace mrc
