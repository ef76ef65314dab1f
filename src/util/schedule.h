// Which of many items (an endpoint's queue pairs, a simulated host's baseline connections) have
// work, without asking all of them: the earliest item deadline, the items whose deadline has
// come, and per lane (a plane, or the one transmit lane of an endpoint) the items that may
// produce a packet now, visited in the same round-robin order a scan over every item would.
//
// An item's deadline and its readiness are pure functions of its state, and whoever changes
// that state touches the item. The schedule re-reads touched items once, through the caller's
// reader, before the next question. An item that cannot send now but may at a known later time
// (an EV probe due, a pacing gap) waits in a per-lane heap and becomes ready when promote()
// passes that time. Readiness is a superset: a ready item may still produce nothing, but an
// item that is not ready would have produced nothing. An event then costs work for the items
// it touched (O(log n) heap updates each) and a bit-set walk over the ready ones, instead of a
// call to every item.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "mrc/types.hpp"  // Instant
#include "util/time_heap.h"

namespace mrc {

class Schedule {
 public:
  // A ready time meaning "ready whatever the time": something is queued.
  static constexpr Instant kReadyNow{INT64_MIN};

  explicit Schedule(uint32_t lanes = 1);

  uint32_t size() const { return count_; }
  // A new item, index size() before the call; it is read at the next refresh.
  void add();
  // The item's state may have changed (or it was removed: its reader then says never).
  void touch(uint32_t index) {
    if (dirty_flag_[index] != 0) return;
    dirty_flag_[index] = 1;
    dirty_.push_back(index);
  }

  // Re-reads every touched item. `read(index, ready_at)` returns the item's deadline (never if
  // none) and writes, per lane, when it may next send: kReadyNow, a later time, or never.
  template <class Read>
  void refresh(Read&& read) {
    if (dirty_.empty()) return;
    for (const uint32_t index : dirty_) {
      dirty_flag_[index] = 0;
      const Instant deadline = read(index, std::span<Instant>(reading_));
      store(index, deadline);
    }
    dirty_.clear();
  }
  // Makes the items whose ready time has come ready, on every lane.
  void promote(Instant now);

  // The first ready item of `lane` in [from, to), or `to` if none.
  uint32_t next_ready(uint32_t lane, uint32_t from, uint32_t to) const;
  // The ready items of `lane`, from `from` to the end and then from 0 (round-robin order).
  void ready_in_turn(uint32_t lane, uint32_t from, std::vector<uint32_t>& out) const;

  // The earliest deadline of any item (never if none).
  Instant next_deadline() const {
    return deadlines_.empty() ? Instant::never() : deadlines_.top_at();
  }
  // The items whose deadline is at or before `now`, in index order. Each is touched: its
  // deadline is read again at the next refresh.
  void due(Instant now, std::vector<uint32_t>& out);

 private:
  struct Lane {
    std::vector<uint64_t> ready;  // bit set of ready items
    TimeHeap wakes;               // items not ready yet, by the time they may be
  };
  void store(uint32_t index, Instant deadline);
  static void set_ready(Lane& lane, uint32_t index, bool ready);

  uint32_t count_ = 0;
  std::vector<uint32_t> dirty_;
  std::vector<uint8_t> dirty_flag_;
  std::vector<Instant> reading_;  // one per lane: what the reader writes
  TimeHeap deadlines_;
  std::vector<Lane> lanes_;
};

}  // namespace mrc
