// One direction of a simulated cable plus the switch output port that feeds it: a data queue
// and a strict-priority queue (control packets and trimmed headers), ECN marking, trimming or
// drop-tail on overflow, serialization at the link rate and a propagation delay.
//
// Link holds state and the per-packet admission decision; the Fabric drives it with events.
#pragma once

#include <cstdint>
#include <vector>

#include "mrc/types.hpp"
#include "sim/faults.h"
#include "sim/packet.h"
#include "sim/topology.h"
#include "util/prng.h"

namespace mrc::sim {

enum class OverflowPolicy : uint8_t {
  kDrop,  // drop-tail: a packet that does not fit is dropped
  kTrim,  // a trimmable data packet that does not fit is cut to its headers and priority-queued
};

// Queueing rules: control packets (high_priority) and trimmed headers use the priority queue,
// are never trimmed and never ECN-marked; data packets use the data queue. The host uplink has
// no queue at all (the NIC transmits only when idle), so its queue settings are unused.
struct LinkConfig {
  double rate_gbps = 100.0;
  Duration propagation{500};  // ns, cable plus switch forwarding latency
  // Data queue limit, in wire bytes waiting (the packet being serialized is not counted).
  uint32_t queue_limit_bytes = 256 * 1024;
  // Mark CE on an ECN-capable packet when the data queue holds more than this at enqueue.
  // 0 disables marking. With ecn_max_bytes above it, marking is probabilistic (RED/DCQCN
  // style): probability ecn_max_probability x (queue - threshold) / (max - threshold) between
  // the two, 1 above ecn_max_bytes.
  uint32_t ecn_threshold_bytes = 32 * 1024;
  uint32_t ecn_max_bytes = 0;  // 0: step marking at ecn_threshold_bytes
  double ecn_max_probability = 1.0;
  OverflowPolicy overflow = OverflowPolicy::kTrim;
  // With kTrim: trim a trimmable data packet that would take the data queue above this
  // (0 = the queue limit). Non-trimmable packets still use the queue limit.
  uint32_t trim_threshold_bytes = 64 * 1024;
  // Limit of the strict-priority queue (control packets and trimmed headers).
  uint32_t priority_queue_limit_bytes = 64 * 1024;
  // PFC-like lossless switch queues (the roce_pfc baseline): no trimming, no queue limit on the
  // output queues; instead the switch at this link's far end pauses this link while it holds
  // more than pfc_xoff_bytes that arrived on it, and resumes it at pfc_xon_bytes or below
  // (Fabric::hold/release). Headroom: the bytes still on the wire when the pause takes effect.
  bool lossless = false;
  uint32_t pfc_xoff_bytes = 96 * 1024;
  uint32_t pfc_xon_bytes = 64 * 1024;
  uint32_t pfc_headroom_bytes = 64 * 1024;
};

// kPathFault: an EV path fault (blackhole or gray path); kNic: a NIC drop (faults.h).
enum class DropReason : uint8_t { kOverflow, kFaultLoss, kDown, kPathFault, kNic };

struct LinkStats {
  uint64_t packets_sent = 0;     // serialized onto the wire while the link was up
  uint64_t bytes_sent = 0;       // wire bytes of those
  uint64_t max_queue_bytes = 0;  // data + priority queue, high-water mark
  uint64_t dropped_overflow = 0;
  uint64_t dropped_fault = 0;    // random loss fault
  uint64_t dropped_down = 0;     // link down (queued, in flight, or offered while down)
  uint64_t dropped_path = 0;     // EV path faults: blackholes and gray paths
  uint64_t dropped_nic = 0;      // NIC drops, on the host's downlink (rx) or uplink (tx)
  uint64_t dropped_control = 0;  // of all the drops above, packets that carried no data (SACKs,
                                 // NACKs, probes, endpoint requests, trimmed headers)
  uint64_t ecn_marked = 0;
  uint64_t trimmed = 0;         // all trims, congestion and forced (a trimmed header can
                                // still be dropped if the priority queue is full)
  uint64_t trimmed_forced = 0;  // forced-trim fault
  uint64_t duplicated = 0;
  uint64_t corrupted = 0;
  uint64_t reordered = 0;
  uint64_t pfc_pauses = 0;             // lossless: times this link was paused by its far end
  uint64_t pfc_paused_ns = 0;          // ... and for how long in all
  uint64_t pfc_max_held_bytes = 0;     // most bytes from this link held at once in the switch
  uint64_t pfc_headroom_overruns = 0;  // packets held beyond xoff + headroom (a real switch drops)

  uint64_t dropped() const {
    return dropped_overflow + dropped_fault + dropped_down + dropped_path + dropped_nic;
  }
  // Sums counters; max_queue_bytes takes the maximum.
  void add(const LinkStats& other);
};

// A FIFO of packets on a growable power-of-two ring: no allocation per packet once warm.
class PacketFifo {
 public:
  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  void push(PacketPtr packet);
  PacketPtr pop();

 private:
  std::vector<PacketPtr> ring_;
  size_t head_ = 0;
  size_t count_ = 0;
};

// Bits of Link::down_mask: a link is up when no reason holds it down.
enum DownReason : uint8_t {
  kDownLink = 1,    // set_link_up(false)
  kDownSwitch = 2,  // a switch at either end is down
  kDownPlane = 4,   // the whole plane is down
  kDownFlap = 8,    // a flap is in its down phase
};

// Aligned to a cache line, so that the members a hop reads first share one line in every link
// of the fabric's array (unaligned, the first line of every other link straddled two).
class alignas(64) Link {
 public:
  Link(LinkId id, PlaneId plane, const Topology::LinkEnds& ends, const LinkConfig& config,
       bool ecn_enabled, uint64_t seed);

  // Admits a packet into the output queues (the link is busy serializing another one).
  // Returns false, leaving `packet` with the caller, if it must be dropped for overflow.
  bool enqueue(PacketPtr& packet);
  // The next packet to serialize: priority queue first.
  PacketPtr dequeue();
  // Cuts a trimmable packet to its headers; returns false if it cannot be trimmed.
  bool trim(SimPacket& packet);
  // Empties both queues into `out` (the link went down).
  void flush(std::vector<PacketPtr>& out);

  // Picoseconds to serialize `wire_bytes` at the link rate (rounded up).
  int64_t serialization_ps(uint32_t wire_bytes) const {
    return (static_cast<int64_t>(wire_bytes) * 8'000'000'000 + rate_kbps_ - 1) / rate_kbps_;
  }
  bool up() const { return down_mask == 0; }
  const LinkConfig& config() const { return *config_; }
  // A degraded link: serializes at `fraction` of its configured rate from now on (1 = full).
  void set_rate_fraction(double fraction);
  double rate_gbps() const { return static_cast<double>(rate_kbps_) / 1e6; }
  uint64_t queued_bytes() const { return data_bytes_ + priority_bytes_; }

  // Members in the order a packet's hop reads them: the transmitter state, then the queues,
  // then the counters; the fault state and PFC bookkeeping, rarely read, come last, so a hop
  // touches fewer of the link's cache lines.
  const LinkId id;
  const PlaneId plane;
  const LinkClass link_class;
  // Transmitter state, driven by the Fabric.
  uint8_t down_mask = 0;
  bool busy = false;    // serializing `serializing`; implies the queues may be non-empty
  bool faulty = false;  // faults.any(), cached for the fast path
  // PFC (lossless): the far-end switch holds pfc_held_bytes that arrived on this link and has
  // paused it (the transmitter finishes its current packet, then waits).
  bool paused = false;
  const NodeId from;
  const NodeId to;
  uint32_t generation = 0;  // bumped on every down transition: in-flight packets are lost
  uint32_t serializing_generation = 0;
  const Duration propagation;
  int64_t free_at_ps = 0;  // when the last serialization ends (sub-ns precise)
  PacketPtr serializing;

 private:
  bool admit_priority(PacketPtr& packet);
  void note_occupancy();
  bool ecn_mark_now();

  const LinkConfig* config_;
  int64_t rate_kbps_;
  // The second line: what a hop reads beyond the first (the queued bytes, which also tell
  // whether a queue holds a packet, and the counters of every packet sent) comes before the
  // queues themselves, which a hop through an idle port does not touch.
  uint64_t data_bytes_ = 0;
  uint64_t priority_bytes_ = 0;
  const bool ecn_enabled_;

 public:
  LinkStats stats;

 private:
  PacketFifo data_;
  PacketFifo priority_;

 public:
  uint64_t pfc_held_bytes = 0;
  int64_t paused_since_ns = 0;
  LinkFaults faults;
  Prng prng;  // this link's own random stream
};

}  // namespace mrc::sim
