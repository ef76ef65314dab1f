// Payload-run layout (sim/payload_layout.h): slices never overlap, and no packet of one flow
// can be placed where it would read the same pattern bytes as the packet the checker expects
// there, in its own flow or another, for grains from whole MTUs down to a few bytes.
#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <tuple>
#include <vector>

#include "sim/payload_layout.h"

namespace mrc::sim {
namespace {

struct Case {
  uint64_t mtu;
  std::vector<std::vector<uint64_t>> transfers;  // per flow, its transfer lengths in order
};

uint64_t grain_of(const Case& c) {
  uint64_t g = 0;
  for (const auto& flow : c.transfers)
    for (const uint64_t len : flow) g = std::gcd(g, len);
  return placement_grain(c.mtu, g);
}

PayloadLayout lay_out(const Case& c) {
  std::vector<uint64_t> bytes;
  for (const auto& flow : c.transfers)
    bytes.push_back(std::accumulate(flow.begin(), flow.end(), uint64_t{0}));
  return lay_out_payload(bytes, grain_of(c));
}

// Every (flow, packet start) reads a distinct (group, position in the group's pattern).
void expect_every_packet_start_distinct(const Case& c) {
  const PayloadLayout l = lay_out(c);
  std::set<std::pair<uint64_t, uint64_t>> seen;
  size_t starts = 0;
  for (size_t f = 0; f < c.transfers.size(); ++f) {
    const uint64_t group = f / l.grain;
    uint64_t offset = 0;
    for (const uint64_t len : c.transfers[f]) {
      for (uint64_t k = 0; k < len; k += c.mtu) {
        const uint64_t in_pattern = l.source_at[f] - l.pattern_at[group] + offset + k;
        ASSERT_LT(in_pattern, l.pattern_bytes[group]);
        EXPECT_TRUE(seen.insert({group, in_pattern}).second)
            << "flow " << f << " offset " << offset + k << " shares pattern bytes";
        ++starts;
      }
      offset += len;
    }
  }
  EXPECT_EQ(seen.size(), starts);
}

void expect_disjoint_slices(const Case& c) {
  const PayloadLayout l = lay_out(c);
  std::vector<std::pair<uint64_t, uint64_t>> slices;  // [begin, end)
  for (size_t g = 0; g < l.pattern_at.size(); ++g) {
    slices.emplace_back(l.pattern_at[g], l.pattern_at[g] + l.pattern_bytes[g]);
    EXPECT_EQ(l.pattern_at[g] % 64, 0u);
    EXPECT_LE(l.pattern_at[g] + l.pattern_bytes[g], l.targets_from);
  }
  for (size_t f = 0; f < c.transfers.size(); ++f) {
    const uint64_t bytes =
        std::accumulate(c.transfers[f].begin(), c.transfers[f].end(), uint64_t{0});
    slices.emplace_back(l.target_at[f], l.target_at[f] + std::max<uint64_t>(bytes, 1));
    EXPECT_EQ(l.target_at[f] % 64, 0u);
    EXPECT_GE(l.target_at[f], l.targets_from);
  }
  std::sort(slices.begin(), slices.end());
  for (size_t i = 1; i < slices.size(); ++i) EXPECT_LE(slices[i - 1].second, slices[i].first);
  EXPECT_LE(slices.back().second, l.total_bytes);
}

TEST(PayloadLayout, WholeMtuTransfersShareOnePattern) {
  Case c{4096, {}};
  for (int f = 0; f < 12; ++f) c.transfers.push_back({8192, 8192, 4096});
  EXPECT_EQ(grain_of(c), 4096u);
  EXPECT_EQ(lay_out(c).pattern_at.size(), 1u);
  expect_every_packet_start_distinct(c);
  expect_disjoint_slices(c);
}

TEST(PayloadLayout, OddLengthsMakeSmallGroups) {
  Case c{4096, {}};
  for (int f = 0; f < 20; ++f) c.transfers.push_back({1000, 3000, 9000, 1000});
  EXPECT_EQ(grain_of(c), 8u);
  EXPECT_EQ(lay_out(c).pattern_at.size(), 3u);
  expect_every_packet_start_distinct(c);
  expect_disjoint_slices(c);
}

TEST(PayloadLayout, UnevenFlowsAndJumboMtu) {
  Case c{9000, {{18000}, {9000, 27000}, {}, {45000}, {9000}}};
  EXPECT_EQ(grain_of(c), 9000u);
  expect_every_packet_start_distinct(c);
  expect_disjoint_slices(c);
  Case odd{4096, {{7}, {14, 21}, {7}}};  // 7 and the MTU share no factor: a pattern per flow
  EXPECT_EQ(grain_of(odd), 1u);
  expect_every_packet_start_distinct(odd);
  expect_disjoint_slices(odd);
}

}  // namespace
}  // namespace mrc::sim
