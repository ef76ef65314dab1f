// wire/roce_frame: whole frames round-trip, and hostile frames are refused with their reason.
// (Agreement with an independent RoCEv2 ICRC: tests/roce_icrc_check.py.)
#include "wire/roce_frame.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <vector>

#include "core/wire/packet.h"
#include "util/prng.h"

namespace mrc::wire {
namespace {

struct Built {
  std::vector<uint8_t> frame;
  FrameAddresses addresses;
  size_t datagram_bytes = 0;
};

Built build(size_t payload_bytes) {
  Built b;
  std::vector<uint8_t> payload(payload_bytes, 0xAB);
  wire::DataPacket d;
  d.header.bth.dest_qp = Qpn(0x100);
  d.header.bth.psn = Psn(9);
  d.header.reth.dma_length = static_cast<uint32_t>(payload_bytes);
  d.payload = payload;
  b.frame.resize(kFrameHeaderBytes + wire::kMaxDatagramBytes);
  b.datagram_bytes = wire::encode(d, std::span(b.frame).subspan(kFrameHeaderBytes), true);
  b.addresses.source_mac = {2, 0, 0, 0, 0, 1};
  b.addresses.destination_mac = {2, 0, 0, 0, 0, 2};
  inet_pton(AF_INET, "10.0.0.1", &b.addresses.source_ip);
  inet_pton(AF_INET, "10.0.0.2", &b.addresses.destination_ip);
  b.addresses.source_port = 50007;
  b.addresses.destination_port = 4791;
  b.frame.resize(write_frame(b.addresses, 1, b.datagram_bytes, b.frame));
  return b;
}

TEST(RoceFrame, RoundTripsAddressesAndDatagram) {
  Built b = build(1000);
  const std::vector<uint8_t> before = b.frame;
  auto parsed = parse_frame(b.frame);
  ASSERT_TRUE(parsed.ok()) << to_string(parsed.error());
  EXPECT_EQ(b.frame, before);  // the in-place mask is undone
  const FrameAddresses& a = parsed->addresses;
  EXPECT_EQ(a.source_mac, b.addresses.source_mac);
  EXPECT_EQ(a.destination_mac, b.addresses.destination_mac);
  EXPECT_EQ(a.source_ip.s_addr, b.addresses.source_ip.s_addr);
  EXPECT_EQ(a.destination_ip.s_addr, b.addresses.destination_ip.s_addr);
  EXPECT_EQ(a.source_port, 50007);
  EXPECT_EQ(a.destination_port, 4791);
  EXPECT_EQ(a.tos, kMrcTos);
  ASSERT_EQ(parsed->datagram.size(), b.datagram_bytes);
  wire::DecodeOptions options;
  options.verify_icrc = false;  // the frame's ICRC is the RoCEv2 one, checked above
  auto decoded = wire::decode(parsed->datagram, options);
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(std::get<wire::DataPacket>(decoded.value()).payload.size(), 1000u);
}

TEST(RoceFrame, EthernetPaddingIsIgnored) {
  Built b = build(0);
  b.frame.resize(b.frame.size() + 6, 0);
  EXPECT_TRUE(parse_frame(b.frame).ok());
}

TEST(RoceFrame, EveryTruncationIsRefused) {
  Built b = build(64);
  for (size_t n = 0; n < b.frame.size(); ++n) {
    std::vector<uint8_t> cut(b.frame.begin(), b.frame.begin() + static_cast<long>(n));
    EXPECT_FALSE(parse_frame(cut).ok()) << n;
  }
}

TEST(RoceFrame, EachDefectHasItsReason) {
  const auto refused = [](std::vector<uint8_t> frame, size_t at, uint8_t value) {
    frame[at] = value;
    auto parsed = parse_frame(frame);
    return parsed.ok() ? std::string("accepted") : std::string(to_string(parsed.error()));
  };
  Built b = build(64);
  EXPECT_EQ(refused(b.frame, 12, 0x86), "not IPv4");  // EtherType IPv6
  EXPECT_EQ(refused(b.frame, 14, 0x46), "IP options");
  EXPECT_EQ(refused(b.frame, 20, 0x20), "IP fragment");  // more fragments
  EXPECT_EQ(refused(b.frame, 23, 6), "not UDP");
  EXPECT_EQ(refused(b.frame, 17, 0xFF), "bad IP/UDP length");
  EXPECT_EQ(refused(b.frame, 26, 11), "bad IP checksum");  // source address
  EXPECT_EQ(refused(b.frame, b.frame.size() - 8, 0), "bad ICRC");
  EXPECT_EQ(refused(b.frame, 34, 0), "bad ICRC");  // UDP source port is covered
}

TEST(RoceFrame, RandomBytesNeverCrash) {
  Prng prng(5);
  Built b = build(200);
  for (int i = 0; i < 20000; ++i) {
    std::vector<uint8_t> frame = b.frame;
    const int flips = 1 + static_cast<int>(prng.below(4));
    for (int f = 0; f < flips; ++f)
      frame[prng.below(frame.size())] ^= static_cast<uint8_t>(1 + prng.below(255));
    frame.resize(prng.below(frame.size() + 1));
    (void)parse_frame(frame);
  }
}

}  // namespace
}  // namespace mrc::wire
