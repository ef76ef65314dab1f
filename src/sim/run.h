// Runs a scenario: builds the fabric and hosts, connects queue pairs, posts the workload,
// applies the fault schedule, heals, and checks the outcome: every byte landed exactly once
// and equals its source, every operation completed (or, when the scenario drives QPs past
// their retry limit, failed with an error completion), WRITE-with-immediate completions arrived
// in send order with the right immediates, and nothing hung.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/ev_set.h"
#include "sim/scenario.h"

namespace mrc::sim {

struct PlaneReport {
  uint64_t data_bytes_sent = 0;  // payload bytes the engines sent on this plane
  uint64_t retransmits = 0;
  uint64_t fabric_bytes_delivered = 0;
};

// A group of transfers (one all-reduce iteration / training step, or the incast's victim).
struct GroupReport {
  std::string name;
  int64_t start_ns = -1;  // when its first transfer could start (after any compute delay)
  int64_t end_ns = -1;    // when its last transfer was delivered; -1 if one never was
  uint64_t bytes = 0;     // payload of its transfers
  // bytes / (end - start) in Gbit/s; -1 if it never ended.
  double goodput_gbit_per_s = -1;
  // min(distinct senders, distinct receivers) x planes x host link rate (Runner::report_rates).
  double line_rate_gbit_per_s = 0;
  // It started before an earlier group ended (hosts start the next all-reduce iteration on
  // their own), so its window and bandwidths share time with that group's.
  bool overlaps_previous = false;
};

// One link direction's load over the run, for utilisation tables and heat maps.
struct LinkReport {
  std::string name;  // e.g. "p1:leaf0->spine3"
  uint32_t plane = 0;
  std::string link_class;   // host_up, host_down, fabric_up, fabric_down
  uint64_t bytes_sent = 0;  // wire bytes
  uint64_t drops = 0;
  uint64_t ecn_marked = 0;
  uint64_t trimmed = 0;
  double utilization = 0;  // bytes_sent / (rate x completion time)
};

struct FaultMark {
  int64_t at_ns = 0;
  std::string what;
};

// Counters only the baseline transports have (zero for MRC).
struct BaselineReport {
  uint64_t cnps = 0;                  // RoCE: CNPs sent by the notification points
  uint64_t rate_cuts = 0;             // RoCE: DCQCN rate decreases
  uint64_t duplicates = 0;            // data packets received again (not placed)
  uint64_t out_of_order_dropped = 0;  // RoCE: discarded by the go-back-N responder
  uint64_t fast_retransmits = 0;      // MPTCP: on three duplicate ACKs
  uint64_t reinjected = 0;            // MPTCP: packets re-sent on another subflow
  uint64_t control_dropped = 0;       // host control FIFO full
};

struct RunReport {
  bool ok = false;
  std::string transport = "mrc";  // mrc | roce | roce_pfc | mptcp
  std::string failure;            // empty if ok
  uint64_t seed = 0;
  uint64_t bytes_written = 0;   // payload bytes of all posted writes
  bool payload = true;          // false: a payload-free run (Scenario::payload)
  bool icrc_offload = true;     // the fabric, not the engines, computed the ICRCs (Scenario)
  bool move_payload = true;     // false: no payload bytes were moved (Scenario)
  uint64_t bytes_verified = 0;  // bytes compared equal to their source (payload-free: bytes of
                                // completed transfers whose flow placed exactly its bytes once)
  uint64_t bytes_placed = 0;    // bytes the responders placed (exactly once: == bytes_written)
  uint64_t ops_posted = 0;
  uint64_t ops_completed = 0;
  uint64_t ops_failed = 0;
  uint64_t wimm_delivered = 0;
  int64_t sim_time_ns = 0;
  int64_t completion_time_ns = 0;
  uint64_t bytes_delivered = 0;  // payload of the transfers delivered
  // bytes_delivered / completion_time_ns in Gbit/s (the run starts at 0); -1 if it never ended.
  double goodput_gbit_per_s = -1;
  // What the workload's NICs allow: min(distinct senders, distinct receivers) x planes x host
  // link rate. goodput / line rate is the run's fraction of line rate.
  double line_rate_gbit_per_s = 0;
  uint64_t events = 0;
  uint64_t retransmits = 0;
  uint64_t timeouts = 0;
  uint64_t trims = 0;
  uint64_t ecn_marks = 0;
  uint64_t nacks = 0;
  uint64_t fabric_drops = 0;
  uint64_t fabric_drops_control =
      0;  // of those, packets without data (SACKs, NACKs, probes, trimmed headers)
  // Of fabric_drops, by cause (zero counts left out): overflow, link_fault (LinkFaults' random
  // loss), down, path_fault (EV blackholes and gray paths), nic_drop.
  std::map<std::string, uint64_t> fabric_drops_by_cause;
  uint64_t hostile_drops = 0;  // packets the engines refused (duplicates, bad ICRC, ...)
  std::map<std::string, uint64_t> refused_by_reason;
  uint64_t stale_sacks = 0;
  // MRC requesters: why packets were declared lost (nack, same_ev, same_ev_late, rack, probe,
  // timeout, port) and how often a declared loss was then acknowledged (false), tail probes sent.
  std::map<std::string, uint64_t> losses_by_cause;
  // PFC (roce_pfc): pauses, total paused link-time, packets held beyond xoff + headroom.
  uint64_t pfc_pauses = 0;
  uint64_t pfc_paused_ns = 0;
  uint64_t pfc_headroom_overruns = 0;
  BaselineReport baseline;
  EvTransitions ev_transitions;
  std::vector<PlaneReport> planes;
  // Transfer completion times (ready to delivered), over every delivered transfer.
  int64_t fct_p50_ns = -1;
  int64_t fct_p99_ns = -1;
  int64_t fct_max_ns = -1;
  std::vector<int64_t> fct_ns;  // every delivered transfer's completion time, in transfer order
  std::vector<GroupReport> groups;
  std::vector<LinkReport> links;
  std::vector<FaultMark> faults;  // the scenario's scheduled faults and the heal
  uint64_t group_bytes = 0;       // ring_allreduce: the vector per host (algbw = this / duration)
  // (time_ns, bytes placed so far) every RunOptions::sample_interval, for plots.
  std::vector<std::pair<int64_t, uint64_t>> progress;
};

struct RunOptions {
  // Called about every `progress_interval` of simulated time with the report so far.
  std::function<void(const RunReport&)> on_progress;
  // Called once, when the fabric, hosts, queue pairs and workload are built and the first
  // event is about to run (so a caller can time the setup apart from the event loop).
  std::function<void()> on_built;
  Duration progress_interval{Duration::from_us(100)};
  // How often RunReport::progress samples the bytes placed (simulated time).
  Duration sample_interval{Duration::from_us(10)};
};

RunReport run_scenario(const Scenario& scenario, const RunOptions& options = {});

}  // namespace mrc::sim
