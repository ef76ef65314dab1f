// The receiver's incast detector (rcv_cwnd_pen, our semantics): trims of one QP are a path's
// business; trims of two or more QPs within the window are an incast at this receiver, for one
// window after the latest such trim.
#include "core/incast_detector.h"

#include <gtest/gtest.h>

namespace mrc {
namespace {

constexpr Duration kWindow{10'000};

TEST(IncastDetector, OneQpsTrimsAreNotAnIncast) {
  IncastDetector d;
  for (int i = 0; i < 100; ++i) d.note_trim(Instant{1000 * i}, 3, kWindow);
  EXPECT_FALSE(d.incast(Instant{100'000}));
}

TEST(IncastDetector, TwoQpsWithinTheWindowAreAnIncastForOneWindow) {
  IncastDetector d;
  d.note_trim(Instant{100'000}, 1, kWindow);
  EXPECT_FALSE(d.incast(Instant{100'000}));
  d.note_trim(Instant{105'000}, 2, kWindow);
  EXPECT_TRUE(d.incast(Instant{105'000}));
  EXPECT_TRUE(d.incast(Instant{114'999}));
  EXPECT_FALSE(d.incast(Instant{115'000}));
}

TEST(IncastDetector, TrimsFurtherApartThanTheWindowAreNot) {
  IncastDetector d;
  d.note_trim(Instant{100'000}, 1, kWindow);
  d.note_trim(Instant{110'001}, 2, kWindow);
  EXPECT_FALSE(d.incast(Instant{110'001}));
}

TEST(IncastDetector, OnlyTheLastTrimsAreRemembered) {
  IncastDetector d;
  d.note_trim(Instant{100'000}, 1, kWindow);
  for (size_t i = 0; i < IncastDetector::kRecent; ++i) d.note_trim(Instant{100'001}, 2, kWindow);
  EXPECT_TRUE(d.incast(Instant{100'001}));  // QP 1's trim was seen by the first of them
  IncastDetector e;
  e.note_trim(Instant{100'000}, 1, kWindow);
  for (size_t i = 0; i < IncastDetector::kRecent; ++i)
    e.note_trim(Instant{100'001}, 2, Duration{0});
  e.note_trim(Instant{100'002}, 2, kWindow);  // QP 1's trim has left the ring
  EXPECT_FALSE(e.incast(Instant{100'002}));
}

}  // namespace
}  // namespace mrc
