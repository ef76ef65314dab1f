// The simulator's clock and scheduler: a binary heap of (time, sequence) events.
//
// The sequence number breaks ties between events at the same instant in scheduling order, which
// is what makes a run a pure function of its inputs: no two events are ever "equal", so the
// heap's internal order never leaks into the simulation. Time jumps from event to event; there
// is no real clock anywhere.
#include "sim/event_queue.h"

#include <algorithm>
#include <utility>

#include "util/assert.h"

namespace mrc::sim {

void EventQueue::schedule(Instant at, Callback callback) {
  MRC_ASSERT(callback);
  MRC_ASSERT(!at.is_never());
  if (at < now_) at = now_;
  uint32_t slot;
  if (free_slots_.empty()) {
    slot = static_cast<uint32_t>(callbacks_.size());
    callbacks_.push_back(std::move(callback));
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    callbacks_[slot] = std::move(callback);
  }
  heap_.push_back(Key{at, next_sequence_++, slot});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
}

bool EventQueue::run_one(Instant until) {
  if (heap_.empty() || heap_.front().at > until) {
    if (!until.is_never() && until > now_) now_ = until;
    return false;
  }
  std::pop_heap(heap_.begin(), heap_.end(), Later{});
  const Key key = heap_.back();
  heap_.pop_back();
  MRC_ASSERT(key.at >= now_);
  now_ = key.at;
  ++events_run_;
  Callback callback = std::move(callbacks_[key.slot]);
  free_slots_.push_back(key.slot);
  callback();
  return true;
}

void EventQueue::run_until(Instant until) {
  stopped_ = false;
  while (!stopped_ && run_one(until)) {
  }
}

}  // namespace mrc::sim
