// A simulation scenario: fabric, queue-pair configuration, workload, fault schedule and seed,
// as read from a TOML file (docs/SIMULATION.md lists every key) or built in code by tests.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mrc/config.hpp"
#include "sim/fabric.h"
#include "sim/transport.h"
#include "sim/workload.h"

namespace mrc::sim {

// An EV path fault (blackhole or gray path) aimed at flows and their EVs, which exist only once
// the queue pairs do (EV values are drawn at run time): the sending QP of flow `flow` (each flow
// of the plan is one QP), or of every flow; in it the EV in slot `ev_slot`, or a share
// `ev_fraction` of its EVs chosen from the seed. Each becomes a PathFault from the flow's source
// to its destination with this loss (0 clears).
struct PathTarget {
  bool every_flow = false;
  uint64_t flow = 0;
  int64_t ev_slot = 0;     // when ev_fraction is 0
  double ev_fraction = 0;  // in (0, 1]: at least one EV per flow
  double loss = 1;
};

// A controller's denial of every EV whose path crosses one spine (source routing only: there
// the EV names its path, so the controller knows which EVs those are).
struct SpineDenial {
  PlaneId plane{0};
  uint32_t spine = 0;
};

struct ScheduledFault {
  Instant at;
  FaultAction action;
  std::string description;
  // Set for an EV path fault: the run resolves it into one PathFault per flow and EV.
  std::optional<PathTarget> target = std::nullopt;
  // Set for deny_spine: the run denies those EVs in every QP.
  std::optional<SpineDenial> deny = std::nullopt;
};

struct Scenario {
  std::string name = "unnamed";
  uint64_t seed = 1;
  FabricConfig fabric;
  QpConfig qp;  // MRC queue pairs; mtu, timeout, retry_linear, ack_every also baselines
  // qp.path_policy = "oracle": every QP's EV set runs the simulator's oracle (oracle_policy.h),
  // which reads each EV's path health from the fabric; qp.path_policy is then kRules.
  bool oracle_paths = false;
  TransportConfig transport;  // [transport]: mrc (the engine) or a baseline
  Workload workload;
  std::vector<ScheduledFault> faults;
  // Liveness phase: every fault is healed at this time (0: right after the last fault + 1 ms).
  Instant heal_at{0};
  // A run that has not completed by this simulated time has hung.
  Instant time_limit{Duration::from_ms(2000).ns};
  // Random faults drawn from the seed for sweeps (loss, duplication, reordering, corruption,
  // trimming, link down/up, blackholes, flaps), in addition to `faults`.
  bool random_faults = false;
  // false: payload-free run for fabric scale. No per-flow buffers: every transfer of a host is
  // sent from one shared pattern buffer and placed into one shared scratch buffer (each as long
  // as the longest transfer), so memory is per host, not per byte written. The engines still
  // copy, checksum and place every payload byte; the checker counts each flow's placed bytes
  // (exactly once) and compares every host's scratch with the pattern (docs/SIMULATION.md).
  bool payload = true;
  // The hosts' NICs compute and check the ICRC of data packets (as a NIC's checksum offload,
  // EndpointConfig::icrc_offload): the engines leave it to the fabric, which carries the bytes
  // unchanged and tells the receiver so; a wire fault that changes a packet's bytes computes
  // its ICRC first, so the receiver checks it. Results are the same either way (a test checks
  // it); false makes the engines compute and check every data packet's ICRC themselves.
  bool icrc_offload = true;
  // false (payload-free runs only): packets carry their headers and their payload's length but
  // no payload bytes are moved. The engines gather nothing into a data packet and place
  // nothing from one (its regions are registered as RegionKind::kVirtual; the baselines likewise);
  // every protocol decision, packet size and event is the same (a test checks it). The checker
  // counts each flow's placed bytes (exactly once) but has no bytes to compare. The simulator's
  // fastest mode for fabric scale, as simulators that never carry payload (htsim) run.
  bool move_payload = true;
};

// Makes every switch queue of the fabric PFC-lossless with these thresholds (roce_pfc).
void make_lossless(FabricConfig& fabric, const PfcConfig& pfc);

// Parses a scenario file. Every key is checked against its allowed range; on the first
// problem, returns false and sets `error` to "<path>: <field> = <value>: must be <what is
// allowed>" (or "<path>:<line>:<column>: ..." when the TOML does not parse).
bool load_scenario(const std::string& path, Scenario& out, std::string& error);
// The same from text; `source` names it in messages.
bool load_scenario_text(std::string_view text, const std::string& source, Scenario& out,
                        std::string& error);

// Empty if the scenario's payload modes go together, else why not (a payload run compares
// every byte, so it must move them). Checked by load_scenario and by run_scenario.
std::string payload_modes_error(const Scenario& s);

}  // namespace mrc::sim
