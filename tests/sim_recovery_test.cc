// Congestion control that recovers, in the simulator: one connection over four 100 Gbit/s
// planes runs at its steady rate; then every plane loses everything for 100 us (a loss burst),
// and later one plane fails for good. After each, goodput must come back to 0.9 of what the
// surviving planes carried before, within 1 ms of simulated time (hundreds of round trips):
// a window that stays low after a burst of losses shows here as a run that never gets back.
// Simulated time is exact and replays from the seed, so the bound is a property of the
// protocol, not a timing threshold.
#include <gtest/gtest.h>

#include <algorithm>

#include "scenario_text.h"
#include "sim/run.h"

namespace mrc::sim {
namespace {

constexpr const char* kScenario = R"(
name = "recovery"
seed = 3
time_limit_ms = 100
[fabric]
planes = 4
hosts = 2
spines = 4
host_link = { rate_gbps = 100, propagation_ns = 500 }
fabric_link = { rate_gbps = 100, propagation_ns = 500 }
[qp]
ev_count = 64
[workload]
pattern = "pairs"
message_bytes = 1048576
messages = 400
[[fault]]
at_us = 1000
action = "down"
plane = 0
[[fault]]
at_us = 1000
action = "down"
plane = 1
[[fault]]
at_us = 1000
action = "down"
plane = 2
[[fault]]
at_us = 1000
action = "down"
plane = 3
[[fault]]
at_us = 1100
action = "up"
plane = 0
[[fault]]
at_us = 1100
action = "up"
plane = 1
[[fault]]
at_us = 1100
action = "up"
plane = 2
[[fault]]
at_us = 1100
action = "up"
plane = 3
[[fault]]
at_us = 4000
action = "down"
plane = 2
)";

// Bytes placed per nanosecond over [from, to), from the run's progress samples.
double rate(const RunReport& r, int64_t from_ns, int64_t to_ns) {
  auto placed_at = [&](int64_t t) {
    uint64_t placed = 0;
    for (const auto& [time_ns, bytes] : r.progress)
      if (time_ns <= t) placed = bytes;
    return placed;
  };
  return static_cast<double>(placed_at(to_ns) - placed_at(from_ns)) /
         static_cast<double>(to_ns - from_ns);
}

// When, after `since_ns`, the rate over a 100 us window first reaches `level`; -1 if never.
int64_t recovered_at(const RunReport& r, int64_t since_ns, double level) {
  constexpr int64_t kWindow = 100'000;
  for (int64_t t = since_ns; t + kWindow <= r.completion_time_ns; t += 10'000)
    if (rate(r, t, t + kWindow) >= level) return t;
  return -1;
}

TEST(SimRecovery, GoodputReturnsAfterALossBurstAndAPlaneFailure) {
  Scenario s;
  ASSERT_EQ(test::load_text(kScenario, s), "");
  const RunReport r = run_scenario(s);
  ASSERT_TRUE(r.ok) << r.failure << "; replay: the scenario in " << __FILE__;
  EXPECT_EQ(r.bytes_verified, r.bytes_written);
  ASSERT_GT(r.completion_time_ns, 6'000'000) << "the transfer must outlast the faults";

  const double before = rate(r, 500'000, 1'000'000);
  const int64_t after_burst = recovered_at(r, 1'100'000, 0.9 * before);
  EXPECT_GE(after_burst, 0) << "never back to 0.9 of " << before << " B/ns after the burst";
  EXPECT_LE(after_burst - 1'100'000, 1'000'000) << "back only at " << after_burst << " ns";

  const double three_planes = 0.75 * rate(r, 3'000'000, 4'000'000);
  const int64_t after_failure = recovered_at(r, 4'000'000, 0.9 * three_planes);
  EXPECT_GE(after_failure, 0) << "never back to 0.9 of three planes' " << three_planes;
  EXPECT_LE(after_failure - 4'000'000, 1'000'000) << "back only at " << after_failure << " ns";
  std::printf(
      "steady %.2f B/ns; after the burst back at +%lld us; after the plane failure at "
      "+%lld us\n",
      before, static_cast<long long>((after_burst - 1'100'000) / 1000),
      static_cast<long long>((after_failure - 4'000'000) / 1000));
}

}  // namespace
}  // namespace mrc::sim
