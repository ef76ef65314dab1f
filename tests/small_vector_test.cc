// SmallVector (util/small_vector.h): the schedule's heaps and lists keep their first elements
// inline; against std::vector under random pushes, pops, resizes and clears across the inline
// capacity, and moves of inline and heap-held contents.
#include "util/small_vector.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "util/prng.h"

namespace mrc {
namespace {

template <typename V>
void expect_equal(const V& small, const std::vector<uint64_t>& reference) {
  ASSERT_EQ(small.size(), reference.size());
  for (size_t i = 0; i < reference.size(); ++i) ASSERT_EQ(small[i], reference[i]) << i;
}

TEST(SmallVector, MatchesAVectorAcrossTheInlineCapacity) {
  SmallVector<uint64_t, 3> small;
  std::vector<uint64_t> reference;
  Prng prng(7);
  for (int step = 0; step < 20'000; ++step) {
    const uint64_t op = prng.below(100);
    if (op < 55) {
      const uint64_t v = prng.next_u64();
      small.push_back(v);
      reference.push_back(v);
    } else if (op < 90) {
      if (!reference.empty()) {
        ASSERT_EQ(small.back(), reference.back());
        small.pop_back();
        reference.pop_back();
      }
    } else if (op < 98) {
      const auto n = static_cast<uint32_t>(prng.below(12));
      small.resize(n, 42);
      reference.resize(n, 42);
    } else {
      small.clear();
      reference.clear();
    }
    expect_equal(small, reference);
    ASSERT_EQ(small.empty(), reference.empty());
  }
}

TEST(SmallVector, MovesInlineAndHeapContents) {
  for (const uint32_t n : {2u, 9u}) {  // inline, then on the heap
    SmallVector<uint64_t, 4> a;
    std::vector<uint64_t> reference;
    for (uint32_t i = 0; i < n; ++i) {
      a.push_back(i * 3);
      reference.push_back(i * 3);
    }
    SmallVector<uint64_t, 4> b(std::move(a));
    expect_equal(b, reference);
    EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty, by design
    SmallVector<uint64_t, 4> c;
    c.push_back(99);
    c = std::move(b);
    expect_equal(c, reference);
    c.push_back(7);  // still usable after the move
    EXPECT_EQ(c.back(), 7u);
  }
}

}  // namespace
}  // namespace mrc
