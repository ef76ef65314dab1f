// TimeHeap: the heaps of deadlines and wake-ups behind util/schedule.h.
// Against a std::set of (time, id) under random sets, including equal times (ties go to the
// lower id), re-sets to the same time, moves up and down, and removals (Instant::never()); the
// top, its time and every id's time agree after each step.
#include "util/time_heap.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>
#include <vector>

#include "util/prng.h"

namespace mrc {
namespace {

TEST(TimeHeap, MatchesAnOrderedSetUnderRandomSets) {
  for (const uint32_t ids : {1u, 2u, 3u, 17u, 200u}) {
    SCOPED_TRACE(ids);
    TimeHeap heap;
    heap.resize(ids);
    std::set<std::pair<int64_t, uint32_t>> reference;
    std::vector<Instant> at(ids, Instant::never());
    Prng prng(ids);
    for (int step = 0; step < 20'000; ++step) {
      const auto id = static_cast<uint32_t>(prng.below(ids));
      // Few distinct times, so ties are common; a quarter of the sets remove.
      const Instant t =
          prng.chance(0.25) ? Instant::never() : Instant{static_cast<int64_t>(prng.below(50))};
      if (!at[id].is_never()) reference.erase({at[id].ns, id});
      if (!t.is_never()) reference.insert({t.ns, id});
      at[id] = t;
      heap.set(id, t);
      ASSERT_EQ(heap.empty(), reference.empty());
      if (!reference.empty()) {
        ASSERT_EQ(heap.top(), reference.begin()->second);
        ASSERT_EQ(heap.top_at().ns, reference.begin()->first);
      }
      ASSERT_EQ(heap.at(id), t);
    }
    for (uint32_t id = 0; id < ids; ++id) EXPECT_EQ(heap.at(id), at[id]);
  }
}

TEST(TimeHeap, GrowsWithNewIdsThatStartWithoutATime) {
  TimeHeap heap;
  heap.resize(2);
  heap.set(1, Instant{10});
  heap.resize(5);
  EXPECT_TRUE(heap.at(4).is_never());
  heap.set(4, Instant{5});
  EXPECT_EQ(heap.top(), 4u);
  heap.set(4, Instant::never());
  EXPECT_EQ(heap.top(), 1u);
  heap.set(1, Instant::never());
  EXPECT_TRUE(heap.empty());
}

}  // namespace
}  // namespace mrc
