// Hostile and malformed datagrams against a live queue pair. Each test establishes a working
// pair (tests/pair.h), injects hand-built datagrams straight into an endpoint, and checks three
// things: not one byte of the target region, nor of the guard areas around it, changed; the
// counter naming the reason moved; and a normal transfer on the same QP still completes and
// verifies afterwards.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <optional>
#include <vector>

#include "pair.h"
#include "util/prng.h"

namespace mrc {
namespace {

using test::Pair;
using wire::Opcode;

constexpr size_t kGuard = 8192;
constexpr size_t kRegion = 64 * 1024;
constexpr uint32_t kMtu = 4096;
constexpr uint16_t kMaxWimmDest = 8;
constexpr uint32_t kFirstPsn = 77;  // pair.h: A sends from PSN 77, B expects 77

QpConfig hostile_config() {
  QpConfig c;
  c.mtu_bytes = kMtu;
  c.ev_count = 16;
  c.ev_min_active = 4;
  c.mpr = 4;
  c.mpr_dest = 4;
  c.max_wimm_dest = kMaxWimmDest;
  c.timeout = 8;  // 262 us
  return c;
}

uint64_t drops(const QueuePair* qp, DropReason reason) {
  return qp->stats().drops[static_cast<size_t>(reason)];
}

uint64_t total_drops(const QueuePair* qp) {
  const auto d = qp->stats().drops;
  return std::accumulate(d.begin(), d.end(), uint64_t{0});
}

uint64_t decode_errors(const Endpoint& e) {
  const auto& d = e.stats().decode_errors;
  return std::accumulate(d.begin(), d.end(), uint64_t{0});
}

uint64_t nacks_sent(const QueuePair* qp, wire::NackReason reason) {
  return qp->stats().nacks_sent[static_cast<size_t>(reason) % kNackReasonSlots];
}

// A (side 0) writes to B (side 1). B's target is a region registered in the middle of a larger
// buffer ("arena") whose guard bytes on either side must never change.
class Hostile : public ::testing::Test {
 protected:
  Hostile() : pair_(2, hostile_config(), 1 << 20) {
    arena_.assign(kGuard + kRegion + kGuard, 0xA5);
    std::memset(arena_.data() + kGuard, 0x3C, kRegion);
    MemoryRegionTable& mrs = b().endpoint->memory();
    const uint32_t rw = kAccessLocalWrite | kAccessRemoteWrite;
    region_ = mrs.register_region(b().pd, arena_.data() + kGuard, kRegion, rw).value();
    read_only_ =
        mrs.register_region(b().pd, arena_.data() + kGuard, kRegion, kAccessLocalWrite).value();
    const uint32_t other_pd = mrs.alloc_pd();
    other_pd_ = mrs.register_region(other_pd, arena_.data() + kGuard, kRegion, rw).value();
    snapshot_ = arena_;
  }
  void SetUp() override { expect_transfer_works(0, 10000); }  // establish: FIRST, MIDDLE, LAST

  test::Side& a() { return pair_.side[0]; }
  test::Side& b() { return pair_.side[1]; }
  uint64_t region_end() const { return region_.address + region_.length; }

  // The PSN B expects next: everything A sent so far arrived, in order.
  Psn expected_psn() {
    return Psn(kFirstPsn + static_cast<uint32_t>(b().qp->stats().data_packets_received));
  }

  wire::DataHeader header(Opcode op, Psn psn, uint64_t va, uint32_t rkey, uint32_t dma_length) {
    wire::DataHeader h;
    h.bth.opcode = op;
    h.bth.dest_qp = b().qp->qpn();
    h.bth.psn = psn;
    h.bth.timestamp_present = true;
    h.meth = {0, 1};
    h.tseth.tx_timestamp = 0x1234;
    h.reth = {va, rkey, dma_length};
    h.immediate = 0xDEADBEEF;
    return h;
  }

  // A WRITE_ONLY of `length` bytes at `va` that would be valid if va and rkey were.
  wire::DataHeader write_only(uint64_t va, uint32_t rkey, uint32_t length) {
    return header(Opcode::kWriteOnly, expected_psn(), va, rkey, length);
  }

  static std::vector<uint8_t> datagram(const wire::DataHeader& h, size_t payload, uint8_t fill) {
    std::vector<uint8_t> out(wire::kMaxDatagramBytes + 64);
    size_t n = wire::write_data_header(h, out);
    std::memset(out.data() + n, fill, payload);
    n = wire::seal(out, n + payload);
    out.resize(n);
    return out;
  }

  void inject(int to, std::span<const uint8_t> bytes, bool trimmed = false,
              PlaneId plane = PlaneId(0)) {
    RxMeta meta;
    meta.plane = plane;
    meta.ev = Ev(0x5A5A5800);
    meta.trimmed = trimmed;
    meta.peer = static_cast<uint32_t>(1 - to);
    pair_.side[to].endpoint->handle_datagram(pair_.now(), bytes, meta);
  }
  void inject_b(const std::vector<uint8_t>& bytes, bool trimmed = false) {
    inject(1, bytes, trimmed);
  }
  // A SACK / trimmed-NACK addressed to A's QP, encoded with a valid ICRC.
  std::vector<uint8_t> control_to_a(Psn psn, const decltype(wire::ControlPacket::body)& body,
                                    Opcode opcode) {
    wire::ControlPacket c;
    c.bth.opcode = opcode;
    c.bth.dest_qp = a().qp->qpn();
    c.bth.psn = psn;
    c.body = body;
    std::vector<uint8_t> out(256);
    out.resize(wire::encode(wire::Packet{c}, out));
    return out;
  }
  std::vector<uint8_t> sack_to_a(Psn cumulative, int16_t sack_offset, uint64_t bitmap) {
    wire::Sack s;
    s.cumulative_psn = cumulative;
    s.sack_offset = sack_offset;
    s.bitmap = bitmap;
    s.mpr = 4;
    return control_to_a(cumulative, s, Opcode::kSack);
  }
  std::vector<uint8_t> nack_to_a(Psn psn) {
    wire::Nack n;
    n.reason = wire::NackReason::kTrimmed;
    n.nack_psn = psn;
    return control_to_a(psn, n, Opcode::kNack);
  }

  void expect_arena_unchanged() {
    ASSERT_EQ(arena_.size(), snapshot_.size());
    size_t changed = 0;
    for (size_t i = 0; i < arena_.size(); ++i) changed += arena_[i] != snapshot_[i];
    EXPECT_EQ(changed, 0u) << "bytes of the target region or its guards were modified";
  }

  // A normal WRITE from A into the guarded region completes and lands exactly where it should.
  void expect_transfer_works(uint64_t offset, uint32_t length, bool imm = false) {
    std::memset(arena_.data() + kGuard + offset, 0, length);  // so the write must change it
    snapshot_ = arena_;
    const uint64_t src = (next_wr_id_ * 4099) % (a().source.size() - length);
    Sge sge{a().source_mr.address + src, length, a().source_mr.lkey};
    SendWr wr;
    wr.wr_id = next_wr_id_++;
    wr.opcode = imm ? SendOpcode::kWriteWithImm : SendOpcode::kWrite;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.remote_addr = region_.address + offset;
    wr.rkey = region_.rkey;
    wr.immediate = 0x600D;
    ASSERT_TRUE(a().qp->post_send(wr).ok());
    pair_.run(pair_.now() + Duration::from_ms(50));
    const auto done = pair_.drain(0, false);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0].wr_id, wr.wr_id);
    EXPECT_EQ(done[0].status, WcStatus::kSuccess);
    EXPECT_EQ(a().qp->state(), QpState::kRts);
    EXPECT_EQ(b().qp->state(), QpState::kRts);
    std::memcpy(snapshot_.data() + kGuard + offset, a().source.data() + src, length);
    expect_arena_unchanged();  // the write landed, and nothing else moved
    snapshot_ = arena_;
  }

  Pair pair_;
  std::vector<uint8_t> arena_;
  std::vector<uint8_t> snapshot_;
  MemoryRegionInfo region_;
  MemoryRegionInfo read_only_;
  MemoryRegionInfo other_pd_;
  uint64_t next_wr_id_ = 1;
};

TEST_F(Hostile, WrongRkeyIsDroppedAsBadKey) {
  const uint32_t keys[] = {
      region_.rkey + 1,  // same slot, next generation
      (10u << 8) | 1,    // a free slot of the table
      (1000u << 8) | 1,  // a slot beyond the table
      0,
      0xFFFFFFFFu,
  };
  const uint64_t before = drops(b().qp, DropReason::kBadKey);
  const uint64_t naks = b().qp->stats().access_naks_sent;
  for (uint32_t key : keys) inject_b(datagram(write_only(region_.address, key, 100), 100, 0xEE));
  EXPECT_EQ(drops(b().qp, DropReason::kBadKey) - before, std::size(keys));
  EXPECT_EQ(b().qp->stats().access_naks_sent - naks,
            std::size(keys));  // each answered "remote access error"
  expect_arena_unchanged();
  expect_transfer_works(4096, 5000);
}

// An access NAK naming a packet in flight that then arrives intact fails nothing: the requester
// only remembers it, and the work request completes with success.
TEST_F(Hostile, ForgedAccessNakForAPacketInFlightChangesNothing) {
  const Psn psn = expected_psn();  // the PSN of A's next packet
  Sge sge{a().source_mr.address, 100, a().source_mr.lkey};
  SendWr wr;
  wr.wr_id = 99;
  wr.opcode = SendOpcode::kWrite;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.remote_addr = region_.address;
  wr.rkey = region_.rkey;
  ASSERT_TRUE(a().qp->post_send(wr).ok());
  pair_.run(pair_.now() + Duration{500});  // sent, not yet arrived (the pair's delay is 2 us)
  const uint64_t seen = a().qp->stats().access_naks_received;
  inject(0, control_to_a(psn, wire::Ack{wire::kAethNakRemoteAccess, 0}, Opcode::kAck));
  EXPECT_EQ(a().qp->stats().access_naks_received, seen + 1);
  pair_.run(pair_.now() + Duration::from_ms(50));
  const auto done = pair_.drain(0, false);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
  EXPECT_EQ(a().qp->state(), QpState::kRts);
  expect_transfer_works(4096, 5000);
}

TEST_F(Hostile, AddressOutsideRegionIsDropped) {
  struct Case {
    uint64_t va;
    uint32_t length;
  };
  const Case cases[] = {
      {region_.address - 1, 100},      // starts one byte before the region
      {region_.address - 4096, 4096},  // ends exactly at the region start
      {region_end(), 1},               // starts one past the end
      {region_end() + 4096, 4096},
      {0, 4096},
      {UINT64_MAX, 1},           // last byte of the address space
      {UINT64_MAX - 100, 4096},  // va + length wraps past 2^64
      {0ull - 4096, 4096},       // va + length == 2^64 exactly (wraps to 0)
      {0ull - 1 - (region_end() - region_.address), 4096},
  };
  const uint64_t before = drops(b().qp, DropReason::kOutOfBounds);
  for (const Case& c : cases)
    inject_b(datagram(write_only(c.va, region_.rkey, c.length), c.length, 0xEE));
  EXPECT_EQ(drops(b().qp, DropReason::kOutOfBounds) - before, std::size(cases));
  expect_arena_unchanged();
  expect_transfer_works(8192, 12345);
}

TEST_F(Hostile, LengthCrossingRegionEndIsDropped) {
  const uint64_t before = drops(b().qp, DropReason::kOutOfBounds);
  // Last byte one past the end, and a whole MTU sticking out.
  inject_b(datagram(write_only(region_end() - 99, region_.rkey, 100), 100, 0xEE));
  inject_b(datagram(write_only(region_end() - 1, region_.rkey, 4096), 4096, 0xEE));
  inject_b(datagram(write_only(region_end() - 4095, region_.rkey, 4096), 4096, 0xEE));
  // A middle packet of a long message whose own bytes cross the end.
  const Psn psn = expected_psn();
  inject_b(datagram(header(Opcode::kWriteMiddle, psn, region_end() - 2048, region_.rkey, 1u << 20),
                    kMtu, 0xEE));
  EXPECT_EQ(drops(b().qp, DropReason::kOutOfBounds) - before, 4u);
  expect_arena_unchanged();
  // The bytes right up to the end are fine.
  expect_transfer_works(kRegion - 4096, 4096);
}

TEST_F(Hostile, RegionWithoutRemoteWriteOrOfAnotherPdIsDropped) {
  const uint64_t denied = drops(b().qp, DropReason::kAccessDenied);
  const uint64_t bad_key = drops(b().qp, DropReason::kBadKey);
  inject_b(datagram(write_only(read_only_.address, read_only_.rkey, 100), 100, 0xEE));
  inject_b(datagram(write_only(read_only_.address + 4096, read_only_.rkey, 4096), 4096, 0xEE));
  inject_b(datagram(write_only(other_pd_.address, other_pd_.rkey, 100), 100, 0xEE));
  EXPECT_EQ(drops(b().qp, DropReason::kAccessDenied) - denied, 2u);
  EXPECT_EQ(drops(b().qp, DropReason::kBadKey) - bad_key, 1u);  // wrong PD reads as a bad key
  expect_arena_unchanged();
  expect_transfer_works(0, 4096);
}

TEST_F(Hostile, UnknownDestinationQpIsCountedByTheEndpoint) {
  // A second QP on B that was never brought up: packets for it are refused by QP state.
  QueuePair* idle =
      b().endpoint->create_qp(hostile_config(), b().pd, b().send_cq, b().recv_cq).value();
  const uint32_t unknown[] = {0, 1, Endpoint::kFirstQpn - 1, idle->qpn().value + 1, 0xFFFFFF};
  const uint64_t before = b().endpoint->stats().unknown_qp;
  const uint64_t received_before = b().qp->stats().data_packets_received;
  for (uint32_t qpn : unknown) {
    wire::DataHeader h = write_only(region_.address, region_.rkey, 100);
    h.bth.dest_qp = Qpn(qpn);
    inject_b(datagram(h, 100, 0xEE));
  }
  EXPECT_EQ(b().endpoint->stats().unknown_qp - before, std::size(unknown));
  // The right QP number, but on a plane the endpoint does not have.
  inject(1, datagram(write_only(region_.address, region_.rkey, 100), 100, 0xEE), false, PlaneId(9));
  EXPECT_EQ(b().endpoint->stats().unknown_qp - before, std::size(unknown) + 1);
  wire::DataHeader h = write_only(region_.address, region_.rkey, 100);
  h.bth.dest_qp = idle->qpn();
  inject_b(datagram(h, 100, 0xEE));
  EXPECT_EQ(drops(idle, DropReason::kQpState), 1u);
  EXPECT_EQ(b().qp->stats().data_packets_received, received_before);
  expect_arena_unchanged();
  expect_transfer_works(100, 9000);
}

TEST_F(Hostile, PsnFarAheadIsNackedNotPlaced) {
  const uint32_t window = 4 * 128;  // mpr_dest
  const Psn expected = expected_psn();
  const Psn psns[] = {expected + window, expected + window + 1, expected + 5000,
                      expected + (1u << 22), expected + (1u << 23)};
  const uint64_t oow = drops(b().qp, DropReason::kOutOfWindow);
  const uint64_t nacks = nacks_sent(b().qp, wire::NackReason::kPsnOutOfWindow);
  for (Psn psn : psns)
    inject_b(
        datagram(header(Opcode::kWriteOnly, psn, region_.address, region_.rkey, 100), 100, 0xEE));
  EXPECT_EQ(drops(b().qp, DropReason::kOutOfWindow) - oow, std::size(psns));
  EXPECT_EQ(nacks_sent(b().qp, wire::NackReason::kPsnOutOfWindow) - nacks, std::size(psns));
  expect_arena_unchanged();
  // The NACKs reach A for PSNs it never sent: ignored there as bad acknowledgements.
  const uint64_t bad_acks = drops(a().qp, DropReason::kBadAck);
  expect_transfer_works(2000, 20000);
  // (>=: reordered SACKs of the transfer itself may count too.)
  EXPECT_GE(drops(a().qp, DropReason::kBadAck) - bad_acks, std::size(psns));
}

TEST_F(Hostile, ReplayedPsnWithDifferentPayloadIsADuplicate) {
  // The establishing write was PSNs 77 (FIRST), 78 (MIDDLE), 79 (LAST) at region offset 0.
  const uint64_t before = drops(b().qp, DropReason::kDuplicate);
  const uint64_t sacks = b().qp->stats().sacks_sent;
  inject_b(
      datagram(header(Opcode::kWriteFirst, Psn(kFirstPsn), region_.address, region_.rkey, 10000),
               kMtu, 0xEE));
  inject_b(datagram(
      header(Opcode::kWriteMiddle, Psn(kFirstPsn + 1), region_.address + kMtu, region_.rkey, 10000),
      kMtu, 0xEE));
  inject_b(datagram(header(Opcode::kWriteLast, Psn(kFirstPsn + 2), region_.address + 2 * kMtu,
                           region_.rkey, 10000),
                    10000 - 2 * kMtu, 0xEE));
  EXPECT_EQ(drops(b().qp, DropReason::kDuplicate) - before, 3u);
  EXPECT_EQ(b().qp->stats().sacks_sent - sacks, 3u);  // a duplicate is answered with a SACK
  expect_arena_unchanged();
  expect_transfer_works(30000, 4096 * 3);
  // Replay the whole of the transfer that just completed.
  const Psn last = expected_psn() - 1;
  for (uint32_t k = 0; k < 3; ++k) {
    inject_b(
        datagram(header(k == 0   ? Opcode::kWriteFirst
                        : k == 1 ? Opcode::kWriteMiddle
                                 : Opcode::kWriteLast,
                        last - (2 - k), region_.address + 30000 + k * kMtu, region_.rkey, 3 * kMtu),
                 kMtu, 0x11));
  }
  EXPECT_EQ(drops(b().qp, DropReason::kDuplicate) - before, 6u);
  expect_arena_unchanged();
  expect_transfer_works(0, 1);
}

// The SACK a duplicate triggers describes the duplicate in all three trigger fields: its PSN
// (offset from the cumulative PSN), its EV and its timestamp (PROTOCOL.md §1.4).
TEST_F(Hostile, ADuplicatesSackEchoesTheDuplicate) {
  const Psn duplicate(kFirstPsn + 1);  // the establishing write's MIDDLE
  inject_b(
      datagram(header(Opcode::kWriteMiddle, duplicate, region_.address + kMtu, region_.rkey, 10000),
               kMtu, 0xEE));
  std::optional<wire::Sack> sack;
  for (int plane = 0; plane < b().endpoint->planes() && !sack; ++plane) {
    std::vector<uint8_t> out(wire::kMaxDatagramBytes);
    TxMeta meta;
    const size_t n =
        b().endpoint->poll_transmit(pair_.now(), PlaneId(static_cast<uint8_t>(plane)), out, meta);
    if (n == 0) continue;
    auto packet = wire::decode(std::span(out.data(), n), wire::DecodeOptions{});
    ASSERT_TRUE(packet.ok());
    const auto* control = std::get_if<wire::ControlPacket>(&packet.value());
    ASSERT_NE(control, nullptr);
    sack = std::get<wire::Sack>(control->body);
  }
  ASSERT_TRUE(sack.has_value()) << "no SACK for the duplicate";
  EXPECT_EQ(
      sack->cumulative_psn + static_cast<uint32_t>(static_cast<int32_t>(sack->ack_psn_offset)),
      duplicate);
  EXPECT_EQ(sack->echoed_entropy, 0x5A5A5800u);
  EXPECT_EQ(sack->cc.echoed_timestamp, 0x1234);
}

// A flood of duplicates and of PSNs beyond the window (what forged or replayed traffic is)
// gets a bounded number of answers, all of them counted; A's window is untouched and the QP
// still works.
TEST_F(Hostile, AFloodOfUnsolicitedPacketsGetsFewAnswers) {
  const uint64_t sacks = b().qp->stats().sacks_sent;
  const uint64_t nacks = nacks_sent(b().qp, wire::NackReason::kPsnOutOfWindow);
  const uint64_t window_bytes = a().qp->stats().window_bytes;
  constexpr uint32_t kFlood = 5000;
  const Psn ahead = expected_psn() + 4 * 128 + 7;
  for (uint32_t i = 0; i < kFlood; ++i) {
    inject_b(datagram(
        header(Opcode::kWriteOnly, Psn(kFirstPsn), region_.address, region_.rkey, 100), 100, 0xEE));
    inject_b(datagram(header(Opcode::kWriteOnly, ahead + i, region_.address, region_.rkey, 100),
                      100, 0xEE));
  }
  const uint64_t answered = (b().qp->stats().sacks_sent - sacks) +
                            (nacks_sent(b().qp, wire::NackReason::kPsnOutOfWindow) - nacks);
  EXPECT_GT(answered, 0u);
  EXPECT_LE(answered, 64u);  // the burst: no time passed during the flood
  EXPECT_EQ(answered + b().qp->stats().answers_limited, 2 * kFlood);
  expect_arena_unchanged();
  pair_.run(pair_.now() + Duration::from_ms(5));  // the answers that left reach A
  EXPECT_EQ(a().qp->stats().window_bytes, window_bytes);
  expect_transfer_works(2000, 20000);
}

TEST_F(Hostile, EveryTruncationOfAValidPacketIsRejected) {
  // A packet B would accept and place: the right PSN, key, address and length.
  const auto full = datagram(write_only(region_.address + 100, region_.rkey, kMtu), kMtu, 0xEE);
  ASSERT_TRUE(wire::decode(full).ok());
  const uint64_t errors = decode_errors(*b().endpoint);
  const uint64_t qp_drops = total_drops(b().qp);
  for (size_t n = 0; n < full.size(); ++n)
    inject_b({full.begin(), full.begin() + static_cast<ptrdiff_t>(n)});
  EXPECT_EQ(decode_errors(*b().endpoint) - errors, full.size());
  EXPECT_EQ(total_drops(b().qp), qp_drops);  // none got as far as the QP
  expect_arena_unchanged();
  // The same prefixes marked as trimmed by a switch: headers decode, nothing is placed, the
  // complete headers are answered with a NACK(trimmed).
  const uint64_t trims = b().qp->stats().trims_received;
  const uint64_t placed = b().qp->stats().data_packets_received;
  for (size_t n = 0; n < full.size(); ++n)
    inject_b({full.begin(), full.begin() + static_cast<ptrdiff_t>(n)}, true);
  const size_t header = wire::data_header_bytes(Opcode::kWriteOnly, true);
  EXPECT_EQ(b().qp->stats().trims_received - trims, full.size() - header);
  EXPECT_EQ(b().qp->stats().data_packets_received, placed);
  expect_arena_unchanged();
  expect_transfer_works(100, kMtu);
}

TEST_F(Hostile, BitFlipsFailTheIcrc) {
  const auto full = datagram(write_only(region_.address, region_.rkey, 1500), 1500, 0xEE);
  const uint64_t errors = decode_errors(*b().endpoint);
  const uint64_t bad_icrc =
      b().endpoint->stats().decode_errors[static_cast<size_t>(wire::DecodeError::kBadIcrc)];
  uint64_t injected = 0;
  for (size_t bit = 0; bit < full.size() * 8; ++bit) {
    auto bytes = full;
    bytes[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    inject_b(bytes);
    ++injected;
  }
  // Two and three random flips: CRC-32 detects every error of up to 3 bits at this length.
  Prng prng(7);
  for (int i = 0; i < 3000; ++i) {
    auto bytes = full;
    const int flips = 2 + static_cast<int>(prng.below(2));
    for (int f = 0; f < flips; ++f) {
      const size_t bit = prng.below(full.size() * 8);
      bytes[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    }
    if (bytes == full) continue;  // two flips of the same bit
    inject_b(bytes);
    ++injected;
  }
  EXPECT_EQ(decode_errors(*b().endpoint) - errors, injected);
  EXPECT_GT(b().endpoint->stats().decode_errors[static_cast<size_t>(wire::DecodeError::kBadIcrc)] -
                bad_icrc,
            injected / 2);
  expect_arena_unchanged();
  expect_transfer_works(0, 1500);
}

TEST_F(Hostile, RandomGarbageIsRejected) {
  Prng prng(20240601);
  const uint64_t errors = decode_errors(*b().endpoint);
  const uint64_t received = b().endpoint->stats().datagrams_received;
  constexpr int kCount = 5000;
  std::vector<uint8_t> bytes;
  for (int i = 0; i < kCount; ++i) {
    bytes.resize(prng.below(5000));
    for (uint8_t& x : bytes) x = static_cast<uint8_t>(prng.next_u32());
    // Half of them start like a data packet for B's QP, so they get past the first checks.
    if (i % 2 == 0 && bytes.size() >= wire::kBthBytes) {
      bytes[0] = static_cast<uint8_t>(0xC6 + prng.below(6));
      bytes[1] = 0;
      const uint32_t qpn = b().qp->qpn().value;
      bytes[5] = static_cast<uint8_t>(qpn >> 16);
      bytes[6] = static_cast<uint8_t>(qpn >> 8);
      bytes[7] = static_cast<uint8_t>(qpn);
    }
    inject_b(bytes);
  }
  EXPECT_EQ(b().endpoint->stats().datagrams_received - received, static_cast<uint64_t>(kCount));
  EXPECT_EQ(decode_errors(*b().endpoint) - errors, static_cast<uint64_t>(kCount));
  expect_arena_unchanged();
  expect_transfer_works(5, 7777);
}

// Correctly sealed data packets with random header fields, each wrong in at least one way that
// must stop placement (a foreign key, or a range not inside the region), reach the responder.
TEST_F(Hostile, RandomSealedDataPacketsNeverPlace) {
  Prng prng(99);
  const Opcode ops[] = {Opcode::kWriteFirst,   Opcode::kWriteMiddle, Opcode::kWriteLast,
                        Opcode::kWriteLastImm, Opcode::kWriteOnly,   Opcode::kWriteOnlyImm};
  const uint64_t errors = decode_errors(*b().endpoint);
  const uint64_t qp_drops = total_drops(b().qp);
  const uint64_t trims = b().qp->stats().trims_received;
  const uint64_t placed = b().qp->stats().data_packets_received;
  constexpr int kCount = 4000;
  for (int i = 0; i < kCount; ++i) {
    const uint32_t payload = 1 + static_cast<uint32_t>(prng.below(kMtu + 200));
    const uint64_t va_choice = prng.below(3);
    uint64_t va = va_choice == 0   ? prng.next_u64()
                  : va_choice == 1 ? region_.address - 1 - prng.below(8192)
                                   : region_end() - payload + 1 + prng.below(8192);
    uint32_t rkey = region_.rkey;
    if (prng.below(2) == 0) {
      do rkey = static_cast<uint32_t>(prng.next_u32());
      while (rkey == region_.rkey || rkey == read_only_.rkey);
    }
    const Psn psn = prng.below(2) == 0 ? expected_psn() + static_cast<uint32_t>(prng.below(600))
                                       : Psn(prng.next_u32());
    wire::DataHeader h =
        header(ops[prng.below(6)], psn, va, rkey, static_cast<uint32_t>(prng.next_u32() % 20000));
    h.meth = {static_cast<uint16_t>(prng.next_u32()), static_cast<uint16_t>(prng.next_u32())};
    h.bth.timestamp_present = prng.below(2) == 0;
    h.bth.ack_request = prng.below(2) == 0;
    inject_b(datagram(h, payload, 0xEE), prng.below(50) == 0);
  }
  const uint64_t accounted = (total_drops(b().qp) - qp_drops) +
                             (decode_errors(*b().endpoint) - errors) +
                             (b().qp->stats().trims_received - trims);
  EXPECT_EQ(accounted, static_cast<uint64_t>(kCount));  // every one was refused, for a reason
  EXPECT_EQ(b().qp->stats().data_packets_received, placed);
  expect_arena_unchanged();
  expect_transfer_works(40000, 10000);
}

TEST_F(Hostile, FirstOrMiddleShorterThanMtuIsABadLength) {
  const Psn psn = expected_psn();
  const uint64_t before = drops(b().qp, DropReason::kBadLength);
  inject_b(datagram(header(Opcode::kWriteFirst, psn, region_.address, region_.rkey, 3 * kMtu),
                    kMtu - 1, 0xEE));
  inject_b(datagram(
      header(Opcode::kWriteMiddle, psn + 1, region_.address + kMtu, region_.rkey, 3 * kMtu), 100,
      0xEE));
  inject_b(datagram(header(Opcode::kWriteMiddle, psn, region_.address, region_.rkey, 3 * kMtu), 1,
                    0xEE));
  // A FIRST of a message that fits in one packet, and payloads longer than the MTU.
  inject_b(
      datagram(header(Opcode::kWriteFirst, psn, region_.address, region_.rkey, kMtu), kMtu, 0xEE));
  inject_b(datagram(header(Opcode::kWriteMiddle, psn, region_.address, region_.rkey, 3 * kMtu),
                    kMtu + 1, 0xEE));
  inject_b(datagram(header(Opcode::kWriteLast, psn, region_.address, region_.rkey, 3 * kMtu),
                    kMtu + 100, 0xEE));
  // A LAST with no payload for a message that has bytes.
  inject_b(
      datagram(header(Opcode::kWriteLast, psn, region_.address, region_.rkey, 3 * kMtu), 0, 0xEE));
  EXPECT_EQ(drops(b().qp, DropReason::kBadLength) - before, 7u);
  expect_arena_unchanged();
  expect_transfer_works(0, 3 * kMtu);
}

TEST_F(Hostile, WriteOnlyPayloadDifferentFromDmaLengthIsABadLength) {
  const Psn psn = expected_psn();
  const uint64_t before = drops(b().qp, DropReason::kBadLength);
  inject_b(
      datagram(header(Opcode::kWriteOnly, psn, region_.address, region_.rkey, 200), 100, 0xEE));
  inject_b(
      datagram(header(Opcode::kWriteOnly, psn, region_.address, region_.rkey, 100), 200, 0xEE));
  inject_b(datagram(header(Opcode::kWriteOnly, psn, region_.address, region_.rkey, 0), 1, 0xEE));
  inject_b(datagram(header(Opcode::kWriteOnly, psn, region_.address, region_.rkey, 0xFFFFFFFF),
                    kMtu, 0xEE));
  inject_b(datagram(header(Opcode::kWriteOnlyImm, psn, region_.address, region_.rkey, 4000), 3999,
                    0xEE));
  EXPECT_EQ(drops(b().qp, DropReason::kBadLength) - before, 5u);
  expect_arena_unchanged();
  expect_transfer_works(1, 200);
}

TEST_F(Hostile, WriteWithImmediateOutsideMaxWimmDestIsRefused) {
  ASSERT_TRUE(b().qp->post_recv(4242).ok());
  const Psn psn = expected_psn();
  // B has completed no WRITE-with-immediate yet, so it tracks rq_msn [0, max_wimm_dest).
  const uint16_t rq_msns[] = {kMaxWimmDest, kMaxWimmDest + 1, 1000, 0x8000, 0xFFFF};
  const uint64_t before = drops(b().qp, DropReason::kWimmOverflow);
  const uint64_t nacks = nacks_sent(b().qp, wire::NackReason::kNoResource);
  for (uint16_t rq_msn : rq_msns) {
    wire::DataHeader h = header(Opcode::kWriteOnlyImm, psn, region_.address, region_.rkey, 64);
    h.meth.rq_msn = rq_msn;
    inject_b(datagram(h, 64, 0xEE));
  }
  EXPECT_EQ(drops(b().qp, DropReason::kWimmOverflow) - before, std::size(rq_msns));
  EXPECT_EQ(nacks_sent(b().qp, wire::NackReason::kNoResource) - nacks, std::size(rq_msns));
  EXPECT_EQ(b().recv_cq->size(), 0u);  // no receive consumed
  expect_arena_unchanged();
  // A real WRITE-with-immediate still completes and consumes the receive posted above.
  expect_transfer_works(64, 5000, true);
  const auto recv = pair_.drain(1, true);
  ASSERT_EQ(recv.size(), 1u);
  EXPECT_EQ(recv[0].wr_id, 4242u);
  EXPECT_EQ(recv[0].status, WcStatus::kSuccess);
  EXPECT_EQ(recv[0].immediate, 0x600Du);
  EXPECT_EQ(recv[0].byte_len, 5000u);
}

// Acknowledgements for PSNs the requester never sent must not complete anything.
TEST_F(Hostile, SackOrNackForUnsentPsnsIsABadAck) {
  bool blackhole = true;
  pair_.filter = [&](int, std::vector<uint8_t>&, RxMeta&, const TxMeta&) { return !blackhole; };
  const uint32_t length = 5 * kMtu;
  std::memset(arena_.data() + kGuard + 20000, 0, length);
  snapshot_ = arena_;
  Sge sge{a().source_mr.address, length, a().source_mr.lkey};
  SendWr wr;
  wr.wr_id = 777;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.remote_addr = region_.address + 20000;
  wr.rkey = region_.rkey;
  ASSERT_TRUE(a().qp->post_send(wr).ok());
  pair_.run(pair_.now() + Duration{20'000});  // all five packets leave A and vanish
  const uint32_t sent = static_cast<uint32_t>(a().qp->stats().data_packets_sent);
  const Psn next = Psn(kFirstPsn + sent);  // A's next new PSN
  const Psn oldest = next - 5;             // A's oldest unacknowledged PSN
  ASSERT_EQ(a().qp->stats().work_requests_completed, 1u);

  const uint64_t bad = drops(a().qp, DropReason::kBadAck);
  const uint64_t retransmits = a().qp->stats().retransmits;
  inject(0, sack_to_a(next + 1, 0, ~0ull));  // acknowledges one PSN never sent
  inject(0, sack_to_a(next + 1000, 0, ~0ull));
  inject(0, sack_to_a(next + (1u << 23), 0, ~0ull));
  inject(0, nack_to_a(next));
  inject(0, nack_to_a(next + 100));
  inject(0, nack_to_a(oldest - 1));  // already acknowledged long ago
  EXPECT_EQ(drops(a().qp, DropReason::kBadAck) - bad, 6u);
  // A SACK with a sane cumulative point whose bitmap claims only never-sent PSNs.
  inject(0, sack_to_a(oldest, 5, ~0ull));
  inject(0, sack_to_a(oldest, 1000, ~0ull));
  EXPECT_EQ(pair_.drain(0, false).size(), 0u);
  EXPECT_EQ(a().qp->stats().work_requests_completed, 1u);
  EXPECT_EQ(a().qp->stats().retransmits, retransmits);
  EXPECT_EQ(a().qp->state(), QpState::kRts);

  blackhole = false;  // the path heals; the timer recovers the transfer
  pair_.run(pair_.now() + Duration::from_ms(100));
  const auto done = pair_.drain(0, false);
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ(done[0].wr_id, 777u);
  EXPECT_EQ(done[0].status, WcStatus::kSuccess);
  std::memcpy(snapshot_.data() + kGuard + 20000, a().source.data(), length);
  expect_arena_unchanged();
  snapshot_ = arena_;
  expect_transfer_works(0, 3 * kMtu);
}

}  // namespace
}  // namespace mrc
