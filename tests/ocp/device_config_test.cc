// The OCP devices' configuration text (src/ocp/device_config): what it accepts, and that a
// mistake is an error naming the entry rather than a silently different configuration.
#include "ocp/device_config.h"

#include <gtest/gtest.h>

namespace mrc::ocp {
namespace {

TEST(OcpDeviceConfig, ReadsDevicesAndPeers) {
  const DeviceConfig c = parse_device_config(
      "mrc0 planes=127.0.0.1,127.0.0.2 port=30001 ev-ports=30100 backend=xdp path-policy=rules; "
      "mrc1 "
      "planes=127.0.0.3,127.0.0.4 secure=encrypt key-file=/etc/mrc/key\n"
      "peer planes=10.0.0.1,10.0.0.2 # a remote host",
      "test");
  ASSERT_TRUE(c.error.empty()) << c.error;
  ASSERT_EQ(c.devices.size(), 2u);
  EXPECT_EQ(c.devices[0].name, "mrc0");
  EXPECT_EQ(c.devices[0].host.context.port, 30001);
  EXPECT_EQ(c.devices[0].host.context.ev_port_base, 30100);
  EXPECT_EQ(c.devices[0].host.context.backend, mrc::Backend::kXdp);
  EXPECT_EQ(c.devices[1].host.context.backend, mrc::Backend::kUdp);
  EXPECT_EQ(c.devices[0].path_policy, PathPolicyKind::kRules);
  EXPECT_EQ(c.devices[1].path_policy, PathPolicyKind::kP2c);  // the QPs' default
  EXPECT_EQ(c.devices[0].host.context.secure, SecureMode::kOff);
  EXPECT_EQ(c.devices[1].host.context.secure, SecureMode::kEncrypt);
  EXPECT_EQ(c.devices[1].host.key_file, "/etc/mrc/key");
  ASSERT_EQ(c.peers.size(), 1u);
  EXPECT_EQ(c.peers[0].planes.size(), 2u);
}

TEST(OcpDeviceConfig, MistakesAreErrorsThatNameTheEntry) {
  // A ',' typed for the ';' between two devices: the second planes= repeats the first's.
  const DeviceConfig typo =
      parse_device_config("mrc0 planes=127.0.77.1,mrc1 planes=127.0.77.2", "MRC_DEVICES");
  EXPECT_NE(typo.error.find("'planes=' is given twice"), std::string::npos) << typo.error;
  EXPECT_TRUE(typo.devices.empty());
  for (const char* bad :
       {"mrc0 planes=127.0.0.1 port=1 port=2", "mrc0 planes=127.0.0.1 backend=rdma",
        "mrc0 planes=127.0.0.1 colour=blue", "mrc0 planes=127.0.0.1 path-policy=ecmp",
        "mrc0 port=1", "mrc0 planes=127.0.0.1; mrc0 planes=127.0.0.2",
        "mrc0 planes=127.0.0.1 secure=auth", "mrc0 planes=127.0.0.1 secure=on key-file=k",
        "mrc0 planes=127.0.0.1 secure=auth key-file=", "peer planes=127.0.0.1 secure=auth"}) {
    const DeviceConfig c = parse_device_config(bad, "MRC_DEVICES");
    EXPECT_FALSE(c.error.empty()) << bad;
    EXPECT_NE(c.error.find("MRC_DEVICES"), std::string::npos) << c.error;
  }
}

TEST(OcpDeviceConfig, BusyPollIsOptInAndBounded) {
  const DeviceConfig c = parse_device_config(
      "mrc0 planes=127.0.0.1 busy-poll-us=200; mrc1 planes=127.0.0.2 busy-poll-us=1000000; "
      "mrc2 planes=127.0.0.3 busy-poll-us=0; mrc3 planes=127.0.0.4",
      "test");
  ASSERT_TRUE(c.error.empty()) << c.error;
  ASSERT_EQ(c.devices.size(), 4u);
  EXPECT_EQ(c.devices[0].host.context.busy_poll_us, 200u);
  EXPECT_EQ(c.devices[1].host.context.busy_poll_us, kMaxBusyPollUs);
  EXPECT_EQ(c.devices[2].host.context.busy_poll_us, 0u);
  EXPECT_EQ(c.devices[3].host.context.busy_poll_us, 0u);  // the default: sleep when idle
  // Past the bound, not a whole number, negative, empty, repeated, or on a peer: an error that
  // names the source and says what is accepted, and no devices.
  const std::pair<const char*, const char*> bad[] = {
      {"mrc0 planes=127.0.0.1 busy-poll-us=1000001", "busy-poll-us=1000001 is not a whole number"},
      {"mrc0 planes=127.0.0.1 busy-poll-us=99999999999", "in 0..1000000"},
      {"mrc0 planes=127.0.0.1 busy-poll-us=2.5", "busy-poll-us=2.5 is not"},
      {"mrc0 planes=127.0.0.1 busy-poll-us=-1", "busy-poll-us=-1 is not"},
      {"mrc0 planes=127.0.0.1 busy-poll-us=", "busy-poll-us= is not"},
      {"mrc0 planes=127.0.0.1 busy-poll-us=20us", "busy-poll-us=20us is not"},
      {"mrc0 planes=127.0.0.1 busy-poll-us=1 busy-poll-us=2", "'busy-poll-us=' is given twice"},
      {"peer planes=127.0.0.1 busy-poll-us=200", "unknown setting 'busy-poll-us=200'"},
  };
  for (const auto& [text, why] : bad) {
    const DeviceConfig e = parse_device_config(text, "MRC_DEVICES");
    EXPECT_NE(e.error.find(why), std::string::npos) << text << ": " << e.error;
    EXPECT_NE(e.error.find("MRC_DEVICES"), std::string::npos) << e.error;
    EXPECT_TRUE(e.devices.empty()) << text;
  }
}

// A device's host settings are the table every front door shares (host/options.h): interface
// names and prefixes as planes, metrics-port=, gso=, drop=, the older names ev-ports= and srv6=.
TEST(OcpDeviceConfig, TakesTheHostSettingsEveryFrontDoorShares) {
  const DeviceConfig c = parse_device_config(
      "mrc0 planes=lo,127.0.0.0/8 metrics-port=9466 metrics-bind=127.0.0.1 gso=off drop=0.01 "
      "ev-port-base=30100",
      "test");
  ASSERT_TRUE(c.error.empty()) << c.error;
  ASSERT_EQ(c.devices.size(), 1u);
  const DeviceSpec& d = c.devices[0];
  ASSERT_EQ(d.planes.size(), 2u);
  EXPECT_EQ(io::to_string(d.planes[0]), io::to_string(d.planes[1]));  // both 127.0.0.1
  EXPECT_EQ(d.host.context.planes[0], "127.0.0.1");
  EXPECT_EQ(d.host.context.metrics_port, 9466);
  EXPECT_FALSE(d.host.context.gso);
  EXPECT_DOUBLE_EQ(d.host.context.impairment.drop, 0.01);
  EXPECT_EQ(d.host.context.ev_port_base, 30100);
  const std::pair<const char*, const char*> bad[] = {
      {"mrc0 planes=127.0.0.1 metrics-port=70000", "metrics-port=70000 is not a TCP port"},
      {"mrc0 planes=no-such-if0", "'no-such-if0' is no address"},
      {"mrc0 planes=127.0.0.1 ev-ports=1 ev-port-base=2", "ev-port-base="},
  };
  for (const auto& [text, why] : bad) {
    const DeviceConfig e = parse_device_config(text, "MRC_DEVICES");
    EXPECT_NE(e.error.find(why), std::string::npos) << text << ": " << e.error;
    EXPECT_TRUE(e.devices.empty()) << text;
  }
}

// threads= (a device's engine threads) with the range and port checks every front door has; a
// peer entry says its device's, so that its QPs of every shard can be reached.
TEST(OcpDeviceConfig, ThreadsForDevicesAndPeers) {
  const DeviceConfig c = parse_device_config(
      "mrc0 planes=127.0.0.1 threads=4; mrc1 planes=127.0.0.2; peer planes=10.0.0.1 threads=2",
      "test");
  ASSERT_TRUE(c.error.empty()) << c.error;
  ASSERT_EQ(c.devices.size(), 2u);
  EXPECT_EQ(c.devices[0].host.context.threads, 4u);
  EXPECT_EQ(c.devices[1].host.context.threads, 1u);  // the default: one engine thread
  ASSERT_EQ(c.peers.size(), 1u);
  EXPECT_EQ(c.peers[0].host.context.threads, 2u);
  const std::pair<const char*, const char*> bad[] = {
      {"mrc0 planes=127.0.0.1 threads=0", "threads=0 is not a number of engine threads (1..16)"},
      {"mrc0 planes=127.0.0.1 threads=17", "threads=17 is not"},
      {"mrc0 planes=127.0.0.1 threads=two", "threads=two is not"},
      {"mrc0 planes=127.0.0.1 port=65535 threads=2", "65535"},
      {"mrc0 planes=127.0.0.1 threads=2 threads=2", "'threads=' is given twice"},
      {"peer planes=10.0.0.1 threads=0", "threads=0 is not"},
  };
  for (const auto& [text, why] : bad) {
    const DeviceConfig e = parse_device_config(text, "MRC_DEVICES");
    EXPECT_NE(e.error.find(why), std::string::npos) << text << ": " << e.error;
    EXPECT_TRUE(e.devices.empty()) << text;
  }
}

TEST(OcpDeviceConfig, Ipv6PlanesAndSrv6Paths) {
  const DeviceConfig c = parse_device_config(
      "mrc0 planes=fd00:0:100:300::,fd00:1:100:300:: srv6=200,201; "
      "peer planes=fd00:0:101:301::,fd00:1:101:301::",
      "test");
  ASSERT_TRUE(c.error.empty()) << c.error;
  ASSERT_EQ(c.devices.size(), 1u);
  EXPECT_TRUE(c.devices[0].planes[0].v6);
  EXPECT_EQ(c.devices[0].srv6_paths, (wire::Srv6Paths{{0x200}, {0x201}}));
  // A peer is found by its GID: its IPv6 address as it is, an IPv4 one mapped.
  uint8_t gid[16] = {0xfd, 0, 0, 1, 0x01, 0x01, 0x03, 0x01};
  const auto peer = find_peer_by_gid(c, gid);
  ASSERT_TRUE(peer.has_value());
  EXPECT_EQ(peer->planes.size(), 2u);
  gid[15] = 1;
  EXPECT_FALSE(find_peer_by_gid(c, gid).has_value());
  const DeviceConfig v4 = parse_device_config("mrc0 planes=10.1.2.3", "test");
  const uint8_t mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3};
  EXPECT_TRUE(find_peer_by_gid(v4, mapped).has_value());
  // Paths that do not parse, or SRv6 on an IPv4 plane: errors naming the setting.
  const std::pair<const char*, const char*> bad[] = {
      {"mrc0 planes=fd00::1 srv6=2g0", "srv6=2g0: bad SRv6 path '2g0'"},
      {"mrc0 planes=fd00::1 srv6=0", "uSID 0 ends a container"},
      {"mrc0 planes=127.0.0.1 srv6=200", "is IPv4: SRv6 paths need IPv6 planes"},
      {"mrc0 planes=fd00::1 backend=xdp", "the xdp backend writes IPv4 frames only"},
      {"peer planes=fd00::1 srv6=200", "unknown setting 'srv6=200'"},
  };
  for (const auto& [text, why] : bad) {
    const DeviceConfig e = parse_device_config(text, "MRC_DEVICES");
    EXPECT_NE(e.error.find(why), std::string::npos) << text << ": " << e.error;
    EXPECT_TRUE(e.devices.empty()) << text;
  }
}

}  // namespace
}  // namespace mrc::ocp
