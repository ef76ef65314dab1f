// Fabric shapes and routing modes: the k-ary FatTree's structure and paths, routes that reach
// their destination under every routing mode, source routing enumerating the paths, spraying
// per packet, and the real engine moving data exactly once over a multi-plane FatTree.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "sim/link.h"
#include "sim/run.h"
#include "sim/scenario.h"
#include "sim/topology.h"

namespace mrc::sim {
namespace {

constexpr PlaneId kP0{0};

// The tier-2 and tier-3 switches a route crosses, as one number per path.
std::vector<NodeId> switches_on(const Topology& t, const std::vector<uint32_t>& route) {
  std::vector<NodeId> nodes;
  nodes.reserve(route.size());
  for (const uint32_t local : route) nodes.push_back(t.link(local).to);
  return nodes;
}

TEST(Topology, FatTreeHasTheClassicShape) {
  const Topology t = Topology::fat_tree(2, 4, 16, 7);
  EXPECT_EQ(t.hosts(), 16u);
  EXPECT_EQ(t.tier(1).size(), 8u);  // edge
  EXPECT_EQ(t.tier(2).size(), 8u);  // aggregation
  EXPECT_EQ(t.tier(3).size(), 4u);  // core
  // Per plane: 16 host cables, 16 edge-agg cables, 16 agg-core cables, both directions.
  EXPECT_EQ(t.links_per_plane(), 2u * (16 + 16 + 16));
  EXPECT_EQ(t.path_count(0, 1), 1u);   // same edge switch
  EXPECT_EQ(t.path_count(0, 2), 2u);   // same pod: via either aggregation switch
  EXPECT_EQ(t.path_count(0, 15), 4u);  // other pod: (k/2)^2
  EXPECT_EQ(t.node_name(t.tier(3)[0]), "core0");
  EXPECT_EQ(t.node_name(t.tier(2)[1]), "agg1");
}

TEST(Topology, EveryRouteArrivesUnderEveryRoutingMode) {
  for (const Routing mode : {Routing::kEcmp, Routing::kSpray, Routing::kSource}) {
    Topology t = Topology::fat_tree(1, 6, 54, 3);
    t.set_routing(mode);
    for (HostId src = 0; src < 54; src += 5) {
      for (HostId dst = 0; dst < 54; dst += 7) {
        if (src == dst) continue;
        const std::vector<uint32_t> r = t.route(kP0, src, dst, Ev(src * 1000 + dst), src + dst);
        ASSERT_EQ(t.link(r.back()).to, NodeId(dst));
        const bool same_edge = t.edge_of(src) == t.edge_of(dst);
        const bool same_pod = src / 9 == dst / 9;
        EXPECT_EQ(r.size(), same_edge ? 2u : same_pod ? 4u : 6u) << src << "->" << dst;
      }
    }
  }
}

TEST(Topology, SourceRoutingEnumeratesThePaths) {
  Topology t = Topology::fat_tree(1, 8, 128, 3);
  t.set_routing(Routing::kSource);
  std::set<std::vector<NodeId>> paths;
  for (uint32_t ev = 0; ev < 16; ++ev) paths.insert(switches_on(t, t.route(kP0, 0, 127, Ev(ev))));
  EXPECT_EQ(paths.size(), 16u);  // 16 EVs, 16 distinct paths: no collisions

  t.set_routing(Routing::kEcmp);
  std::set<std::vector<NodeId>> hashed;
  for (uint32_t ev = 0; ev < 16; ++ev) hashed.insert(switches_on(t, t.route(kP0, 0, 127, Ev(ev))));
  EXPECT_LT(hashed.size(), 16u);  // hashing collides (birthday), which is the point of kSource
}

TEST(Topology, OneHashForEverySwitchPolarises) {
  // k=8: from host 0 to another pod, 4 aggregation uplinks then 4 core uplinks. With one hash
  // everywhere the core choice repeats the aggregation choice: 4 of the 16 paths.
  Topology t = Topology::fat_tree(1, 8, 128, 3);
  std::set<std::vector<NodeId>> salted, same;
  for (uint32_t ev = 0; ev < 256; ++ev) salted.insert(switches_on(t, t.route(kP0, 0, 127, Ev(ev))));
  t.set_same_hash_everywhere();
  for (uint32_t ev = 0; ev < 256; ++ev) same.insert(switches_on(t, t.route(kP0, 0, 127, Ev(ev))));
  EXPECT_EQ(salted.size(), 16u);
  EXPECT_EQ(same.size(), 4u);
}

TEST(Topology, SprayingIgnoresTheEv) {
  Topology t = Topology::leaf_spine(1, 2, 1, 8, 3);
  t.set_routing(Routing::kSpray);
  std::set<std::vector<NodeId>> paths;
  for (uint64_t id = 1; id <= 200; ++id)
    paths.insert(switches_on(t, t.route(kP0, 0, 1, Ev(5), id)));
  EXPECT_EQ(paths.size(), 8u);
  t.set_routing(Routing::kEcmp);
  std::set<std::vector<NodeId>> one;
  for (uint64_t id = 1; id <= 200; ++id) one.insert(switches_on(t, t.route(kP0, 0, 1, Ev(5), id)));
  EXPECT_EQ(one.size(), 1u);
}

TEST(Topology, PartlyPopulatedFatTree) {
  const Topology t = Topology::fat_tree(1, 4, 5, 3);  // hosts 0-3 in pod 0, host 4 in pod 1
  EXPECT_EQ(t.hosts(), 5u);
  EXPECT_EQ(t.path_count(0, 4), 4u);
  const std::vector<uint32_t> r = t.route(kP0, 4, 0, Ev(9));
  EXPECT_EQ(t.link(r.back()).to, NodeId(0));
}

// The real engine over a 4-plane k=4 FatTree: 16 hosts writing to a random permutation, every
// byte exactly once, under each routing mode.
TEST(SimRun, FatTreeDeliversExactlyOnceUnderEveryRoutingMode) {
  for (const Routing mode : {Routing::kEcmp, Routing::kSpray, Routing::kSource}) {
    Scenario s;
    s.name = "fat-tree";
    s.seed = 5;
    s.fabric.topology = TopologyKind::kFatTree;
    s.fabric.k = 4;
    s.fabric.hosts = 16;
    s.fabric.planes = 4;
    s.fabric.routing = mode;
    s.qp.ev_count = 64;
    s.workload.pattern = Pattern::kPairs;
    s.workload.bidirectional = true;
    s.workload.message_bytes = uint64_t{64} * 1024;
    s.workload.messages = 4;
    const RunReport r = run_scenario(s);
    EXPECT_TRUE(r.ok) << r.failure << " (routing " << static_cast<int>(mode) << ")";
    EXPECT_EQ(r.bytes_verified, r.bytes_written);
    EXPECT_EQ(r.ops_completed, r.ops_posted);
  }
}

}  // namespace
}  // namespace mrc::sim

namespace mrc::sim {
namespace {

PacketPtr data_packet(uint32_t payload) {
  auto p = make_packet();
  p->bytes.resize(payload);
  p->trim_to_bytes = 64;
  return p;
}

TEST(Link, EcnRampMarksMoreAsTheQueueGrows) {
  LinkConfig c;
  c.queue_limit_bytes = 1u << 20;
  c.overflow = OverflowPolicy::kDrop;
  c.ecn_threshold_bytes = 40'000;
  c.ecn_max_bytes = 120'000;
  c.ecn_max_probability = 1.0;
  Link link(LinkId(0), PlaneId(0), Topology::LinkEnds{NodeId(0), NodeId(1), LinkClass::kFabricUp},
            c, true, 9);
  link.busy = true;
  int below = 0, ramp = 0, ramp_marked = 0, above = 0, above_marked = 0;
  for (int i = 0; i < 60; ++i) {
    const uint64_t queued = link.queued_bytes();
    PacketPtr p = data_packet(4000);
    SimPacket* raw = p.get();
    ASSERT_TRUE(link.enqueue(p));
    if (queued <= 40'000) below += raw->ecn_ce ? 1 : 0;
    if (queued > 40'000 && queued < 120'000) ++ramp, ramp_marked += raw->ecn_ce ? 1 : 0;
    if (queued >= 120'000) ++above, above_marked += raw->ecn_ce ? 1 : 0;
  }
  EXPECT_EQ(below, 0);
  EXPECT_GT(ramp_marked, 0);
  EXPECT_LT(ramp_marked, ramp);
  EXPECT_EQ(above_marked, above);
}

TEST(Link, DegradedRateSerializesSlower) {
  LinkConfig c;
  c.rate_gbps = 100;
  Link link(LinkId(0), PlaneId(0), Topology::LinkEnds{NodeId(0), NodeId(1), LinkClass::kFabricUp},
            c, true, 9);
  const int64_t full = link.serialization_ps(1250);
  link.set_rate_fraction(0.25);
  EXPECT_EQ(link.serialization_ps(1250), 4 * full);
  link.set_rate_fraction(1.0);
  EXPECT_EQ(link.serialization_ps(1250), full);
}

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = testing::TempDir() + "/" + name;
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs(text.c_str(), f);
  std::fclose(f);
  return path;
}

constexpr const char* kFatTreeScenario = R"(
name = "fat-tree-faults"
seed = 3
time_limit_ms = 2000
[fabric]
topology = "fat_tree"
k = 4
hosts = 16
planes = 2
routing = "spray"
fabric_link = { rate_gbps = 100, ecn_kib = 32, ecn_max_kib = 128, ecn_max_probability = 0.5 }
core_link = { rate_gbps = 50 }
[qp]
ev_count = 32
[workload]
pattern = "pairs"
message_bytes = 131072
messages = 4
[[fault]]
at_us = 20
action = "reboot"
plane = 1
switch = "core2"
down_us = 100
[[fault]]
at_us = 10
action = "degrade"
plane = 0
link = "leaf_spine"
leaf = 3
spine = 1
rate_fraction = 0.25
[[fault]]
at_us = 5
action = "faults"
plane = 0
switch = "agg1"
loss = 0.01
)";

TEST(SimRun, FatTreeScenarioWithRebootDegradeAndGraySwitch) {
  Scenario s;
  std::string error;
  ASSERT_TRUE(load_scenario(write_temp("ft.toml", kFatTreeScenario), s, error)) << error;
  EXPECT_EQ(s.fabric.topology, TopologyKind::kFatTree);
  EXPECT_EQ(s.fabric.routing, Routing::kSpray);
  EXPECT_EQ(s.fabric.core_link.rate_gbps, 50);
  EXPECT_EQ(s.fabric.fabric_link.ecn_max_bytes, 128u * 1024);
  ASSERT_EQ(s.faults.size(), 4u);  // the reboot is a down and an up
  const RunReport r = run_scenario(s);
  EXPECT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.bytes_verified, r.bytes_written);
}

}  // namespace
}  // namespace mrc::sim
