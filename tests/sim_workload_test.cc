// Workload plans (flows and dependent transfers) and the runner executing them: permutation,
// all-to-all, incast with a victim, and ring all-reduce iterations whose steps wait for the
// chunk received in the step before.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>

#include "scenario_text.h"
#include "sim/run.h"
#include "sim/workload.h"

namespace mrc::sim {
namespace {

TEST(Workload, PermutationIsASingleCycle) {
  Workload w;
  w.pattern = Pattern::kPermutation;
  w.messages = 1;
  Prng prng(7);
  const WorkloadPlan plan = plan_workload(w, 64, prng);
  ASSERT_EQ(plan.flows.size(), 64u);
  std::set<HostId> receivers;
  for (const PlannedFlow& f : plan.flows) {
    EXPECT_NE(f.src, f.dst);
    receivers.insert(f.dst);
  }
  EXPECT_EQ(receivers.size(), 64u);
  HostId h = 0;  // following the permutation from host 0 visits every host once
  for (int step = 1; step < 64; ++step) {
    h = plan.flows[h].dst;
    EXPECT_NE(h, 0u) << "cycle closed after " << step;
  }
  EXPECT_EQ(plan.flows[h].dst, 0u);
}

// planned_flows and planned_bytes (what scenario validation and memory checks use without
// planning) agree with the plan, for every pattern; the ring's bytes are an upper bound.
TEST(Workload, PlannedFlowsAndBytesMatchThePlan) {
  for (const Pattern pattern :
       {Pattern::kPairs, Pattern::kIncast, Pattern::kFlows, Pattern::kPermutation,
        Pattern::kAllToAll, Pattern::kRingAllreduce}) {
    for (const uint32_t hosts : {2u, 5u}) {
      for (const bool variant : {false, true}) {
        Workload w;
        w.pattern = pattern;
        w.bidirectional = variant;
        w.victim = variant;
        w.qps_per_flow = variant ? 3 : 1;
        w.messages = 2;
        w.message_bytes = 1000;
        w.flows = {{0, 1}, {1, 0}, {1, 0}};
        Prng prng(3);
        const WorkloadPlan plan = plan_workload(w, hosts, prng);
        const std::string what =
            std::string(to_string(pattern)) + " on " + std::to_string(hosts) + " hosts";
        EXPECT_EQ(planned_flows(w, hosts), plan.flows.size()) << what;
        uint64_t bytes = 0;
        for (const Transfer& t : plan.transfers) bytes += t.bytes;
        if (pattern == Pattern::kRingAllreduce)
          EXPECT_GE(planned_bytes(w, hosts), bytes) << what;
        else
          EXPECT_EQ(planned_bytes(w, hosts), bytes) << what;
      }
    }
  }
}

TEST(Workload, RingAllreduceStepsWaitForTheChunkReceivedBefore) {
  Workload w;
  w.pattern = Pattern::kRingAllreduce;
  w.message_bytes = 1000;  // 4 chunks of 250
  w.iterations = 2;
  w.compute = Duration::from_us(10);
  Prng prng(1);
  const WorkloadPlan plan = plan_workload(w, 4, prng);
  ASSERT_EQ(plan.flows.size(), 4u);
  ASSERT_EQ(plan.transfers.size(), 2u * 6 * 4);  // iterations x 2(N-1) steps x N flows
  uint64_t bytes_per_iteration = 0;
  for (size_t t = 0; t < plan.transfers.size(); ++t) {
    const Transfer& tr = plan.transfers[t];
    const size_t step = t / 4 % 6, iteration = t / 24;
    EXPECT_TRUE(tr.imm);
    EXPECT_EQ(tr.group, iteration);
    if (iteration == 0) bytes_per_iteration += tr.bytes;
    if (step == 0 && iteration == 0) {
      EXPECT_TRUE(plan.after(tr).empty());
    } else {
      ASSERT_EQ(plan.after(tr).size(), 1u);
      const Transfer& before = plan.transfers[plan.after(tr)[0]];
      EXPECT_EQ(plan.flows[before.flow].dst, plan.flows[tr.flow].src);  // what this host received
    }
    EXPECT_EQ(tr.delay.ns, step == 0 ? 10'000 : 0);
  }
  EXPECT_EQ(bytes_per_iteration, 2u * 3 * 1000);  // each host sends 2(N-1)/N of the vector
}

// `qps` used to be ignored by ring_allreduce (always one QP per ring neighbour), so RoCE with
// 4 or 16 QPs per connection (MRC paper §5.2.7) could not be modelled: each step's chunk is
// now split over the QPs, and the next step waits for every part.
TEST(Workload, RingAllreduceSplitsEachStepOverTheQps) {
  Workload w;
  w.pattern = Pattern::kRingAllreduce;
  w.message_bytes = 1003;  // 4 chunks: 250, 250, 250, 253
  w.qps_per_flow = 3;
  w.iterations = 2;
  Prng prng(1);
  const WorkloadPlan plan = plan_workload(w, 4, prng);
  ASSERT_EQ(plan.flows.size(), 4u * 3);
  for (uint32_t f = 0; f < plan.flows.size(); ++f) {
    EXPECT_EQ(plan.flows[f].src, f / 3);
    EXPECT_EQ(plan.flows[f].dst, (f / 3 + 1) % 4);
  }
  ASSERT_EQ(plan.transfers.size(), 2u * 6 * 4 * 3);
  uint64_t bytes = 0;
  for (size_t t = 0; t < plan.transfers.size(); ++t) {
    const Transfer& tr = plan.transfers[t];
    bytes += tr.bytes;
    EXPECT_EQ(tr.flow, t % 12);
    if (t < 12) {
      EXPECT_TRUE(plan.after(tr).empty());
      continue;
    }
    // Every part of what this host received in the step before.
    ASSERT_EQ(plan.after(tr).size(), 3u);
    for (size_t a : plan.after(tr)) {
      EXPECT_LT(a, t);
      EXPECT_EQ(plan.flows[plan.transfers[a].flow].dst, plan.flows[tr.flow].src);
    }
  }
  EXPECT_EQ(bytes,
            2u * 2 * 3 * 1003);  // iterations x 2(N-1) x the vector: the same bytes as with one QP
}

// `ranks`: a job on some of the fabric's hosts. All-to-all among 4 of 16 hosts: every ordered
// pair of 4 distinct hosts once; a ring of 5 visits 5 distinct hosts; a job of every host
// (ranks = hosts) plans exactly what ranks = 0 does, draws included.
Workload shuffled_job(Pattern pattern, uint32_t ranks) {
  Workload w;
  w.pattern = pattern;
  w.messages = 1;
  w.message_bytes = 5000;
  w.ranks = ranks;
  w.rank_order = RankOrder::kShuffled;
  return w;
}

TEST(Workload, RanksPlaceAJobOnSomeHosts) {
  const Workload a2a = shuffled_job(Pattern::kAllToAll, 4);
  Prng prng(3);
  const WorkloadPlan plan = plan_workload(a2a, 16, prng);
  ASSERT_EQ(plan.flows.size(), 12u);
  EXPECT_EQ(planned_flows(a2a, 16), 12u);
  std::set<std::pair<HostId, HostId>> pairs;
  std::set<HostId> hosts;
  for (const PlannedFlow& f : plan.flows) {
    EXPECT_NE(f.src, f.dst);
    pairs.insert({f.src, f.dst});
    hosts.insert(f.src);
  }
  EXPECT_EQ(pairs.size(), 12u);
  EXPECT_EQ(hosts.size(), 4u);
  EXPECT_NE(*hosts.rbegin(), 3u) << "seed 3 should place ranks beyond the first four hosts";

  Workload ring = shuffled_job(Pattern::kRingAllreduce, 5);
  Prng ring_prng(4);
  const WorkloadPlan rp = plan_workload(ring, 16, ring_prng);
  ASSERT_EQ(rp.flows.size(), 5u);
  std::set<HostId> ring_hosts;
  for (uint32_t r = 0; r < 5; ++r) {
    EXPECT_EQ(rp.flows[r].dst, rp.flows[(r + 1) % 5].src);
    ring_hosts.insert(rp.flows[r].src);
  }
  EXPECT_EQ(ring_hosts.size(), 5u);
  EXPECT_EQ(rp.transfers.size(), 2u * 4 * 5);

  ring.ranks = 16;
  Prng p1(9), p2(9);
  const WorkloadPlan every = plan_workload(ring, 16, p1);
  ring.ranks = 0;
  const WorkloadPlan all = plan_workload(ring, 16, p2);
  ASSERT_EQ(every.flows.size(), all.flows.size());
  for (size_t i = 0; i < all.flows.size(); ++i) {
    EXPECT_EQ(every.flows[i].src, all.flows[i].src);
    EXPECT_EQ(every.flows[i].dst, all.flows[i].dst);
  }
  EXPECT_EQ(p1.next_u64(), p2.next_u64());
}

// `slices`: each chunk goes as S slices and slice j waits only for slice j of the step before
// (NCCL's pipelining); `rank_order = shuffled`: the ring visits every host once, in a seeded
// order.
TEST(Workload, RingAllreduceSlicesPipelineAndShuffledRanksFormOneRing) {
  Workload w;
  w.pattern = Pattern::kRingAllreduce;
  w.message_bytes = 4003;  // chunks 500 x 7 + 503, each in 3 slices
  w.slices = 3;
  w.qps_per_flow = 2;
  w.iterations = 2;
  w.rank_order = RankOrder::kShuffled;
  constexpr uint32_t n = 8, per_step = 3 * 2;
  Prng prng(5);
  const WorkloadPlan plan = plan_workload(w, n, prng);
  ASSERT_EQ(plan.flows.size(), n * 2);
  std::set<HostId> sources;
  HostId h = plan.flows[0].src;  // following rank r -> r+1 from rank 0 visits every host once
  for (uint32_t r = 0; r < n; ++r) {
    EXPECT_EQ(plan.flows[size_t{r} * 2].src, h);
    EXPECT_EQ(plan.flows[r * 2 + 1].src, h);
    sources.insert(h);
    h = plan.flows[size_t{r} * 2].dst;
  }
  EXPECT_EQ(h, plan.flows[0].src);
  EXPECT_EQ(sources.size(), n);
  bool moved = false;
  for (uint32_t r = 0; r < n; ++r) moved |= plan.flows[size_t{r} * 2].src != r;
  EXPECT_TRUE(moved) << "seed 5 should not leave the hosts in order";
  const uint32_t steps = 2 * (n - 1);
  ASSERT_EQ(plan.transfers.size(), 2u * steps * n * per_step);
  uint64_t bytes = 0;
  for (size_t t = 0; t < plan.transfers.size(); ++t) {
    const Transfer& tr = plan.transfers[t];
    bytes += tr.bytes;
    const size_t part = t % per_step, step = t / (size_t{n} * per_step) % steps,
                 iteration = t / (size_t{n} * per_step * steps);
    if (step == 0 && iteration == 0) {
      EXPECT_TRUE(plan.after(tr).empty());
    } else if (step == 0) {
      EXPECT_EQ(plan.after(tr).size(), per_step);  // the whole result of the previous iteration
    } else {
      ASSERT_EQ(plan.after(tr).size(), 2u);  // both QPs' parts of the same slice, one step before
      for (size_t a : plan.after(tr)) {
        EXPECT_EQ(a % per_step / 2, part / 2);  // the same slice
        EXPECT_EQ(a / (size_t{n} * per_step),
                  t / (size_t{n} * per_step) - 1);  // of the step before
        EXPECT_EQ(plan.flows[plan.transfers[a].flow].dst,
                  plan.flows[tr.flow].src);  // into this host
      }
    }
  }
  EXPECT_EQ(bytes, 2u * 2 * (n - 1) * 4003);
}

Scenario workload_scenario(Pattern pattern) {
  Scenario s;
  s.name = "workload";
  s.seed = 11;
  s.fabric.planes = 2;
  s.fabric.hosts = 8;
  s.fabric.hosts_per_leaf = 2;
  s.fabric.spines = 2;
  s.qp.ev_count = 32;
  s.workload.pattern = pattern;
  s.workload.message_bytes = uint64_t{32} * 1024;
  s.workload.messages = 2;
  return s;
}

void expect_exactly_once(const RunReport& r) {
  EXPECT_TRUE(r.ok) << r.failure << " (replay: build the scenario of this test with seed " << r.seed
                    << ")";
  EXPECT_EQ(r.bytes_verified, r.bytes_written);
  EXPECT_EQ(r.bytes_placed, r.bytes_written);
  EXPECT_EQ(r.ops_completed, r.ops_posted);
}

TEST(SimWorkload, PermutationAllToAllAndIncastWithVictim) {
  for (const Pattern p : {Pattern::kPermutation, Pattern::kAllToAll, Pattern::kIncast}) {
    Scenario s = workload_scenario(p);
    s.workload.victim = true;
    const RunReport r = run_scenario(s);
    expect_exactly_once(r);
    EXPECT_GT(r.fct_p50_ns, 0) << to_string(p);
    EXPECT_LE(r.fct_p50_ns, r.fct_p99_ns);
    if (p == Pattern::kAllToAll) {
      EXPECT_EQ(r.ops_posted, 8u * 7 * 2);
    }
    if (p == Pattern::kIncast) {
      ASSERT_EQ(r.groups.size(), 1u);
      EXPECT_EQ(r.groups[0].name, "victim");
      EXPECT_GT(r.groups[0].end_ns, 0);
    }
  }
}

TEST(SimWorkload, RingAllreduceIterationsFollowEachOther) {
  Scenario s = workload_scenario(Pattern::kRingAllreduce);
  s.workload.message_bytes = 1 << 20;
  s.workload.iterations = 3;
  s.workload.compute = Duration::from_us(20);
  const RunReport r = run_scenario(s);
  expect_exactly_once(r);
  ASSERT_EQ(r.groups.size(), 3u);
  EXPECT_EQ(r.group_bytes, 1u << 20);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_GT(r.groups[k].end_ns, r.groups[k].start_ns);
    EXPECT_EQ(r.groups[k].bytes, 2u * 7 * (1u << 20));  // N hosts x 2(N-1) chunks of M/N
    if (k > 0) {
      EXPECT_GE(r.groups[k].start_ns, r.groups[k - 1].start_ns + 20'000);
    }
  }
}

TEST(SimWorkload, PipelinedShuffledRingDeliversEveryByteOnce) {
  Scenario s = workload_scenario(Pattern::kRingAllreduce);
  s.workload.message_bytes = 1 << 20;
  s.workload.slices = 4;
  s.workload.rank_order = RankOrder::kShuffled;
  const RunReport r = run_scenario(s);
  expect_exactly_once(r);
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].bytes, 2u * 7 * (1u << 20));
  EXPECT_EQ(r.ops_completed, 2u * 7 * 8 * 4);  // 2(N-1) steps x N ranks x 4 slices
}

}  // namespace
}  // namespace mrc::sim

namespace mrc::sim {
namespace {

std::string load_text(const std::string& text, Scenario& s) {
  return test::load_text(text, s, "flows_scenario.toml");
}

// pattern = "flows" with an explicit [source, destination] list, and [qp] ev_list (explicit EVs).
TEST(SimScenario, FlowsPatternAndExplicitEvList) {
  const std::string fabric = "[fabric]\nplanes = 2\nhosts = 4\nhosts_per_leaf = 2\nspines = 2\n";
  Scenario s;
  ASSERT_EQ(load_text(fabric + "[qp]\nev_list = [[0, 7], [1, 9], [1, 9]]\nev_min_active = 1\n"
                               "[workload]\npattern = \"flows\"\nflows = [[0, 2], [3, 1]]\n",
                      s),
            "");
  ASSERT_EQ(s.workload.flows.size(), 2u);
  EXPECT_EQ(s.workload.flows[1], std::make_pair(HostId{3}, HostId{1}));
  ASSERT_EQ(s.qp.ev_list.size(), 3u);
  EXPECT_EQ(s.qp.ev_list[1].plane.value, 1);
  EXPECT_EQ(s.qp.ev_list[1].ev.value, 9u);
  Scenario bad;
  EXPECT_NE(load_text(fabric + "[workload]\npattern = \"flows\"\nflows = [[1, 1]]\n", bad)
                .find("sends to itself"),
            std::string::npos);
  EXPECT_NE(
      load_text(fabric + "[workload]\npattern = \"flows\"\nflows = [[0, 4]]\n", bad).find("0..3"),
      std::string::npos);
  EXPECT_NE(load_text(fabric + "[workload]\npattern = \"pairs\"\nflows = [[0, 1]]\n", bad)
                .find("exactly when"),
            std::string::npos);
  EXPECT_NE(load_text(fabric + "[qp]\nev_list = [[2, 1]]\nev_min_active = 1\n", bad)
                .find("names plane 2"),
            std::string::npos);
  EXPECT_NE(load_text(fabric + "[qp]\nev_list = [[0, 1, 2]]\n", bad).find("[a, b]"),
            std::string::npos);
}

}  // namespace
}  // namespace mrc::sim
