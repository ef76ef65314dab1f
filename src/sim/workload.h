// Workloads as a plan: the connections (flows) a run needs and the transfers (RDMA WRITEs) on
// them, each with the transfers it must wait for and a compute delay after them. The runner
// posts a transfer once everything it waits for has been delivered and its delay has passed,
// so collectives and training steps are expressed as data dependencies, as in a real
// collective library: ring all-reduce step s on host i waits for the chunk host i received in
// step s-1.
//
// Patterns:
//   pairs          host i -> i+1 (and back if bidirectional), `messages` writes each
//   incast         every host -> host 0; with `victim`, also host N-1 -> host 1 (a bystander
//                  flow sharing host 0's leaf when hosts_per_leaf >= 2)
//   permutation    host i -> perm(i), a seeded random single-cycle permutation (no fixed point)
//   all_to_all     every rank -> every other rank
//   ring_allreduce `iterations` ring all-reduces of `message_bytes` per host: 2(N-1) steps of
//                  a 1/N chunk, step s waiting for the chunk received in step s-1; each
//                  iteration starts `compute_us` after the previous one ended at that host
//                  (compute_us > 0: a training-step model; each iteration is one step).
//                  `slices` > 1 pipelines each step as NCCL does: a chunk is sent as that many
//                  slices and slice j of step s waits only for slice j of step s-1
// Ranks (all_to_all, ring_allreduce): the job runs on `ranks` hosts (0: every host). With
// `rank_order` kHosts rank r is host r (a ring's flows stay inside a leaf but one per leaf);
// with kShuffled the ranks are that many hosts drawn in a seeded random order, placed anywhere
// in the fabric as a scheduler does.
// A transfer delivered means: its WRITE-with-immediate was received (receive completion at
// the destination), or for a plain WRITE its send completion (the data is placed when ACKed).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "mrc/types.hpp"
#include "sim/packet.h"
#include "util/prng.h"

namespace mrc::sim {

enum class Pattern : uint8_t { kPairs, kIncast, kPermutation, kAllToAll, kRingAllreduce, kFlows };
enum class RankOrder : uint8_t { kHosts, kShuffled };

struct Workload {
  Pattern pattern = Pattern::kPairs;
  bool bidirectional = true;                      // pairs
  bool victim = false;                            // incast
  uint64_t message_bytes = uint64_t{256} * 1024;  // per write; ring_allreduce: the vector per host
  uint32_t messages = 8;                          // writes per flow (not ring_allreduce)
  uint32_t iterations = 1;                        // ring_allreduce
  Duration compute{0};                       // ring_allreduce: compute time before each iteration
  uint32_t slices = 1;                       // ring_allreduce: pipelined slices per chunk
  uint32_t ranks = 0;                        // all_to_all, ring_allreduce; 0: every host
  RankOrder rank_order = RankOrder::kHosts;  // all_to_all, ring_allreduce
  uint32_t qps_per_flow = 1;
  double imm_fraction = 0.5;                     // share of messages sent as WRITE-with-immediate
  bool expect_failure = false;                   // the scenario drives QPs past their retry limit
  std::vector<std::pair<HostId, HostId>> flows;  // pattern flows: source -> destination, each
};

inline constexpr uint32_t kNoGroup = UINT32_MAX;

struct PlannedFlow {
  HostId src = 0;
  HostId dst = 0;
};

struct Transfer {
  uint32_t flow = 0;
  uint32_t group = kNoGroup;  // e.g. the all-reduce iteration, for reports
  uint64_t bytes = 0;
  Duration delay{0};  // after the last of `after` (or the start)
  // The transfers to be delivered first: WorkloadPlan::after(transfer), stored in the plan's
  // one flat array (a 1024-host ring plans two million transfers: no vector each).
  size_t after_at = 0;
  uint32_t after_count = 0;
  bool imm = false;
};

struct WorkloadPlan {
  std::vector<PlannedFlow> flows;    // each is one QP pair (several with qps_per_flow)
  std::vector<Transfer> transfers;   // per flow, posted in index order
  std::vector<uint32_t> after_list;  // every transfer's `after`, in transfer order
  std::vector<std::string> group_names;
  uint64_t group_bytes = 0;  // ring_allreduce: the vector per host, for algbw

  std::span<const uint32_t> after(const Transfer& t) const {
    return {after_list.data() + t.after_at, t.after_count};
  }
};

// Builds the plan; `prng` decides WRITE-with-immediate shares and permutations.
WorkloadPlan plan_workload(const Workload& workload, uint32_t hosts, Prng& prng);

// Payload bytes the plan will write (a payload run holds each in memory), and the
// flows (queue pairs) it will make, without planning; both saturate at UINT64_MAX.
uint64_t planned_bytes(const Workload& workload, uint32_t hosts);
uint64_t planned_flows(const Workload& workload, uint32_t hosts);

// Whether the pattern places a job's ranks (`ranks`, `rank_order`): all_to_all, ring_allreduce.
bool places_ranks(Pattern pattern);
// The hosts a job of this workload runs on: `ranks`, or every host if 0.
uint32_t job_ranks(const Workload& workload, uint32_t hosts);

const char* to_string(Pattern pattern);

}  // namespace mrc::sim
