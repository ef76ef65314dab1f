// The libfabric provider's wire checks and message matching (src/fabric/wire.h, matching.h),
// which need no libfabric: what a hostile or broken peer's slot headers and names get, and the
// matching rules libfabric defines for receives and unexpected messages.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "fabric/matching.h"
#include "fabric/wire.h"

namespace mrc::fabric {
namespace {

constexpr uint32_t kSlot = 4096;
constexpr uint64_t kPayload = kSlot - 40;  // a full slot's payload
constexpr uint64_t kMax = 1 << 20;

SlotHeader fragment(uint32_t flags, uint32_t bytes, uint64_t message, uint64_t offset) {
  SlotHeader h;
  h.flags = flags;
  h.fragment_bytes = bytes;
  h.message_bytes = message;
  h.offset = offset;
  return h;
}

TEST(FabricWire, HeadersOfWellFormedFragmentsPass) {
  EXPECT_FALSE(check_header(fragment(kFirst | kLast, 100, 100, 0), kSlot, kMax, true));
  EXPECT_FALSE(
      check_header(fragment(kFirst | kLast | kTagged | kHasData, 0, 0, 0), kSlot, kMax, true));
  EXPECT_FALSE(check_header(fragment(kFirst, kPayload, 10000, 0), kSlot, kMax, true));
  EXPECT_FALSE(check_header(fragment(0, kPayload, 10000, kPayload), kSlot, kMax, false));
  EXPECT_FALSE(
      check_header(fragment(kLast, 10000 - 2 * kPayload, 10000, 2 * kPayload), kSlot, kMax, false));
  EXPECT_FALSE(check_header(fragment(kRts | kFirst | kLast | kTagged, 0, 5000000 % kMax, 63), kSlot,
                            kMax, true));
  EXPECT_FALSE(check_header(fragment(kFin | kFirst | kLast, 0, 0, 5), kSlot, kMax, true));
  EXPECT_FALSE(
      check_header(fragment(kRmaData | kFirst | kLast | kHasData, 0, 0, 0), kSlot, kMax, true));
  EXPECT_FALSE(check_header(fragment(kRead | kFirst | kLast, sizeof(CtsRecord), kMax, 63), kSlot,
                            kMax, true));
}

TEST(FabricWire, HeadersAPeerCannotSendAreRefusedWithAReason) {
  const std::vector<std::pair<SlotHeader, bool>> bad = {
      {fragment(1u << 20 | kFirst | kLast, 1, 1, 0), true},  // unknown flag
      {fragment(kFirst | kLast, kSlot, kSlot, 0), true},     // larger than its slot
      {fragment(kFirst | kLast, 100, kMax + 1, 0), true},    // over max_msg_size
      {fragment(kLast, 100, 150, 100), false},               // past the message's end
      {fragment(kLast, 100, ~0ull, ~0ull - 50), false},      // offset + bytes wraps
      {fragment(kFirst, 100, 1000, 0), false},               // a new message mid-message
      {fragment(0, 100, 1000, 100), true},                   // no first fragment
      {fragment(kLast, 100, 1000, 100), false},              // last that does not end it
      {fragment(kFirst | kLast, 0, 100, 0), true},           // first+last that does not end it
      {fragment(kRts | kFirst | kLast, 0, 100, kMaxRendezvous), true},       // index out of range
      {fragment(kRts | kFirst | kLast, 8, 100, 0), true},                    // RTS with payload
      {fragment(kRts | kFirst, 0, 100, 0), true},                            // RTS without kLast
      {fragment(kFin | kFirst | kLast, 0, 100, 0), true},                    // FIN with a length
      {fragment(kFin | kRts | kFirst | kLast, 0, 0, 0), true},               // both
      {fragment(kRts | kFirst | kLast, 0, 100, 0), false},                   // RTS mid-message
      {fragment(kRead | kFirst | kLast, sizeof(CtsRecord), 100, 0), false},  // read mid-message
      {fragment(kRead | kFirst | kLast, 8, 100, 0), true},  // read without its record
      {fragment(kRead | kFirst | kLast, sizeof(CtsRecord), kMax + 1, 0), true},          // too long
      {fragment(kRead | kFirst | kLast, sizeof(CtsRecord), 100, kMaxRendezvous), true},  // index
      {fragment(kRead | kTagged | kFirst | kLast, sizeof(CtsRecord), 100, 0), true},     // tagged
      {fragment(kRmaData | kFirst | kLast, 0, 0, 0), true},             // notice without data
      {fragment(kRmaData | kFirst | kLast | kHasData, 4, 4, 0), true},  // notice with payload
  };
  for (size_t i = 0; i < bad.size(); ++i) {
    const auto why = check_header(bad[i].first, kSlot, kMax, bad[i].second);
    ASSERT_TRUE(why.has_value()) << "case " << i;
    EXPECT_FALSE(why->empty()) << "case " << i;
  }
}

TEST(FabricWire, NamesRoundTripAndJunkIsRefused) {
  EndpointName n;
  n.family = 4;
  n.port = 0x3412;
  n.address[0] = 198;
  n.address[1] = 18;
  n.address[3] = 1;
  n.nonce = 0x1122334455667788ull;
  const auto back = name_from_hex(to_hex(n));
  ASSERT_TRUE(back);
  EXPECT_TRUE(*back == n);
  EXPECT_EQ(to_string(n), "fi_mrc://198.18.0.1:4660/1122334455667788");
  EXPECT_TRUE(parse_name(&n, sizeof n));
  EXPECT_FALSE(parse_name(&n, sizeof n - 1));
  EXPECT_FALSE(parse_name(nullptr, sizeof n));
  EndpointName bad = n;
  bad.magic[0] = 'x';
  EXPECT_FALSE(parse_name(&bad, sizeof bad));
  bad = n;
  bad.family = 5;
  EXPECT_FALSE(parse_name(&bad, sizeof bad));
  bad = n;
  bad.port = 0;
  EXPECT_FALSE(parse_name(&bad, sizeof bad));
  EXPECT_TRUE(parse_name(&bad, sizeof bad, /*any_port=*/true));  // a source address: any port
  EXPECT_FALSE(name_from_hex("zz"));
  EXPECT_FALSE(name_from_hex(std::string(64, 'g')));
}

TEST(FabricMatching, IoListsCopyAcrossBuffersAndTruncate) {
  char a[3], b[5];
  const iovec v[2] = {{a, sizeof a}, {b, sizeof b}};
  const IoList l = IoList::of(v, 2);
  EXPECT_EQ(l.bytes, 8u);
  EXPECT_EQ(l.write(2, "wxyz", 4), 4u);
  EXPECT_EQ(a[2], 'w');
  EXPECT_EQ(std::string(b, 3), "xyz");
  EXPECT_EQ(l.write(6, "1234", 4), 2u);  // only two bytes fit
  char out[4];
  l.read(2, out, 4);
  EXPECT_EQ(std::string(out, 4), "wxyz");
  EXPECT_EQ(IoList::of(static_cast<const void*>(nullptr), 0).count, 0u);
  const IoList part = l.slice(1, 5);  // a[1..2], b[0..2]
  ASSERT_EQ(part.count, 2u);
  EXPECT_EQ(part.v[0].iov_base, a + 1);
  EXPECT_EQ(part.v[0].iov_len, 2u);
  EXPECT_EQ(part.v[1].iov_base, b);
  EXPECT_EQ(part.v[1].iov_len, 3u);
  EXPECT_EQ(part.bytes, 5u);
  EXPECT_EQ(l.slice(6, 10).bytes, 2u);  // as much as the list holds
  EXPECT_EQ(l.slice(8, 0).count, 0u);   // nothing left: no place
}

PostedRecv recv_for(bool tagged, uint64_t source, uint64_t tag, uint64_t ignore, void* context) {
  PostedRecv r;
  r.tagged = tagged;
  r.source = source;
  r.tag = tag;
  r.ignore = ignore;
  r.context = context;
  return r;
}

TEST(FabricMatching, OldestMatchingReceiveTakesAMessage) {
  Matcher m(1 << 20);
  int c1, c2, c3, c4;
  m.post(recv_for(true, kAnySource, 0x10, 0x0F, &c1));  // tags 0x10..0x1F
  m.post(recv_for(true, 7, 0x20, 0, &c2));              // tag 0x20 from 7 only
  m.post(recv_for(true, kAnySource, 0x20, 0, &c3));
  m.post(recv_for(false, kAnySource, 0, 0, &c4));
  EXPECT_FALSE(m.take_posted({true, 3, 0x30}, 0));
  auto r = m.take_posted({true, 3, 0x20}, 0);  // not from 7: the third
  ASSERT_TRUE(r);
  EXPECT_EQ(r->context, &c3);
  r = m.take_posted({true, 7, 0x1A}, 0);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->context, &c1);
  r = m.take_posted({false, 9, 0xFFFF}, 0);  // untagged: the tag does not matter
  ASSERT_TRUE(r);
  EXPECT_EQ(r->context, &c4);
  EXPECT_EQ(m.posted(), 1u);
  EXPECT_TRUE(m.cancel(&c2));
  EXPECT_FALSE(m.cancel(&c2));
  EXPECT_EQ(m.posted(), 0u);
}

TEST(FabricMatching, AMultiReceiveGivesEachMessageTheNextAlignedPart) {
  Matcher m(1 << 20);
  m.set_min_multi_recv(64);
  std::vector<uint8_t> space(256);
  int c;
  PostedRecv multi = recv_for(false, kAnySource, 0, 0, &c);
  multi.buffer = IoList::of(space.data(), space.size());
  multi.multi = true;
  m.post(multi);
  EXPECT_FALSE(m.take_posted({true, 1, 0}, 10));  // tagged messages are not its kind
  std::vector<size_t> offsets;
  for (uint64_t bytes : {41, 0, 48, 100}) {  // used after each: 48, 48, 96, 200 (56 left)
    auto r = m.take_posted({false, 1, 0}, bytes);
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->part);
    EXPECT_FALSE(r->multi);
    EXPECT_EQ(r->context, &c);
    EXPECT_EQ(r->buffer.bytes, bytes);
    ASSERT_EQ(r->buffer.count, 1u);  // (an empty part too has its place)
    offsets.push_back(static_cast<uint8_t*>(r->buffer.v[0].iov_base) - space.data());
    EXPECT_EQ(r->releases, bytes == 100) << bytes;
    EXPECT_EQ(r->ends_posting(), bytes == 100) << bytes;
  }
  EXPECT_EQ(offsets, (std::vector<size_t>{0, 48, 48, 96}));
  EXPECT_EQ(m.posted(), 0u);  // released
  // A message longer than what is left takes the rest (a truncation) and releases it.
  multi.buffer = IoList::of(space.data(), 100);
  m.post(multi);
  auto r = m.take_posted({false, 1, 0}, 1000);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->buffer.bytes, 100u);
  EXPECT_TRUE(r->releases);
  EXPECT_EQ(m.posted(), 0u);
}

TEST(FabricMatching, UnexpectedMessagesMatchInArrivalOrderWithinTheBudget) {
  Matcher m(1000);
  Unexpected* a = m.add_unexpected({true, 1, 5}, 600);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(m.add_unexpected({true, 2, 5}, 600), nullptr);  // over the budget: the link waits
  Unexpected* b = m.add_unexpected({true, 2, 5}, 400);
  ASSERT_NE(b, nullptr);
  Unexpected* r = m.add_rendezvous({true, 2, 6}, 1 << 30, nullptr, 3);  // no payload: always fits
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->bytes(), 1u << 30);
  EXPECT_EQ(m.find_unexpected(true, kAnySource, 5, 0), a);
  EXPECT_EQ(m.find_unexpected(true, 2, 5, 0), b);
  EXPECT_EQ(m.find_unexpected(true, kAnySource, 4, 3), a);  // ignore bits
  EXPECT_EQ(m.find_unexpected(false, kAnySource, 5, 0), nullptr);
  int claim;
  a->claimed = true;
  a->claim_context = &claim;
  EXPECT_EQ(m.find_unexpected(true, kAnySource, 5, 0), b);  // claimed: only by its claim
  EXPECT_EQ(m.find_claimed(&claim), a);
  m.remove(a);
  EXPECT_EQ(m.unexpected_bytes(), 400u);
  Unexpected* big = m.add_unexpected({true, 1, 5}, 5000);
  EXPECT_EQ(big, nullptr);
  m.remove(b);
  big = m.add_unexpected({true, 1, 5}, 5000);  // an empty store takes one message of any size
  EXPECT_NE(big, nullptr);
}

}  // namespace
}  // namespace mrc::fabric
