// Discrete-event scheduler with a virtual clock.
//
// Events are (time, sequence) ordered: two events at the same instant run in the order they were
// scheduled, so a run is a pure function of its inputs and seed. The clock only moves when the
// next event is popped; nothing reads a real clock.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "core/types.h"

namespace mrc::sim {

class EventQueue {
 public:
  using Callback = std::function<void()>;

  Instant now() const { return now_; }

  // Runs `callback` at `at` (clamped to now if in the past).
  void schedule(Instant at, Callback callback);
  void schedule_after(Duration delay, Callback callback) { schedule(now_ + delay, std::move(callback)); }

  // Pops and runs the earliest event; returns false if none is left or its time is after
  // `until`, in which case the clock advances to `until` (if not never).
  bool run_one(Instant until = Instant::never());

  // Runs events until none is left, the clock passes `until`, or `stop()` is called.
  void run_until(Instant until);
  void stop() { stopped_ = true; }
  bool stopped() const { return stopped_; }

  size_t pending() const { return heap_.size(); }
  uint64_t events_run() const { return events_run_; }

 private:
  // The heap holds small keys; callbacks stay put in a slab, so sifting moves 24 bytes instead
  // of a std::function.
  struct Key {
    Instant at;
    uint64_t sequence;
    uint32_t slot;
  };
  struct Later {
    bool operator()(const Key& a, const Key& b) const {
      return a.at != b.at ? a.at > b.at : a.sequence > b.sequence;
    }
  };
  std::vector<Key> heap_;  // a binary heap under Later
  std::vector<Callback> callbacks_;
  std::vector<uint32_t> free_slots_;
  Instant now_{0};
  uint64_t next_sequence_ = 0;
  uint64_t events_run_ = 0;
  bool stopped_ = false;
};

}  // namespace mrc::sim
