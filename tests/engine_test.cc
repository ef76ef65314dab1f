// Engine behaviour over an ideal two-endpoint harness (tests/pair.h): transfers of every size,
// WRITE-with-immediate ordering, loss recovery, trimming, hostile packets, QP state machine.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/wire/packet.h"
#include "pair.h"
#include "util/bytes.h"
#include "util/prng.h"

namespace mrc {
namespace {

using test::Pair;
using test::small_config;

TEST(Engine, WritesOfManySizesArriveIntact) {
  Pair pair(4, small_config(), 1 << 20);
  const uint64_t sizes[] = {0, 1, 4095, 4096, 4097, 65536, 300000};
  uint64_t offset = 0, id = 1;
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (uint64_t size : sizes) {
    ASSERT_TRUE(pair.write(0, offset, size, id++).ok());
    ranges.emplace_back(offset, size);
    offset += size + 3;
  }
  pair.run(Instant{100'000'000});
  auto done = pair.drain(0, false);
  ASSERT_EQ(done.size(), std::size(sizes));
  for (size_t i = 0; i < done.size(); ++i) {
    EXPECT_EQ(done[i].wr_id, i + 1);
    EXPECT_EQ(done[i].status, WcStatus::kSuccess);
  }
  for (auto [start, size] : ranges) {
    EXPECT_EQ(0, std::memcmp(pair.side[0].source.data() + start, pair.side[1].target.data() + start,
                             size));
    if (start > 0) {
      EXPECT_EQ(pair.side[1].target[start - 1], 0);  // nothing written outside
    }
  }
}

// ICRC offload (EndpointConfig::icrc_offload): packets, data and control, leave with a zero ICRC
// field and TxMeta::icrc_deferred. A datapath that computes the ICRC, as a NIC would, gets every
// byte through, and the one packet it corrupts afterwards is refused as bad ICRC and sent again;
// one that vouches for the bytes (RxMeta::icrc_checked) needs no ICRC at all; one that does neither
// has every data packet refused.
TEST(Engine, IcrcOffloadLeavesTheIcrcToTheDatapath) {
  enum Mode { kSeal, kVouch, kNeither };
  for (const Mode mode : {kSeal, kVouch, kNeither}) {
    SCOPED_TRACE(mode);
    Pair pair(2, small_config(), 1 << 18, 1, Duration{2000}, /*icrc_offload=*/true);
    uint64_t packets = 0, data = 0, deferred = 0, zero_icrc = 0, to_side1 = 0;
    pair.filter = [&](int from, std::vector<uint8_t>& bytes, RxMeta& rx, const TxMeta& tx) {
      // Every packet, data or control (the receiver's SACKs), leaves for the datapath to seal.
      ++packets;
      data += tx.is_data ? 1 : 0;
      to_side1 += from == 0 ? 1 : 0;
      deferred += tx.icrc_deferred ? 1 : 0;
      zero_icrc += load_be32(bytes.data() + bytes.size() - wire::kIcrcBytes) == 0 ? 1 : 0;
      if (mode == kVouch) rx.icrc_checked = true;
      if (mode == kSeal) {
        wire::seal(bytes, bytes.size() - wire::kIcrcBytes);
        if (tx.is_data && data == 5) bytes[bytes.size() / 2] ^= 0x10;
      }
      return true;
    };
    const uint64_t length = 100'000;
    ASSERT_TRUE(pair.write(0, 0, length, 1).ok());
    pair.run(Instant{mode == kNeither ? 2'000'000 : 100'000'000});
    const auto bad_icrc = [&](int side) {
      return pair.side[side].endpoint->stats().decode_errors[static_cast<size_t>(
          wire::DecodeError::kBadIcrc)];
    };
    EXPECT_GT(data, 0u);
    EXPECT_EQ(deferred, packets);
    EXPECT_EQ(zero_icrc, packets);
    if (mode == kNeither) {
      EXPECT_EQ(bad_icrc(1), to_side1);
      EXPECT_EQ(pair.side[1].target[0], 0);
      continue;
    }
    EXPECT_GT(packets, data);  // SACKs came back, and were accepted: the write completed
    EXPECT_EQ(bad_icrc(1), mode == kSeal ? 1u : 0u);
    EXPECT_EQ(bad_icrc(0), 0u);
    const auto done = pair.drain(0, false);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status, WcStatus::kSuccess);
    EXPECT_EQ(0, std::memcmp(pair.side[0].source.data(), pair.side[1].target.data(), length));
  }
}

// Virtual regions (RegionKind::kVirtual): the same packets of the same sizes, the write
// completes and is counted as placed, and neither region is read or written for payload: the
// target stays as it was.
TEST(Engine, VirtualRegionsSendTheSamePacketsAndWriteNothing) {
  std::vector<size_t> sizes[2];
  for (const bool virtual_payload : {false, true}) {
    Pair pair(2, small_config(), 1 << 18, 1, Duration{2000}, /*icrc_offload=*/false,
              virtual_payload ? RegionKind::kVirtual : RegionKind::kMemory);
    pair.filter = [&](int, std::vector<uint8_t>& bytes, RxMeta&, const TxMeta&) {
      sizes[virtual_payload].push_back(bytes.size());
      return true;
    };
    const uint64_t length = 100'000;
    ASSERT_TRUE(pair.write(0, 0, length, 1, /*imm=*/true, 7).ok());
    ASSERT_TRUE(pair.side[1].qp->post_recv(9).ok());
    pair.run(Instant{100'000'000});
    const auto done = pair.drain(0, false);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].status, WcStatus::kSuccess);
    const auto received = pair.drain(1, true);
    ASSERT_EQ(received.size(), 1u);
    EXPECT_EQ(received[0].immediate, 7u);
    EXPECT_EQ(pair.side[1].qp->data_bytes_placed(), length);
    const bool placed =
        std::memcmp(pair.side[0].source.data(), pair.side[1].target.data(), length) == 0;
    EXPECT_EQ(placed, !virtual_payload);
    if (virtual_payload) {
      EXPECT_TRUE(std::all_of(pair.side[1].target.begin(), pair.side[1].target.end(),
                              [](uint8_t b) { return b == 0; }));
    }
  }
  EXPECT_EQ(sizes[0], sizes[1]);
}

TEST(Engine, WriteWithImmediateCompletesInOrder) {
  Pair pair(2, small_config(), 1 << 20);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(pair.side[1].qp->post_recv(500 + i).ok());
  for (int i = 0; i < 20; ++i)
    ASSERT_TRUE(
        pair.write(0, static_cast<uint64_t>(i) * 10000, 9000 + i, i, true, 0xABC000 + i).ok());
  pair.run(Instant{100'000'000});
  auto recv = pair.drain(1, true);
  ASSERT_EQ(recv.size(), 20u);
  for (int i = 0; i < 20; ++i) {
    EXPECT_EQ(recv[i].wr_id, 500u + i);
    EXPECT_EQ(recv[i].immediate, 0xABC000u + i);
    EXPECT_EQ(recv[i].byte_len, 9000u + i);
    EXPECT_EQ(recv[i].opcode, WcOpcode::kRecvRdmaWithImm);
  }
}

TEST(Engine, RecoversFromRandomLossBothWays) {
  Pair pair(4, small_config(), 1 << 20);
  Prng prng(42);
  pair.filter = [&](int, std::vector<uint8_t>&, RxMeta&, const TxMeta&) {
    return !prng.chance(0.05);
  };
  for (int i = 0; i < 8; ++i) {
    ASSERT_TRUE(pair.write(0, i * 100000ull, 100000, i).ok());
    ASSERT_TRUE(pair.write(1, i * 100000ull, 100000, i).ok());
  }
  pair.run(Instant{2'000'000'000});
  EXPECT_EQ(pair.drain(0, false).size(), 8u);
  EXPECT_EQ(pair.drain(1, false).size(), 8u);
  EXPECT_EQ(0, std::memcmp(pair.side[0].source.data(), pair.side[1].target.data(), 800000));
  EXPECT_EQ(0, std::memcmp(pair.side[1].source.data(), pair.side[0].target.data(), 800000));
  EXPECT_GT(pair.side[0].qp->stats().retransmits, 0u);
}

}  // namespace
}  // namespace mrc

namespace mrc {
namespace {

// With a QPN seed, QPNs carry random tags above the table index, and a QPN with the right
// index but another tag names no QP.
TEST(Engine, TaggedQpnsMustMatchExactly) {
  EndpointConfig config;
  config.qpn_seed = 12345;
  Endpoint e(config);
  CompletionQueue* cq = e.create_cq(16);
  const uint32_t pd = e.memory().alloc_pd();
  QueuePair* first = e.create_qp(QpConfig{}, pd, cq, cq).value();
  QueuePair* second = e.create_qp(QpConfig{}, pd, cq, cq).value();
  EXPECT_EQ(e.qp(first->qpn()), first);
  EXPECT_EQ(e.qp(second->qpn()), second);
  EXPECT_NE(first->qpn().value >> 11, 0u) << "no tag";
  EXPECT_EQ(first->qpn().value & 0x7FF, Endpoint::kFirstQpn);  // 1024 QPs: 11 index bits
  EXPECT_EQ(e.qp(Qpn(Endpoint::kFirstQpn)), nullptr);          // the index without its tag
  EXPECT_EQ(e.qp(Qpn(first->qpn().value ^ (1u << 20))), nullptr);
  const Qpn destroyed = first->qpn();  // `first` is gone once destroyed
  EXPECT_TRUE(e.destroy_qp(destroyed).ok());
  EXPECT_EQ(e.qp(destroyed), nullptr);
  EXPECT_FALSE(e.destroy_qp(destroyed).ok());
}

}  // namespace
}  // namespace mrc
