// The scenario key [qp] ev_burst (QpConfig::ev_burst_packets, spray granularity): loaded as
// given, QpConfig's default when absent, and refused outside 1..kMaxEvBurstPackets with a
// message naming it.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "scenario_text.h"
#include "sim/scenario.h"

namespace mrc::sim {
namespace {

std::string load_text(const std::string& text, Scenario& s) {
  return test::load_text(text, s, "ev_burst_scenario.toml");
}

TEST(SimScenario, EvBurstLoadsIntoTheQpConfig) {
  Scenario s;
  ASSERT_EQ(load_text("[qp]\nev_count = 128\nev_burst = 8\n", s), "");
  EXPECT_EQ(s.qp.ev_burst_packets, 8);
  Scenario largest;
  ASSERT_EQ(load_text("[qp]\nev_burst = " + std::to_string(kMaxEvBurstPackets) + "\n", largest),
            "");
  EXPECT_EQ(largest.qp.ev_burst_packets, kMaxEvBurstPackets);
}

// Without the key a scenario keeps QpConfig's default, which the engine sends one packet per EV.
TEST(SimScenario, EvBurstAbsentKeepsTheQpConfigDefault) {
  const uint16_t fallback = QpConfig{}.ev_burst_packets;
  EXPECT_LE(fallback, 1);
  Scenario s;
  ASSERT_EQ(load_text("[qp]\nev_count = 128\n", s), "");
  EXPECT_EQ(s.qp.ev_burst_packets, fallback);
  Scenario no_qp;
  ASSERT_EQ(load_text("name = \"no-qp-table\"\n", no_qp), "");
  EXPECT_EQ(no_qp.qp.ev_burst_packets, fallback);
}

TEST(SimScenario, EvBurstOutsideItsRangeIsRefusedWithTheKey) {
  for (const char* value : {"0", "65", "-1", "1000000", "\"8\""}) {
    Scenario s;
    const std::string error = load_text(std::string("[qp]\nev_burst = ") + value + "\n", s);
    EXPECT_NE(error.find("qp.ev_burst"), std::string::npos) << value << ": " << error;
  }
}

// The spray-granularity files (bench/spray_granularity.sh) load with one packet per EV: the
// driver replaces their ev_burst line, and at 1 they run as the mrc64 files they copy.
TEST(SimScenario, SprayGranularityFilesLoadWithOnePacketPerEv) {
  for (const char* name : {"spray-a2a", "spray-a2a-loss1", "spray-ring", "spray-ring-loss1"}) {
    Scenario s;
    std::string error;
    ASSERT_TRUE(
        load_scenario(std::string(MRC_SOURCE_DIR) + "/scenarios/" + name + ".toml", s, error))
        << error;
    EXPECT_EQ(s.qp.ev_burst_packets, 1) << name;
    EXPECT_EQ(s.faults.size(), std::string(name).ends_with("-loss1") ? 1u : 0u) << name;
  }
}

}  // namespace
}  // namespace mrc::sim
