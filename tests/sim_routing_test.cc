// Source routing's case in the simulator: a controller that knows a spine is bad denies the EVs
// that name it (scenario action deny_spine), and no packet meets that spine again; refused
// where an EV does not name its path (ECMP). Seeded and deterministic: the scenarios are in
// this file (replay: copy one into a .toml file and run `mrc sim FILE --seed S`).
#include <gtest/gtest.h>

#include <string>

#include "scenario_text.h"
#include "sim/run.h"
#include "sim/scenario.h"

namespace mrc::sim {
namespace {

std::string scenario(const char* routing, bool deny) {
  std::string s = std::string(R"(
name = "gray-spine"
seed = 1
[fabric]
planes = 2
hosts = 8
hosts_per_leaf = 2
spines = 4
routing = ")") + routing +
                  R"("
[qp]
path_policy = "rules"
ev_count = 64
[workload]
pattern = "all_to_all"
message_bytes = 65536
messages = 2
[[fault]]
at_us = 0
action = "faults"
plane = 0
switch = "spine1"
loss = 0.05
)";
  if (deny) s += "[[fault]]\nat_us = 0\naction = \"deny_spine\"\nplane = 0\nspine = 1\n";
  return s;
}

TEST(SimRouting, ADeniedSpineSeesNoPacket) {
  for (uint64_t seed : {1, 2, 3}) {
    Scenario s;
    ASSERT_EQ(test::load_text(scenario("source", true), s), "");
    s.seed = seed;
    const RunReport r = run_scenario(s);
    ASSERT_TRUE(r.ok) << r.failure << " (seed " << seed << ")";
    EXPECT_EQ(r.bytes_verified, r.bytes_written);
    EXPECT_EQ(r.fabric_drops, 0u) << "seed " << seed << ": a packet met the denied spine";
    Scenario undenied;
    ASSERT_EQ(test::load_text(scenario("source", false), undenied), "");
    undenied.seed = seed;
    const RunReport u = run_scenario(undenied);
    ASSERT_TRUE(u.ok) << u.failure;
    EXPECT_GT(u.fabric_drops, 0u) << "seed " << seed << ": without the denial the spine drops";
  }
}

TEST(SimRouting, DenyingASpineNeedsSourceRouting) {
  Scenario s;
  const std::string error = test::load_text(scenario("ecmp", true), s);
  EXPECT_NE(error.find("fault[1].action = \"deny_spine\": must be used with fabric.routing = "
                       "\"source\" (only a source-routed EV names its spine)"),
            std::string::npos)
      << error;
}

}  // namespace
}  // namespace mrc::sim
