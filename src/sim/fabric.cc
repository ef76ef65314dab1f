// The simulated multi-plane network: moves packets from host NIC ports through leaf and spine
// switches to host NIC ports in virtual time. A packet's life per link is two events: its
// serialization ends (wire faults are drawn then), and it arrives at the far end after the
// propagation delay (then it is delivered to a host or forwarded by a switch into the next
// link's output queue). Packets are moved, never copied, from hop to hop; packets in flight
// live in a slab so that events capture only an index and std::function never allocates.
//
// Faults are state on links (random faults, down reasons) and planes (EV blackholes); changes
// apply immediately or at a scheduled virtual time.
#include "sim/fabric.h"

#include <algorithm>
#include <utility>

#include "mrc/assert.hpp"
#include "util/prng.h"

namespace mrc::sim {
namespace {

bool is_host_link(LinkClass c) {
  return c == LinkClass::kHostUp || c == LinkClass::kHostDown;
}

uint64_t link_seed(uint64_t seed, uint32_t link) {
  return mix64(seed ^ mix64(0x6c696e6b00000000ULL + link));  // "link" + index
}

Topology build_topology(const FabricConfig& c) {
  Topology t =
      c.topology == TopologyKind::kFatTree
          ? Topology::fat_tree(c.planes, c.k, c.hosts, c.ecmp_salt)
          : Topology::leaf_spine(c.planes, c.hosts, c.hosts_per_leaf, c.spines, c.ecmp_salt);
  t.set_routing(c.routing);
  if (c.ecmp_same_hash) t.set_same_hash_everywhere();
  return t;
}

}  // namespace

Fabric::Fabric(EventQueue& events, const FabricConfig& config, uint64_t seed,
               FabricCallbacks callbacks)
    : events_(events),
      config_(config),
      callbacks_(std::move(callbacks)),
      topology_(build_topology(config)),
      per_plane_(topology_.links_per_plane()),
      flap_prng_(mix64(seed ^ 0x666c6170u)) {  // "flap"
  MRC_ASSERT(callbacks_.deliver);
  const uint32_t per_plane = per_plane_;
  links_.reserve(static_cast<size_t>(config_.planes) * per_plane);
  for (uint32_t p = 0; p < config_.planes; ++p) {
    for (uint32_t local = 0; local < per_plane; ++local) {
      const Topology::LinkEnds& ends = topology_.link(local);
      const bool host = is_host_link(ends.link_class);
      const bool ecn = ends.link_class == LinkClass::kHostDown
                           ? config_.ecn_last_hop
                           : ends.link_class != LinkClass::kHostUp;
      const uint32_t id = static_cast<uint32_t>(links_.size());
      const bool core = topology_.node(ends.from).tier == 3 || topology_.node(ends.to).tier == 3;
      const LinkConfig& lc = host   ? config_.host_link
                             : core ? config_.core_link
                                    : config_.fabric_link;
      links_.emplace_back(LinkId(id), PlaneId(static_cast<uint8_t>(p)), ends, lc, ecn,
                          link_seed(seed, id));
    }
  }
  link_host_.resize(links_.size(), kNoHost);
  for (const Link& l : links_) {
    if (l.link_class == LinkClass::kHostUp) link_host_[l.id.value] = topology_.node(l.from).index;
    if (l.link_class == LinkClass::kHostDown)
      link_host_[l.id.value] = topology_.node(l.to).index | kArrivalBit;
  }
  host_lines_.resize(config_.hosts);
  host_ports_.resize(2 * static_cast<size_t>(config_.hosts) * config_.planes);
  for (HostId h = 0; h < config_.hosts; ++h) {
    for (uint32_t p = 0; p < config_.planes; ++p) {
      const PlaneId plane(static_cast<uint8_t>(p));
      host_ports_[2 * (static_cast<size_t>(h) * config_.planes + p)] =
          global(plane, topology_.host_uplink(h)).value;
      host_ports_[2 * (static_cast<size_t>(h) * config_.planes + p) + 1] =
          global(plane, topology_.host_downlink(h)).value;
    }
  }
  plane_delivered_.resize(config_.planes);
  switch_down_.assign(static_cast<size_t>(config_.planes) * topology_.node_count(), 0);
}

// ---------------------------------------------------------------------------- host side

bool Fabric::port_up(HostId host, PlaneId plane) const {
  return links_[host_uplink(host, plane).value].up() &&
         links_[host_downlink(host, plane).value].up();
}

void Fabric::transmit(HostId host, PlaneId plane, PacketPtr packet) {
  MRC_ASSERT(packet != nullptr);
  MRC_ASSERT(packet->dest_host < config_.hosts);
  Link& uplink = link_at(host_uplink(host, plane));
  MRC_ASSERT(!uplink.busy);  // REQUIRES port_idle
  packet->source_host = host;
  packet->plane = plane;
  if (packet->id == 0) packet->id = next_packet_id_++;
  ++packets_transmitted_;
  if (!port_up(host, plane)) {
    drop(uplink, std::move(packet), DropReason::kDown);
    return;
  }
  if (uplink.faulty && uplink.prng.chance(uplink.faults.trim) && uplink.trim(*packet)) {
    ++uplink.stats.trimmed_forced;
  }
  start_serializing(uplink, std::move(packet));
}

// ---------------------------------------------------------------------------- packet path

void Fabric::start_serializing(Link& link, PacketPtr packet) {
  MRC_DASSERT(!link.busy);
  const int64_t now_ps = events_.now().ns * 1000;
  MRC_DASSERT(link.free_at_ps <= now_ps);
  // Events run on whole nanoseconds; a link that went idle less than 1 ns ago resumes at the
  // exact end of its last packet, so back-to-back packets keep the exact line rate.
  const int64_t start = now_ps - link.free_at_ps < 1000 ? link.free_at_ps : now_ps;
  const int64_t end = start + link.serialization_ps(packet->wire_bytes());
  link.busy = true;
  link.free_at_ps = end;
  link.serializing = std::move(packet);
  link.serializing_generation = link.generation;
  const uint32_t index = link.id.value;
  events_.schedule(Instant{(end + 999) / 1000}, Serialized{this, index});
}

void Fabric::on_serialized(uint32_t link_index) {
  Link& link = links_[link_index];
  PacketPtr packet = std::move(link.serializing);
  link.busy = false;
  if (packet->pfc_ingress != UINT32_MAX) release(*packet);  // it left the switch
  if (link.up() && link.serializing_generation == link.generation) {
    ++link.stats.packets_sent;
    link.stats.bytes_sent += packet->wire_bytes();
    launch(link, std::move(packet));
  } else {
    drop(link, std::move(packet), DropReason::kDown);
  }
  if (link.paused) return;  // PFC: resume() restarts it
  if (PacketPtr next = link.dequeue()) {
    start_serializing(link, std::move(next));
  } else if (link.link_class == LinkClass::kHostUp && callbacks_.port_ready) {
    callbacks_.port_ready(topology_.node(link.from).index, link.plane);
  }
}

void Fabric::launch(Link& link, PacketPtr packet) {
  if (!link.faulty) {
    propagate(link, std::move(packet), Duration{0});
    return;
  }
  WireOutcome outcome = apply_wire_faults(link.faults, link.prng, *packet, link.stats);
  if (outcome.lost) {
    drop(link, std::move(packet), DropReason::kFaultLoss);
    return;
  }
  propagate(link, std::move(packet), outcome.extra_delay);
  if (outcome.duplicate) propagate(link, std::move(outcome.duplicate), Duration{0});
}

void Fabric::propagate(Link& link, PacketPtr packet, Duration extra_delay) {
  uint32_t slot;
  if (free_slot_ == kNoSlot) {
    slot = static_cast<uint32_t>(in_flight_.size());
    in_flight_.emplace_back();
  } else {
    slot = free_slot_;
    free_slot_ = in_flight_[slot].link;
  }
  const uint8_t* bytes = packet->bytes.data();
  in_flight_[slot] = InFlight{std::move(packet), bytes, link.id.value, link.generation};
  events_.schedule(events_.now() + link.propagation + extra_delay,
                   Arrival{this, slot, link.id.value});
}

void Fabric::on_arrival(uint32_t slot) {
  InFlight& flight = in_flight_[slot];
  PacketPtr packet = std::move(flight.packet);
  Link& link = links_[flight.link];
  const uint32_t generation = flight.generation;
  flight.link = free_slot_;  // the record is free: it names the next free one
  free_slot_ = slot;
  if (!link.up() || generation != link.generation) {
    drop(link, std::move(packet), DropReason::kDown);
    return;
  }
  if (link.link_class == LinkClass::kHostDown) {
    const HostId host = topology_.node(link.to).index;
    if (nic_drop_ports_ != 0 && link.prng.chance(nic_rates(host, link.plane).rx)) {
      drop(link, std::move(packet), DropReason::kNic);
      return;
    }
    PlaneStats& plane = plane_delivered_[link.plane.value];
    ++plane.packets_delivered;
    plane.bytes_delivered += packet->bytes.size();
    callbacks_.deliver(host, link.plane, std::move(packet));
    return;
  }
  forward(link, std::move(packet));
}

void Fabric::forward(Link& in, PacketPtr packet) {
  const uint32_t local =
      topology_.next_link(in.plane, in.to, packet->dest_host, packet->ev, packet->id);
  Link& out = link_at(global(in.plane, local));
  // Just past the sending NIC: its drop first, then the path the packet's EV takes.
  if (nic_drop_ports_ != 0 && in.link_class == LinkClass::kHostUp &&
      in.prng.chance(nic_rates(packet->source_host, in.plane).tx)) {
    drop(in, std::move(packet), DropReason::kNic);
    return;
  }
  if (path_fault_count_ != 0 && in.link_class == LinkClass::kHostUp && lost_on_path(out, *packet)) {
    drop(out, std::move(packet), DropReason::kPathFault);
    return;
  }
  if (out.config().lossless) hold(links_[in.id.value], *packet);
  offer(out, std::move(packet));
}

// ---------------------------------------------------------------------------- PFC (lossless)
// Ingress accounting: a lossless switch counts, per ingress link, the bytes it holds that
// arrived on it (queued or being serialized at an output), pauses that link above xoff and
// resumes it at xon. The pause takes effect at once (no PAUSE frame delay: the headroom margin
// covers what is on the wire), applies to the whole link (no priority classes) and a paused
// transmitter finishes its current packet.

void Fabric::hold(Link& in, SimPacket& packet) {
  const LinkConfig& c = in.config();
  packet.pfc_ingress = in.id.value;
  packet.pfc_bytes = packet.wire_bytes();
  in.pfc_held_bytes += packet.pfc_bytes;
  in.stats.pfc_max_held_bytes = std::max(in.stats.pfc_max_held_bytes, in.pfc_held_bytes);
  if (in.pfc_held_bytes > uint64_t{c.pfc_xoff_bytes} + c.pfc_headroom_bytes)
    ++in.stats.pfc_headroom_overruns;
  if (!in.paused && in.pfc_held_bytes > c.pfc_xoff_bytes) {
    in.paused = true;
    in.paused_since_ns = events_.now().ns;
    ++in.stats.pfc_pauses;
  }
}

void Fabric::release(SimPacket& packet) {
  Link& in = links_[packet.pfc_ingress];
  packet.pfc_ingress = UINT32_MAX;
  in.pfc_held_bytes -= std::min<uint64_t>(in.pfc_held_bytes, packet.pfc_bytes);
  if (!in.paused || in.pfc_held_bytes > in.config().pfc_xon_bytes) return;
  in.paused = false;
  in.stats.pfc_paused_ns += static_cast<uint64_t>(events_.now().ns - in.paused_since_ns);
  if (in.busy) return;
  if (PacketPtr next = in.dequeue()) {
    start_serializing(in, std::move(next));
  } else if (in.link_class == LinkClass::kHostUp && callbacks_.port_ready) {
    callbacks_.port_ready(topology_.node(in.from).index, in.plane);
  }
}

void Fabric::offer(Link& out, PacketPtr packet) {
  if (!out.up()) {
    drop(out, std::move(packet), DropReason::kDown);
    return;
  }
  if (out.faulty && out.prng.chance(out.faults.trim) && out.trim(*packet)) {
    ++out.stats.trimmed_forced;
  }
  if (!out.busy && !out.paused) {
    start_serializing(out, std::move(packet));  // the queues are empty when the link is idle
    return;
  }
  if (!out.enqueue(packet)) drop(out, std::move(packet), DropReason::kOverflow);
}

void Fabric::drop(Link& link, PacketPtr packet, DropReason reason) {
  if (packet->pfc_ingress != UINT32_MAX) release(*packet);
  if (!packet->trimmable || packet->trimmed) ++link.stats.dropped_control;
  switch (reason) {
    case DropReason::kOverflow:
      ++link.stats.dropped_overflow;
      break;
    case DropReason::kFaultLoss:
      ++link.stats.dropped_fault;
      break;
    case DropReason::kDown:
      ++link.stats.dropped_down;
      break;
    case DropReason::kPathFault:
      ++link.stats.dropped_path;
      break;
    case DropReason::kNic:
      ++link.stats.dropped_nic;
      break;
  }
  if (drop_observer_) drop_observer_(link.id, *packet, reason);
}

// ---------------------------------------------------------------------------- topology

LinkId Fabric::global(PlaneId plane, uint32_t local) const {
  MRC_ASSERT(plane.value < config_.planes && local < per_plane_);
  return LinkId(plane.value * per_plane_ + local);
}

// The `spine`-th uplink of tier-1 switch `leaf` (leaf-spine: to spine `spine`; FatTree: to the
// pod's aggregation switch `spine`).
uint32_t Fabric::leaf_uplink(uint32_t leaf, uint32_t spine) const {
  uint32_t seen = 0;
  for (const uint32_t local : topology_.out_links(leaf_switch(leaf))) {
    if (topology_.link(local).link_class != LinkClass::kFabricUp) continue;
    if (seen++ == spine) return local;
  }
  MRC_ASSERT(false && "no such uplink");
  return kNoLink;
}

LinkId Fabric::leaf_to_spine(PlaneId plane, uint32_t leaf, uint32_t spine) const {
  return global(plane, leaf_uplink(leaf, spine));
}

LinkId Fabric::spine_to_leaf(PlaneId plane, uint32_t spine, uint32_t leaf) const {
  const Topology::LinkEnds& up = topology_.link(leaf_uplink(leaf, spine));
  const uint32_t local = topology_.link_between(up.to, up.from);
  MRC_ASSERT(local != kNoLink);
  return global(plane, local);
}

uint32_t Fabric::leaf_uplinks() const {
  uint32_t n = 0;
  for (const uint32_t local : topology_.out_links(leaf_switch(0))) {
    n += topology_.link(local).link_class == LinkClass::kFabricUp ? 1 : 0;
  }
  return n;
}

std::vector<LinkId> Fabric::route_of(HostId src, HostId dst, PlaneId plane, Ev ev) const {
  std::vector<LinkId> out;
  for (const uint32_t local : topology_.route(plane, src, dst, ev)) {
    out.push_back(global(plane, local));
  }
  return out;
}

uint32_t Fabric::path_of(HostId src, HostId dst, PlaneId plane, Ev ev) const {
  for (const uint32_t local : topology_.route(plane, src, dst, ev)) {
    const Topology::Node& node = topology_.node(topology_.link(local).to);
    if (node.kind == NodeKind::kSwitch && node.tier == 2) return node.index;
  }
  return kNoSpine;
}

uint32_t Fabric::paths_per_plane() const {
  if (config_.topology == TopologyKind::kFatTree) return config_.k / 2 * (config_.k / 2);
  return config_.spines;
}

std::string Fabric::link_name(LinkId link) const {
  const uint32_t per_plane = topology_.links_per_plane();
  return "p" + std::to_string(link.value / per_plane) + ":" +
         topology_.link_name(link.value % per_plane);
}

// ---------------------------------------------------------------------------- stats

PlaneStats Fabric::plane_stats(PlaneId plane) const {
  MRC_ASSERT(plane.value < config_.planes);
  PlaneStats stats = plane_delivered_[plane.value];
  const uint32_t per_plane = topology_.links_per_plane();
  for (uint32_t local = 0; local < per_plane; ++local) {
    stats.links.add(links_[plane.value * per_plane + local].stats);
  }
  return stats;
}

FabricStats Fabric::totals() const {
  FabricStats totals;
  totals.packets_transmitted = packets_transmitted_;
  for (const PlaneStats& plane : plane_delivered_) {
    totals.packets_delivered += plane.packets_delivered;
    totals.bytes_delivered += plane.bytes_delivered;
  }
  for (const Link& link : links_) totals.links.add(link.stats);
  return totals;
}

}  // namespace mrc::sim
