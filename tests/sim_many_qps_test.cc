// Runs with many queue pairs per host (all-to-all, 6 QPs per host pair, random loss, DCQCN,
// timeouts), for every transport: properties every run must hold and exact replay from a seed,
// rather than the numbers of one version of the engine.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "sim/payload_free.h"
#include "sim/run.h"
#include "sim/scenario.h"

namespace mrc::sim {
namespace {

Scenario many_qps(TransportKind kind) {
  Scenario s;
  s.name = "many-qps";
  s.seed = 3;
  s.transport.kind = kind;
  s.transport.mptcp.subflows = 2;
  s.fabric.planes = 2;
  s.fabric.hosts = 8;
  s.fabric.hosts_per_leaf = 2;
  s.fabric.spines = 2;
  s.fabric.ecn_last_hop = true;
  const OverflowPolicy overflow =
      kind == TransportKind::kMrc ? OverflowPolicy::kTrim : OverflowPolicy::kDrop;
  s.fabric.host_link.overflow = overflow;
  s.fabric.fabric_link.overflow = overflow;
  s.fabric.core_link.overflow = overflow;
  s.qp.timeout = 8;
  s.workload.pattern = Pattern::kAllToAll;
  s.workload.message_bytes = 40'000;
  s.workload.messages = 2;
  s.workload.qps_per_flow = 6;
  s.workload.imm_fraction = 0.5;
  s.time_limit = Instant{Duration::from_ms(200).ns};
  ScheduledFault loss;
  loss.at = Instant{0};
  loss.action = FaultAction::set_faults(Scope::fabric(), LinkFaults{.loss = 0.002});
  s.faults.push_back(loss);
  return s;
}

// What a run is, as the numbers that decide it: equal digests, equal runs.
std::string digest(const RunReport& r) {
  return std::to_string(r.events) + " " + std::to_string(r.completion_time_ns) + " " +
         std::to_string(r.retransmits) + " " + std::to_string(r.timeouts) + " " +
         std::to_string(r.ecn_marks) + " " + std::to_string(r.nacks) + " " +
         std::to_string(r.fabric_drops) + " " + std::to_string(r.baseline.cnps) + " " +
         std::to_string(r.baseline.duplicates) + " " + std::to_string(r.baseline.reinjected) + " " +
         std::to_string(r.bytes_placed);
}

// Every transport, many QPs per host, random loss: the run completes with every byte where it
// belongs, recovers from the losses it met, replays exactly from its seed, and another seed
// makes another run.
void expect_properties(TransportKind kind) {
  const Scenario s = many_qps(kind);
  const RunReport r = run_scenario(s);
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.bytes_verified, r.bytes_written);
  EXPECT_GT(r.bytes_written, 0u);
  EXPECT_GT(r.fabric_drops, 0u) << "0.2 % loss dropped nothing";
  EXPECT_GT(r.retransmits, 0u) << "losses and no retransmission";
  EXPECT_EQ(digest(run_scenario(s)), digest(r)) << "the same seed ran differently";
  Scenario other = s;
  other.seed = s.seed + 1;
  EXPECT_NE(digest(run_scenario(other)), digest(r)) << "another seed ran the same run";
}

TEST(SimManyQps, RoceRunHoldsItsProperties) {
  expect_properties(TransportKind::kRoce);
}
TEST(SimManyQps, RocePfcRunHoldsItsProperties) {
  expect_properties(TransportKind::kRocePfc);
}
TEST(SimManyQps, MptcpRunHoldsItsProperties) {
  expect_properties(TransportKind::kMptcp);
}
TEST(SimManyQps, MrcRunHoldsItsProperties) {
  expect_properties(TransportKind::kMrc);
}

// Payload-free runs simulate exactly what payload runs do (same events, same recovery) and
// still pass the checker.
TEST(SimPayloadFree, SameRunWithoutPerFlowBuffers) {
  for (const TransportKind kind :
       {TransportKind::kMrc, TransportKind::kRoce, TransportKind::kMptcp}) {
    Scenario s = many_qps(kind);
    const RunReport with = run_scenario(s);
    s.payload = false;
    const RunReport without = run_scenario(s);
    EXPECT_TRUE(without.ok) << without.failure;
    EXPECT_FALSE(without.payload);
    EXPECT_EQ(without.events, with.events);
    EXPECT_EQ(without.completion_time_ns, with.completion_time_ns);
    EXPECT_EQ(without.retransmits, with.retransmits);
    EXPECT_EQ(without.bytes_placed, with.bytes_placed);
    EXPECT_EQ(without.bytes_verified, without.bytes_written);
  }
}

// The payload-free checks can fail: a byte placed twice or missing, a corrupted or misplaced
// byte in the scratch.
TEST(SimPayloadFree, CheckerSeesDuplicateMissingAndWrongBytes) {
  EXPECT_EQ(check_placed_once(3, 8192, 8192), "");
  EXPECT_NE(check_placed_once(3, 8192 + 4096, 8192), "");  // a packet placed twice
  EXPECT_NE(check_placed_once(3, 4096, 8192), "");         // a packet never placed
  SharedPayload shared(10'000, 7);
  EXPECT_NE(shared.check_target(10'000), "");  // nothing placed yet
  std::memcpy(shared.target(), shared.source(), 10'000);
  EXPECT_EQ(shared.check_target(10'000), "");
  shared.target()[4321] ^= 1;  // corrupted
  EXPECT_NE(shared.check_target(10'000), "");
  std::memcpy(shared.target(), shared.source(), 10'000);
  std::memcpy(shared.target() + 4096, shared.source(), 4096);  // a packet at the wrong offset
  EXPECT_NE(shared.check_target(10'000), "");
  EXPECT_EQ(shared.check_target(4096), "");
}

TEST(SimPayloadFree, ScenarioKeyIsRead) {
  Scenario s;
  std::string error;
  ASSERT_TRUE(
      load_scenario(MRC_SOURCE_DIR "/scenarios/fabric-1024-ring-payload-free.toml", s, error))
      << error;
  EXPECT_FALSE(s.payload);
  EXPECT_FALSE(s.move_payload);
  // Its RoCE twin (the simulator's own speed at 1024 hosts): same hosts, ring and bytes.
  Scenario roce;
  ASSERT_TRUE(load_scenario(MRC_SOURCE_DIR "/scenarios/fabric-1024-ring-roce.toml", roce, error))
      << error;
  EXPECT_FALSE(roce.payload);
  EXPECT_FALSE(roce.move_payload);
  EXPECT_EQ(roce.transport.kind, TransportKind::kRoce);
  EXPECT_EQ(roce.fabric.hosts, s.fabric.hosts);
  EXPECT_EQ(roce.workload.message_bytes, s.workload.message_bytes);
}

}  // namespace
}  // namespace mrc::sim
