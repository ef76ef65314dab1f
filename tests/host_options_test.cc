// The host settings' one table (src/host/options.h): every front door's spelling reaches the
// same field, bad values are refused naming the setting as that front door spells it, a
// setting a front door does not take is refused listing those it does, the checks between
// settings name both, and a context opened with metrics_port serves every shard's metrics.
//
// Ports: UDP 6200-6209 and EV source ports 61000-62499 (no other test uses them).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

#include "host/options.h"
#include "http_get.h"

namespace mrc::host {
namespace {

const Spelling kFlag{kDoorFlag, ""};
const Spelling kEntry{kDoorEntry, ""};
const Spelling kProvider{kDoorProvider, "FI_MRC_"};
const Spelling kTorch{kDoorTorch, "MRC_"};

std::string error_of(Options& o, std::string_view key, const std::string& text,
                     const Spelling& spelling) {
  auto r = set(o, key, text, spelling);
  return r.ok() ? "" : r.error().message;
}

TEST(HostOptions, EverySpellingSetsTheSameField) {
  for (const Spelling* s : {&kFlag, &kEntry, &kProvider, &kTorch}) {
    Options o;
    ASSERT_TRUE(set(o, "planes", "127.0.0.1,127.0.0.2", *s).ok());
    ASSERT_TRUE(set(o, "port", "7000", *s).ok());
    ASSERT_TRUE(set(o, "ev-port-base", "30000", *s).ok());
    ASSERT_TRUE(set(o, "busy-poll-us", "250", *s).ok());
    ASSERT_TRUE(set(o, "gso", "off", *s).ok());
    ASSERT_TRUE(set(o, "metrics-port", "0", *s).ok());
    EXPECT_EQ(o.context.planes, (std::vector<std::string>{"127.0.0.1", "127.0.0.2"}));
    EXPECT_EQ(o.context.port, 7000);
    EXPECT_EQ(o.context.ev_port_base, 30000);
    EXPECT_EQ(o.context.busy_poll_us, 250u);
    EXPECT_FALSE(o.context.gso);
    EXPECT_EQ(o.context.metrics_port, 0);
    EXPECT_TRUE(finish(o, *s).ok());
  }
  Options o;  // an older name some front doors still use
  ASSERT_TRUE(set(o, "ev-ports", "31000", kEntry).ok());
  EXPECT_EQ(o.context.ev_port_base, 31000);
}

TEST(HostOptions, BadValuesNameTheSettingAsTheFrontDoorSpellsIt) {
  Options o;
  EXPECT_EQ(error_of(o, "port", "0", kFlag), "--port=0 is not a UDP port (1..65535)");
  EXPECT_EQ(error_of(o, "port", "65536", kEntry), "port=65536 is not a UDP port (1..65535)");
  EXPECT_EQ(error_of(o, "busy-poll-us", "2.5", kProvider),
            "FI_MRC_BUSY_POLL_US=2.5 is not a whole number of microseconds in 0..1000000");
  EXPECT_EQ(error_of(o, "threads", "17", kTorch),
            "MRC_THREADS=17 is not a number of engine threads (1..16)");
  EXPECT_EQ(error_of(o, "threads", "0", kEntry),
            "threads=0 is not a number of engine threads (1..16)");
  EXPECT_NE(error_of(o, "backend", "rdma", kFlag).find("--backend=rdma: "), std::string::npos);
  EXPECT_NE(error_of(o, "planes", "no-such-interface0", kTorch)
                .find("MRC_PLANES=no-such-interface0: 'no-such-interface0' is no address"),
            std::string::npos);
  EXPECT_NE(error_of(o, "metrics-port", "http", kEntry).find("metrics-port=http is not a TCP port"),
            std::string::npos);
  EXPECT_NE(error_of(o, "drop", "1", kFlag).find("is not a fraction in [0, 1)"), std::string::npos);
  EXPECT_NE(error_of(o, "gso", "maybe", kFlag).find("is neither on nor off"), std::string::npos);
  EXPECT_EQ(error_of(o, "pcap-max-mib", "0", kProvider),
            "FI_MRC_PCAP_MAX_MIB=0 is not a number of MiB in 1..1048576");
  EXPECT_EQ(error_of(o, "pcap", "", kFlag), "--pcap= needs the path of the capture file to write");
  // Nothing was set by a refused value.
  EXPECT_EQ(o.context.port, 4791);
  EXPECT_EQ(o.context.threads, 1u);
}

TEST(HostOptions, UnknownSettingsListWhatTheFrontDoorTakes) {
  Options o;
  const std::string colour = error_of(o, "colour", "blue", kEntry);
  EXPECT_NE(colour.find("unknown setting colour="), std::string::npos) << colour;
  EXPECT_NE(colour.find("known: planes=, port=, ev-port-base="), std::string::npos) << colour;
  // threads is a setting, but not one the provider takes.
  const std::string threads = error_of(o, "threads", "2", kProvider);
  EXPECT_NE(threads.find("not one this front door takes"), std::string::npos) << threads;
  EXPECT_EQ(threads.find("FI_MRC_THREADS", threads.find("FI_MRC_THREADS") + 1),
            std::string::npos)
      << threads;  // named once: not among those listed
  EXPECT_TRUE(set(o, "threads", "2", kEntry).ok());
  EXPECT_TRUE(set(o, "threads", "2", kTorch).ok());
  EXPECT_NE(setting_names(kProvider).find("FI_MRC_METRICS_PORT"), std::string::npos);
  ASSERT_TRUE(set(o, "pcap", "/tmp/run-%p.pcap", kTorch).ok());
  ASSERT_TRUE(set(o, "pcap-max-mib", "16", kFlag).ok());
  EXPECT_EQ(o.context.pcap, "/tmp/run-%p.pcap");
  EXPECT_EQ(o.context.pcap_max_mib, 16u);
  EXPECT_EQ(setting_names(kProvider).find("FI_MRC_THREADS"), std::string::npos);
}

TEST(HostOptions, ChecksBetweenSettingsNameBoth) {
  Options secure;
  ASSERT_TRUE(set(secure, "planes", "127.0.0.1", kTorch).ok());
  ASSERT_TRUE(set(secure, "secure", "auth", kTorch).ok());
  auto r = finish(secure, kTorch);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("MRC_SECURE=auth needs MRC_KEY_FILE"), std::string::npos)
      << r.error().message;
  // A key file makes it whole: finish() reads the key, check() only that one is named.
  const std::string path = testing::TempDir() + "/host_options.key";
  std::ofstream(path) << "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";
  ASSERT_EQ(chmod(path.c_str(), 0600), 0);
  ASSERT_TRUE(set(secure, "key-file", path, kTorch).ok());
  ASSERT_TRUE(check(secure, kTorch).ok());
  EXPECT_TRUE(secure.context.preshared_key.empty());
  ASSERT_TRUE(finish(secure, kTorch).ok());
  EXPECT_EQ(secure.context.preshared_key.size(), 32u);

  Options srv6;  // SRv6 paths need IPv6 planes
  ASSERT_TRUE(set(srv6, "planes", "127.0.0.1", kFlag).ok());
  ASSERT_TRUE(set(srv6, "srv6-paths", "200,201", kFlag).ok());
  EXPECT_FALSE(finish(srv6, kFlag).ok());

  Options ports;  // 16 threads from a high port run past 65535: the message names the setting
  ASSERT_TRUE(set(ports, "planes", "127.0.0.1", kTorch).ok());
  ASSERT_TRUE(set(ports, "port", "65530", kTorch).ok());
  ASSERT_TRUE(set(ports, "threads", "16", kTorch).ok());
  r = finish(ports, kTorch);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("lower MRC_PORT"), std::string::npos) << r.error().message;
}

TEST(HostOptions, InterfaceNamesAndPrefixesResolveToAddresses) {
  EXPECT_EQ(resolve_plane("lo").value(), "127.0.0.1");
  EXPECT_EQ(resolve_plane("127.0.0.0/8").value(), "127.0.0.1");
  EXPECT_EQ(resolve_plane("127.0.0.9").value(), "127.0.0.9");
  EXPECT_EQ(resolve_plane("[::1]:5000").value(), "[::1]:5000");
  EXPECT_FALSE(resolve_plane("203.0.113.0/24").ok());  // TEST-NET-3: no address of this host
}

TEST(HostOptions, AContextServesEveryShardsMetricsWhenAsked) {
  Options o;
  ASSERT_TRUE(set(o, "planes", "127.0.0.1,127.0.0.2", kFlag).ok());
  ASSERT_TRUE(set(o, "port", "6200", kFlag).ok());
  ASSERT_TRUE(set(o, "ev-port-base", "61000", kFlag).ok());
  ASSERT_TRUE(set(o, "threads", "2", kFlag).ok());
  ASSERT_TRUE(set(o, "metrics-port", "0", kFlag).ok());
  ASSERT_TRUE(finish(o, kFlag).ok());
  auto ctx = Context::open(o.context);
  ASSERT_TRUE(ctx.ok()) << ctx.error().message;
  const uint16_t port = ctx.value()->metrics_port();
  ASSERT_NE(port, 0);
  const std::string text = http_get(port, "/metrics");
  EXPECT_NE(text.find("HTTP/1.1 200"), std::string::npos) << text;
  EXPECT_NE(text.find("mrc_plane_up{thread=\"1\",plane=\"1\"} 1"), std::string::npos) << text;
  EXPECT_NE(http_get(port, "/").find("HTTP/1.1 404"), std::string::npos);
  // Off by default, and a port in use is refused naming the field.
  Options plain = o;
  plain.context.metrics_port = -1;
  plain.context.port = 6205;
  plain.context.ev_port_base = 61600;
  auto quiet = Context::open(plain.context);
  ASSERT_TRUE(quiet.ok()) << quiet.error().message;
  EXPECT_EQ(quiet.value()->metrics_port(), 0);
  plain.context.port = 6207;
  plain.context.ev_port_base = 62200;
  plain.context.threads = 1;
  plain.context.metrics_port = port;
  auto clash = Context::open(plain.context);
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.error().message.find("ContextOptions::metrics_port"), std::string::npos)
      << clash.error().message;
}

}  // namespace
}  // namespace mrc::host
