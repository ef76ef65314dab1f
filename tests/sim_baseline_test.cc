// Baseline transports in the simulator (RoCEv2 RC with go-back-N and DCQCN, the same over
// PFC-lossless queues, MPTCP-like coupled subflows): each must deliver every byte exactly once
// through the runner's checker, on a clean fabric, under loss and across a link failure; and
// the mechanisms the comparisons rest on must do what they claim (go-back-N resends everything
// after a loss, PFC never drops, DCQCN cuts its rate on ECN, LIA couples the subflows).
// Everything is simulated time; runs are pure functions of the seed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "sim/mptcp.h"
#include "sim/roce.h"
#include "sim/run.h"
#include "sim/scenario.h"

namespace mrc::sim {
namespace {

Scenario scenario(TransportKind kind, uint64_t seed = 1) {
  Scenario s;
  s.name = "baseline-test";
  s.seed = seed;
  s.transport.kind = kind;
  s.fabric.planes = 2;
  s.fabric.hosts = 4;
  s.fabric.hosts_per_leaf = 2;
  s.fabric.spines = 4;
  s.fabric.host_link.overflow = OverflowPolicy::kDrop;
  s.fabric.fabric_link.overflow = OverflowPolicy::kDrop;
  s.fabric.core_link.overflow = OverflowPolicy::kDrop;
  s.fabric.ecn_last_hop = true;  // DCQCN deployments mark at every hop, incast included
  s.qp.timeout = 8;              // 262 us
  s.workload.pattern = Pattern::kPairs;
  s.workload.bidirectional = true;
  s.workload.message_bytes = 200'000;
  s.workload.messages = 6;
  s.workload.imm_fraction = 0.5;
  s.time_limit = Instant{Duration::from_ms(200).ns};
  return s;
}

std::string describe(const RunReport& r) {
  return r.transport + " failure: " + r.failure + " (seed " + std::to_string(r.seed) + ")";
}

void expect_exactly_once(const RunReport& r) {
  EXPECT_TRUE(r.ok) << describe(r);
  EXPECT_GT(r.bytes_written, 0u);
  EXPECT_EQ(r.bytes_verified, r.bytes_written) << describe(r);
  EXPECT_EQ(r.bytes_placed, r.bytes_written) << describe(r);
  EXPECT_EQ(r.ops_completed, r.ops_posted);
  EXPECT_EQ(r.ops_failed, 0u);
  EXPECT_GT(r.wimm_delivered, 0u);
}

class Baseline : public ::testing::TestWithParam<TransportKind> {};

INSTANTIATE_TEST_SUITE_P(Kinds, Baseline,
                         ::testing::Values(TransportKind::kRoce, TransportKind::kRocePfc,
                                           TransportKind::kMptcp),
                         [](const ::testing::TestParamInfo<TransportKind>& p) {
                           return std::string(to_string(p.param));
                         });

TEST_P(Baseline, CleanFabricDeliversExactlyOnce) {
  for (const Pattern p : {Pattern::kPairs, Pattern::kPermutation, Pattern::kRingAllreduce}) {
    Scenario s = scenario(GetParam());
    s.fabric.hosts = 8;
    s.workload.pattern = p;
    s.workload.message_bytes = p == Pattern::kRingAllreduce ? 800'000 : 200'000;
    const RunReport r = run_scenario(s);
    expect_exactly_once(r);
    EXPECT_EQ(r.transport, to_string(GetParam()));
    if (GetParam() == TransportKind::kRocePfc) {
      EXPECT_EQ(r.fabric_drops, 0u);
      EXPECT_EQ(r.retransmits, 0u);
    }
  }
}

TEST_P(Baseline, OnePercentLossDeliversExactlyOnce) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    Scenario s = scenario(GetParam(), seed);
    LinkFaults loss;
    loss.loss = 0.01;
    s.faults.push_back({Instant{0}, FaultAction::set_faults(Scope::fabric(), loss), "loss"});
    s.heal_at = Instant{Duration::from_ms(150).ns};  // lossy for the whole transfer
    const RunReport r = run_scenario(s);
    expect_exactly_once(r);
    EXPECT_GT(r.fabric_drops, 0u);
    EXPECT_GT(r.retransmits, 0u);
  }
}

TEST_P(Baseline, SameSeedSameRun) {
  Scenario s = scenario(GetParam(), 7);
  LinkFaults loss;
  loss.loss = 0.02;
  s.faults.push_back({Instant{0}, FaultAction::set_faults(Scope::fabric(), loss), "loss"});
  const RunReport a = run_scenario(s);
  const RunReport b = run_scenario(s);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.completion_time_ns, b.completion_time_ns);
  EXPECT_EQ(a.retransmits, b.retransmits);
  EXPECT_EQ(a.fabric_drops, b.fabric_drops);
}

// A plane goes down and comes back within the retry budget (7 x 262 us): the RoCE QPs on it
// time out, go back to their oldest unacknowledged packet and finish once it is back; MPTCP
// moves the data of its subflows on that plane to the others.
TEST_P(Baseline, PlaneDownAndBackDeliversExactlyOnce) {
  Scenario s = scenario(GetParam());
  s.workload.message_bytes = 1'000'000;
  s.transport.mptcp.rto_min = Duration::from_us(200);  // an RTO within the outage
  s.faults.push_back({Instant{Duration::from_us(50).ns},
                      FaultAction::set_up(Scope::of_plane(PlaneId(0)), false), "down"});
  s.faults.push_back({Instant{Duration::from_us(800).ns},
                      FaultAction::set_up(Scope::of_plane(PlaneId(0)), true), "up"});
  const RunReport r = run_scenario(s);
  expect_exactly_once(r);
  EXPECT_GT(r.timeouts, 0u);
  if (GetParam() == TransportKind::kMptcp) {
    EXPECT_GT(r.baseline.reinjected, 0u);
  }
}

// Every wire fault at once (loss, corruption, duplication, reordering, forced trimming) on every
// link for the whole transfer, 40 seeds: each byte still lands exactly once (corrupted packets
// fail the ICRC, duplicates are not placed twice, trimmed ones count as losses).
TEST_P(Baseline, FortySeedsOfWireFaults) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Scenario s = scenario(GetParam(), seed);
    s.fabric.spines = 2;
    s.fabric.fabric_link.overflow = OverflowPolicy::kTrim;
    s.transport.mptcp.rto_min = Duration::from_us(200);
    s.workload.message_bytes = 300'000;
    LinkFaults f;
    f.loss = 0.01;
    f.corrupt = 0.01;
    f.duplicate = 0.02;
    f.reorder = 0.05;
    f.trim = 0.01;
    f.reorder_max_delay = Duration::from_us(5);
    s.faults.push_back({Instant{0}, FaultAction::set_faults(Scope::fabric(), f), "wire faults"});
    s.heal_at = Instant{Duration::from_ms(3).ns};
    const RunReport r = run_scenario(s);
    expect_exactly_once(r);
    if (HasFailure()) return;
    EXPECT_GT(r.refused_by_reason.count("bad_icrc"), 0u);
  }
}

// A plane dies for good. MPTCP finishes on the subflows of the other plane; RoCE, as deployed,
// fails the QPs bound to the dead plane after their retries (error completions, no hang) and
// completes the others.
TEST(BaselineFailure, PlaneDownForGood) {
  for (const TransportKind kind : {TransportKind::kMptcp, TransportKind::kRoce}) {
    Scenario s = scenario(kind);
    s.workload.message_bytes = 1'000'000;
    s.faults.push_back({Instant{Duration::from_us(50).ns},
                        FaultAction::set_up(Scope::of_plane(PlaneId(0)), false), "down"});
    s.heal_at = Instant{Duration::from_ms(1000).ns};  // after the time limit: never healed
    s.workload.expect_failure = kind == TransportKind::kRoce;
    const RunReport r = run_scenario(s);
    EXPECT_TRUE(r.ok) << describe(r);
    EXPECT_GE(r.completion_time_ns, 0) << "hang";
    if (kind == TransportKind::kMptcp) {
      expect_exactly_once(r);
      EXPECT_GT(r.baseline.reinjected, 0u);
    } else {
      EXPECT_GT(r.ops_failed, 0u);
      EXPECT_GT(r.ops_completed, 0u);  // the QPs on plane 1
      EXPECT_GT(r.timeouts, 7u);
    }
  }
}

// One data packet lost on the sender's uplink while it streams at line rate: the responder
// discards everything after the gap and NAKs once; the requester resends the lost packet and
// every one after it (go-back-N), so retransmits = 1 + packets discarded. MRC resends only the
// lost one.
TEST(BaselineRoce, GoBackNResendsEverythingAfterALoss) {
  Scenario s = scenario(TransportKind::kRoce);
  s.fabric.planes = 1;
  s.fabric.hosts = 2;
  s.fabric.hosts_per_leaf = 1;
  s.workload.bidirectional = false;
  s.workload.messages = 4;
  s.workload.message_bytes = 1'000'000;
  Scope uplink = Scope::of_plane(PlaneId(0)).only(bit(LinkClass::kHostUp));
  uplink.kind = Scope::Kind::kLink;  // resolved by the runner: host 0's uplink on plane 0
  uplink.node = NodeId(0);
  LinkFaults loss;
  loss.loss = 1.0;
  const Instant at{Duration::from_us(40).ns};
  s.faults.push_back({at, FaultAction::set_faults(uplink, loss), "loss on"});
  s.faults.push_back(
      {at + Duration{330}, FaultAction::set_faults(uplink, LinkFaults{}), "loss off"});
  const RunReport r = run_scenario(s);
  expect_exactly_once(r);
  ASSERT_EQ(r.fabric_drops, 1u);
  EXPECT_EQ(r.nacks, 1u);
  EXPECT_GE(r.retransmits, 8u);  // an RTT of packets at 100 Gbit/s
  EXPECT_EQ(r.retransmits, 1 + r.baseline.out_of_order_dropped);
  EXPECT_EQ(r.timeouts, 0u);

  s.transport.kind = TransportKind::kMrc;
  const RunReport mrc = run_scenario(s);
  expect_exactly_once(mrc);
  EXPECT_LT(mrc.retransmits, r.retransmits);
}

// 7-to-1 incast into small switch queues: the lossless variant pauses instead of dropping
// (never beyond its headroom, no retransmission), the lossy one drops and goes back N.
TEST(BaselinePfc, IncastPausesAndNeverDrops) {
  for (const TransportKind kind : {TransportKind::kRocePfc, TransportKind::kRoce}) {
    Scenario s = scenario(kind);
    s.fabric.planes = 1;
    s.fabric.hosts = 8;
    s.fabric.hosts_per_leaf = 4;
    for (LinkConfig* l : {&s.fabric.host_link, &s.fabric.fabric_link, &s.fabric.core_link})
      l->queue_limit_bytes = 64 * 1024;
    s.workload.pattern = Pattern::kIncast;
    s.workload.messages = 4;
    const RunReport r = run_scenario(s);
    expect_exactly_once(r);
    if (kind == TransportKind::kRocePfc) {
      EXPECT_EQ(r.fabric_drops, 0u);
      EXPECT_EQ(r.retransmits, 0u);
      EXPECT_GT(r.pfc_pauses, 0u);
      EXPECT_GT(r.pfc_paused_ns, 0u);
      EXPECT_EQ(r.pfc_headroom_overruns, 0u);
    } else {
      EXPECT_GT(r.fabric_drops, 0u);
      EXPECT_GT(r.retransmits, r.fabric_drops);  // go-back-N resends more than it lost
      EXPECT_EQ(r.pfc_pauses, 0u);
    }
  }
}

// Head-of-line blocking: a 6-to-1 incast into host 0 and a victim flow into host 1 on the same
// leaf. Lossless queues pause the spine -> leaf links that carry incast traffic, so the victim
// waits behind it (pause spreading), while over lossy queues the victim's packets pass: it
// finishes far sooner with MPTCP than with RoCE + PFC.
TEST(BaselinePfc, PausesBlockAVictimFlow) {
  int64_t victim_ns[2] = {0, 0};
  for (const TransportKind kind : {TransportKind::kRocePfc, TransportKind::kMptcp}) {
    Scenario s = scenario(kind);
    s.fabric.planes = 1;
    s.fabric.hosts = 8;
    s.fabric.hosts_per_leaf = 2;
    s.fabric.spines = 2;
    s.qp.timeout = 10;
    s.workload.pattern = Pattern::kIncast;
    s.workload.victim = true;
    s.workload.message_bytes = 1'000'000;
    s.workload.messages = 4;
    const RunReport r = run_scenario(s);
    expect_exactly_once(r);
    for (const GroupReport& g : r.groups) {
      if (g.name == "victim")
        victim_ns[kind == TransportKind::kMptcp ? 1 : 0] = g.end_ns - g.start_ns;
    }
    if (kind == TransportKind::kRocePfc) {
      EXPECT_GT(r.pfc_paused_ns, 0u);
    }
  }
  const int64_t ideal_ns = 4'000'000 * 8 / 100;  // 4 MB at 100 Gbit/s
  EXPECT_GT(victim_ns[0], 2 * ideal_ns);
  EXPECT_GT(victim_ns[0], 2 * victim_ns[1]);
}

TEST(BaselineDcqcn, CnpCutsTheRateByHalfAlphaThenTimersRecoverIt) {
  DcqcnConfig c;
  Dcqcn d(c, 100.0);
  EXPECT_FALSE(d.limited());
  EXPECT_TRUE(d.next_deadline().is_never());
  d.on_cnp(Instant{0});  // alpha = 1: the rate halves
  EXPECT_DOUBLE_EQ(d.rate_gbps(), 50.0);
  EXPECT_DOUBLE_EQ(d.target_gbps(), 100.0);
  EXPECT_NEAR(d.alpha(), 1.0, 1e-12);  // (1-g) * 1 + g
  d.on_cnp(Instant{1000});             // the next cut: by alpha/2 of the current rate
  EXPECT_NEAR(d.rate_gbps(), 25.0, 1e-9);
  // Fast recovery halves the distance to the target at each of the first F-1 timer expiries
  // (the byte counter has not expired: both counts below F); alpha decays.
  double previous = d.rate_gbps();
  for (int i = 0; i < 4; ++i) {
    d.on_timer(d.next_deadline());
    EXPECT_GT(d.rate_gbps(), previous);
    previous = d.rate_gbps();
  }
  EXPECT_NEAR(d.rate_gbps(), 50.0 - 25.0 / 16, 1e-9);
  EXPECT_NEAR(d.target_gbps(), 50.0, 1e-9);
  d.on_timer(d.next_deadline());  // the F-th: additive increase of the target
  EXPECT_NEAR(d.target_gbps(), 50.04, 1e-9);
  EXPECT_LT(d.alpha(), 1.0);
  for (int i = 0; i < 10000 && d.limited(); ++i) d.on_timer(d.next_deadline());
  EXPECT_FALSE(d.limited());  // additive then hyper increase reach line rate again
  EXPECT_TRUE(d.next_deadline().is_never());
}

// Incast with ECN marking in the fabric: receivers send CNPs (at most one per QP per 50 us) and
// the senders cut their rates; without DCQCN no CNP is sent.
TEST(BaselineDcqcn, EcnMarksCutTheSendersRates) {
  for (const bool enabled : {true, false}) {
    Scenario s = scenario(TransportKind::kRocePfc);
    s.fabric.planes = 1;
    s.fabric.hosts = 8;
    s.fabric.hosts_per_leaf = 1;  // every flow crosses a spine; the spine -> leaf0 link marks
    s.workload.pattern = Pattern::kIncast;
    s.workload.messages = 8;
    s.transport.dcqcn.enabled = enabled;
    const RunReport r = run_scenario(s);
    expect_exactly_once(r);
    EXPECT_GT(r.ecn_marks, 0u);
    if (enabled) {
      EXPECT_GT(r.baseline.cnps, 0u);
      EXPECT_EQ(r.baseline.rate_cuts, r.baseline.cnps);
      const uint64_t qps = 7, intervals = static_cast<uint64_t>(r.completion_time_ns / 50'000) + 1;
      EXPECT_LE(r.baseline.cnps, qps * intervals);
    } else {
      EXPECT_EQ(r.baseline.cnps, 0u);
    }
  }
}

// RFC 6356's goal: the connection's throughput grows no faster than one TCP's on its best path.
// Per second, subflow i gets cwnd_i / rtt_i ACKs, each adding lia_increase to cwnd_i, i.e.
// inc_i / rtt_i to its rate; a single Reno flow on path k grows its rate by 1 / rtt_k^2.
TEST(BaselineMptcp, LiaIsNoMoreAggressiveThanOneTcpOnTheBestPath) {
  const std::vector<std::pair<std::vector<double>, std::vector<double>>> cases = {
      {{10, 10, 10, 10}, {100e-6, 100e-6, 100e-6, 100e-6}},
      {{40, 5, 5, 1}, {100e-6, 100e-6, 100e-6, 100e-6}},
      {{10, 20, 30}, {50e-6, 100e-6, 400e-6}},
      {{64, 2}, {400e-6, 20e-6}},
      {{3}, {10e-6}},
  };
  for (const auto& [cwnd, rtt] : cases) {
    double growth = 0, uncoupled = 0, best = 0;
    for (size_t i = 0; i < cwnd.size(); ++i) {
      const double inc = lia_increase(cwnd, rtt, i);
      EXPECT_LE(inc, 1 / cwnd[i] + 1e-15);  // never more than uncoupled Reno on that subflow
      growth += cwnd[i] / rtt[i] * inc / rtt[i];
      uncoupled += 1 / (rtt[i] * rtt[i]);
      best = std::max(best, 1 / (rtt[i] * rtt[i]));
    }
    EXPECT_LE(growth, best * (1 + 1e-9));
    if (cwnd.size() > 1) {
      EXPECT_LT(growth, uncoupled);
    }
  }
  // Equal RTTs and windows: n subflows together grow by one packet per RTT, as one TCP.
  const std::vector<double> w = {8, 8, 8, 8}, r = {1e-4, 1e-4, 1e-4, 1e-4};
  double per_rtt = 0;
  for (size_t i = 0; i < w.size(); ++i) per_rtt += w[i] * lia_increase(w, r, i);
  EXPECT_NEAR(per_rtt, 1.0 / 4, 1e-12);  // max_i cwnd_i / total: the largest subflow's share
}

// Coupled subflows sharing one bottleneck take no more than one TCP would: four 8-subflow
// connections into one 100G port (4:1 incast on one leaf). With LIA the windows grow slower than
// with uncoupled Reno subflows (32 Reno flows), so the bottleneck queue overflows less.
TEST(BaselineMptcp, CoupledSubflowsAreGentlerThanUncoupledOnASharedBottleneck) {
  uint64_t drops[2] = {0, 0};
  for (const bool coupled : {true, false}) {
    Scenario s = scenario(TransportKind::kMptcp);
    s.fabric.planes = 1;
    s.fabric.hosts = 5;
    s.fabric.hosts_per_leaf = 5;
    s.workload.pattern = Pattern::kIncast;
    s.workload.message_bytes = 2'000'000;
    s.workload.messages = 8;
    s.transport.mptcp.subflows = 8;
    s.transport.mptcp.coupled = coupled;
    const RunReport r = run_scenario(s);
    expect_exactly_once(r);
    drops[coupled ? 0 : 1] = r.fabric_drops;
  }
  EXPECT_GT(drops[1], 0u);
  EXPECT_LT(drops[0], drops[1]);
}

TEST(BaselineScenarios, FilesLoadAndRun) {
  for (const char* name : {"baseline-roce.toml", "baseline-roce-pfc.toml", "baseline-mptcp.toml"}) {
    Scenario s;
    std::string error;
    ASSERT_TRUE(load_scenario(std::string(MRC_SOURCE_DIR) + "/scenarios/" + name, s, error))
        << error;
    EXPECT_NE(s.transport.kind, TransportKind::kMrc) << name;
    s.workload.message_bytes = 64 * 1024;  // a small version for the test suite
    s.workload.iterations = 1;
    const RunReport r = run_scenario(s);
    EXPECT_TRUE(r.ok) << name << ": " << describe(r);
  }
  const std::string path = testing::TempDir() + "/bad_transport.toml";
  for (const auto& [text, key] : std::vector<std::pair<const char*, const char*>>{
           {"[transport]\nkind = \"tcp\"\n", "transport.kind"},
           {"[transport]\nsubflows = 0\n", "transport.subflows"},
           {"[transport]\ndcqcn_g = 2.0\n", "transport.dcqcn_g"},
           {"[transport]\npfc_xon_kib = 200\n", "transport.pfc_xon_kib"},
           {"[transport]\nwindow = 3\n", "transport.window"}}) {
    FILE* f = std::fopen(path.c_str(), "w");
    std::fputs(text, f);
    std::fclose(f);
    Scenario s;
    std::string error;
    EXPECT_FALSE(load_scenario(path, s, error)) << text;
    EXPECT_NE(error.find(key), std::string::npos) << error;
  }
}

}  // namespace
}  // namespace mrc::sim
