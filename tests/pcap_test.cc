// io/pcap_file.h and wire/pcap.h: what the writer writes the reader reads back (addresses, ports,
// TOS, bytes, time); the reader finds UDP datagrams in the link types and formats other tools
// write; and a capture is untrusted input: cut, corrupted or random files end the reading with a
// reason or skip records, never read past the data.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "io/pcap_file.h"
#include "util/prng.h"

namespace mrc::io {
namespace {

// A capture file under the test's temporary directory, removed when the test ends, pass or fail.
struct ScopedFile {
  explicit ScopedFile(const char* name) : path(::testing::TempDir() + "/mrc-pcap-" + name) {}
  ~ScopedFile() { std::remove(path.c_str()); }
  ScopedFile(const ScopedFile&) = delete;
  ScopedFile& operator=(const ScopedFile&) = delete;
  std::string path;
};

UdpAddresses addresses(const char* from, uint16_t sport, const char* to, uint16_t dport) {
  UdpAddresses a;
  in_addr source{}, destination{};
  inet_pton(AF_INET, from, &source);
  inet_pton(AF_INET, to, &destination);
  a.source = SocketAddress::ipv4(source, sport);
  a.destination = SocketAddress::ipv4(destination, dport);
  a.tos = 0x02;
  return a;
}

std::unique_ptr<PcapWriter> writer(const std::string& path, uint64_t budget) {
  auto w = PcapWriter::open(path, budget);
  EXPECT_TRUE(w.ok());
  return std::move(w.value());
}

std::unique_ptr<wire::PcapReader> reader(const std::string& path) {
  auto r = open_pcap(path);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? std::move(r.value()) : nullptr;
}

std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()),
             static_cast<std::streamsize>(bytes.size()));
}

TEST(Pcap, WhatIsWrittenIsReadBack) {
  const ScopedFile file("roundtrip.pcap");
  const std::string& path = file.path;
  {
    auto w = writer(path, 1 << 20);
    for (int i = 0; i < 3; ++i) {
      std::vector<uint8_t> datagram(100 + i, static_cast<uint8_t>(i));
      ASSERT_TRUE(w->write(
          1'700'000'000'123'456'789ull + i,
          addresses("10.0.0.1", static_cast<uint16_t>(50000 + i), "10.0.1.2", 4791), datagram));
    }
    EXPECT_EQ(w->records(), 3u);
  }
  auto r = reader(path);
  ASSERT_NE(r, nullptr);
  wire::CapturedDatagram d;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(r->next(d)) << r->error();
    EXPECT_EQ(d.number, static_cast<uint64_t>(i + 1));
    EXPECT_EQ(d.unix_ns, 1'700'000'000'123'456'789ull + i);
    EXPECT_EQ(d.source, "10.0.0.1:" + std::to_string(50000 + i));
    EXPECT_EQ(d.destination, "10.0.1.2:4791");
    EXPECT_EQ(d.destination_port, 4791);
    EXPECT_EQ(d.tos, 0x02);
    EXPECT_EQ(d.datagram.size(), 100u + i);
    EXPECT_EQ(d.datagram[0], i);
  }
  EXPECT_FALSE(r->next(d));
  EXPECT_TRUE(r->error().empty());
}

TEST(Pcap, TheWriterStopsAtItsBudget) {
  const ScopedFile file("budget.pcap");
  const std::string& path = file.path;
  auto w = writer(path, uint64_t{3} * (16 + 28 + 100));
  const std::vector<uint8_t> datagram(100, 7);
  int written = 0;
  for (int i = 0; i < 10; ++i)
    written += w->write(0, addresses("1.1.1.1", 1, "2.2.2.2", 2), datagram) ? 1 : 0;
  EXPECT_EQ(written, 3);
  EXPECT_EQ(w->dropped(), 7u);
  EXPECT_TRUE(w->full());
}

// Ethernet with a VLAN tag, Linux cooked v1 and v2, raw IPv6; IP fragments and non-UDP skipped.
TEST(Pcap, FindsUdpInTheLinkTypesOthersWrite) {
  std::vector<uint8_t> ip = {0x45, 0,    0, 33, 0, 0,  0x40, 0,   64,  17,   0,
                             0,    10,   0, 0,  1, 10, 0,    0,   2,   0xC3, 0x50,
                             0x12, 0xB7, 0, 13, 0, 0,  'h',  'e', 'l', 'l',  'o'};
  std::vector<uint8_t> eth(12, 0);
  eth.insert(eth.end(), {0x81, 0x00, 0x00, 0x05, 0x08, 0x00});
  eth.insert(eth.end(), ip.begin(), ip.end());
  wire::CapturedDatagram d;
  ASSERT_TRUE(wire::find_udp(1, eth, d));
  EXPECT_EQ(d.destination, "10.0.0.2:4791");
  EXPECT_EQ(std::string(d.datagram.begin(), d.datagram.end()), "hello");
  std::vector<uint8_t> sll(14, 0);
  sll.insert(sll.end(), {0x08, 0x00});
  sll.insert(sll.end(), ip.begin(), ip.end());
  EXPECT_TRUE(wire::find_udp(113, sll, d));
  std::vector<uint8_t> sll2 = {0x08, 0x00};
  sll2.resize(20, 0);
  sll2.insert(sll2.end(), ip.begin(), ip.end());
  EXPECT_TRUE(wire::find_udp(276, sll2, d));
  std::vector<uint8_t> v6 = {0x60, 0, 0, 0, 0, 13, 17, 64};
  v6.resize(40, 0);
  v6[23] = 1;
  v6[39] = 2;
  v6.insert(v6.end(), {0x12, 0x34, 0x12, 0xB7, 0, 13, 0, 0, 'h', 'e', 'l', 'l', 'o'});
  ASSERT_TRUE(wire::find_udp(101, v6, d));
  EXPECT_TRUE(d.ipv6);
  EXPECT_EQ(d.destination, "[::2]:4791");
  std::vector<uint8_t> fragment = ip;
  fragment[6] = 0x20;  // more fragments
  EXPECT_FALSE(wire::find_udp(101, fragment, d));
  std::vector<uint8_t> tcp = ip;
  tcp[9] = 6;
  EXPECT_FALSE(wire::find_udp(101, tcp, d));
  std::vector<uint8_t> long_udp = ip;
  long_udp[25] = 200;  // the UDP length runs past the IP packet
  EXPECT_FALSE(wire::find_udp(101, long_udp, d));
}

TEST(Pcap, CutAndCorruptCapturesEndWithAReason) {
  const ScopedFile file("cut.pcap");
  const std::string& path = file.path;
  {
    auto w = writer(path, 1 << 20);
    const std::vector<uint8_t> datagram(200, 1);
    for (int i = 0; i < 4; ++i) w->write(0, addresses("1.1.1.1", 1, "2.2.2.2", 2), datagram);
  }
  std::vector<uint8_t> bytes = file_bytes(path);
  ASSERT_GT(bytes.size(), 50u);
  bytes.erase(bytes.end() - 50, bytes.end());
  write_file(path, bytes);
  auto r = reader(path);
  ASSERT_NE(r, nullptr);
  wire::CapturedDatagram d;
  int n = 0;
  while (r->next(d)) ++n;
  EXPECT_EQ(n, 3);
  EXPECT_NE(r->error().find("runs past the end"), std::string::npos) << r->error();
  write_file(path, {1, 2, 3});
  EXPECT_FALSE(open_pcap(path).ok());
}

// Random bytes behind a valid pcap or pcapng header, and random files: no crash, no reading
// past the data (the address sanitizer build checks the latter), every datagram inside it.
TEST(Pcap, RandomCapturesNeverReadPastTheirBytes) {
  Prng prng(7);
  const ScopedFile file("random.pcap");
  const std::string& path = file.path;
  for (int round = 0; round < 300; ++round) {
    std::vector<uint8_t> bytes(24 + prng.below(4000));
    for (auto& b : bytes) b = static_cast<uint8_t>(prng.below(256));
    const uint32_t magic = round % 3 == 0 ? 0xA1B2C3D4 : round % 3 == 1 ? 0x0A0D0D0A : 0x4D3CB2A1;
    std::memcpy(bytes.data(), &magic, 4);
    if (round % 3 == 1 && bytes.size() >= 12) {
      const uint32_t order = 0x1A2B3C4D;
      std::memcpy(bytes.data() + 8, &order, 4);
    }
    write_file(path, bytes);
    auto r = open_pcap(path);
    if (!r.ok()) continue;
    wire::CapturedDatagram d;
    int guard = 0;
    while (r.value()->next(d) && ++guard < 100000) {
      ASSERT_LE(d.datagram.size(), bytes.size());
    }
    ASSERT_LT(guard, 100000);
  }
}

}  // namespace
}  // namespace mrc::io
