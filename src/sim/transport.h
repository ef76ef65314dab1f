// The seam between the simulated fabric and a host's transport. The fabric calls a host's
// SimTransport when a packet arrives, when a NIC port finishes serializing (it may send the next
// packet) and when a port goes down or up. Two kinds implement it: SimHost, which drives the real
// MRC engine (src/core Endpoint) unchanged, and BaselineHost (baseline.h), which runs the
// baseline transports the comparisons need — RoCEv2 RC as deployed (one ECMP path per QP,
// go-back-N, DCQCN; optionally over PFC-lossless queues) and MPTCP-like subflows with coupled
// congestion control. The scenario's [transport] section picks one for every host of a run.
#pragma once

#include <cstdint>

#include "mrc/types.hpp"
#include "sim/packet.h"

namespace mrc::sim {

class SimTransport {
 public:
  virtual ~SimTransport() = default;
  virtual void on_deliver(PlaneId plane, PacketPtr packet) = 0;
  virtual void on_port_ready(PlaneId plane) = 0;
  virtual void on_port_state(PlaneId plane, bool up) = 0;
  // Gives every idle port a chance to send and re-arms the timer; call after posting work.
  virtual void kick() = 0;
};

enum class TransportKind : uint8_t {
  kMrc,      // the real engine
  kRoce,     // RoCEv2 RC: one path per QP, go-back-N, DCQCN, lossy fabric
  kRocePfc,  // the same over PFC-lossless switch queues (pause instead of drop)
  kMptcp,    // N TCP-like subflows on fixed ECMP paths, LIA coupled congestion control
};

const char* to_string(TransportKind kind);

// DCQCN reaction point and notification point (Zhu et al., "Congestion Control for Large-Scale
// RDMA Deployments", SIGCOMM 2015, section 3 and table 1). Rates in Gbit/s.
struct DcqcnConfig {
  double g = 1.0 / 256;                             // alpha EWMA gain
  Duration alpha_period{Duration::from_us(55)};     // alpha decays every K without a CNP
  Duration increase_period{Duration::from_us(55)};  // rate-increase timer T
  uint64_t byte_counter = 10ull << 20;              // rate-increase byte counter B (10 MB)
  uint32_t fast_recovery_steps = 5;                 // F
  double additive_gbps = 0.04;                      // R_AI (40 Mbit/s)
  double hyper_gbps = 0.4;                          // R_HAI (10 x R_AI; see docs/SIMULATION.md)
  double min_rate_gbps = 0.01;
  Duration cnp_interval{Duration::from_us(50)};  // NP: at most one CNP per QP per interval
  bool enabled = true;
};

struct MptcpConfig {
  uint32_t subflows = 4;
  bool coupled = true;  // LIA (RFC 6356); false: uncoupled Reno per subflow
  uint32_t initial_window_packets = 10;
  uint32_t max_window_packets = 1024;  // per subflow; bounds the sender's state
  Duration rto_min{Duration::from_us(1000)};
  Duration rto_max{Duration::from_ms(100)};
  uint32_t subflow_dead_after = 8;  // consecutive RTOs; all subflows dead = connection fails
};

// PFC-like lossless switch queues (kRocePfc): pause an ingress link when the switch holds more
// than xoff bytes that arrived on it, resume below xon; headroom for bytes already on the wire.
struct PfcConfig {
  uint32_t xoff_bytes = 96 * 1024;
  uint32_t xon_bytes = 64 * 1024;
  uint32_t headroom_bytes = 64 * 1024;
};

struct TransportConfig {
  TransportKind kind = TransportKind::kMrc;
  DcqcnConfig dcqcn;
  MptcpConfig mptcp;
  PfcConfig pfc;
};

}  // namespace mrc::sim
