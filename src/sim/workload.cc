// Turns a workload description into flows and dependent transfers (see workload.h). Pure:
// the same workload, host count and random stream give the same plan.
#include "sim/workload.h"

#include <algorithm>
#include <cmath>

#include "mrc/assert.hpp"

namespace mrc::sim {
namespace {

void add_messages(WorkloadPlan& plan, const Workload& w, HostId src, HostId dst, Prng& prng) {
  for (uint32_t q = 0; q < w.qps_per_flow; ++q) {
    const uint32_t flow = static_cast<uint32_t>(plan.flows.size());
    plan.flows.push_back({src, dst});
    for (uint32_t m = 0; m < w.messages; ++m) {
      Transfer t;
      t.flow = flow;
      t.bytes = w.message_bytes;
      t.imm = prng.chance(w.imm_fraction);
      plan.transfers.push_back(t);
    }
  }
}

// Sattolo's shuffle: a uniformly random permutation with a single cycle, so no host sends to
// itself and every host receives exactly once.
std::vector<HostId> single_cycle(uint32_t hosts, Prng& prng) {
  std::vector<HostId> perm(hosts);
  for (HostId h = 0; h < hosts; ++h) perm[h] = h;
  for (uint32_t i = hosts - 1; i > 0; --i) std::swap(perm[i], perm[prng.below(i)]);
  return perm;
}

// The job's ranks: rank r is host order[r]. Shuffled: every host in a seeded random order,
// the first job_ranks of them kept (so a job of every host draws the same order as any other).
std::vector<HostId> rank_hosts(const Workload& w, uint32_t hosts, Prng& prng) {
  std::vector<HostId> order(hosts);
  for (HostId h = 0; h < hosts; ++h) order[h] = h;
  if (w.rank_order == RankOrder::kShuffled) {
    for (uint32_t i = hosts - 1; i > 0; --i) std::swap(order[i], order[prng.below(i + 1)]);
  }
  order.resize(job_ranks(w, hosts));
  return order;
}

// Splits `bytes` into `parts` nearly equal parts; the last takes the remainder.
uint64_t part_bytes(uint64_t bytes, uint32_t parts, uint32_t index) {
  const uint64_t part = bytes / parts;
  return index == parts - 1 ? bytes - part * (parts - 1) : part;
}

// The ring's dimensions: N ranks, 2(N-1) steps, each step's chunk as `slices` slices of `qps`
// parts; transfer index of part `part` (slice * qps + qp) of step s of iteration k on rank r.
struct RingShape {
  uint32_t n, qps, slices, per_step, steps;
  uint32_t index(uint32_t k, uint32_t s, uint32_t r, uint32_t part) const {
    return ((k * steps + s) * n + r) * per_step + part;
  }
};

// Step s of iteration k on rank r: `bytes` as slices of parts. Slice j waits for slice j of
// step s-1 of rank r-1; step 0 for all of the previous iteration's last step there, plus compute.
void add_ring_step(WorkloadPlan& plan, const Workload& w, const RingShape& g, uint32_t k,
                   uint32_t s, uint32_t r, uint64_t bytes) {
  const uint32_t prev = (r + g.n - 1) % g.n;
  for (uint32_t j = 0; j < g.slices; ++j) {
    const uint64_t slice = part_bytes(bytes, g.slices, j);
    for (uint32_t q = 0; q < g.qps; ++q) {
      Transfer t;
      t.flow = r * g.qps + q;
      t.bytes = part_bytes(slice, g.qps, q);
      t.imm = true;
      t.group = k;
      std::vector<uint32_t>& after = plan.after_list;
      t.after_at = after.size();
      if (s > 0) {
        for (uint32_t p = 0; p < g.qps; ++p)
          after.push_back(g.index(k, s - 1, prev, j * g.qps + p));
      } else if (k > 0) {
        for (uint32_t p = 0; p < g.per_step; ++p)
          after.push_back(g.index(k - 1, g.steps - 1, prev, p));
      }
      t.after_count = static_cast<uint32_t>(after.size() - t.after_at);
      if (s == 0) t.delay = w.compute;
      plan.transfers.push_back(t);
    }
  }
}

// Ring all-reduce over N ranks: flow r is rank r -> r+1 (with `qps` Q > 1, flows r*Q .. r*Q+Q-1,
// and each slice is split over the Q queue pairs). Step s of iteration k on rank r sends chunk
// (r - s) mod N during reduce-scatter (s < N-1) and (r - s + 1) mod N during all-gather, as
// `slices` S slices (add_ring_step), so with S > 1 the steps pipeline as in NCCL.
void plan_ring_allreduce(WorkloadPlan& plan, const Workload& w, uint32_t hosts, Prng& prng) {
  const std::vector<HostId> order = rank_hosts(w, hosts, prng);
  const auto n = static_cast<uint32_t>(order.size());
  const RingShape g{n, w.qps_per_flow, w.slices, w.slices * w.qps_per_flow, 2 * (n - 1)};
  for (uint32_t r = 0; r < n; ++r) {
    for (uint32_t q = 0; q < g.qps; ++q) plan.flows.push_back({order[r], order[(r + 1) % n]});
  }
  const size_t transfers = size_t{w.iterations} * g.steps * n * g.per_step;
  plan.transfers.reserve(transfers);
  plan.after_list.reserve(transfers * g.qps);
  const uint64_t chunk = w.message_bytes / n;
  const uint64_t last_chunk = w.message_bytes - chunk * (n - 1);
  for (uint32_t k = 0; k < w.iterations; ++k) {
    plan.group_names.push_back("allreduce " + std::to_string(k));
    for (uint32_t s = 0; s < g.steps; ++s) {
      for (uint32_t r = 0; r < n; ++r) {
        const uint32_t c = s < n - 1 ? (r + n - s) % n : (r + n + 1 - (s - (n - 1)) % n) % n;
        add_ring_step(plan, w, g, k, s, r, c == n - 1 ? last_chunk : chunk);
      }
    }
  }
  plan.group_bytes = w.message_bytes;
}

}  // namespace

WorkloadPlan plan_workload(const Workload& w, uint32_t hosts, Prng& prng) {
  MRC_ASSERT(hosts >= 2);
  WorkloadPlan plan;
  switch (w.pattern) {
    case Pattern::kPairs:
      for (HostId h = 0; h < (hosts == 2 ? 1u : hosts); ++h) {
        add_messages(plan, w, h, (h + 1) % hosts, prng);
        if (w.bidirectional) add_messages(plan, w, (h + 1) % hosts, h, prng);
      }
      break;
    case Pattern::kFlows:
      for (const auto& [src, dst] : w.flows) add_messages(plan, w, src, dst, prng);
      break;
    case Pattern::kIncast:
      for (HostId h = 1; h < hosts; ++h) add_messages(plan, w, h, 0, prng);
      if (w.victim && hosts >= 3) {
        plan.group_names.push_back("victim");
        const size_t first = plan.transfers.size();
        add_messages(plan, w, hosts - 1, 1, prng);
        for (size_t t = first; t < plan.transfers.size(); ++t) plan.transfers[t].group = 0;
      }
      break;
    case Pattern::kPermutation: {
      const std::vector<HostId> perm = single_cycle(hosts, prng);
      for (HostId h = 0; h < hosts; ++h) add_messages(plan, w, h, perm[h], prng);
      break;
    }
    case Pattern::kAllToAll: {
      const std::vector<HostId> ranks = rank_hosts(w, hosts, prng);
      for (const HostId h : ranks) {
        for (const HostId d : ranks) {
          if (d != h) add_messages(plan, w, h, d, prng);
        }
      }
      break;
    }
    case Pattern::kRingAllreduce:
      plan_ring_allreduce(plan, w, hosts, prng);
      break;
  }
  return plan;
}

namespace {

// Flows (queue pairs) the plan makes, in floating point: host counts can multiply past 64 bits.
long double flow_count(const Workload& w, uint32_t hosts) {
  const long double n = job_ranks(w, hosts);
  long double pairs = 0;  // source -> destination pairs, each with qps_per_flow flows
  switch (w.pattern) {
    case Pattern::kPairs:
      pairs = (n == 2 ? 1 : n) * (w.bidirectional ? 2 : 1);
      break;
    case Pattern::kIncast:
      pairs = n - 1 + (w.victim && n >= 3 ? 1 : 0);
      break;
    case Pattern::kFlows:
      pairs = static_cast<long double>(w.flows.size());
      break;
    case Pattern::kPermutation:
    case Pattern::kRingAllreduce:
      pairs = n;
      break;
    case Pattern::kAllToAll:
      pairs = n * (n - 1);
      break;
  }
  return pairs * w.qps_per_flow;
}

uint64_t saturated(long double count) {
  return count >= 0x1p64L ? UINT64_MAX : static_cast<uint64_t>(count);
}

}  // namespace

uint64_t planned_flows(const Workload& w, uint32_t hosts) {
  return saturated(flow_count(w, hosts));
}

uint64_t planned_bytes(const Workload& w, uint32_t hosts) {
  if (w.pattern != Pattern::kRingAllreduce)
    return saturated(flow_count(w, hosts) * w.messages * static_cast<long double>(w.message_bytes));
  // At most: each of N ranks sends 2(N-1) chunks of about bytes / N per iteration.
  const long double n = job_ranks(w, hosts);
  return saturated(
      (std::floor(2 * (n - 1) * static_cast<long double>(w.message_bytes) / n) * n + 2 * n) *
      w.iterations);
}

bool places_ranks(Pattern pattern) {
  return pattern == Pattern::kAllToAll || pattern == Pattern::kRingAllreduce;
}

uint32_t job_ranks(const Workload& w, uint32_t hosts) {
  return places_ranks(w.pattern) && w.ranks > 0 ? w.ranks : hosts;
}

const char* to_string(Pattern pattern) {
  switch (pattern) {
    case Pattern::kPairs:
      return "pairs";
    case Pattern::kIncast:
      return "incast";
    case Pattern::kPermutation:
      return "permutation";
    case Pattern::kAllToAll:
      return "all_to_all";
    case Pattern::kRingAllreduce:
      return "ring_allreduce";
    case Pattern::kFlows:
      return "flows";
  }
  return "?";
}

}  // namespace mrc::sim
