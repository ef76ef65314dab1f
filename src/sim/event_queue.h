// Discrete-event scheduler with a virtual clock.
//
// Events are (time, sequence) ordered: two events at the same instant run in the order they were
// scheduled, so a run is a pure function of its inputs and seed. The clock only moves when the
// next event is popped; nothing reads a real clock.
//
// Events due within kWheelNs of the clock wait in a timing wheel of one bucket per nanosecond
// (a FIFO of the events at that instant, found through a two-level bit map); later ones wait in
// a binary heap and move into the wheel, in (time, sequence) order, as soon as the clock comes
// within kWheelNs of them, before anything else can be filed at their time. So every bucket
// holds its instant's events in sequence order, and a packet's hop costs O(1) instead of two
// heap sifts over every pending event.
//
// An event is any callable. Small trivially copyable ones (a lambda capturing `this` and an
// index or two: every event of the fabric and the hosts) are stored inline in a 24-byte record
// and run through one function pointer, with no allocation and no std::function; larger ones
// are boxed on the heap.
//
// Prefetch: a callable may also have a const `prefetch(int stage)` that only starts loading what
// running it will read (mrc::prefetch, util/prefetch.h; it changes nothing). Before running an
// event the queue asks the next kPrefetchStages events to prefetch: the second one ahead with
// stage 0, the next with stage 1, so an event is asked twice as it comes closer, and stage 1
// may read what stage 0 loaded (the packet an in-flight record names). At fabric scale, where
// every event's data has left the cache since it was last touched, chains of loads that
// stalled one after another now overlap with the events before. A guess (an event scheduled
// meanwhile may run first) that cannot change a result. Two stages: a third (for a packet's
// bytes) cost a call per event more than it saved, once the in-flight record names the bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "mrc/types.hpp"

namespace mrc::sim {

class EventQueue {
 public:
  EventQueue() = default;
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;
  ~EventQueue();

  Instant now() const { return now_; }

  // Runs `callback` at `at` (clamped to now if in the past).
  template <typename F>
  void schedule(Instant at, F&& callback);
  template <typename F>
  void schedule_after(Duration delay, F&& callback) {
    schedule(now_ + delay, std::forward<F>(callback));
  }

  // Pops and runs the earliest event; returns false if none is left or its time is after
  // `until`, in which case the clock advances to `until` (if not never).
  bool run_one(Instant until = Instant::never());

  // Runs events until none is left, the clock passes `until`, or `stop()` is called.
  void run_until(Instant until);
  void stop() { stopped_ = true; }
  // Whether events are asked to prefetch (see above; off by default): it pays where the events'
  // data has left the cache (a thousand hosts), and costs ~70 instructions per event where it
  // has not.
  void set_prefetch(bool on) { prefetch_ = on; }
  bool stopped() const { return stopped_; }

  size_t pending() const { return in_wheel_ + far_.size(); }
  uint64_t events_run() const { return events_run_; }

 private:
  static constexpr size_t kInlineBytes = 16;
  static constexpr uint32_t kNone = UINT32_MAX;
  // A stored callable: `call(event, kRun)` runs it, `call(event, kDestroy)` only destroys it
  // (an event still pending when the queue goes away), `call(event, kPrefetch0 + s)` calls its
  // prefetch(s) if it has one. Trivially copyable, so it is copied out of the slab before it
  // runs (running it may schedule and grow the slab).
  enum class Mode : uint8_t { kRun, kDestroy, kPrefetch0 };  // kPrefetch0 + s: stage s
  static constexpr int kPrefetchStages = 2;
  struct alignas(32) Event {  // two per cache line, never one across two
    void (*call)(Event&, Mode mode);
    alignas(8) unsigned char storage[kInlineBytes];
    uint32_t next;  // the next event of its wheel bucket (or free slot), or kNone
  };
  template <typename Fn>
  static constexpr bool kInline =
      sizeof(Fn) <= kInlineBytes &&
      alignof(Fn) <= 8 && std::is_trivially_copyable_v<Fn>&& std::is_trivially_destructible_v<Fn>;

  // The wheel: bucket t % kWheelNs holds the events at t, for every t in [now, now + kWheelNs).
  static constexpr unsigned kWheelBits = 13;
  static constexpr int64_t kWheelNs = int64_t{1} << kWheelBits;
  static constexpr uint32_t kWheelMask = static_cast<uint32_t>(kWheelNs - 1);
  static constexpr size_t kWords = static_cast<size_t>(kWheelNs / 64);  // one bit per bucket
  static constexpr size_t kSummaryWords = (kWords + 63) / 64;           // one bit per word
  struct Bucket {
    uint32_t head = kNone;
    uint32_t tail = kNone;
  };

  // The far heap orders 16-byte keys: the time, then (sequence << kSlotBits | slot). The
  // sequence is unique, so the slot bits never decide an order; one 128-bit comparison orders
  // two keys.
  static constexpr unsigned kSlotBits = 24;
  __extension__ typedef unsigned __int128 Key;
  static Key make_key(Instant at, uint64_t sequence, uint32_t slot) {
    return (static_cast<Key>(static_cast<uint64_t>(at.ns)) << 64) | (sequence << kSlotBits) | slot;
  }
  static Instant key_time(Key k) {
    return Instant{static_cast<int64_t>(static_cast<uint64_t>(k >> 64))};
  }
  static uint32_t key_slot(Key k) { return static_cast<uint32_t>(k) & ((1u << kSlotBits) - 1); }

  // Files a new event at `at` and returns its record to fill in.
  Event& push(Instant at);
  void append(uint32_t bucket, uint32_t slot);
  // The first non-empty bucket at or after now's (the wheel holds an event); the search past
  // now's word of the bit map.
  uint32_t first_bucket() const;
  uint32_t first_bucket_after(uint32_t word) const;
  // The time of the earliest pending event (never if none).
  Instant next_time(uint32_t& bucket) const;
  // Moves the far events due within the wheel's span of now into the wheel.
  void advance(Instant to);
  // Asks the events after the one about to run, from `bucket` on, to prefetch (see above).
  void prefetch_ahead(uint32_t bucket);
  // run_one's body, inlined into run_until's loop.
  bool step(Instant until);

  std::vector<Bucket> buckets_ = std::vector<Bucket>(static_cast<size_t>(kWheelNs));
  uint64_t words_[kWords] = {};
  uint64_t summary_[kSummaryWords] = {};
  size_t in_wheel_ = 0;
  std::vector<Key> far_;               // a min-heap of the events kWheelNs or more ahead when filed
  Instant far_at_ = Instant::never();  // the time of its earliest, never if it is empty
  std::vector<Event> events_;          // the slab, indexed by slot
  uint32_t free_head_ = kNone;  // the free slots, last freed first, linked through Event::next
  Instant now_{0};
  uint64_t next_sequence_ = 0;
  uint64_t events_run_ = 0;
  bool stopped_ = false;
  bool prefetch_ = false;
};

template <typename F>
void EventQueue::schedule(Instant at, F&& callback) {
  using Fn = std::decay_t<F>;
  Event& event = push(at);
  if constexpr (kInline<Fn>) {
    ::new (static_cast<void*>(event.storage)) Fn(std::forward<F>(callback));
    event.call = [](Event& e, Mode mode) {
      const Fn& f = *std::launder(reinterpret_cast<Fn*>(e.storage));
      if (mode == Mode::kRun) {
        f();
      } else if constexpr (requires { f.prefetch(0); }) {
        if (mode >= Mode::kPrefetch0)
          f.prefetch(static_cast<int>(mode) - static_cast<int>(Mode::kPrefetch0));
      }
    };
  } else {
    Fn* boxed = new Fn(std::forward<F>(callback));
    std::memcpy(event.storage, &boxed,
                sizeof boxed);  // NOLINT(bugprone-sizeof-expression): the pointer is stored
    event.call = [](Event& e, Mode mode) {
      Fn* f;
      std::memcpy(&f, e.storage,
                  sizeof f);  // NOLINT(bugprone-sizeof-expression): the pointer is stored
      if (mode >= Mode::kPrefetch0) return;
      std::unique_ptr<Fn> owner(f);
      if (mode == Mode::kRun) (*f)();
    };
  }
}

}  // namespace mrc::sim
