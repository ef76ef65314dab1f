// Builds and queries the per-plane graph of the simulated fabric: which links exist, and which
// output link a switch picks for a packet (ECMP over the EV). Kept separate from the link and
// event machinery so that new topologies (3-tier Clos, FatTree) and routing modes can be added
// here without touching how packets move.
#include "sim/topology.h"

#include <algorithm>

#include "mrc/assert.hpp"
#include "util/prng.h"

namespace mrc::sim {

Topology Topology::leaf_spine(uint32_t planes, uint32_t hosts, uint32_t hosts_per_leaf,
                              uint32_t spines, uint64_t salt) {
  MRC_ASSERT(planes >= 1 && planes <= static_cast<uint32_t>(kMaxPlanes));
  MRC_ASSERT(hosts >= 1 && hosts_per_leaf >= 1);
  const uint32_t leaves = (hosts + hosts_per_leaf - 1) / hosts_per_leaf;
  MRC_ASSERT(spines >= 1 || leaves == 1);

  Topology t;
  t.planes_ = planes;
  t.hosts_ = hosts;
  for (uint32_t h = 0; h < hosts; ++h) t.add_node(NodeKind::kHost, 0, h);
  for (uint32_t l = 0; l < leaves; ++l) t.add_node(NodeKind::kSwitch, 1, l);
  for (uint32_t s = 0; s < spines; ++s) t.add_node(NodeKind::kSwitch, 2, s);
  const auto leaf = [&](uint32_t l) { return t.tiers_[1][l]; };
  const auto spine = [&](uint32_t s) { return t.tiers_[2][s]; };

  t.attach_hosts(t.tiers_[1], hosts_per_leaf);
  std::vector<std::vector<uint32_t>> uplinks(leaves);
  for (uint32_t l = 0; l < leaves; ++l) {
    for (uint32_t s = 0; s < spines; ++s) {
      uplinks[l].push_back(t.add_link(leaf(l), spine(s), LinkClass::kFabricUp));
    }
  }
  for (uint32_t s = 0; s < spines; ++s) {
    for (uint32_t l = 0; l < leaves; ++l) t.add_link(spine(s), leaf(l), LinkClass::kFabricDown);
  }
  t.finish(salt);

  // Leaf: every remote leaf is reached through any spine. Spine: one link down to each leaf.
  for (uint32_t l = 0; l < leaves && spines > 0; ++l) {
    const uint32_t up = t.add_group(uplinks[l]);
    for (uint32_t d = 0; d < leaves; ++d) {
      if (d != l) t.set_route(leaf(l), leaf(d), up);
    }
  }
  for (uint32_t s = 0; s < spines; ++s) {
    for (uint32_t d = 0; d < leaves; ++d) {
      t.set_route(spine(s), leaf(d), t.add_group({t.link_between(spine(s), leaf(d))}));
    }
  }
  return t;
}

Topology Topology::fat_tree(uint32_t planes, uint32_t k, uint32_t hosts, uint64_t salt) {
  MRC_ASSERT(planes >= 1 && planes <= static_cast<uint32_t>(kMaxPlanes));
  MRC_ASSERT(k >= 2 && k % 2 == 0 && k <= 64);
  const uint32_t half = k / 2;
  MRC_ASSERT(hosts >= 1 && hosts <= k * half * half);
  Topology t;
  t.planes_ = planes;
  t.hosts_ = hosts;
  for (uint32_t h = 0; h < hosts; ++h) t.add_node(NodeKind::kHost, 0, h);
  for (uint32_t e = 0; e < k * half; ++e) t.add_node(NodeKind::kSwitch, 1, e);  // pod e / half
  for (uint32_t a = 0; a < k * half; ++a) t.add_node(NodeKind::kSwitch, 2, a);  // pod a / half
  for (uint32_t c = 0; c < half * half; ++c) t.add_node(NodeKind::kSwitch, 3, c);
  const auto edge = [&](uint32_t pod, uint32_t i) { return t.tiers_[1][pod * half + i]; };
  const auto agg = [&](uint32_t pod, uint32_t i) { return t.tiers_[2][pod * half + i]; };
  // Core c connects to aggregation switch c / half of every pod.
  const auto core = [&](uint32_t c) { return t.tiers_[3][c]; };
  t.attach_hosts(t.tiers_[1], half);
  for (uint32_t pod = 0; pod < k; ++pod) {
    for (uint32_t e = 0; e < half; ++e) {
      for (uint32_t a = 0; a < half; ++a)
        t.add_link(edge(pod, e), agg(pod, a), LinkClass::kFabricUp);
    }
    for (uint32_t a = 0; a < half; ++a) {
      for (uint32_t c = a * half; c < (a + 1) * half; ++c)
        t.add_link(agg(pod, a), core(c), LinkClass::kFabricUp);
    }
  }
  for (uint32_t pod = 0; pod < k; ++pod) {
    for (uint32_t a = 0; a < half; ++a) {
      for (uint32_t c = a * half; c < (a + 1) * half; ++c)
        t.add_link(core(c), agg(pod, a), LinkClass::kFabricDown);
    }
    for (uint32_t a = 0; a < half; ++a) {
      for (uint32_t e = 0; e < half; ++e)
        t.add_link(agg(pod, a), edge(pod, e), LinkClass::kFabricDown);
    }
  }
  t.finish(salt);
  t.fat_tree_routes(k);
  return t;
}

// Up while the destination edge is in another pod (edge -> any aggregation switch of the pod,
// aggregation -> any of its cores), then the one way down.
void Topology::fat_tree_routes(uint32_t k) {
  const uint32_t half = k / 2;
  const auto up_group = [&](NodeId at) {
    std::vector<uint32_t> up;
    for (const uint32_t l : out_links_[at.value]) {
      if (links_[l].link_class == LinkClass::kFabricUp) up.push_back(l);
    }
    return add_group(up);
  };
  for (uint32_t pod = 0; pod < k; ++pod) {
    for (uint32_t i = 0; i < half; ++i) {
      const NodeId e = tiers_[1][pod * half + i];
      const NodeId a = tiers_[2][pod * half + i];
      const uint32_t e_up = up_group(e);
      const uint32_t a_up = up_group(a);
      for (uint32_t d = 0; d < k * half; ++d) {
        const NodeId dest = tiers_[1][d];
        if (edge_slot_[dest.value] == kNoGroup) continue;  // no hosts behind it
        if (dest != e) set_route(e, dest, e_up);
        const bool same_pod = d / half == pod;
        set_route(a, dest, same_pod ? add_group({link_between(a, dest)}) : a_up);
      }
    }
  }
  for (uint32_t c = 0; c < half * half; ++c) {
    const NodeId core = tiers_[3][c];
    for (uint32_t d = 0; d < k * half; ++d) {
      const NodeId dest = tiers_[1][d];
      if (edge_slot_[dest.value] == kNoGroup) continue;
      const NodeId down = tiers_[2][(d / half) * half + c / half];
      set_route(core, dest, add_group({link_between(core, down)}));
    }
  }
}

// Host h attaches to edges[h / hosts_per_edge]: the uplinks first, then the downlinks.
void Topology::attach_hosts(const std::vector<NodeId>& edges, uint32_t hosts_per_edge) {
  host_edge_.resize(hosts_);
  host_uplink_.resize(hosts_);
  host_downlink_.resize(hosts_);
  for (uint32_t h = 0; h < hosts_; ++h) {
    host_edge_[h] = edges[h / hosts_per_edge];
    host_uplink_[h] = add_link(NodeId(h), host_edge_[h], LinkClass::kHostUp);
  }
  for (uint32_t h = 0; h < hosts_; ++h) {
    host_downlink_[h] = add_link(host_edge_[h], NodeId(h), LinkClass::kHostDown);
  }
}

NodeId Topology::add_node(NodeKind kind, uint8_t tier, uint32_t index) {
  const NodeId id(static_cast<uint32_t>(nodes_.size()));
  nodes_.push_back(Node{kind, tier, index});
  if (tiers_.size() <= tier) tiers_.resize(tier + 1u);
  tiers_[tier].push_back(id);
  out_links_.emplace_back();
  in_links_.emplace_back();
  return id;
}

uint32_t Topology::add_link(NodeId from, NodeId to, LinkClass link_class) {
  const uint32_t local = static_cast<uint32_t>(links_.size());
  links_.push_back(LinkEnds{from, to, link_class});
  out_links_[from.value].push_back(local);
  in_links_[to.value].push_back(local);
  return local;
}

uint32_t Topology::add_group(const std::vector<uint32_t>& links) {
  MRC_ASSERT(!links.empty());
  const uint32_t id = static_cast<uint32_t>(groups_.size());
  groups_.push_back(
      Group{static_cast<uint32_t>(group_links_.size()), static_cast<uint32_t>(links.size())});
  group_links_.insert(group_links_.end(), links.begin(), links.end());
  return id;
}

void Topology::finish(uint64_t salt) {
  switch_slot_.assign(nodes_.size(), kNoGroup);
  edge_slot_.assign(nodes_.size(), kNoGroup);
  uint32_t switches = 0;
  for (uint32_t n = 0; n < nodes_.size(); ++n) {
    if (nodes_[n].kind == NodeKind::kSwitch) switch_slot_[n] = switches++;
  }
  for (const NodeId edge : host_edge_) {
    if (edge_slot_[edge.value] == kNoGroup) edge_slot_[edge.value] = edge_count_++;
  }
  route_.assign(static_cast<size_t>(switches) * edge_count_, kNoGroup);
  up_fanout_.assign(tiers_.size(), 1);
  for (uint32_t tier = 1; tier < tiers_.size(); ++tier) {
    uint32_t up = 0;
    for (const uint32_t l : out_links_[tiers_[tier][0].value]) {
      up += links_[l].link_class == LinkClass::kFabricUp ? 1 : 0;
    }
    up_fanout_[tier] = std::max(up, 1u);
  }
  salt_.resize(static_cast<size_t>(planes_) * nodes_.size());
  for (size_t i = 0; i < salt_.size(); ++i) salt_[i] = mix64(salt ^ mix64(i + 1));
}

void Topology::set_same_hash_everywhere() {
  if (salt_.empty()) return;
  const uint64_t salt = salt_[0];
  std::fill(salt_.begin(), salt_.end(), salt);
}

void Topology::set_route(NodeId at, NodeId dest_edge, uint32_t group) {
  const uint32_t slot = switch_slot_[at.value];
  const uint32_t edge = edge_slot_[dest_edge.value];
  MRC_ASSERT(slot != kNoGroup && edge != kNoGroup && group < groups_.size());
  route_[static_cast<size_t>(slot) * edge_count_ + edge] = group;
}

const std::vector<NodeId>& Topology::tier(uint32_t tier) const {
  static const std::vector<NodeId> kEmpty;
  return tier < tiers_.size() ? tiers_[tier] : kEmpty;
}

uint32_t Topology::link_between(NodeId from, NodeId to) const {
  for (const uint32_t local : out_links_[from.value]) {
    if (links_[local].to == to) return local;
  }
  return kNoLink;
}

uint32_t Topology::next_link(PlaneId plane, NodeId at, HostId dest, Ev ev,
                             uint64_t packet_id) const {
  const NodeId edge = host_edge_[dest];
  if (edge == at) return host_downlink_[dest];
  const uint32_t group_id =
      route_[static_cast<size_t>(switch_slot_[at.value]) * edge_count_ + edge_slot_[edge.value]];
  MRC_DASSERT(group_id != kNoGroup);
  const Group& group = groups_[group_id];
  if (group.count == 1) return group_links_[group.offset];
  return group_links_[group.offset + pick(group, plane, at, ev, packet_id)];
}

uint32_t Topology::pick(const Group& group, PlaneId plane, NodeId at, Ev ev,
                        uint64_t packet_id) const {
  const uint64_t salt = salt_[static_cast<size_t>(plane.value) * nodes_.size() + at.value];
  switch (routing_) {
    case Routing::kEcmp:
      return static_cast<uint32_t>(mix64(ev.value ^ salt) % group.count);
    case Routing::kSpray:
      return static_cast<uint32_t>(mix64(packet_id ^ salt) % group.count);
    case Routing::kSource:
      break;
  }
  // The EV's digit for this tier: base = the up fan-out of the tiers below (equal per tier in
  // the builders here), so consecutive EVs enumerate the paths.
  uint64_t stride = 1;
  for (uint32_t tier = 1; tier < nodes_[at.value].tier; ++tier) stride *= up_fanout_[tier];
  return static_cast<uint32_t>(ev.value / stride % group.count);
}

std::vector<uint32_t> Topology::route(PlaneId plane, HostId src, HostId dest, Ev ev,
                                      uint64_t packet_id) const {
  MRC_ASSERT(src < hosts_ && dest < hosts_);
  std::vector<uint32_t> path{host_uplink_[src]};
  NodeId at = links_[path.back()].to;
  while (at != NodeId(dest)) {
    MRC_ASSERT(path.size() < 64);
    path.push_back(next_link(plane, at, dest, ev, packet_id));
    at = links_[path.back()].to;
  }
  return path;
}

uint32_t Topology::path_count(HostId src, HostId dest) const {
  // Paths from a switch to dest's edge: 1 at the edge, else the sum over its candidate links.
  struct Counter {
    const Topology& t;
    NodeId edge;
    uint32_t count(NodeId at, int depth) const {
      MRC_ASSERT(depth < 64);
      if (at == edge) return 1;
      const uint32_t slot = t.switch_slot_[at.value];
      const Group& g =
          t.groups_[t.route_[static_cast<size_t>(slot) * t.edge_count_ + t.edge_slot_[edge.value]]];
      uint32_t total = 0;
      for (uint32_t i = 0; i < g.count; ++i) {
        total += count(t.links_[t.group_links_[g.offset + i]].to, depth + 1);
      }
      return total;
    }
  };
  MRC_ASSERT(src < hosts_ && dest < hosts_);
  return Counter{*this, host_edge_[dest]}.count(host_edge_[src], 0);
}

std::string Topology::node_name(NodeId id) const {
  const Node& n = nodes_[id.value];
  static const char* const kTierNames[] = {"host", "leaf", "spine", "core"};
  static const char* const kFatTreeNames[] = {"host", "edge", "agg", "core"};
  const char* const* names = tiers_.size() > 3 ? kFatTreeNames : kTierNames;
  const std::string tier = n.tier < 4 ? names[n.tier] : "t" + std::to_string(n.tier);
  return tier + std::to_string(n.index);
}

std::string Topology::link_name(uint32_t local) const {
  return node_name(links_[local].from) + "->" + node_name(links_[local].to);
}

}  // namespace mrc::sim
