// The simulator's clock and scheduler: a timing wheel of one bucket per nanosecond for the
// events due soon, a binary heap of (time, sequence) keys for the later ones (event_queue.h).
//
// The sequence number breaks ties between events at the same instant in scheduling order, which
// is what makes a run a pure function of its inputs: no two events are ever "equal", so neither
// the heap's internal order nor the wheel's layout leaks into the simulation. Time jumps from
// event to event; there is no real clock anywhere.
#include "sim/event_queue.h"

#include <algorithm>
#include <bit>
#include <functional>
#include <utility>

#include "mrc/assert.hpp"

namespace mrc::sim {

#define MRC_INLINE [[gnu::always_inline]] inline

EventQueue::~EventQueue() {
  for (const Bucket& bucket : buckets_) {
    for (uint32_t slot = bucket.head; slot != kNone; slot = events_[slot].next) {
      events_[slot].call(events_[slot], Mode::kDestroy);
    }
  }
  for (const Key key : far_) events_[key_slot(key)].call(events_[key_slot(key)], Mode::kDestroy);
}

// The helpers of the per-event path are inlined (a call each cost about a tenth of the queue's
// instructions).
MRC_INLINE void EventQueue::append(uint32_t bucket, uint32_t slot) {
  events_[slot].next = kNone;
  Bucket& b = buckets_[bucket];
  if (b.head == kNone) {
    b.head = slot;
    words_[bucket >> 6] |= uint64_t{1} << (bucket & 63);
    summary_[bucket >> 12] |= uint64_t{1} << ((bucket >> 6) & 63);
  } else {
    events_[b.tail].next = slot;
  }
  b.tail = slot;
  ++in_wheel_;
}

MRC_INLINE uint32_t EventQueue::first_bucket() const {
  const uint32_t start = static_cast<uint32_t>(now_.ns) & kWheelMask;
  const uint32_t word = start >> 6;
  if (const uint64_t bits = words_[word] & (~uint64_t{0} << (start & 63))) {
    return (word << 6) | static_cast<uint32_t>(std::countr_zero(bits));
  }
  return first_bucket_after(word);
}

// The first non-empty word after `word`, else (wrapping) the first one from word 0.
uint32_t EventQueue::first_bucket_after(uint32_t word) const {
  for (const uint32_t from : {word + 1, 0u}) {
    for (uint32_t s = from >> 6; s < kSummaryWords && from < kWords; ++s) {
      uint64_t mask = summary_[s];
      if (s == (from >> 6)) mask &= ~uint64_t{0} << (from & 63);
      if (mask == 0) continue;
      const uint32_t w = (s << 6) | static_cast<uint32_t>(std::countr_zero(mask));
      return (w << 6) | static_cast<uint32_t>(std::countr_zero(words_[w]));
    }
  }
  MRC_ASSERT(false && "the wheel holds an event");
  return 0;
}

MRC_INLINE Instant EventQueue::next_time(uint32_t& bucket) const {
  if (in_wheel_ != 0) {
    bucket = first_bucket();
    const uint32_t ahead = (bucket - static_cast<uint32_t>(now_.ns)) & kWheelMask;
    return Instant{now_.ns + ahead};
  }
  bucket = static_cast<uint32_t>(far_at_.ns) & kWheelMask;
  return far_at_;
}

MRC_INLINE void EventQueue::advance(Instant to) {
  now_ = to;
  while (far_at_.ns - now_.ns < kWheelNs) {
    std::pop_heap(far_.begin(), far_.end(), std::greater<Key>{});
    const Key key = far_.back();
    far_.pop_back();
    far_at_ = far_.empty() ? Instant::never() : key_time(far_.front());
    append(static_cast<uint32_t>(key_time(key).ns) & kWheelMask, key_slot(key));
  }
}

EventQueue::Event& EventQueue::push(Instant at) {
  MRC_ASSERT(!at.is_never());
  if (at < now_) at = now_;
  uint32_t slot;
  if (free_head_ == kNone) {
    slot = static_cast<uint32_t>(events_.size());
    MRC_ASSERT(slot < (1u << kSlotBits));
    events_.emplace_back();
  } else {
    slot = free_head_;
    free_head_ = events_[slot].next;
  }
  const uint64_t sequence = next_sequence_++;
  if (at.ns - now_.ns < kWheelNs) {
    append(static_cast<uint32_t>(at.ns) & kWheelMask, slot);
  } else {
    MRC_ASSERT(sequence < (uint64_t{1} << (64 - kSlotBits)));
    far_.push_back(make_key(at, sequence, slot));
    std::push_heap(far_.begin(), far_.end(), std::greater<Key>{});
    far_at_ = key_time(far_.front());
  }
  return events_[slot];
}

MRC_INLINE void EventQueue::prefetch_ahead(uint32_t bucket) {
  const uint32_t now_bucket = bucket;
  uint32_t slot = buckets_[bucket].head;
  for (int stage = kPrefetchStages - 1; stage >= 0; --stage) {
    if (slot == kNone) {
      if (in_wheel_ == 0) return;
      const uint32_t word = bucket >> 6;
      const uint64_t later =
          (bucket & 63) == 63 ? 0 : words_[word] & (~uint64_t{0} << ((bucket & 63) + 1));
      const uint32_t found = later != 0
                                 ? (word << 6) | static_cast<uint32_t>(std::countr_zero(later))
                                 : first_bucket_after(word);
      // Not past the last pending instant (the search wraps around the wheel).
      if (((found - now_bucket) & kWheelMask) <= ((bucket - now_bucket) & kWheelMask)) return;
      bucket = found;
      slot = buckets_[bucket].head;
    }
    events_[slot].call(events_[slot],
                       static_cast<Mode>(static_cast<int>(Mode::kPrefetch0) + stage));
    slot = events_[slot].next;
  }
}

MRC_INLINE bool EventQueue::step(Instant until) {
  uint32_t bucket = 0;
  const Instant at = next_time(bucket);
  if (at.is_never() || at > until) {
    if (!until.is_never() && until > now_) advance(until);
    return false;
  }
  MRC_ASSERT(at >= now_);
  // Far events it brings into the wheel are at least kWheelNs after `at`: not in `bucket`.
  advance(at);
  Bucket& b = buckets_[bucket];
  const uint32_t slot = b.head;
  MRC_DASSERT(slot != kNone);
  b.head = events_[slot].next;
  if (b.head == kNone) {
    b.tail = kNone;
    uint64_t& word = words_[bucket >> 6];
    word &= ~(uint64_t{1} << (bucket & 63));
    if (word == 0) summary_[bucket >> 12] &= ~(uint64_t{1} << ((bucket >> 6) & 63));
  }
  --in_wheel_;
  ++events_run_;
  Event event = events_[slot];
  events_[slot].next = free_head_;
  free_head_ = slot;
  if (prefetch_) prefetch_ahead(bucket);
  event.call(event, Mode::kRun);
  return true;
}

bool EventQueue::run_one(Instant until) {
  return step(until);
}

void EventQueue::run_until(Instant until) {
  stopped_ = false;
  while (!stopped_ && step(until)) {
  }
}

#undef MRC_INLINE

}  // namespace mrc::sim
