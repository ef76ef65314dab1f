// BoundedFifo: the engine's bounded queues (completions, control packets, retransmissions,
// posted receives, the transmission order). Against a std::deque over random pushes and pops:
// FIFO order across the ring's wrap, its growth and its restart at the first entry when empty;
// a push beyond the capacity fails and changes nothing.
#include "util/bounded_fifo.h"

#include <gtest/gtest.h>

#include <deque>

#include "util/prng.h"

namespace mrc {
namespace {

TEST(BoundedFifo, MatchesADequeUnderRandomPushesAndPops) {
  for (const size_t capacity : {1u, 5u, 64u, 100u, 1000u}) {
    SCOPED_TRACE(capacity);
    BoundedFifo<uint64_t> fifo(capacity);
    std::deque<uint64_t> reference;
    Prng prng(capacity);
    uint64_t next = 1;
    for (int step = 0; step < 20'000; ++step) {
      // Phases that mostly fill, then mostly drain, so the ring wraps, grows and empties.
      const bool fill = (step / 500) % 2 == 0;
      if (prng.chance(fill ? 0.7 : 0.3)) {
        const bool pushed = fifo.push(next);
        EXPECT_EQ(pushed, reference.size() < capacity);
        if (pushed) reference.push_back(next);
        ++next;
      } else if (!reference.empty()) {
        ASSERT_FALSE(fifo.empty());
        ASSERT_EQ(fifo.front(), reference.front());
        fifo.pop();
        reference.pop_front();
      }
      ASSERT_EQ(fifo.size(), reference.size());
      ASSERT_EQ(fifo.empty(), reference.empty());
      ASSERT_EQ(fifo.full(), reference.size() == capacity);
    }
  }
}

TEST(BoundedFifo, ClearEmptiesAndKeepsTheCapacity) {
  BoundedFifo<int> fifo(3);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(fifo.push(i));
  EXPECT_FALSE(fifo.push(9));
  fifo.clear();
  EXPECT_TRUE(fifo.empty());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(fifo.push(10 + i));
  for (int i = 0; i < 3; ++i, fifo.pop()) EXPECT_EQ(fifo.front(), 10 + i);
  EXPECT_EQ(fifo.capacity(), 3u);
}

}  // namespace
}  // namespace mrc
