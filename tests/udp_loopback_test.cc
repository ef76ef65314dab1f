// Real sockets on loopback: two UdpHosts (4 planes on 127.0.0.1-4) driven from one thread,
// transfers verified byte for byte, clean and under each impairment kind (a flapping plane's
// windows also checked against the host's clock); clear errors for bad configuration. No root
// needed.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "io/udp_host.h"
#include "util/prng.h"

namespace mrc::io {
namespace {

struct Side {
  std::unique_ptr<UdpHost> host;
  uint32_t pd = 0;
  CompletionQueue* cq = nullptr;
  QueuePair* qp = nullptr;
  std::vector<uint8_t> source, target;
  MemoryRegionInfo source_mr, target_mr;
};

// IPv6 planes: all four on ::1, each on a port of its own (salts >= 20 only).
bool g_ipv6 = false;

UdpHostConfig host_config(int index, uint16_t port_salt, const Impairment& impairment) {
  UdpHostConfig c;
  for (int p = 0; p < 4; ++p) {
    PlaneAddress a =
        parse_plane_address(g_ipv6 ? "::1" : "127.0.0." + std::to_string(p + 1), 0).value();
    a.port = static_cast<uint16_t>(20000 + port_salt * 10 + index + (g_ipv6 ? 2 * p : 0));
    c.planes.push_back(a);
  }
  c.ev_port_base = static_cast<uint16_t>(30000 + port_salt * 400 + index * 200);
  c.ev_ports_per_plane = 48;  // more than the 40 EVs a plane uses: ports are strided per plane
  c.impairment = impairment;
  c.seed = 7 + static_cast<uint64_t>(index);
  return c;
}

using EvList = std::vector<std::pair<int, int>>;  // (plane, index into the plane's source ports)

// Opens side i's host, PD, CQ, buffers and QP (using exactly `ev_list`'s EVs if it is given).
void open_side(Side& side, int i, uint16_t salt, const Impairment& impairment, size_t bytes,
               const EvList& ev_list, uint16_t ev_burst) {
  QpConfig qc;
  qc.ev_burst_packets = ev_burst;
  qc.ev_min_active = ev_list.empty() ? qc.ev_min_active : 1;
  qc.ev_count = 128;
  qc.timeout = 10;
  qc.nscc.max_window_bytes = 512 << 10;
  qc.nscc.initial_window_bytes = 256 << 10;
  auto host = UdpHost::open(host_config(i, salt, i == 0 ? impairment : Impairment{}));
  ASSERT_TRUE(host.ok()) << host.error().message;
  side.host = std::move(host.value());
  Endpoint& e = side.host->endpoint();
  side.pd = e.memory().alloc_pd();
  side.cq = e.create_cq(4096);
  qc.ev_port_base = host_config(i, salt, impairment).ev_port_base;
  qc.ev_ports_per_plane = host_config(i, salt, impairment).ev_ports_per_plane;
  for (auto [plane, index] : ev_list)
    qc.ev_list.push_back(ExplicitEv{
        PlaneId(static_cast<uint8_t>(plane)),
        Ev(qc.ev_port_base + static_cast<uint32_t>(plane * qc.ev_ports_per_plane + index))});
  side.qp = e.create_qp(qc, side.pd, side.cq, side.cq).value();
  side.source.resize(bytes);
  Prng prng(static_cast<uint64_t>(i) + salt);
  for (auto& b : side.source) b = static_cast<uint8_t>(prng.next_u32());
  side.target.assign(bytes, 0);
  side.source_mr =
      e.memory().register_region(side.pd, side.source.data(), bytes, kAccessLocalWrite).value();
  side.target_mr =
      e.memory().register_region(side.pd, side.target.data(), bytes, kAccessRemoteWrite).value();
}

// Every packet left from its own EV's source port on its own plane; with an EV list, every
// listed EV carried packets and planes without one carried none.
void check_paths(const Side& side, const EvList& ev_list) {
  for (int p = 0; p < 4; ++p)
    EXPECT_EQ(side.host->plane_stats(p).ev_port_mismatches, 0u) << "plane " << p;
  if (ev_list.empty()) return;
  const EvSet* evs = side.qp->evs();
  ASSERT_NE(evs, nullptr);
  for (size_t k = 0; k < evs->size(); ++k)
    EXPECT_GT(evs->slot(static_cast<uint16_t>(k)).packets, 0u) << "listed EV " << k;
  for (int p = 0; p < 4; ++p) {
    const bool listed =
        std::any_of(ev_list.begin(), ev_list.end(), [&](auto e) { return e.first == p; });
    if (!listed) {
      EXPECT_EQ(side.qp->stats().planes[p].packets_sent, 0u)
          << "plane " << p << " has no listed EV";
    }
  }
}

// Connects two hosts, writes `bytes` each way (with immediates) and verifies every byte.
void transfer(uint16_t salt, const Impairment& impairment, size_t bytes, const EvList& ev_list = {},
              uint16_t ev_burst = 1) {
  Side side[2];
  for (int i = 0; i < 2; ++i) {
    open_side(side[i], i, salt, impairment, bytes, ev_list, ev_burst);
    if (::testing::Test::HasFatalFailure()) return;
  }
  for (int i = 0; i < 2; ++i) {
    Side& o = side[1 - i];
    const uint32_t peer =
        side[i].host->add_peer(host_config(1 - i, salt, impairment).planes).value();
    ASSERT_TRUE(side[i].qp->to_init().ok());
    ASSERT_TRUE(side[i].qp->to_rtr(RtrAttributes{o.qp->qpn(), Psn(100u + 1 - i), peer}).ok());
    ASSERT_TRUE(side[i].qp->to_rts(RtsAttributes{Psn(100u + i)}).ok());
  }
  const size_t chunk = 1 << 20;
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(side[1 - i].qp->post_recv(1).ok());
    for (size_t off = 0; off < bytes; off += chunk) {
      Sge sge{side[i].source_mr.address + off, static_cast<uint32_t>(std::min(chunk, bytes - off)),
              side[i].source_mr.lkey};
      SendWr wr;
      wr.wr_id = off;
      wr.opcode = off + chunk >= bytes ? SendOpcode::kWriteWithImm : SendOpcode::kWrite;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.remote_addr = side[1 - i].target_mr.address + off;
      wr.rkey = side[1 - i].target_mr.rkey;
      wr.immediate = 0x1234;
      ASSERT_TRUE(side[i].qp->post_send(wr).ok());
    }
  }
  size_t completions = 0;
  const size_t expected = 2 * ((bytes + chunk - 1) / chunk) + 2;
  std::vector<Completion> wc(64);
  const Instant give_up = side[0].host->now() + Duration::from_ms(60'000);
  while (completions < expected && side[0].host->now() < give_up) {
    for (auto& s : side) {
      s.host->progress(Duration::from_us(50));
      const size_t n = s.cq->poll(wc);
      for (size_t k = 0; k < n; ++k)
        ASSERT_EQ(wc[k].status, WcStatus::kSuccess) << to_string(wc[k].status);
      completions += n;
    }
  }
  ASSERT_EQ(completions, expected) << "transfer did not finish";
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(0, std::memcmp(side[i].source.data(), side[1 - i].target.data(), bytes));
    EXPECT_EQ(side[1 - i].qp->stats().data_bytes_placed, bytes);
    check_paths(side[i], ev_list);
  }
}

TEST(UdpLoopback, CleanTransferBothWays) {
  transfer(1, Impairment{}, 8 << 20);
}

// EV bursts leave as GSO batches (one send call for several datagrams) and arrive intact, also
// when the impairments drop, delay and reorder some of them.
TEST(UdpLoopback, EvBurstsGoAsBatches) {
  transfer(6, Impairment{}, 8 << 20, {}, 8);
  Impairment imp;
  imp.drop = 0.01;
  imp.reorder = 0.02;
  transfer(7, imp, 4 << 20, {}, 8);
}

// An explicit EV list (OCP EV mode EXP): two EVs on plane 0, one listed twice on plane 2,
// none on planes 1 and 3, which then carry nothing.
TEST(UdpLoopback, ExplicitEvListOnly) {
  transfer(5, Impairment{}, 4 << 20, {{0, 0}, {0, 7}, {2, 3}, {2, 3}});
}

TEST(UdpLoopback, RandomDrop) {
  Impairment i;
  i.drop = 0.02;
  transfer(2, i, 8 << 20);
}

TEST(UdpLoopback, DelayAndReorder) {
  Impairment i;
  i.delay = Duration::from_us(100);
  i.reorder = 0.2;
  transfer(3, i, 8 << 20);
}

TEST(UdpLoopback, PlaneDownAndUp) {
  Impairment i;
  i.schedule = {{Duration::from_ms(2), 2, false}, {Duration::from_ms(40), 2, true}};
  transfer(4, i, 16 << 20);
}

// A flap's windows: up for the first period, then down for `down_for` at the start of each.
TEST(UdpLoopback, PlaneFlapWindows) {
  const PlaneFlap f{1, Duration::from_ms(20), Duration::from_ms(50)};
  EXPECT_FALSE(f.down_at(Duration{0}));
  EXPECT_FALSE(f.down_at(Duration::from_ms(50) - Duration{1}));
  EXPECT_TRUE(f.down_at(Duration::from_ms(50)));
  EXPECT_TRUE(f.down_at(Duration::from_ms(70) - Duration{1}));
  EXPECT_FALSE(f.down_at(Duration::from_ms(70)));
  EXPECT_TRUE(f.down_at(Duration::from_ms(3600 * 1000 + 10)));  // an hour on: no event list ran out
  EXPECT_EQ(f.next_change(Duration{0}), Duration::from_ms(50));
  EXPECT_EQ(f.next_change(Duration::from_ms(50)), Duration::from_ms(70));
  EXPECT_EQ(f.next_change(Duration::from_ms(60)), Duration::from_ms(70));
  EXPECT_EQ(f.next_change(Duration::from_ms(70)), Duration::from_ms(100));
  EXPECT_EQ(f.next_change(Duration::from_ms(99)), Duration::from_ms(100));
}

// A host's flapping plane follows the flap's windows on the host's clock (only rounds whose
// start and end fall in one window are checked), the other planes stay up; then a transfer
// with a plane flapping every 15 ms is verified byte for byte. The rounds run for 400 ms and
// on until both states were checked (up to 20 s): on a loaded host a descheduled round can
// span every 20 ms down window of the first 400 ms.
TEST(UdpLoopback, PlaneFlapping) {
  Impairment imp;
  imp.flaps = {{1, Duration::from_ms(20), Duration::from_ms(50)}};
  const PlaneFlap& f = imp.flaps[0];
  {
    auto host = UdpHost::open(host_config(0, 8, imp));
    ASSERT_TRUE(host.ok()) << host.error().message;
    int checked_down = 0, checked_up = 0;
    const auto running = [&] {
      const Instant now = host.value()->now();
      if (now >= Instant{0} + Duration::from_ms(20'000)) return false;
      return now < Instant{0} + Duration::from_ms(400) || checked_down == 0 || checked_up == 0;
    };
    while (running()) {
      const Duration before = host.value()->now() - Instant{0};
      host.value()->progress(Duration::from_ms(1));
      const bool up = host.value()->plane_stats(1).up;
      if (f.next_change(before) <= host.value()->now() - Instant{0}) continue;
      EXPECT_EQ(up, !f.down_at(before)) << "at " << before.ns << " ns";
      EXPECT_TRUE(host.value()->plane_stats(0).up);
      ++(up ? checked_up : checked_down);
    }
    EXPECT_GT(checked_down, 0);
    EXPECT_GT(checked_up, 0);
  }
  imp.flaps = {{2, Duration::from_ms(5), Duration::from_ms(15)}};
  transfer(8, imp, 16 << 20);
}

TEST(UdpLoopback, Ipv6PlanesCarryAVerifiedTransfer) {
  g_ipv6 = true;
  transfer(20, Impairment{}, 8 << 20, {}, 8);
  Impairment drop;
  drop.drop = 0.01;
  transfer(21, drop, 4 << 20, {}, 8);
  g_ipv6 = false;
}

TEST(UdpLoopback, ClearErrors) {
  UdpHostConfig c;
  EXPECT_FALSE(UdpHost::open(c).ok());
  auto bad = parse_plane_address("300.1.1.1", 4791);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("300.1.1.1"), std::string::npos);
  EXPECT_EQ(bad.error().code, Errc::kInvalidArgument);
  EXPECT_FALSE(parse_plane_address("127.0.0.1:99999", 4791).ok());
  // An address no interface has.
  c.planes = {parse_plane_address("192.0.2.1", 4791).value()};
  auto host = UdpHost::open(c);
  ASSERT_FALSE(host.ok());
  EXPECT_NE(host.error().message.find("192.0.2.1:4791"), std::string::npos) << host.error().message;
  EXPECT_EQ(host.error().code, Errc::kNotFound);  // EADDRNOTAVAIL
  // A flap of a plane the host does not have, or one that never comes up.
  Impairment flap;
  flap.flaps = {{4, Duration::from_ms(1), Duration::from_ms(2)}};
  auto no_plane = UdpHost::open(host_config(0, 9, flap));
  ASSERT_FALSE(no_plane.ok());
  EXPECT_NE(no_plane.error().message.find("plane 4 does not exist"), std::string::npos)
      << no_plane.error().message;
  flap.flaps = {{1, Duration::from_ms(2), Duration::from_ms(2)}};
  EXPECT_FALSE(UdpHost::open(host_config(0, 9, flap)).ok());
  flap.flaps = {{1, Duration{0}, Duration::from_ms(2)}};
  EXPECT_FALSE(UdpHost::open(host_config(0, 9, flap)).ok());
  // Two hosts on the same port (both in this process, which the error says, with the option).
  UdpHostConfig a = host_config(0, 9, Impairment{});
  auto first = UdpHost::open(a);
  ASSERT_TRUE(first.ok()) << first.error().message;
  auto second = UdpHost::open(a);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.error().message.find(
                "this process already uses this port: choose another with --port"),
            std::string::npos)
      << second.error().message;
}

TEST(UdpLoopback, FamiliesAndSrv6PathsAreChecked) {
  // SRv6 paths need IPv6 planes; the xdp backend IPv4 ones.
  UdpHostConfig c = host_config(0, 10, Impairment{});
  c.srv6_paths = {{0x200}, {0x201}};
  auto srv6_v4 = UdpHost::open(c);
  ASSERT_FALSE(srv6_v4.ok());
  EXPECT_NE(srv6_v4.error().message.find("plane 0 (127.0.0.1:20100) is IPv4: SRv6 paths need IPv6"),
            std::string::npos)
      << srv6_v4.error().message;
  g_ipv6 = true;
  c = host_config(0, 22, Impairment{});
  g_ipv6 = false;
  c.backend = Backend::kXdp;
  auto xdp_v6 = UdpHost::open(c);
  ASSERT_FALSE(xdp_v6.ok());
  EXPECT_NE(xdp_v6.error().message.find("is IPv6: the xdp backend writes IPv4 frames only"),
            std::string::npos)
      << xdp_v6.error().message;
  // A peer of the other family, or a locator with no room for the path: refused, nothing added.
  c.backend = Backend::kUdp;
  c.srv6_paths = {{0x200}, {0x201}};
  auto host = UdpHost::open(c);
  ASSERT_TRUE(host.ok()) << host.error().message;
  auto v4_peer = host.value()->add_peer(host_config(1, 10, Impairment{}).planes);
  ASSERT_FALSE(v4_peer.ok());
  EXPECT_NE(v4_peer.error().message.find("both ends need the same family"), std::string::npos)
      << v4_peer.error().message;
  std::vector<PlaneAddress> full(4, parse_plane_address("[fd00:0:1:2:3:4:5:6]:4791", 0).value());
  auto no_room = host.value()->add_peer(full);
  ASSERT_FALSE(no_room.ok());
  EXPECT_NE(no_room.error().message.find("has no room for a path of 1 uSID"), std::string::npos)
      << no_room.error().message;
  std::vector<PlaneAddress> locators(4, parse_plane_address("fd00:0:101:301::", 4791).value());
  EXPECT_EQ(host.value()->add_peer(locators).value(), 0u);  // the first peer that was added
}

TEST(UdpLoopback, AnEvSourcePortTakesThePathItIsGiven) {
  g_ipv6 = true;
  UdpHostConfig c = host_config(0, 24, Impairment{});
  g_ipv6 = false;
  c.srv6_paths = {{0x200}, {0x201}};
  auto host = UdpHost::open(c);
  ASSERT_TRUE(host.ok()) << host.error().message;
  UdpHost& h = *host.value();
  const auto first = static_cast<uint16_t>(c.ev_port_base + c.ev_ports_per_plane);  // plane 1
  EXPECT_EQ(h.port_path(1, first), c.srv6_paths[first % 2]);  // every port starts on port % paths
  EXPECT_EQ(h.port_path(1, first + 1), c.srv6_paths[(first + 1) % 2]);
  std::vector<PlaneAddress> locators(4, parse_plane_address("fd00:0:101:301::", 4791).value());
  ASSERT_TRUE(h.add_peer(locators).ok());
  ASSERT_TRUE(h.set_port_path(1, first, {0x100, 0x202}).ok());
  EXPECT_EQ(h.port_path(1, first), (std::vector<uint16_t>{0x100, 0x202}));
  EXPECT_EQ(h.port_path(0, static_cast<uint16_t>(c.ev_port_base)),
            c.srv6_paths[c.ev_port_base % 2]);
  // Refused, nothing changed: a port of another plane, a bad path, a peer without room.
  EXPECT_FALSE(h.set_port_path(1, static_cast<uint16_t>(c.ev_port_base), {0x200}).ok());
  EXPECT_FALSE(h.set_port_path(1, first, {}).ok());
  EXPECT_FALSE(h.set_port_path(1, first, {0x200, 0}).ok());
  const auto too_long = h.set_port_path(1, first, {1, 2, 3, 4, 5});  // the peer has room for 4
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.error().message.find("has no room for a path of 5 uSIDs"), std::string::npos)
      << too_long.error().message;
  EXPECT_EQ(h.port_path(1, first), (std::vector<uint16_t>{0x100, 0x202}));
  // Without SRv6 mode there are no paths to set.
  auto plain = UdpHost::open(host_config(0, 26, Impairment{}));
  ASSERT_TRUE(plain.ok()) << plain.error().message;
  EXPECT_FALSE(
      plain.value()->set_port_path(0, static_cast<uint16_t>(c.ev_port_base), {0x200}).ok());
  EXPECT_TRUE(plain.value()->port_path(0, static_cast<uint16_t>(c.ev_port_base)).empty());
}

// The flow label (and source port) of the next datagram on `fd`, whose IPV6_FLOWINFO is on.
bool read_flow_label(int fd, uint32_t& label, uint16_t& source_port) {
  if (poll(std::array<pollfd, 1>{pollfd{fd, POLLIN, 0}}.data(), 1, 0) != 1) return false;
  uint8_t data[2048], control[64];
  sockaddr_in6 from{};
  iovec iov{data, sizeof data};
  msghdr m{};
  m.msg_name = &from;
  m.msg_namelen = sizeof from;
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  if (recvmsg(fd, &m, 0) < 0) return false;
  source_port = ntohs(from.sin6_port);
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    uint32_t flowinfo = 0;
    std::memcpy(&flowinfo, CMSG_DATA(c), sizeof flowinfo);
    if (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == 11)  // IPV6_FLOWINFO (linux/in6.h)
      label = ntohl(flowinfo) & 0xFFFFF;                      // without the traffic class
  }
  return true;
}

TEST(UdpLoopback, AnEvSourcePortSendsTheFlowLabelItIsGiven) {
  g_ipv6 = true;
  UdpHostConfig c = host_config(0, 27, Impairment{});
  g_ipv6 = false;
  auto host = UdpHost::open(c);
  ASSERT_TRUE(host.ok()) << host.error().message;
  UdpHost& h = *host.value();
  // The peer: a plain socket on ::1 that reads each datagram's flow label.
  const int fd = socket(AF_INET6, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  ASSERT_GE(fd, 0);
  const int on = 1;
  ASSERT_EQ(setsockopt(fd, IPPROTO_IPV6, 11, &on, sizeof on), 0);  // IPV6_FLOWINFO
  sockaddr_in6 self{};
  self.sin6_family = AF_INET6;
  self.sin6_addr = in6addr_loopback;
  socklen_t len = sizeof self;
  ASSERT_EQ(bind(fd, reinterpret_cast<const sockaddr*>(&self), sizeof self), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&self), &len), 0);
  std::vector<PlaneAddress> peer(4, parse_plane_address("::1", ntohs(self.sin6_port)).value());
  const uint32_t handle = h.add_peer(peer).value();
  const auto port = static_cast<uint16_t>(c.ev_port_base + 3);
  ASSERT_TRUE(h.set_port_flow_label(0, port, 0x12345).ok());
  EXPECT_EQ(h.port_flow_label(0, port), 0x12345u);
  ASSERT_TRUE(h.endpoint().prober().probe(handle, PlaneId(0), Ev(port), 1));
  uint32_t label = 0;
  uint16_t from = 0;
  bool got = false;
  for (int i = 0; i < 200 && !got; ++i) {
    h.run_once();
    got = read_flow_label(fd, label, from);
    if (!got) usleep(1000);
  }
  ASSERT_TRUE(got) << "the probe never arrived";
  EXPECT_EQ(from, port);
  EXPECT_EQ(label, 0x12345u);
  // Refused: a label over 20 bits, a port of another plane, a plane that is IPv4.
  EXPECT_FALSE(h.set_port_flow_label(0, port, 0x100000).ok());
  EXPECT_FALSE(h.set_port_flow_label(1, port, 1).ok());
  const UdpHostConfig c4 = host_config(0, 28, Impairment{});
  auto v4 = UdpHost::open(c4);
  ASSERT_TRUE(v4.ok()) << v4.error().message;
  const auto refused = v4.value()->set_port_flow_label(0, c4.ev_port_base, 1);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("it is not an IPv6 udp plane"), std::string::npos)
      << refused.error().message;
  close(fd);
}

// Datagrams waiting on several planes reach the engine in the order they arrived, not plane by
// plane: read plane after plane, the later datagrams of plane 0 would come first, and the
// peer's SACKs would report the earlier ones on other planes as missing (false losses).
TEST(UdpLoopback, DatagramsOfAllPlanesAreHandledInTheirOrderOfArrival) {
  const UdpHostConfig c = host_config(0, 31, Impairment{});
  auto host = UdpHost::open(c);
  ASSERT_TRUE(host.ok()) << host.error().message;
  UdpHost& h = *host.value();
  constexpr uint8_t kSide = 0xF7;
  std::vector<int> seen;
  h.set_side_channel(kSide, [&](std::span<const uint8_t> d, const SocketAddress&, bool) {
    if (d.size() == 2) seen.push_back(d[1]);
  });
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  constexpr std::array<int, 8> kPlaneOfDatagram{3, 0, 2, 1, 0, 3, 1, 2};  // every plane, mixed
  for (size_t i = 0; i < kPlaneOfDatagram.size(); ++i) {
    const std::array<uint8_t, 2> datagram{kSide, static_cast<uint8_t>(i)};
    const SocketAddress to = c.planes[static_cast<size_t>(kPlaneOfDatagram[i])].socket();
    ASSERT_EQ(sendto(fd, datagram.data(), datagram.size(), 0, to.get(), to.length()), 2);
  }
  close(fd);
  for (int round = 0; round < 200 && seen.size() < kPlaneOfDatagram.size(); ++round) {
    if (!h.run_once()) usleep(1000);
  }
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

// A round with no sleep since the last skips the planes that round found empty: a datagram that
// comes to such a plane meanwhile is still read, by the rounds alone.
TEST(UdpLoopback, ADatagramToAPlaneFoundEmptyIsStillRead) {
  const UdpHostConfig c = host_config(0, 32, Impairment{});
  auto host = UdpHost::open(c);
  ASSERT_TRUE(host.ok()) << host.error().message;
  UdpHost& h = *host.value();
  constexpr uint8_t kSide = 0xF7;
  int seen = 0;
  h.set_side_channel(kSide, [&](std::span<const uint8_t> d, const SocketAddress&, bool) {
    if (d.size() == 2 && d[1] == 42) ++seen;
  });
  (void)h.run_once();  // every plane read, every one empty
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  const std::array<uint8_t, 2> datagram{kSide, 42};
  const SocketAddress to = c.planes[2].socket();
  ASSERT_EQ(sendto(fd, datagram.data(), datagram.size(), 0, to.get(), to.length()), 2);
  close(fd);
  // Rounds only, never a sleep (a bound on rounds, not on time: each round is microseconds).
  for (int round = 0; round < 50'000'000 && seen == 0; ++round) (void)h.run_once();
  EXPECT_EQ(seen, 1);
}

}  // namespace
}  // namespace mrc::io
