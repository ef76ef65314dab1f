// Payload-run memory layout (see payload_layout.h).
#include "sim/payload_layout.h"

#include <algorithm>
#include <numeric>

namespace mrc::sim {

namespace {

constexpr uint64_t kAlign = 64;

uint64_t slice(uint64_t bytes) {
  return (std::max<uint64_t>(bytes, 1) + kAlign - 1) & ~(kAlign - 1);
}

}  // namespace

uint64_t placement_grain(uint64_t mtu_bytes, uint64_t lengths_gcd) {
  return std::max<uint64_t>(std::gcd(mtu_bytes, lengths_gcd), 1);
}

PayloadLayout lay_out_payload(std::span<const uint64_t> flow_bytes, uint64_t grain) {
  PayloadLayout l;
  l.grain = std::max<uint64_t>(grain, 1);
  const uint64_t groups = (flow_bytes.size() + l.grain - 1) / l.grain;
  l.pattern_bytes.assign(groups, 0);
  for (size_t i = 0; i < flow_bytes.size(); ++i) {
    uint64_t& end = l.pattern_bytes[i / l.grain];  // the group's last window end
    end = std::max(end, i % l.grain + flow_bytes[i]);
  }
  uint64_t at = 0;
  for (const uint64_t bytes : l.pattern_bytes) {
    l.pattern_at.push_back(at);
    at += slice(bytes);
  }
  l.targets_from = at;
  for (size_t i = 0; i < flow_bytes.size(); ++i) {
    l.source_at.push_back(l.pattern_at[i / l.grain] + i % l.grain);
    l.target_at.push_back(at);
    at += slice(flow_bytes[i]);
  }
  l.total_bytes = at;
  return l;
}

}  // namespace mrc::sim
