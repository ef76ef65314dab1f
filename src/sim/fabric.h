// The simulated network: several identical, independent planes, each a leaf-spine or FatTree
// fabric of links with output queues, that moves SimPackets between host NIC ports in virtual time,
// with seeded faults. The host side (sim/host.*) plugs a protocol engine in through FabricCallbacks
// and transmit().
//
// Determinism: the run is a pure function of the config, the seed and the calls. Every link has
// its own Prng derived from (seed, link id), so faulting one link never changes the random
// draws of another. No clocks, no threads.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "mrc/assert.hpp"
#include "mrc/types.hpp"
#include "sim/event_queue.h"
#include "sim/faults.h"
#include "sim/link.h"
#include "sim/packet.h"
#include "sim/topology.h"
#include "util/prefetch.h"

namespace mrc::sim {

enum class TopologyKind : uint8_t { kLeafSpine, kFatTree };

struct FabricConfig {
  TopologyKind topology = TopologyKind::kLeafSpine;
  uint32_t planes = 4;
  uint32_t hosts = 8;
  uint32_t hosts_per_leaf = 1;  // leaf-spine
  uint32_t spines = 4;          // leaf-spine, per plane: paths between hosts on different leaves
  uint32_t k = 4;               // FatTree arity (even): k^3/4 host ports per plane
  Routing routing = Routing::kEcmp;
  LinkConfig
      host_link{};  // host <-> edge switch, both directions (the uplink has no queue: the NIC)
  LinkConfig fabric_link{};  // leaf <-> spine; in a FatTree edge <-> aggregation
  LinkConfig core_link{};    // FatTree aggregation <-> core
  // Whether the leaf -> host link marks ECN. MRC deployments do not (last-hop congestion is
  // incast, which trimming handles), so by default it does not.
  bool ecn_last_hop = false;
  // Seeds the switches' ECMP hashes. Independent of the run seed, so an EV's path depends on
  // the topology only, like a real fabric's static hash configuration.
  uint64_t ecmp_salt = 0x6d72632d65636d70;  // "mrc-ecmp"
  // One hash for every switch instead of one per switch (Topology::set_same_hash_everywhere):
  // ECMP polarises.
  bool ecmp_same_hash = false;
};

// deliver is required; port_ready and port_state may be left empty. Callbacks may call back
// into the Fabric (e.g. transmit from port_ready).
struct FabricCallbacks {
  std::function<void(HostId, PlaneId, PacketPtr)> deliver;   // packet arrived at host's port
  std::function<void(HostId, PlaneId)> port_ready;           // host's transmit became idle
  std::function<void(HostId, PlaneId, bool up)> port_state;  // host's port went down/up
};

struct PlaneStats {
  uint64_t packets_delivered = 0;  // to host ports of this plane
  uint64_t bytes_delivered = 0;    // datagram bytes (SimPacket::bytes)
  LinkStats links;                 // sum over this plane's links
};

struct FabricStats {
  uint64_t packets_transmitted = 0;  // transmit() calls
  uint64_t packets_delivered = 0;
  uint64_t bytes_delivered = 0;
  LinkStats links;  // sum over every link
};

class Fabric {
 public:
  Fabric(EventQueue& events, const FabricConfig& config, uint64_t seed, FabricCallbacks callbacks);
  Fabric(const Fabric&) = delete;
  Fabric& operator=(const Fabric&) = delete;

  // ---- Host side.
  // The NIC port is not serializing a packet, so transmit() may be called.
  bool port_idle(HostId host, PlaneId plane) const {
    const Link& uplink = links_[host_uplink(host, plane).value];
    return !uplink.busy && !uplink.paused;
  }
  // Whether a switch can pause a host's uplink (PFC, lossless links), leaving an idle port
  // not ready; otherwise a port is ready again at its port_ready callback.
  bool can_pause_hosts() const {
    return config_.host_link.lossless || config_.fabric_link.lossless || config_.core_link.lossless;
  }
  // Both directions of the host's cable to its leaf are up.
  bool port_up(HostId host, PlaneId plane) const;
  // REQUIRES port_idle. Serializes at the host-link rate (no host-side queue); port_ready fires
  // when done. Stamps packet->source_host and ->plane; assigns packet->id if it is 0. A packet
  // transmitted while the port is down is dropped at once and counted (dropped_down on the
  // uplink); the port stays idle and no port_ready follows.
  void transmit(HostId host, PlaneId plane, PacketPtr packet);

  // What a host's events read first: the host object and its engine, as the host registers
  // them. The fabric's events that end at a host (a delivery, the uplink going idle) prefetch
  // both; a host that registers nothing is not prefetched for.
  struct HostLines {
    const void* host = nullptr;
    const void* engine = nullptr;
  };
  void set_host_lines(HostId host, HostLines lines) { host_lines_[host] = lines; }
  // Whether a run on this fabric should prefetch (EventQueue::set_prefetch): from
  // kPrefetchFromHosts hosts on, where a host's data has left the cache by its next event
  // (below that, prefetching only costs instructions; docs/BENCHMARKS.md).
  static constexpr uint32_t kPrefetchFromHosts = 512;
  bool prefetching() const { return config_.hosts >= kPrefetchFromHosts; }

  EventQueue& events() const { return events_; }

  // ---- Topology.
  const FabricConfig& config() const { return config_; }
  const Topology& topology() const { return topology_; }
  uint32_t planes() const { return config_.planes; }
  uint32_t hosts() const { return config_.hosts; }
  uint32_t leaves() const { return static_cast<uint32_t>(topology_.tier(1).size()); }
  uint32_t spines() const { return config_.spines; }
  uint32_t leaf_of(HostId host) const { return topology_.node(topology_.edge_of(host)).index; }
  // Paths per plane between hosts on different leaves (leaf-spine: spines; FatTree between
  // pods: (k/2)^2).
  uint32_t paths_per_plane() const;
  // Paths per plane between two given hosts (1 on the same leaf).
  uint32_t path_count(HostId src, HostId dst) const { return topology_.path_count(src, dst); }
  // The tier-2 switch (spine; FatTree aggregation) a packet from src to dst with this EV
  // crosses first on `plane`; kNoSpine if the two hosts share a leaf.
  uint32_t path_of(HostId src, HostId dst, PlaneId plane, Ev ev) const;
  // Every link such a packet crosses, host uplink first.
  std::vector<LinkId> route_of(HostId src, HostId dst, PlaneId plane, Ev ev) const;

  uint32_t link_count() const { return static_cast<uint32_t>(links_.size()); }
  LinkId host_uplink(HostId host, PlaneId plane) const { return LinkId(host_port(host, plane)[0]); }
  LinkId host_downlink(HostId host, PlaneId plane) const {
    return LinkId(host_port(host, plane)[1]);
  }
  // A tier-1 switch's `spine`-th uplink (leaf-spine: to that spine; FatTree: to that
  // aggregation switch of its pod) and the same cable's other direction.
  LinkId leaf_to_spine(PlaneId plane, uint32_t leaf, uint32_t spine) const;
  LinkId spine_to_leaf(PlaneId plane, uint32_t spine, uint32_t leaf) const;
  uint32_t leaf_uplinks() const;  // uplinks per tier-1 switch
  NodeId leaf_switch(uint32_t leaf) const { return topology_.tier(1).at(leaf); }
  NodeId spine_switch(uint32_t spine) const { return topology_.tier(2).at(spine); }
  LinkClass link_class(LinkId link) const { return links_[link.value].link_class; }
  double link_rate_gbps(LinkId link) const { return links_[link.value].rate_gbps(); }
  PlaneId link_plane(LinkId link) const { return links_[link.value].plane; }
  std::string link_name(LinkId link) const;  // e.g. "p1:leaf0->spine3"

  // ---- Faults, immediate. (Scope semantics in faults.h.)
  void set_faults(Scope scope, const LinkFaults& faults);
  void set_link_faults(LinkId link, const LinkFaults& faults) {
    set_faults(Scope::of_link(link), faults);
  }
  const LinkFaults& link_faults(LinkId link) const { return links_[link.value].faults; }
  void set_up(Scope scope, bool up);
  void set_link_up(LinkId link, bool up);
  void set_switch_up(PlaneId plane, NodeId node, bool up);
  void set_plane_up(PlaneId plane, bool up);
  bool link_up(LinkId link) const { return links_[link.value].up(); }
  // Sets (or with loss 0 clears) the EV path fault for its (plane, EV, src, dst): matching
  // packets are lost at the first switch of their path with its probability (counted as
  // dropped_path on the link they would have taken); no port_state signal.
  void set_path_fault(const PathFault& fault);
  // The loss a packet from src to dst with this EV meets: the largest of the faults that match
  // it (exactly or through kAnyHost); 0 if none.
  double path_loss(PlaneId plane, Ev ev, HostId src, HostId dst) const;
  // What an EV's path from src to dst is worth now, in [0, 1]: 0 if a link on it is down or
  // loses packets or an EV path fault matches it, else the slowest link's share of its
  // configured rate. NIC drops are not counted (every path of the port has them). For the
  // oracle policy (oracle_policy.h); it walks the route, so it is not for the per-hop path.
  double path_health(HostId src, HostId dst, PlaneId plane, Ev ev) const;
  // Sets (or with rates 0 clears) the NIC drop of the ports `drop` names.
  void set_nic_drop(const NicDrop& drop);
  // Starts flapping the links of `scope` now (see FlapSpec).
  void start_flap(Scope scope, const FlapSpec& flap);
  // Removes every fault: random faults, blackholes, flaps in progress; brings every link up
  // (port_state fires for ports that come back). Packets already queued are kept. Actions
  // registered with schedule() for later still run.
  void heal_all();
  void apply(const FaultAction& action);

  // ---- Faults, scheduled in virtual time.
  void schedule(Instant at, FaultAction action);

  // ---- Stats (readable at any time).
  const LinkStats& link_stats(LinkId link) const { return links_[link.value].stats; }
  uint64_t queued_bytes(LinkId link) const { return links_[link.value].queued_bytes(); }
  PlaneStats plane_stats(PlaneId plane) const;
  FabricStats totals() const;
  // Called for every dropped packet, before it is destroyed (for traces and tests).
  void set_drop_observer(std::function<void(LinkId, const SimPacket&, DropReason)> observer) {
    drop_observer_ = std::move(observer);
  }

 private:
  struct InFlight {
    PacketPtr packet;
    const uint8_t* bytes = nullptr;  // packet->bytes.data(), for the Arrival hook
    uint32_t link = 0;               // while free: the next free record (Fabric::free_slot_)
    uint32_t generation = 0;
  };

  Link& link_at(LinkId id) { return links_[id.value]; }
  // The global ids of the host's uplink and downlink on `plane` (host_ports_).
  const uint32_t* host_port(HostId host, PlaneId plane) const {
    MRC_ASSERT(host < config_.hosts && plane.value < config_.planes);
    return &host_ports_[2 * (static_cast<size_t>(host) * config_.planes + plane.value)];
  }
  LinkId global(PlaneId plane, uint32_t local) const;
  uint32_t leaf_uplink(uint32_t leaf, uint32_t spine) const;
  // The two events of a hop (event_queue.h): each also prefetches what it will read.
  struct Serialized {
    Fabric* fabric;
    uint32_t link;
    void operator()() const { fabric->on_serialized(link); }
    void prefetch(int stage) const;
  };
  struct Arrival {
    Fabric* fabric;
    uint32_t slot;
    uint32_t link;
    void operator()() const { fabric->on_arrival(slot); }
    void prefetch(int stage) const;
  };
  void start_serializing(Link& link, PacketPtr packet);
  void on_serialized(uint32_t link_index);
  void launch(Link& link, PacketPtr packet);
  void propagate(Link& link, PacketPtr packet, Duration extra_delay);
  void on_arrival(uint32_t slot);
  void forward(Link& in, PacketPtr packet);
  void offer(Link& out, PacketPtr packet);
  void drop(Link& link, PacketPtr packet, DropReason reason);
  void hold(Link& in, SimPacket& packet);  // PFC ingress accounting (lossless links)
  void release(SimPacket& packet);
  void set_down_reason(Link& link, uint8_t reasons, bool down);
  void set_switch_state(PlaneId plane, NodeId node, bool up);
  void fire_port_state(const Link& link, bool was_up);
  template <typename Fn>
  void for_each_link(const Scope& scope, bool attached, Fn&& fn);
  void flap_step(Scope scope, FlapSpec flap, Instant end, bool go_down, uint64_t epoch);
  Duration jittered(Duration period, Duration jitter);

  EventQueue& events_;
  const FabricConfig config_;
  FabricCallbacks callbacks_;
  Topology topology_;
  const uint32_t per_plane_;          // links per plane
  std::vector<uint32_t> host_ports_;  // per (host, plane): global uplink, downlink
  std::vector<Link> links_;           // plane-major: plane * links_per_plane + local
  std::vector<InFlight> in_flight_;
  // Per link: the host whose event a hop on it ends in, tagged: a host uplink's sender (its
  // Serialized event offers the host its next packet), a host downlink's receiver with
  // kArrivalBit (its Arrival delivers to the host); else kNoHost. Apart from the links and
  // read directly by the first prefetch stage: 4 bytes per link, often still cached (at 1024
  // hosts not always: the Arrival hook's stalls sit on this read).
  static constexpr uint32_t kNoHost = UINT32_MAX;
  static constexpr uint32_t kArrivalBit = 1u << 31;
  std::vector<uint32_t> link_host_;
  std::vector<HostLines> host_lines_;
  // Stage `stage` of prefetching what a host reads in the event of a hop on `link` that ends at
  // it (`arrival`: an Arrival, else a Serialized): 0 its entry of host_lines_, 1 what it names.
  void prefetch_host(uint32_t link, bool arrival, int stage) const;
  // The free in-flight records, last freed first, linked through their `link` (no vector).
  static constexpr uint32_t kNoSlot = UINT32_MAX;
  uint32_t free_slot_ = kNoSlot;
  // EV path faults by (plane << 32 | EV), each a short list of (src, dst, loss).
  std::unordered_map<uint64_t, std::vector<PathFault>> path_faults_;
  size_t path_fault_count_ = 0;
  // NIC drops per (host, plane) port (empty until one is set), and how many ports have one.
  struct NicRates {
    double rx = 0;
    double tx = 0;
  };
  std::vector<NicRates> nic_drop_;
  size_t nic_drop_ports_ = 0;
  NicRates& nic_rates(HostId host, PlaneId plane) {
    return nic_drop_[static_cast<size_t>(host) * config_.planes + plane.value];
  }
  // Whether an EV path fault loses a packet at its first switch (drawn from `out`'s stream).
  bool lost_on_path(Link& out, const SimPacket& packet) const;
  Prng flap_prng_;                    // flap jitter
  std::vector<uint8_t> switch_down_;  // per (plane, node)
  std::vector<PlaneStats> plane_delivered_;
  uint64_t packets_transmitted_ = 0;
  uint64_t next_packet_id_ = 1;
  uint64_t flap_epoch_ = 0;
  std::function<void(LinkId, const SimPacket&, DropReason)> drop_observer_;
};

// The hop events' prefetch hooks, inline: they run twice per event.
inline void Fabric::prefetch_host(uint32_t link, bool arrival, int stage) const {
  const uint32_t tagged = link_host_[link];
  if (tagged == kNoHost || ((tagged & kArrivalBit) != 0) != arrival) return;
  const HostLines& lines = host_lines_[tagged & ~kArrivalBit];
  if (stage == 0) {
    mrc::prefetch(&lines);
  } else if (lines.host != nullptr) {
    mrc::prefetch(lines.host);
    mrc::prefetch(lines.engine);
  }
}

// Stage 0 loads the link; stage 1 the packet it serializes. On a host's uplink, whose host is
// offered its next packet then, stages 0 and 1 prefetch for the host: the entries an event
// ahead.
inline void Fabric::Serialized::prefetch(int stage) const {
  if (stage == 0) mrc::prefetch(&fabric->links_[link]);
  if (stage == 1) mrc::prefetch(fabric->links_[link].serializing.get());
  fabric->prefetch_host(link, /*arrival=*/false, stage);
}

// Stage 0 loads the in-flight record and the link; stage 1 the packet and, for a packet about
// to reach its host, its headers; stages 0 and 1 also prefetch for that host.
inline void Fabric::Arrival::prefetch(int stage) const {
  const InFlight& flight = fabric->in_flight_[slot];
  if (stage == 0) {
    mrc::prefetch(&flight);
    mrc::prefetch(&fabric->links_[link]);
  } else {
    mrc::prefetch(flight.packet.get());
    if (fabric->links_[link].link_class == LinkClass::kHostDown) {
      mrc::prefetch(flight.bytes);
      mrc::prefetch(flight.bytes + 64);
    }
  }
  fabric->prefetch_host(link, /*arrival=*/true, stage);
}

}  // namespace mrc::sim
