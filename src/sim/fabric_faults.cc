// Fault control of the simulated fabric: which links a fault touches, link/switch/plane
// down and up (with the NIC's view: port_state fires when either direction of a host's cable
// changes the port's state), flapping with jitter, degraded rates, EV path faults (blackholes
// and gray paths), NIC drops, scheduling in virtual time, and heal_all() for the liveness phase
// of a test.
//
// A link is up when no reason holds it down (link, switch, plane, flap are separate bits), so
// bringing a plane back up does not revive a link that was taken down on its own.
#include <algorithm>
#include <utility>

#include "mrc/assert.hpp"
#include "sim/fabric.h"

namespace mrc::sim {

template <typename Fn>
void Fabric::for_each_link(const Scope& scope, bool attached, Fn&& fn) {
  const auto visit = [&](Link& link) {
    if ((scope.classes & bit(link.link_class)) != 0) fn(link);
  };
  const uint32_t per_plane = topology_.links_per_plane();
  switch (scope.kind) {
    case Scope::Kind::kLink:
      MRC_ASSERT(scope.link.value < links_.size());
      visit(links_[scope.link.value]);
      break;
    case Scope::Kind::kSwitch:
      MRC_ASSERT(scope.node.value < topology_.node_count());
      MRC_ASSERT(topology_.node(scope.node).kind == NodeKind::kSwitch);
      for (const uint32_t local : topology_.out_links(scope.node)) {
        visit(link_at(global(scope.plane, local)));
      }
      if (!attached) break;
      for (const uint32_t local : topology_.in_links(scope.node)) {
        visit(link_at(global(scope.plane, local)));
      }
      break;
    case Scope::Kind::kPlane:
      MRC_ASSERT(scope.plane.value < config_.planes);
      for (uint32_t local = 0; local < per_plane; ++local) {
        visit(links_[scope.plane.value * per_plane + local]);
      }
      break;
    case Scope::Kind::kFabric:
      for (Link& link : links_) visit(link);
      break;
  }
}

void Fabric::set_faults(Scope scope, const LinkFaults& faults) {
  MRC_ASSERT(faults.reorder_max_delay.ns >= 0);
  for_each_link(scope, false, [&](Link& link) {
    link.faults = faults;
    link.faulty = faults.any();
  });
}

void Fabric::set_up(Scope scope, bool up) {
  switch (scope.kind) {
    case Scope::Kind::kLink:
      for_each_link(scope, true, [&](Link& link) { set_down_reason(link, kDownLink, !up); });
      break;
    case Scope::Kind::kSwitch:
      set_switch_state(scope.plane, scope.node, up);
      break;
    case Scope::Kind::kPlane:
    case Scope::Kind::kFabric:
      for_each_link(scope, true, [&](Link& link) { set_down_reason(link, kDownPlane, !up); });
      break;
  }
}

void Fabric::set_link_up(LinkId link, bool up) {
  set_up(Scope::of_link(link), up);
}

void Fabric::set_switch_up(PlaneId plane, NodeId node, bool up) {
  set_up(Scope::of_switch(plane, node), up);
}

void Fabric::set_plane_up(PlaneId plane, bool up) {
  set_up(Scope::of_plane(plane), up);
}

void Fabric::set_switch_state(PlaneId plane, NodeId node, bool up) {
  const size_t nodes = topology_.node_count();
  switch_down_[plane.value * nodes + node.value] = up ? 0 : 1;
  // A link stays down while the switch at either of its ends is down.
  for_each_link(Scope::of_switch(plane, node), true, [&](Link& link) {
    const bool down = switch_down_[plane.value * nodes + link.from.value] != 0 ||
                      switch_down_[plane.value * nodes + link.to.value] != 0;
    set_down_reason(link, kDownSwitch, down);
  });
}

void Fabric::set_down_reason(Link& link, uint8_t reasons, bool down) {
  const bool was_up = link.up();
  link.down_mask = down ? static_cast<uint8_t>(link.down_mask | reasons)
                        : static_cast<uint8_t>(link.down_mask & ~reasons);
  if (was_up == link.up()) return;
  if (!link.up()) {
    ++link.generation;  // whatever is on the wire or being serialized is lost
    std::vector<PacketPtr> queued;
    link.flush(queued);
    for (PacketPtr& packet : queued) drop(link, std::move(packet), DropReason::kDown);
  }
  fire_port_state(link, was_up);
}

void Fabric::fire_port_state(const Link& link, bool was_up) {
  if (link.link_class != LinkClass::kHostUp && link.link_class != LinkClass::kHostDown) return;
  const bool uplink = link.link_class == LinkClass::kHostUp;
  const HostId host = topology_.node(uplink ? link.from : link.to).index;
  const Link& other =
      links_[(uplink ? host_downlink(host, link.plane) : host_uplink(host, link.plane)).value];
  const bool port_was_up = was_up && other.up();
  const bool port_is_up = link.up() && other.up();
  if (port_was_up != port_is_up && callbacks_.port_state) {
    callbacks_.port_state(host, link.plane, port_is_up);
  }
}

namespace {
uint64_t path_key(PlaneId plane, Ev ev) {
  return static_cast<uint64_t>(plane.value) << 32 | ev.value;
}
}  // namespace

void Fabric::set_path_fault(const PathFault& fault) {
  MRC_ASSERT(fault.plane.value < config_.planes && fault.loss >= 0 && fault.loss <= 1);
  std::vector<PathFault>& list = path_faults_[path_key(fault.plane, fault.ev)];
  const size_t before = list.size();
  std::erase_if(list, [&](const PathFault& f) { return f.src == fault.src && f.dst == fault.dst; });
  if (fault.loss > 0) list.push_back(fault);
  path_fault_count_ = path_fault_count_ + list.size() - before;
  if (list.empty()) path_faults_.erase(path_key(fault.plane, fault.ev));
}

double Fabric::path_loss(PlaneId plane, Ev ev, HostId src, HostId dst) const {
  const auto it = path_faults_.find(path_key(plane, ev));
  if (it == path_faults_.end()) return 0;
  double loss = 0;
  for (const PathFault& f : it->second) {
    if ((f.src == kAnyHost || f.src == src) && (f.dst == kAnyHost || f.dst == dst))
      loss = std::max(loss, f.loss);
  }
  return loss;
}

double Fabric::path_health(HostId src, HostId dst, PlaneId plane, Ev ev) const {
  if (path_loss(plane, ev, src, dst) > 0) return 0;
  double health = 1;
  for (const uint32_t local : topology_.route(plane, src, dst, ev)) {
    const Link& link = links_[global(plane, local).value];
    if (!link.up() || link.faults.loss > 0) return 0;
    health = std::min(health, link.rate_gbps() / link.config().rate_gbps);
  }
  return health;
}

void Fabric::set_nic_drop(const NicDrop& drop) {
  MRC_ASSERT(drop.host == kAnyHost || drop.host < config_.hosts);
  MRC_ASSERT(drop.plane < static_cast<int>(config_.planes));
  if (nic_drop_.empty()) nic_drop_.resize(static_cast<size_t>(config_.hosts) * config_.planes);
  for (HostId h = 0; h < config_.hosts; ++h) {
    if (drop.host != kAnyHost && drop.host != h) continue;
    for (uint32_t p = 0; p < config_.planes; ++p) {
      if (drop.plane != NicDrop::kAllPlanes && drop.plane != static_cast<int>(p)) continue;
      nic_rates(h, PlaneId(static_cast<uint8_t>(p))) = NicRates{drop.rx, drop.tx};
    }
  }
  nic_drop_ports_ = static_cast<size_t>(std::count_if(
      nic_drop_.begin(), nic_drop_.end(), [](const NicRates& r) { return r.rx > 0 || r.tx > 0; }));
}

// A blackhole draws nothing (it loses every packet), so adding one changes no random stream.
bool Fabric::lost_on_path(Link& out, const SimPacket& packet) const {
  const double loss = path_loss(out.plane, packet.ev, packet.source_host, packet.dest_host);
  return loss >= 1 || out.prng.chance(loss);
}

void Fabric::start_flap(Scope scope, const FlapSpec& flap) {
  MRC_ASSERT(flap.down_for.ns > 0 && flap.up_for.ns > 0 && flap.duration.ns >= 0);
  MRC_ASSERT(flap.jitter.ns >= 0 && flap.jitter.ns < std::min(flap.down_for.ns, flap.up_for.ns));
  flap_step(scope, flap, events_.now() + flap.duration, true, flap_epoch_);
}

void Fabric::flap_step(Scope scope, FlapSpec flap, Instant end, bool go_down, uint64_t epoch) {
  if (epoch != flap_epoch_) return;  // heal_all() ended this flap
  const bool finished = events_.now() >= end;
  const bool down = go_down && !finished;
  for_each_link(scope, true, [&](Link& link) { set_down_reason(link, kDownFlap, down); });
  if (finished) return;
  const Duration period = jittered(go_down ? flap.down_for : flap.up_for, flap.jitter);
  const Instant next = std::min(events_.now() + period, end);
  events_.schedule(next, [this, scope, flap, end, go_down, epoch] {
    flap_step(scope, flap, end, !go_down, epoch);
  });
}

// period + uniform [-jitter, +jitter]; positive because jitter < period (start_flap). No draw
// without jitter, so a flap without it changes no random stream.
Duration Fabric::jittered(Duration period, Duration jitter) {
  if (jitter.ns == 0) return period;
  const auto span = static_cast<uint64_t>(2 * jitter.ns + 1);
  return Duration{period.ns - jitter.ns + static_cast<int64_t>(flap_prng_.below(span))};
}

void Fabric::heal_all() {
  ++flap_epoch_;
  path_faults_.clear();
  path_fault_count_ = 0;
  nic_drop_.clear();
  nic_drop_ports_ = 0;
  std::fill(switch_down_.begin(), switch_down_.end(), 0);
  for (Link& link : links_) {
    link.faults = LinkFaults{};
    link.faulty = false;
    link.set_rate_fraction(1.0);
    set_down_reason(link, 0xFF, false);
  }
}

void Fabric::apply(const FaultAction& action) {
  switch (action.kind) {
    case FaultAction::Kind::kSetFaults:
      set_faults(action.scope, action.faults);
      break;
    case FaultAction::Kind::kSetUp:
      set_up(action.scope, action.on);
      break;
    case FaultAction::Kind::kPathFault:
      set_path_fault(action.path);
      break;
    case FaultAction::Kind::kNicDrop:
      set_nic_drop(action.nic);
      break;
    case FaultAction::Kind::kFlap:
      start_flap(action.scope, action.flap);
      break;
    case FaultAction::Kind::kHealAll:
      heal_all();
      break;
    case FaultAction::Kind::kSetRate:
      for_each_link(action.scope, false,
                    [&](Link& link) { link.set_rate_fraction(action.rate_fraction); });
      break;
  }
}

void Fabric::schedule(Instant at, FaultAction action) {
  events_.schedule(at, [this, action] { apply(action); });
}

}  // namespace mrc::sim
