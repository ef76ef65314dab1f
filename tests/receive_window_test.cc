// The responder's PSN window (src/core/receive_window.h): in-order and out-of-order arrival,
// duplicates, the window edge, wrap-around of the 24-bit PSN space, and the SACK bitmap.
#include "core/receive_window.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "util/prng.h"

namespace mrc {
namespace {

using Verdict = ReceiveWindow::Verdict;

TEST(ReceiveWindow, InOrderAdvancesTheCumulativePsn) {
  ReceiveWindow w(128, Psn(1000));
  EXPECT_EQ(w.capacity(), 128u);
  for (uint32_t i = 0; i < 1000; ++i) {
    const Psn psn(1000 + i);
    ASSERT_EQ(w.classify(psn), Verdict::kNew);
    w.mark(psn);
    EXPECT_EQ(w.cumulative(), psn + 1);
    EXPECT_EQ(w.out_of_order(), 0u);
  }
}

TEST(ReceiveWindow, OutOfOrderIsHeldUntilTheGapFills) {
  ReceiveWindow w(128, Psn(0));
  for (uint32_t p : {5u, 3u, 1u}) w.mark(Psn(p));
  EXPECT_EQ(w.cumulative(), Psn(0));
  EXPECT_EQ(w.out_of_order(), 3u);
  w.mark(Psn(0));  // absorbs 1
  EXPECT_EQ(w.cumulative(), Psn(2));
  EXPECT_EQ(w.out_of_order(), 2u);
  w.mark(Psn(2));  // absorbs 3
  EXPECT_EQ(w.cumulative(), Psn(4));
  w.mark(Psn(4));  // absorbs 5
  EXPECT_EQ(w.cumulative(), Psn(6));
  EXPECT_EQ(w.out_of_order(), 0u);
}

TEST(ReceiveWindow, AnyArrivalOrderEndsWithEverythingCumulative) {
  Prng prng(3);
  for (int round = 0; round < 20; ++round) {
    ReceiveWindow w(512, Psn(100));
    std::vector<uint32_t> order(512);
    for (uint32_t i = 0; i < order.size(); ++i) order[i] = 100 + i;
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[prng.below(i)]);
    for (uint32_t p : order) {
      ASSERT_EQ(w.classify(Psn(p)), Verdict::kNew);
      w.mark(Psn(p));
      ASSERT_EQ(w.classify(Psn(p)), Verdict::kDuplicate);
    }
    EXPECT_EQ(w.cumulative(), Psn(612));
    EXPECT_EQ(w.out_of_order(), 0u);
  }
}

TEST(ReceiveWindow, DuplicatesBehindAndAboveTheCumulativePsn) {
  ReceiveWindow w(128, Psn(50));
  for (uint32_t p = 50; p < 60; ++p) w.mark(Psn(p));
  w.mark(Psn(70));
  EXPECT_EQ(w.classify(Psn(50)), Verdict::kDuplicate);
  EXPECT_EQ(w.classify(Psn(59)), Verdict::kDuplicate);
  EXPECT_EQ(w.classify(Psn(0)), Verdict::kDuplicate);   // long ago
  EXPECT_EQ(w.classify(Psn(70)), Verdict::kDuplicate);  // received above the gap
  EXPECT_EQ(w.classify(Psn(60)), Verdict::kNew);
  EXPECT_EQ(w.classify(Psn(69)), Verdict::kNew);
  EXPECT_EQ(w.classify(Psn(71)), Verdict::kNew);
  EXPECT_EQ(w.classify(Psn(60) - (1u << 23) + 1), Verdict::kDuplicate);  // the far past
}

TEST(ReceiveWindow, OutOfWindowAtAndBeyondTheEdge) {
  ReceiveWindow w(100, Psn(1000));  // not a power of two: the ring is larger than the window
  EXPECT_EQ(w.classify(Psn(1099)), Verdict::kNew);
  EXPECT_EQ(w.classify(Psn(1100)), Verdict::kOutOfWindow);
  EXPECT_EQ(w.classify(Psn(1127)), Verdict::kOutOfWindow);
  EXPECT_EQ(w.classify(Psn(1128)), Verdict::kOutOfWindow);  // would alias ring slot of 1000
  EXPECT_EQ(w.classify(Psn(1000) + (1u << 23)), Verdict::kOutOfWindow);
  w.mark(Psn(1099));
  w.mark(Psn(1000));
  EXPECT_EQ(w.cumulative(), Psn(1001));
  EXPECT_EQ(w.classify(Psn(1100)), Verdict::kNew);  // the edge moved with the cumulative PSN
  EXPECT_EQ(w.classify(Psn(1101)), Verdict::kOutOfWindow);
  // A PSN one ring-length above a received one is not mistaken for it.
  ReceiveWindow v(128, Psn(0));
  v.mark(Psn(5));
  EXPECT_EQ(v.classify(Psn(5 + 128)), Verdict::kOutOfWindow);
}

TEST(ReceiveWindow, WrapsAroundTwoToTheTwentyFour) {
  const Psn start(Psn::kMask - 10);
  ReceiveWindow w(64, start);
  // Receive the 40 PSNs around the wrap in reverse order, then the first.
  for (uint32_t i = 39; i >= 1; --i) {
    ASSERT_EQ(w.classify(start + i), Verdict::kNew) << i;
    w.mark(start + i);
  }
  EXPECT_EQ(w.cumulative(), start);
  EXPECT_EQ(w.out_of_order(), 39u);
  w.mark(start);
  EXPECT_EQ(w.cumulative(), Psn(29));  // kMask - 10 + 40 wraps to 29
  EXPECT_EQ(w.out_of_order(), 0u);
  EXPECT_EQ(w.classify(Psn(Psn::kMask)), Verdict::kDuplicate);
  EXPECT_EQ(w.classify(Psn(0)), Verdict::kDuplicate);
  EXPECT_EQ(w.classify(Psn(29)), Verdict::kNew);
  EXPECT_EQ(w.classify(Psn(29 + 64)), Verdict::kOutOfWindow);
  // In order straight through the wrap as well.
  ReceiveWindow in_order(16, Psn(Psn::kMask - 3));
  for (uint32_t i = 0; i < 8; ++i) in_order.mark(Psn(Psn::kMask - 3) + i);
  EXPECT_EQ(in_order.cumulative(), Psn(4));
}

TEST(ReceiveWindow, BitmapReportsReceivedPsns) {
  ReceiveWindow w(128, Psn(0));
  for (uint32_t p = 0; p < 10; ++p) w.mark(Psn(p));
  for (uint32_t p : {12u, 14u, 70u}) w.mark(Psn(p));
  ASSERT_EQ(w.cumulative(), Psn(10));
  // Base 8: bits 0-1 are PSNs 8 and 9 (before the cumulative point: received).
  const uint64_t expected = (1ull << 0) | (1ull << 1) | (1ull << 4) | (1ull << 6) | (1ull << 62);
  EXPECT_EQ(w.bitmap(Psn(8)), expected);
  EXPECT_EQ(w.bitmap(Psn(10)), (1ull << 2) | (1ull << 4) | (1ull << 60));
  EXPECT_EQ(w.bitmap(Psn(0)) & 0x3FF, 0x3FFull);
  // PSNs past the window edge never show as received.
  EXPECT_EQ(w.bitmap(Psn(100)), 0ull);
  EXPECT_EQ(w.bitmap(Psn(10) + 128 - 1), 0ull);
  // Far behind: all received.
  EXPECT_EQ(w.bitmap(Psn(0) - 1000), ~0ull);
}

TEST(ReceiveWindow, BitmapAcrossTheWrap) {
  const Psn start(Psn::kMask - 1);  // PSNs kMask-1, kMask, 0, 1, ...
  ReceiveWindow w(64, start);
  w.mark(start + 1);  // kMask
  w.mark(start + 3);  // 1
  EXPECT_EQ(w.bitmap(start), 0b1010ull);
  w.mark(start);
  EXPECT_EQ(w.cumulative(), Psn(0));
  EXPECT_EQ(w.bitmap(start), 0b1011ull);
}

TEST(ReceiveWindow, ResetForgetsEverything) {
  ReceiveWindow w(64, Psn(0));
  w.mark(Psn(3));
  w.mark(Psn(0));
  w.reset(Psn(500));
  EXPECT_EQ(w.cumulative(), Psn(500));
  EXPECT_EQ(w.out_of_order(), 0u);
  EXPECT_EQ(w.bitmap(Psn(500)), 0ull);
  for (uint32_t p = 500; p < 564; ++p) EXPECT_EQ(w.classify(Psn(p)), Verdict::kNew);
}

// The word-level bitmap against a bit-by-bit reference, for random windows, arrivals and bases
// (before, inside, straddling and past the window; across the 2^24 wrap).
TEST(ReceiveWindow, BitmapMatchesBitByBitReference) {
  Prng prng(11);
  for (int round = 0; round < 200; ++round) {
    const uint32_t capacity = 1 + static_cast<uint32_t>(prng.below(700));
    const Psn start(static_cast<uint32_t>(prng.below(1u << 24)));
    ReceiveWindow w(capacity, start);
    std::vector<Psn> received;
    for (int i = 0; i < 400; ++i) {
      const Psn psn = w.cumulative() + static_cast<uint32_t>(prng.below(capacity));
      if (w.classify(psn) != ReceiveWindow::Verdict::kNew) continue;
      w.mark(psn);
      received.push_back(psn);
    }
    for (int k = 0; k < 50; ++k) {
      const Psn base = w.cumulative() + static_cast<uint32_t>(prng.below(capacity + 200)) - 100u;
      uint64_t expected = 0;
      for (uint32_t i = 0; i < 64; ++i) {
        const Psn psn = base + i;
        const bool got = psn.since(w.cumulative()) < 0 ||
                         std::find(received.begin(), received.end(), psn) != received.end();
        expected |= static_cast<uint64_t>(got) << i;
      }
      ASSERT_EQ(w.bitmap(base), expected) << "round " << round << " capacity " << capacity;
    }
  }
}

}  // namespace
}  // namespace mrc
