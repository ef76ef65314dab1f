// UDP datapath: the clock, epoll loop, peers, impairments and captures around one engine, over
// each plane's link of either backend (udp_host.h).
#include "io/udp_host.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <optional>
#include <tuple>

#include "io/capture_link.h"
#include "io/impaired_link.h"
#include "io/udp_link.h"
#include "io/xdp_link.h"
#include "util/errno_map.h"

namespace mrc::io {

namespace {

// Per run_once, each plane sends up to kTransmitRounds bursts of kPlaneBurst packets, taking
// turns with the other planes.
constexpr int kTransmitRounds = 4;
constexpr size_t kPlaneBurst = 16;
constexpr uint32_t kWakeToken = 0xFFFF;
constexpr uint32_t kLinkToken = 0xFFFE;
constexpr size_t kReplyCacheSlots = 256;
constexpr uint64_t kV6SourceFlag = uint64_t{1} << 63;

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Wall-clock time for capture records (the engine's clock is monotonic and starts at zero).
uint64_t realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

// FNV-1a over an IPv6 sender's address and port: the key of its reply_cache_ slot.
uint32_t sender_hash(const SocketAddress& a) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < a.byte_count(); ++i) h = (h ^ a.bytes()[i]) * 16777619u;
  return (h ^ a.port()) * 16777619u;
}

}  // namespace

Result<Ok, Error> check_plane_families(const std::vector<PlaneAddress>& planes, Backend backend,
                                       const wire::Srv6Paths& srv6_paths) {
  for (size_t p = 0; p < planes.size(); ++p) {
    const PlaneAddress& a = planes[p];
    const std::string plane = "plane " + std::to_string(p) + " (" + to_string(a) + ")";
    if (a.v6 && backend == Backend::kXdp)
      return fail(Errc::kInvalidArgument, plane +
                                              " is IPv6: the xdp backend writes IPv4 frames "
                                              "only; use the udp backend for IPv6 planes");
    if (!a.v6 && !srv6_paths.empty())
      return fail(Errc::kInvalidArgument,
                  plane + " is IPv4: SRv6 paths need IPv6 planes (the host's locators)");
  }
  if (srv6_paths.size() > wire::kSrv6MaxPaths)
    return fail(Errc::kInvalidArgument,
                "at most " + std::to_string(wire::kSrv6MaxPaths) + " SRv6 paths");
  return Ok{};
}

UdpHost::UdpHost(const UdpHostConfig& config) : config_(config) {
  std::sort(config_.impairment.schedule.begin(), config_.impairment.schedule.end(),
            [](const PlaneEvent& a, const PlaneEvent& b) { return a.at < b.at; });
}

Result<std::unique_ptr<UdpHost>, Error> UdpHost::open(const UdpHostConfig& config) {
  if (config.planes.empty() || config.planes.size() > static_cast<size_t>(kMaxPlanes))
    return fail(Errc::kInvalidArgument, "need 1 to 16 plane addresses");
  if (config.ev_port_base +
          static_cast<uint32_t>(config.planes.size()) * config.ev_ports_per_plane >
      65536)
    return fail(Errc::kInvalidArgument, "EV source ports run past 65535: lower ev_port_base");
  if (auto checked = check_plane_families(config.planes, config.backend, config.srv6_paths);
      !checked.ok())
    return Err{checked.error()};
  for (const PlaneFlap& f : config.impairment.flaps) {
    if (f.plane < 0 || f.plane >= static_cast<int>(config.planes.size()))
      return fail(Errc::kInvalidArgument,
                  "flapping plane " + std::to_string(f.plane) + " does not exist");
    if (f.down_for.ns <= 0 || f.down_for >= f.every)
      return fail(Errc::kInvalidArgument, "a plane flap needs 0 < down time < period");
  }
  std::unique_ptr<UdpHost> host(new UdpHost(config));
  auto opened = host->open_links();
  if (!opened.ok()) return Err{opened.error()};
  EndpointConfig ec;
  ec.planes = static_cast<int>(config.planes.size());
  ec.seed = config.seed;
  ec.qpn_seed = config.qpn_seed;
  ec.qpn_partition = config.qpn_partition;
  ec.qpn_partitions = config.qpn_partitions;
  ec.icrc_offload = host->planes_[0].link->owns_icrc();  // the link writes the RoCEv2 ICRC
  ec.burst_turns = true;  // a burst leaves as one transmit (backend.h)
  host->endpoint_ = std::make_unique<Endpoint>(ec);
  host->clock_origin_ns_ = monotonic_ns();
  return host;
}

// Every plane's link, each in the epoll set under its plane's index.
Result<Ok, Error> UdpHost::open_links() {
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return Err{system_error("epoll_create1", errno)};
  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event wake_event{};
  wake_event.events = EPOLLIN;
  wake_event.data.u32 = kWakeToken;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake_event);
  if (links_.fd() >= 0) {
    epoll_event link_event{};
    link_event.events = EPOLLIN;
    link_event.data.u32 = kLinkToken;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, links_.fd(), &link_event);
  }
  port_flow_labels_.resize(config_.planes.size());
  paths_ = config_.srv6_paths;
  if (!paths_.empty())  // every port starts on path port % paths (srv6.h)
    for (size_t p = 0; p < config_.planes.size(); ++p) {
      const uint32_t first =
          static_cast<uint32_t>(config_.ev_port_base + p * config_.ev_ports_per_plane);
      auto& ports = port_path_.emplace_back(config_.ev_ports_per_plane);
      for (uint32_t i = 0; i < ports.size(); ++i)
        ports[i] = static_cast<uint16_t>((first + i) % paths_.size());
    }
  const LinkConfig lc{config_.planes,  config_.ev_port_base,        config_.ev_ports_per_plane,
                      !paths_.empty(), config_.socket_buffer_bytes, config_.gso,
                      config_.gro,     config_.port_setting,        config_.ev_port_setting};
  auto links = config_.backend == Backend::kXdp ? open_xdp_links(lc) : open_udp_links(lc);
  if (!links.ok()) return Err{links.error()};
  planes_.resize(config_.planes.size());
  std::shared_ptr<ImpairmentDraws> draws;
  if (impairs_datagrams(config_.impairment))
    draws = std::make_shared<ImpairmentDraws>(config_.impairment);
  for (size_t p = 0; p < planes_.size(); ++p) {
    Plane& plane = planes_[p];
    plane.local = config_.planes[p];
    plane.link = std::make_unique<CaptureLink>(std::move(links.value()[p]), plane.local, capture_);
    plane.unimpaired = plane.link.get();
    if (draws) plane.link = std::make_unique<ImpairedLink>(std::move(plane.link), draws);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<uint32_t>(p);
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, planes_[p].link->poll_fd(), &ev);
  }
  return Ok{};
}

// "udp (GSO/GRO)": the planes share one GSO switch; "xdp: veth0 native copy, veth1 native
// copy": each plane's interface and mode.
std::string UdpHost::backend_description() const {
  if (config_.backend == Backend::kUdp) return "udp (" + planes_[0].link->description() + ")";
  std::string out = "xdp:";
  for (size_t p = 0; p < planes_.size(); ++p)
    out += " " + planes_[p].link->description() + (p + 1 < planes_.size() ? "," : "");
  return out;
}

UdpPlaneStats UdpHost::plane_stats(int plane) const {
  UdpPlaneStats s = planes_[plane].stats;
  planes_[plane].link->add_counters(s);
  return s;
}

size_t UdpHost::max_datagram_bytes() const {
  size_t bytes = wire::kMaxDatagramBytes;
  for (const Plane& p : planes_) bytes = std::min(bytes, p.link->max_datagram_bytes());
  return bytes;
}

UdpHost::~UdpHost() {
  planes_.clear();  // the links close their sockets
  if (epoll_fd_ >= 0) close(epoll_fd_);
  if (wake_fd_ >= 0) close(wake_fd_);
}

Result<std::vector<SocketAddress>, Error> UdpHost::path_addresses(const PlaneAddress& a, int plane,
                                                                  const wire::Srv6Paths& paths) {
  std::vector<SocketAddress> out;
  for (const auto& path : paths) {
    auto to = wire::srv6_destination(a.address6, path);
    if (!to.ok()) return fail(to.error(), "peer of plane " + std::to_string(plane) + ": ");
    out.push_back(SocketAddress::ipv6(to.value(), a.port));
  }
  return out;
}

Result<uint32_t, Error> UdpHost::add_peer(const std::vector<PlaneAddress>& planes) {
  Peer peer{planes, {}};
  for (size_t p = 0; p < planes.size(); ++p) {
    const PlaneAddress& a = planes[p];
    if (p < planes_.size() && a.v6 != planes_[p].local.v6)
      return fail(Errc::kInvalidArgument,
                  "peer address " + to_string(a) + " of plane " + std::to_string(p) + " is " +
                      (a.v6 ? "IPv6" : "IPv4") + ", this host's plane address " +
                      to_string(planes_[p].local) + " is not: both ends need the same family");
    if (paths_.empty()) {
      peer.to.push_back({a.socket()});
      continue;
    }
    auto to = path_addresses(a, static_cast<int>(p), paths_);
    if (!to.ok()) return Err{to.error()};
    peer.to.push_back(std::move(to.value()));
  }
  for (size_t i = 0; i < peers_.size(); ++i)
    if (peers_[i].to == peer.to) return static_cast<uint32_t>(i);
  for (size_t p = 0; p < planes_.size() && p < peer.to.size(); ++p)
    planes_[p].link->prepare_peer(peer.to[p][0]);
  peers_.push_back(std::move(peer));
  return static_cast<uint32_t>(peers_.size() - 1);
}

std::optional<uint32_t> UdpHost::port_index(int plane, uint16_t port) const {
  if (plane < 0 || plane >= planes()) return std::nullopt;
  const uint32_t index = port - (config_.ev_port_base + plane * config_.ev_ports_per_plane);
  return index < config_.ev_ports_per_plane ? std::optional(index) : std::nullopt;
}

Result<Ok, Error> UdpHost::set_port_path(int plane, uint16_t port,
                                         const std::vector<uint16_t>& path) {
  if (paths_.empty()) return fail(Errc::kInvalidArgument, "SRv6 paths need SRv6 mode");
  const auto at = port_index(plane, port);
  if (!at)
    return fail(
        Errc::kInvalidArgument,
        "port " + std::to_string(port) + " is no EV source port of plane " + std::to_string(plane));
  if (path.empty() || path.size() > wire::kSrv6MaxPathUsids ||
      std::find(path.begin(), path.end(), 0) != path.end())
    return fail(
        Errc::kInvalidArgument,
        "an SRv6 path is 1 to " + std::to_string(wire::kSrv6MaxPathUsids) + " non-zero uSIDs");
  auto index = static_cast<size_t>(std::find(paths_.begin(), paths_.end(), path) - paths_.begin());
  if (index == paths_.size()) {  // a new path: every peer's destinations on it, or nothing
    if (paths_.size() >= kMaxSrv6Paths)
      return fail(Errc::kResourceExhausted,
                  "at most " + std::to_string(kMaxSrv6Paths) + " SRv6 paths");
    std::vector<std::vector<SocketAddress>> added;
    for (const Peer& peer : peers_)
      for (size_t p = 0; p < peer.planes.size(); ++p) {
        auto to = path_addresses(peer.planes[p], static_cast<int>(p), {path});
        if (!to.ok()) return Err{to.error()};
        added.push_back(std::move(to.value()));
      }
    size_t k = 0;
    for (Peer& peer : peers_)
      for (auto& to : peer.to) to.push_back(added[k++][0]);
    paths_.push_back(path);
  }
  port_path_[static_cast<size_t>(plane)][*at] = static_cast<uint16_t>(index);
  return Ok{};
}

Result<Ok, Error> UdpHost::set_port_flow_label(int plane, uint16_t port, uint32_t label) {
  const auto at = port_index(plane, port);
  if (!at)
    return fail(
        Errc::kInvalidArgument,
        "port " + std::to_string(port) + " is no EV source port of plane " + std::to_string(plane));
  if (!planes_[plane].local.v6)  // (xdp planes are IPv4: check_plane_families)
    return fail(Errc::kInvalidArgument, "plane " + std::to_string(plane) + " (" +
                                            to_string(planes_[plane].local) +
                                            ") has no flow label: it is not an IPv6 udp plane");
  if (label > 0xFFFFF) return fail(Errc::kInvalidArgument, "a flow label has 20 bits");
  auto& labels = port_flow_labels_[static_cast<size_t>(plane)];
  if (labels.empty()) labels.assign(config_.ev_ports_per_plane, 0);
  labels[*at] = label;
  return Ok{};
}

uint32_t UdpHost::port_flow_label(int plane, uint16_t port) const {
  const auto at = port_index(plane, port);
  if (!at) return 0;
  const auto& labels = port_flow_labels_[static_cast<size_t>(plane)];
  return labels.empty() ? 0 : labels[*at];
}

std::vector<uint16_t> UdpHost::port_path(int plane, uint16_t port) const {
  const auto at = port_index(plane, port);
  if (paths_.empty() || !at) return {};
  return paths_[port_path_[static_cast<size_t>(plane)][*at]];
}

uint64_t UdpHost::source_token(const SocketAddress& from) {
  if (!from.is_v6())
    return static_cast<uint64_t>(ntohl(from.u.v4.sin_addr.s_addr)) << 16 | from.port();
  // A burst comes from one sender: hash and cache it once, not for every datagram.
  if (from == last_v6_sender_) return last_v6_token_;
  const uint32_t hash = sender_hash(from);
  if (reply_cache_.empty()) reply_cache_.resize(kReplyCacheSlots);
  reply_cache_[hash % kReplyCacheSlots] = from;
  last_v6_sender_ = from;
  last_v6_token_ = kV6SourceFlag | static_cast<uint64_t>(hash) << 16 | from.port();
  return last_v6_token_;
}

bool UdpHost::reply_address(uint64_t token, SocketAddress& to) const {
  if ((token & kV6SourceFlag) == 0) {
    to = SocketAddress::ipv4(in_addr{htonl(static_cast<uint32_t>(token >> 16))},
                             static_cast<uint16_t>(token));
    return true;
  }
  // The sender's slot may since hold another: then the reply has nowhere to go.
  const auto hash = static_cast<uint32_t>(token >> 16);
  if (reply_cache_.empty()) return false;
  to = reply_cache_[hash % kReplyCacheSlots];
  return to.is_v6() && sender_hash(to) == hash;
}

Instant UdpHost::now() const {
  return Instant{monotonic_ns() - clock_origin_ns_};
}

// One read of every plane, then the datagrams in the order the kernel received them. Reading
// the planes one after another would hand the engine a whole batch of plane 0 before the
// earlier datagrams waiting on plane 3; its SACKs would then report those as missing, and the
// sender would take the reordering, which only this host made, for loss (false losses, and a
// window cut for each). A link that gives no arrival times (xdp) keeps each plane's order.
bool UdpHost::receive(Instant now, uint32_t ready) {
  arrivals_.clear();
  emptied_mask_ = 0;
  int planes_with_data = 0;
  for (int p = 0; p < planes(); ++p) {
    Plane& plane = planes_[p];
    if ((ready & (1u << p)) == 0 && !plane.link->read_every_round()) continue;  // no data said
    const auto datagrams = plane.link->receive();
    if (plane.link->emptied()) emptied_mask_ |= 1u << p;
    if (datagrams.empty()) continue;
    ++plane.stats.receive_calls;
    ++planes_with_data;
    for (const RxDatagram& d : datagrams) arrivals_.push_back({d.arrival_ns, p, &d});
  }
  // Ties keep each plane's own order (its datagrams lie in order in its batch); std::sort on the
  // whole key needs no buffer, which a stable sort would allocate every round.
  if (planes_with_data > 1)
    std::sort(arrivals_.begin(), arrivals_.end(), [](const Arrival& a, const Arrival& b) {
      return std::tie(a.arrival_ns, a.plane, a.datagram) <
             std::tie(b.arrival_ns, b.plane, b.datagram);
    });
  for (const Arrival& a : arrivals_) deliver(a.plane, *a.datagram, now);
  return !arrivals_.empty();
}

void UdpHost::deliver(int p, const RxDatagram& d, Instant now) {
  Plane& plane = planes_[p];
  const bool icrc_checked = plane.link->owns_icrc();
  if (!plane.stats.up) {
    ++plane.stats.impairment_drops;  // a plane that is down receives nothing
    return;
  }
  RxMeta meta;
  meta.plane = PlaneId(static_cast<uint8_t>(p));
  meta.ev = Ev(d.from.port());
  meta.source = source_token(d.from);
  meta.ecn_ce = (d.tos & 0x03) == 0x03;
  meta.icrc_checked = icrc_checked;  // the link checked the RoCEv2 ICRC
  ++plane.stats.packets_received;
  plane.stats.bytes_received += d.bytes.size();
  if (capture_ != nullptr)
    capture_->write(realtime_ns(), {d.from, plane.local.socket(), d.tos}, d.bytes);
  if (side_handler_ && !d.bytes.empty() && d.bytes[0] == side_opcode_)
    side_handler_(d.bytes, d.from, icrc_checked);
  else
    endpoint_->handle_datagram(now, d.bytes, meta);
}

void UdpHost::send_side(uint32_t peer, std::span<const uint8_t> datagram) {
  if (peer >= peers_.size()) return;
  for (int p = 0; p < planes() && static_cast<size_t>(p) < peers_[peer].to.size(); ++p) {
    Plane& plane = planes_[p];
    const Instant now = this->now();
    if (open_plane_ != p) flush_open_batch(now);
    open_plane_ = p;
    // Outside the impairments: through the link below them.
    const std::span<uint8_t> space = plane.unimpaired->space();
    // Best effort, as any datagram: the agreement sends again until it is answered.
    if (!plane.stats.up || space.size() < datagram.size()) continue;
    std::memcpy(space.data(), datagram.data(), datagram.size());
    TxOutcome outcome;
    plane.unimpaired->add(plane.local.port, peers_[peer].to[p][0], datagram.size(), now, outcome);
    plane.unimpaired->flush(now, outcome);
    account(p, outcome);
  }
}

void UdpHost::account(int p, const TxOutcome& outcome) {
  UdpPlaneStats& s = planes_[p].stats;
  s.packets_sent += outcome.packets;
  s.bytes_sent += outcome.bytes;
  s.send_errors += outcome.errors;
  s.send_calls += outcome.calls;
  const int e = outcome.last_errno;
  if (e == ENETDOWN || e == ENETUNREACH || e == EADDRNOTAVAIL) link_check_due_ = true;
}

bool UdpHost::route(int p, const TxMeta& meta, Route& r) {
  Plane& plane = planes_[p];
  if (meta.reply) {  // an answer to a connectionless request: from the MRC port, to its sender's
    if (!reply_address(meta.reply_to, r.to) || r.to.is_v6() != plane.local.v6) return false;
    r.to.set_port(plane.local.port);
    r.source_port = plane.local.port;
    return true;
  }
  if (meta.peer >= peers_.size() || static_cast<size_t>(p) >= peers_[meta.peer].to.size())
    return false;
  const uint32_t first_port = config_.ev_port_base + p * config_.ev_ports_per_plane;
  const uint32_t offset = meta.ev.value - first_port;
  if (offset >= config_.ev_ports_per_plane) ++plane.stats.ev_port_mismatches;
  uint32_t port_index = offset < config_.ev_ports_per_plane ? offset : 0;
  const std::vector<SocketAddress>& to = peers_[meta.peer].to[p];  // SRv6: one per path
  if (!paths_.empty() && meta.answers) {  // back on the path of the data it answers (srv6.h)
    const uint32_t answered = meta.answers->value - first_port;
    const uint32_t in_ranges = meta.answers->value - config_.ev_port_base;
    if (answered < config_.ev_ports_per_plane) {
      port_index = answered;  // this plane's EV: its port here maps to the same path
    } else if (in_ranges >= static_cast<uint32_t>(planes()) * config_.ev_ports_per_plane) {
      // A peer with other ranges: the path of the port's residue.
      const auto paths = static_cast<uint32_t>(paths_.size());
      const uint32_t same_residue =
          (meta.answers->value % paths + paths - first_port % paths) % paths;
      if (same_residue < config_.ev_ports_per_plane) port_index = same_residue;
    }
    // else data of another plane: no path back to follow; the QP's own EV stands
  }
  r.source_port = static_cast<uint16_t>(first_port + port_index);
  r.to = paths_.empty() ? to[0] : to[port_path_[static_cast<size_t>(p)][port_index]];
  if (const auto& labels = port_flow_labels_[static_cast<size_t>(p)]; !labels.empty())
    r.to.u.v6.sin6_flowinfo = htonl(labels[port_index]);  // an IPv6 plane (set_port_flow_label)
  return true;
}

// Only one plane's transmit is open at a time: the open one is sent, and counted as its
// plane's, before another plane writes (so the datagrams of all planes leave in the order the
// engine produced them).
std::span<uint8_t> UdpHost::tx_space(int p, Instant now) {
  if (open_plane_ != p) flush_open_batch(now);
  open_plane_ = p;
  return planes_[p].link->space();
}

void UdpHost::flush_open_batch(Instant now) {
  TxOutcome outcome;
  planes_[open_plane_].link->flush(now, outcome);
  account(open_plane_, outcome);
}

// Sends up to `budget` packets of plane p, batched (TxBatch); returns how many the engine
// produced (a packet to no known peer, or taken by the impairments, counts as produced). The
// last transmit stays open: an EV burst that the budget cut in two continues in the plane's
// next turn and still leaves as one (transmit_round_robin sends it at its end).
size_t UdpHost::transmit(int p, Instant now, size_t budget) {
  if (!planes_[p].stats.up) return 0;
  TxOutcome outcome;
  size_t produced = 0;
  while (produced < budget) {
    const std::span<uint8_t> space = tx_space(p, now);
    if (space.empty()) break;  // no room on the link (xdp frames in flight): the engine waits
    TxMeta meta;
    const size_t n = endpoint_->poll_transmit(now, PlaneId(static_cast<uint8_t>(p)), space, meta);
    if (n == 0) break;
    ++produced;
    Route r;
    if (!route(p, meta, r)) continue;
    planes_[p].link->add(r.source_port, r.to, n, now, outcome);
  }
  account(p, outcome);
  return produced;
}

// Planes take turns, a burst each, so that no plane starves the others of the window
// (loopback planes have no rate of their own to pace them).
bool UdpHost::transmit_round_robin(Instant now) {
  bool any = false;
  for (int round = 0; round < kTransmitRounds; ++round) {
    bool this_round = false;
    for (int k = 0; k < planes(); ++k)
      this_round |= transmit((first_plane_ + k) % planes(), now, kPlaneBurst) > 0;
    any |= this_round;
    if (!this_round) break;
  }
  flush_open_batch(now);
  first_plane_ = (first_plane_ + 1) % planes();
  return any;
}

// A plane that is down at a datagram's release loses it.
bool UdpHost::release_delayed(Instant now) {
  bool any = false;
  for (int p = 0; p < planes(); ++p) {
    Plane& plane = planes_[p];
    if (plane.link->next_release() > now) continue;
    if (open_plane_ != p) flush_open_batch(now);
    open_plane_ = p;
    TxOutcome outcome;
    any |= plane.link->release(now, plane.stats.up, outcome);
    account(p, outcome);
  }
  return any;
}

void UdpHost::set_plane_up(int plane, bool up) {
  if (plane < 0 || plane >= planes()) return;
  planes_[plane].admin_up = up;
  update_plane(plane);
}

void UdpHost::update_plane(int plane) {
  Plane& p = planes_[plane];
  const bool up = p.link_up && p.admin_up && !p.flap_down;
  if (up == p.stats.up) return;
  p.stats.up = up;
  endpoint_->set_port_up(PlaneId(static_cast<uint8_t>(plane)), up, now());
}

namespace {

// Whether `address` lies in the network of interface address `i` (127.0.0.2 is in lo's
// 127.0.0.1/8, for example, though only 127.0.0.1 is listed on it).
bool in_network(const ifaddrs& i, const SocketAddress& address) {
  const SocketAddress own = SocketAddress::from(i.ifa_addr);
  if (own.family() != address.family()) return false;
  const SocketAddress mask = SocketAddress::from(i.ifa_netmask);
  for (size_t k = 0; k < address.byte_count(); ++k) {
    const uint8_t m = mask.family() == own.family() ? mask.bytes()[k] : 0xFF;
    if ((own.bytes()[k] & m) != (address.bytes()[k] & m)) return false;
  }
  return true;
}

}  // namespace

void UdpHost::check_links(Instant now, bool readable) {
  if (!links_.changed(now, readable) && !link_check_due_) return;
  link_check_due_ = false;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return;
  for (int p = 0; p < planes(); ++p) {
    bool up = false;
    const SocketAddress address = planes_[p].local.socket();
    for (ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
      if (i->ifa_addr == nullptr || !in_network(*i, address)) continue;
      up = up || ((i->ifa_flags & IFF_UP) && (i->ifa_flags & IFF_RUNNING));
    }
    planes_[p].link_up = up;
    update_plane(p);
  }
  freeifaddrs(list);
}

void UdpHost::apply_schedule(Instant now) {
  const auto& schedule = config_.impairment.schedule;
  while (next_schedule_ < schedule.size() && Instant{0} + schedule[next_schedule_].at <= now) {
    set_plane_up(schedule[next_schedule_].plane, schedule[next_schedule_].up);
    ++next_schedule_;
  }
}

// Recomputes the flapping planes' state only when one can have changed (next_flap_change_),
// so a round without a change costs one comparison.
void UdpHost::apply_flaps(Instant now) {
  const auto& flaps = config_.impairment.flaps;
  if (flaps.empty() || now < next_flap_change_) return;
  const Duration t = now - Instant{0};
  bool down[kMaxPlanes] = {};
  Instant next = Instant::never();
  for (const PlaneFlap& f : flaps) {
    down[f.plane] = down[f.plane] || f.down_at(t);
    next = std::min(next, Instant{0} + f.next_change(t));
  }
  next_flap_change_ = next;
  for (int p = 0; p < planes(); ++p) {
    if (planes_[p].flap_down == down[p]) continue;
    planes_[p].flap_down = down[p];
    update_plane(p);
  }
}

Instant UdpHost::wake_at() const {
  Instant until = endpoint_->next_deadline();
  for (const Plane& p : planes_) until = std::min(until, p.link->next_release());
  const auto& schedule = config_.impairment.schedule;
  if (next_schedule_ < schedule.size())
    until = std::min(until, Instant{0} + schedule[next_schedule_].at);
  if (!config_.impairment.flaps.empty()) until = std::min(until, next_flap_change_);
  return until;
}

void UdpHost::sleep_until(Instant until) {
  const Instant now = this->now();
  const bool busy_polling = now < last_busy_ + config_.busy_poll;
  if (!busy_polling && busy_thread_ && now < last_busy_ + config_.spin) {
    sched_yield();  // spinning, but a thread that shares this core runs first
    return;
  }
  const int64_t wait_ns = busy_polling ? 0 : std::max<int64_t>(until.ns - now.ns, 0);
  if (wait_ns == 0 && !busy_polling) return;
  timespec timeout{wait_ns / 1'000'000'000, wait_ns % 1'000'000'000};
  epoll_event events[kMaxPlanes + 2];
  const int n = epoll_pwait2(epoll_fd_, events, kMaxPlanes + 2, &timeout, nullptr);
  note_ready(events, n);
}

void UdpHost::note_ready(const epoll_event* events, int n) {
  if (n < 0) return;  // interrupted: every plane is read next round
  uint32_t mask = 0;
  for (int i = 0; i < n; ++i) {
    const uint32_t token = events[i].data.u32;
    if (token == kWakeToken) {
      uint64_t count = 0;
      (void)!read(wake_fd_, &count, sizeof count);
    } else if (token == kLinkToken) {
      mask |= kLinkBit;
    } else {
      mask |= 1u << token;
    }
  }
  ready_mask_.fetch_or(mask, std::memory_order_relaxed);
  ready_known_.store(true, std::memory_order_release);
}

// The planes the last sleep said have data (see ready_mask_); with no sleep since the last
// round (a busy thread, a caller polling), every plane but those that round left empty
// (emptied_mask_).
uint32_t UdpHost::take_ready_mask() {
  if (ready_known_.exchange(false, std::memory_order_acquire))
    return ready_mask_.exchange(0, std::memory_order_relaxed);
  ready_mask_.store(0, std::memory_order_relaxed);
  return ~kLinkBit & ~emptied_mask_;
}

void UdpHost::wake() {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
}

// Accounts a round: over windows of 1 ms, whether rounds with work filled at least half.
void UdpHost::note_round(Instant start, Instant end, bool busy) {
  if (busy) busy_ns_ += (end - start).ns;
  if (end < busy_window_start_ + Duration::from_ms(1)) return;
  busy_thread_ = 2 * busy_ns_ >= (end - busy_window_start_).ns;
  busy_window_start_ = end;
  busy_ns_ = 0;
}

bool UdpHost::run_once() {
  const Instant start = this->now();
  Instant now = start;
  apply_schedule(now);
  apply_flaps(now);
  const uint32_t ready = take_ready_mask();
  check_links(now, (ready & kLinkBit) != 0);
  bool busy = false;
  busy |= receive(now, ready);
  now = this->now();
  if (endpoint_->next_deadline() <= now) {
    endpoint_->handle_timeout(now);
    busy = true;
  }
  busy |= release_delayed(now);
  busy |= transmit_round_robin(now);
  if (busy) last_busy_ = now;
  note_round(start, this->now(), busy);
  return busy;
}

void UdpHost::progress(Duration max_wait) {
  if (!run_once()) sleep_until(std::min(now() + max_wait, wake_at()));
}

}  // namespace mrc::io
