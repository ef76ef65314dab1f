// The simulator's clock and scheduler: a binary heap of (time, sequence) events.
//
// The sequence number breaks ties between events at the same instant in scheduling order, which
// is what makes a run a pure function of its inputs: no two events are ever "equal", so the
// heap's internal order never leaks into the simulation. Time jumps from event to event; there
// is no real clock anywhere.
#include "sim/event_queue.h"

#include <utility>

#include "util/assert.h"

namespace mrc::sim {

void EventQueue::schedule(Instant at, Callback callback) {
  MRC_ASSERT(callback);
  MRC_ASSERT(!at.is_never());
  if (at < now_) at = now_;
  heap_.push(Event{at, next_sequence_++, std::move(callback)});
}

bool EventQueue::run_one(Instant until) {
  if (heap_.empty() || heap_.top().at > until) {
    if (!until.is_never() && until > now_) now_ = until;
    return false;
  }
  // priority_queue only exposes a const top(); moving the callback out before pop() is safe
  // because the heap order depends on (at, sequence) alone, which stay intact.
  Event event = std::move(const_cast<Event&>(heap_.top()));
  heap_.pop();
  MRC_ASSERT(event.at >= now_);
  now_ = event.at;
  ++events_run_;
  event.callback();
  return true;
}

void EventQueue::run_until(Instant until) {
  stopped_ = false;
  while (!stopped_ && run_one(until)) {
  }
}

}  // namespace mrc::sim
