// IndexSet (util/index_set.h): the simulator's polls visit the hosts and flows that changed
// through it, in index order. Against a std::set under random inserts and drains, across the
// word and summary-word boundaries (capacities 1, 64, 65, 4096, 4097 and 70,000).
#include "util/index_set.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "util/prng.h"

namespace mrc {
namespace {

TEST(IndexSet, DrainsInAscendingOrderWhatWasInsertedOnce) {
  for (const uint32_t capacity : {1u, 64u, 65u, 4096u, 4097u, 70'000u}) {
    SCOPED_TRACE(capacity);
    IndexSet set;
    set.reset(capacity);
    std::set<uint32_t> reference;
    Prng prng(capacity);
    for (int round = 0; round < 50; ++round) {
      const uint64_t inserts = prng.below(2 * capacity + 1);
      for (uint64_t k = 0; k < inserts; ++k) {
        const auto i = static_cast<uint32_t>(prng.below(capacity));
        ASSERT_EQ(set.insert(i), reference.insert(i).second);
        ASSERT_TRUE(set.contains(i));
      }
      ASSERT_EQ(set.size(), reference.size());
      std::vector<uint32_t> seen;
      set.drain([&](uint32_t i) { seen.push_back(i); });
      ASSERT_EQ(seen, std::vector<uint32_t>(reference.begin(), reference.end()));
      ASSERT_TRUE(set.empty());
      for (const uint32_t i : reference) ASSERT_FALSE(set.contains(i));
      reference.clear();
    }
  }
}

TEST(IndexSet, SwapLetsADrainRefillTheOtherSet) {
  IndexSet pending, scratch;
  pending.reset(300);
  scratch.reset(300);
  for (const uint32_t i : {299u, 3u, 64u, 128u}) pending.insert(i);
  scratch.swap(pending);
  std::vector<uint32_t> seen;
  scratch.drain([&](uint32_t i) {
    seen.push_back(i);
    pending.insert(i / 2);  // what a poll does: work found while draining waits for the next one
  });
  EXPECT_EQ(seen, (std::vector<uint32_t>{3, 64, 128, 299}));
  std::vector<uint32_t> next;
  pending.drain([&](uint32_t i) { next.push_back(i); });
  EXPECT_EQ(next, (std::vector<uint32_t>{1, 32, 64, 149}));
  EXPECT_FALSE(pending.contains(400));  // beyond the capacity: not a member, no access
}

}  // namespace
}  // namespace mrc
