// The shape of one plane of the simulated fabric: nodes (host ports and switches), directed
// links between them, and each switch's routing table. All planes of a fabric are identical
// copies of this template, so a link is named by (plane, local link index).
//
// A switch routes by the destination host's edge switch to a group of candidate output links
// and picks one of them per packet (next_link) by the fabric's routing mode:
//   kEcmp   hash of the packet's flow with a per-switch salt (or one salt for every switch, which
//           polarises: set_same_hash_everywhere). On a real network the EV is the
//           UDP source port, so the 5-tuple hash gives each EV one path ("EV as entropy").
//   kSpray  a fresh uniform choice per packet and switch (a hash of the packet id): packet
//           spraying that ignores the EV.
//   kSource the EV names the path (SRv6-style source routing): at a switch with n candidates,
//           the EV's digit for that tier, so EVs 0, 1, 2, ... of a connection take distinct
//           paths until every path is used once (no hash collisions).
// Builders: two-tier leaf-spine (a 2-tier Clos per plane; oversubscription follows from link
// rates and counts) and the three-tier k-ary FatTree of Al-Fares et al.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mrc/types.hpp"
#include "sim/packet.h"

namespace mrc::sim {

struct NodeTag {};
struct LinkTag {};
// A node of one plane (host ports first, then switches); the same id names it in every plane.
using NodeId = StrongId<NodeTag, uint32_t>;
// A directed link of the whole fabric: plane * links_per_plane + local index.
using LinkId = StrongId<LinkTag, uint32_t>;

// Which way a link points. Up = towards a higher tier (host -> leaf -> spine).
enum class LinkClass : uint8_t {
  kHostUp = 1,      // host port -> its edge switch (the NIC transmit side)
  kHostDown = 2,    // edge switch -> host port (the last hop)
  kFabricUp = 4,    // switch -> higher-tier switch
  kFabricDown = 8,  // switch -> lower-tier switch
};
inline constexpr uint8_t kAllLinkClasses = 1 | 2 | 4 | 8;
inline constexpr uint8_t bit(LinkClass c) {
  return static_cast<uint8_t>(c);
}

enum class NodeKind : uint8_t { kHost, kSwitch };
enum class Routing : uint8_t { kEcmp, kSpray, kSource };

inline constexpr uint32_t kNoLink = UINT32_MAX;
inline constexpr uint32_t kNoSpine = UINT32_MAX;

class Topology {
 public:
  struct Node {
    NodeKind kind;
    uint8_t tier;    // 0 = host port, 1 = leaf, 2 = spine, ...
    uint32_t index;  // host id, or the switch's index within its tier
  };
  struct LinkEnds {
    NodeId from;
    NodeId to;
    LinkClass link_class;
  };

  // Two-tier leaf-spine: `hosts` host ports, ceil(hosts / hosts_per_leaf) leaves, `spines`
  // spines, every leaf connected to every spine. `salt` seeds the switches' ECMP hashes.
  static Topology leaf_spine(uint32_t planes, uint32_t hosts, uint32_t hosts_per_leaf,
                             uint32_t spines, uint64_t salt);
  // Three-tier k-ary FatTree (k even): k pods of k/2 edge (tier 1) and k/2 aggregation (tier 2)
  // switches, (k/2)^2 core switches (tier 3), k/2 hosts per edge switch: k^3/4 hosts, full
  // bisection, (k/2)^2 paths between hosts in different pods. `hosts` <= k^3/4 of them are
  // attached (the first ones); the rest of the ports stay empty.
  static Topology fat_tree(uint32_t planes, uint32_t k, uint32_t hosts, uint64_t salt);
  void set_routing(Routing routing) { routing_ = routing; }
  // Every switch hashes alike (one salt for all, as switches of one vendor and configuration
  // do): with kEcmp, a flow that took uplink i at one tier takes uplink i at the next
  // (polarisation), so a FatTree's flows use a fraction of its core links.
  void set_same_hash_everywhere();
  Routing routing() const { return routing_; }

  uint32_t planes() const { return planes_; }
  uint32_t hosts() const { return hosts_; }
  uint32_t node_count() const { return static_cast<uint32_t>(nodes_.size()); }
  uint32_t links_per_plane() const { return static_cast<uint32_t>(links_.size()); }
  const Node& node(NodeId id) const { return nodes_[id.value]; }
  const LinkEnds& link(uint32_t local) const { return links_[local]; }
  // Nodes of a tier in index order (tier 1 = leaves, tier 2 = spines).
  const std::vector<NodeId>& tier(uint32_t tier) const;
  const std::vector<uint32_t>& out_links(NodeId id) const { return out_links_[id.value]; }
  const std::vector<uint32_t>& in_links(NodeId id) const { return in_links_[id.value]; }

  NodeId host_node(HostId host) const { return NodeId(host); }
  NodeId edge_of(HostId host) const { return host_edge_[host]; }
  uint32_t host_uplink(HostId host) const { return host_uplink_[host]; }
  uint32_t host_downlink(HostId host) const { return host_downlink_[host]; }
  // The local index of the link from -> to, or kNoLink.
  uint32_t link_between(NodeId from, NodeId to) const;

  // The output link a packet to `dest` with entropy `ev` takes at switch `at` on `plane`
  // (`packet_id` matters only to kSpray).
  uint32_t next_link(PlaneId plane, NodeId at, HostId dest, Ev ev, uint64_t packet_id = 0) const;
  // Every local link a packet takes from src's port to dest's port (at most 64 hops).
  std::vector<uint32_t> route(PlaneId plane, HostId src, HostId dest, Ev ev,
                              uint64_t packet_id = 0) const;
  // Number of distinct equal-cost paths between two hosts in one plane.
  uint32_t path_count(HostId src, HostId dest) const;

  std::string node_name(NodeId id) const;
  std::string link_name(uint32_t local) const;

 private:
  struct Group {
    uint32_t offset;
    uint32_t count;
  };
  static constexpr uint32_t kNoGroup = UINT32_MAX;

  NodeId add_node(NodeKind kind, uint8_t tier, uint32_t index);
  uint32_t add_link(NodeId from, NodeId to, LinkClass link_class);
  uint32_t add_group(const std::vector<uint32_t>& links);
  // After all nodes and links exist: numbers the switches and edge switches (those hosts
  // attach to), sizes the routing tables and derives the per-(plane, switch) hash salts.
  void finish(uint64_t salt);
  void set_route(NodeId at, NodeId dest_edge, uint32_t group);

  void attach_hosts(const std::vector<NodeId>& edges, uint32_t hosts_per_edge);
  void fat_tree_routes(uint32_t k);
  uint32_t pick(const Group& group, PlaneId plane, NodeId at, Ev ev, uint64_t packet_id) const;

  uint32_t planes_ = 1;
  uint32_t hosts_ = 0;
  Routing routing_ = Routing::kEcmp;
  std::vector<Node> nodes_;
  std::vector<LinkEnds> links_;
  std::vector<std::vector<NodeId>> tiers_;
  std::vector<std::vector<uint32_t>> out_links_;
  std::vector<std::vector<uint32_t>> in_links_;
  std::vector<NodeId> host_edge_;
  std::vector<uint32_t> host_uplink_;
  std::vector<uint32_t> host_downlink_;
  // Routing: route_[switch_slot * edge_count + edge_slot] = group; groups index group_links_.
  std::vector<uint32_t> switch_slot_;  // per node, kNoGroup for hosts
  std::vector<uint32_t> edge_slot_;    // per node, kNoGroup unless hosts attach to it
  uint32_t edge_count_ = 0;
  std::vector<uint32_t> route_;
  std::vector<Group> groups_;
  std::vector<uint32_t> group_links_;
  std::vector<uint64_t> salt_;       // per (plane, node)
  std::vector<uint32_t> up_fanout_;  // per tier: up links of its first switch (kSource)
};

}  // namespace mrc::sim
