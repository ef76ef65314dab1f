// Turns a workload description into flows and dependent transfers (see workload.h). Pure:
// the same workload, host count and random stream give the same plan.
#include "sim/workload.h"

#include <algorithm>

#include "util/assert.h"

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
      plan.transfers.push_back(std::move(t));
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

// Ring all-reduce: flow i is host i -> i+1 (with `qps` Q > 1, flows i*Q .. i*Q+Q-1, and each
// step's chunk is split over the Q queue pairs, the last part taking the remainder). Step s of
// iteration k on flow i sends chunk (i - s) mod N during reduce-scatter (s < N-1) and
// (i - s + 1) mod N during all-gather; it waits for step s-1 of flow i-1 (every part of the chunk
// host i just received), and step 0 waits for the previous iteration's last step into host i
// plus the compute time.
void plan_ring_allreduce(WorkloadPlan& plan, const Workload& w, uint32_t n) {
  const uint32_t qps = w.qps_per_flow;
  for (HostId h = 0; h < n; ++h) {
    for (uint32_t q = 0; q < qps; ++q) plan.flows.push_back({h, (h + 1) % n});
  }
  const uint32_t steps = 2 * (n - 1);
  const uint64_t chunk = w.message_bytes / n;
  const uint64_t last_chunk = w.message_bytes - chunk * (n - 1);
  const auto index = [&](uint32_t k, uint32_t s, uint32_t i, uint32_t q) {
    return ((k * steps + s) * n + i) * qps + q;
  };
  for (uint32_t k = 0; k < w.iterations; ++k) {
    plan.group_names.push_back("allreduce " + std::to_string(k));
    for (uint32_t s = 0; s < steps; ++s) {
      for (uint32_t i = 0; i < n; ++i) {
        const uint32_t c = s < n - 1 ? (i + n - s) % n : (i + n + 1 - (s - (n - 1)) % n) % n;
        const uint64_t bytes = c == n - 1 ? last_chunk : chunk;
        const uint64_t part = bytes / qps;
        for (uint32_t q = 0; q < qps; ++q) {
          Transfer t;
          t.flow = i * qps + q;
          t.bytes = q == qps - 1 ? bytes - part * (qps - 1) : part;
          t.imm = true;
          t.group = k;
          const uint32_t prev = (i + n - 1) % n;
          for (uint32_t p = 0; p < qps; ++p) {
            if (s > 0) t.after.push_back(index(k, s - 1, prev, p));
            if (s == 0 && k > 0) t.after.push_back(index(k - 1, steps - 1, prev, p));
          }
          if (s == 0) t.delay = w.compute;
          plan.transfers.push_back(std::move(t));
        }
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
    case Pattern::kAllToAll:
      for (HostId h = 0; h < hosts; ++h) {
        for (HostId d = 0; d < hosts; ++d) {
          if (d != h) add_messages(plan, w, h, d, prng);
        }
      }
      break;
    case Pattern::kRingAllreduce:
      plan_ring_allreduce(plan, w, hosts);
      break;
  }
  return plan;
}

uint64_t planned_bytes(const Workload& w, uint32_t hosts) {
  const uint64_t per_flow = static_cast<uint64_t>(w.qps_per_flow) * w.messages * w.message_bytes;
  const uint64_t n = hosts;
  switch (w.pattern) {
    case Pattern::kPairs: return (n == 2 ? 1 : n) * (w.bidirectional ? 2 : 1) * per_flow;
    case Pattern::kIncast: return (n - 1 + (w.victim && n >= 3 ? 1 : 0)) * per_flow;
    case Pattern::kFlows: return w.flows.size() * per_flow;
    case Pattern::kPermutation: return n * per_flow;
    case Pattern::kAllToAll: return n * (n - 1) * per_flow;
    case Pattern::kRingAllreduce: return 2 * (n - 1) * w.message_bytes / n * n * w.iterations + 2 * n * w.iterations;
  }
  return 0;
}

const char* to_string(Pattern pattern) {
  switch (pattern) {
    case Pattern::kPairs: return "pairs";
    case Pattern::kIncast: return "incast";
    case Pattern::kPermutation: return "permutation";
    case Pattern::kAllToAll: return "all_to_all";
    case Pattern::kRingAllreduce: return "ring_allreduce";
    case Pattern::kFlows: return "flows";
  }
  return "?";
}

}  // namespace mrc::sim
