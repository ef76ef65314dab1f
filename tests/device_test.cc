// The device layer (io/device.h) on loopback: the peer table gives one handle per set of
// addresses, configure() writes the datapath's QP fields and leaves what a QP chose, CQs are
// reported by tag once each time they turn non-empty, and a device that cannot open says why.
//
// Ports: UDP 1091-1099 and EV source ports 62600-62999 and 63000-65287 (no other test uses
// them).
#include "io/device.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/wire/packet.h"
#include "io/netdev.h"
#include "loopback_device.h"
#include "problem.h"

namespace mrc::io {
namespace {

TEST(Device, OnePeerHandlePerSetOfAddresses) {
  auto device = Device::open(loopback_config(1091, 63800));
  ASSERT_TRUE(device.ok()) << device.error().message;
  Device& d = *device.value();
  const std::vector<PlaneAddress> a = loopback_config(1092, 0).planes;
  const std::vector<PlaneAddress> b = loopback_config(1093, 0).planes;
  const uint32_t first = d.peer(a).value();
  EXPECT_EQ(d.peer(a).value(), first);
  const uint32_t second = d.peer(b).value();
  EXPECT_NE(second, first);
  EXPECT_EQ(d.peer(b).value(), second);
  EXPECT_EQ(d.peer(a).value(), first);
}

TEST(Device, ConfigureWritesTheDatapathsFieldsAndKeepsChoices) {
  auto device = Device::open(loopback_config(1094, 64100));
  ASSERT_TRUE(device.ok()) << device.error().message;
  QpConfig left;  // leaves burst and delay target to the datapath
  device.value()->configure(left);
  EXPECT_EQ(left.ev_port_base, 64100);
  EXPECT_EQ(left.ev_ports_per_plane, ev_source_ports(2) / 2);
  EXPECT_EQ(left.ev_burst_packets, kUdpDefaultEvBurst);
  EXPECT_EQ(left.nscc.target_delay_ns, kUdpDefaultTargetDelayNs);
  EXPECT_EQ(problem(left.validate(2)), "");
  QpConfig chosen;
  chosen.ev_burst_packets = 1;
  chosen.nscc.target_delay_ns = 7000;
  device.value()->configure(chosen);
  EXPECT_EQ(chosen.ev_burst_packets, 1);
  EXPECT_EQ(chosen.nscc.target_delay_ns, 7000);
}

// A burst left to the datapath leaves as one GSO send: as many packets as fit, at most the
// default, whatever the payload size (8192-byte payloads: 7).
TEST(Device, ADefaultBurstFitsOneGsoSend) {
  for (const uint32_t mtu : {256u, 1024u, 4096u, 7000u, 8192u, 9000u}) {
    const size_t datagram =
        mtu + wire::kMaxDataHeaderBytes + wire::kSechBytes + wire::kTagBytes + wire::kIcrcBytes;
    const size_t burst = default_ev_burst(mtu);
    EXPECT_GE(burst, 1u) << mtu;
    EXPECT_LE(burst * datagram, kMaxGsoBytes) << mtu;
    EXPECT_TRUE(burst == kUdpDefaultEvBurst || (burst + 1) * datagram > kMaxGsoBytes) << mtu;
  }
  EXPECT_EQ(default_ev_burst(4096), kUdpDefaultEvBurst);
  EXPECT_EQ(default_ev_burst(8192), 7);
  auto device = Device::open(loopback_config(1099, 62600));
  ASSERT_TRUE(device.ok()) << device.error().message;
  QpConfig big;
  big.set_mtu(8192);
  device.value()->configure(big);
  EXPECT_EQ(big.ev_burst_packets, 7);
}

// The payload per packet follows the planes' interfaces: loopback's MTU (65536 unless changed)
// carries 8192 bytes; an IPv6 plane or an address no interface holds gets 4096.
TEST(Device, AutoPayloadFollowsThePlanesMtu) {
  std::ifstream lo("/sys/class/net/lo/mtu");
  uint32_t lo_mtu = 0;
  lo >> lo_mtu;
  ASSERT_GT(lo_mtu, 0u);
  EXPECT_EQ(smallest_plane_mtu({"127.0.0.1", "127.0.0.2"}), lo_mtu);
  const uint32_t want = lo_mtu >= 8192 + kPlaneHeaderBytes   ? 8192
                        : lo_mtu >= 4096 + kPlaneHeaderBytes ? 4096
                                                             : 1024;
  EXPECT_EQ(auto_payload_bytes({"127.0.0.1", "127.0.0.2"}), want);
  EXPECT_EQ(auto_payload_bytes({"127.0.0.1", "::1"}), 4096u);
  EXPECT_EQ(auto_payload_bytes({"203.0.113.77"}), 4096u);  // TEST-NET-3: held by no interface
  EXPECT_EQ(smallest_plane_mtu({}), 0u);
}

TEST(Device, ACqIsReportedOnceEachTimeItTurnsNonEmpty) {
  auto device = Device::open(loopback_config(1095, 64400));
  ASSERT_TRUE(device.ok()) << device.error().message;
  Device& d = *device.value();
  std::vector<uint32_t> reported;
  d.on_completions([&](std::span<const uint32_t> tags) {
    reported.insert(reported.end(), tags.begin(), tags.end());
  });
  int rounds = 0;
  d.on_round([&] { ++rounds; });
  CompletionQueue* quiet = d.create_cq(16);
  CompletionQueue* busy = d.create_cq(16);
  d.progress(Duration{0});
  EXPECT_TRUE(reported.empty());
  EXPECT_EQ(rounds, 1);
  ASSERT_TRUE(busy->push(Completion{}));
  ASSERT_TRUE(busy->push(Completion{}));  // still non-empty: no second report
  d.progress(Duration{0});
  EXPECT_EQ(reported, std::vector<uint32_t>{1});
  d.progress(Duration{0});
  EXPECT_EQ(reported, std::vector<uint32_t>{1});
  std::vector<Completion> out(16);
  EXPECT_EQ(busy->poll(out), 2u);
  ASSERT_TRUE(busy->push(Completion{}));  // empty, then non-empty again: reported again
  ASSERT_TRUE(quiet->push(Completion{}));
  d.progress(Duration{0});
  EXPECT_EQ(reported, (std::vector<uint32_t>{1, 1, 0}));
}

TEST(Device, AnAddressInUseIsAClearError) {
  auto first = Device::open(loopback_config(1096, 64700));
  ASSERT_TRUE(first.ok()) << first.error().message;
  auto second = Device::open(loopback_config(1096, 65000));
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code, Errc::kAddressInUse);
  EXPECT_NE(second.error().message.find("in use"), std::string::npos) << second.error().message;
  EXPECT_NE(second.error().message.find("127.0.0.1:1096"), std::string::npos)
      << second.error().message;
  EXPECT_FALSE(Device::open(DeviceConfig{}).ok());
}

// The error of a port in use names who holds it (here: this very process) and the setting that
// moves it: the tools' options by default, whatever the caller names instead.
TEST(Device, APortInUseNamesItsHolderAndTheSettingThatMovesIt) {
  auto first = Device::open(loopback_config(1097, 63000));
  ASSERT_TRUE(first.ok()) << first.error().message;
  auto same_port = Device::open(loopback_config(1097, 63400));
  ASSERT_FALSE(same_port.ok());
  EXPECT_NE(same_port.error().message.find(
                "this process already uses this port: choose another with --port"),
            std::string::npos)
      << same_port.error().message;
  DeviceConfig named = loopback_config(1098, 63000);  // its EV source ports overlap the first's
  named.ev_port_setting = "ev-ports= in the entry";
  auto same_ev_ports = Device::open(named);
  ASSERT_FALSE(same_ev_ports.ok());
  EXPECT_NE(same_ev_ports.error().message.find("127.0.0.1:63000"), std::string::npos)
      << same_ev_ports.error().message;
  EXPECT_NE(same_ev_ports.error().message.find(
                "uses this EV source port: choose another with ev-ports= in the entry"),
            std::string::npos)
      << same_ev_ports.error().message;
}

}  // namespace
}  // namespace mrc::io
