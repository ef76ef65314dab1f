// SharedPayload and the payload-free checks (see payload_free.h).
#include "sim/payload_free.h"

#include <algorithm>
#include <cstring>

#include "util/prng.h"

namespace mrc::sim {

void fill_pattern(uint8_t* out, uint64_t bytes, uint64_t key) {
  const auto word = [key](uint64_t k) { return ((k + 1) * 0x9E3779B97F4A7C15ULL) ^ key; };
  for (uint64_t k = 0; k < bytes / 8; ++k) {
    const uint64_t w = word(k);
    std::memcpy(out + 8 * k, &w, 8);
  }
  const uint64_t tail = word(bytes / 8);
  std::memcpy(out + bytes / 8 * 8, &tail, bytes % 8);
}

SharedPayload::SharedPayload(uint64_t longest, uint64_t seed) : source_(longest), target_(longest) {
  fill_pattern(source_.data(), longest, mix64(seed ^ 0x5fa7e1ULL));
}

std::string SharedPayload::check_target(uint64_t length) const {
  length = std::min(length, size());
  if (std::memcmp(source(), target(), length) == 0) return {};
  uint64_t at = 0;
  while (at < length && source()[at] == target()[at]) ++at;
  return "payload-free scratch differs from the pattern at offset " + std::to_string(at);
}

std::string check_placed_once(uint32_t flow, uint64_t placed, uint64_t expected) {
  if (placed == expected) return {};
  return "flow " + std::to_string(flow) + " placed " + std::to_string(placed) + " bytes of " +
         std::to_string(expected) + ": not exactly once";
}

}  // namespace mrc::sim
