// tools/verify_pattern: what `mrc perf --verify` checks must catch what a transport can get
// wrong (a flipped bit anywhere, bytes placed at the wrong offset, an earlier message's stale
// bytes, a short tail) at every length, and must accept the pattern it wrote.
#include "tools/verify_pattern.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace mrc::tools {
namespace {

const uint64_t kLengths[] = {1, 7, 8, 9, 63, 64, 65, 127, 1000, 4096, 8192 + 5};

TEST(VerifyPattern, AcceptsWhatItWroteAtEveryLength) {
  for (uint64_t length : kLengths) {
    std::vector<uint8_t> buffer(length);
    fill_pattern(buffer.data(), 42, length);
    EXPECT_TRUE(check_pattern(buffer.data(), 42, length)) << "length " << length;
  }
}

TEST(VerifyPattern, CatchesAFlippedBitAnywhere) {
  for (uint64_t length : kLengths) {
    std::vector<uint8_t> buffer(length);
    fill_pattern(buffer.data(), 7, length);
    for (uint64_t at = 0; at < length; at += (length > 200 ? 61 : 1)) {
      buffer[at] ^= 0x10;
      EXPECT_FALSE(check_pattern(buffer.data(), 7, length)) << "length " << length << " at " << at;
      buffer[at] ^= 0x10;
    }
  }
}

TEST(VerifyPattern, CatchesAnotherMessagesBytes) {
  std::vector<uint8_t> buffer(4096);
  fill_pattern(buffer.data(), 1000, buffer.size());
  EXPECT_FALSE(check_pattern(buffer.data(), 1000 + 16, buffer.size()));  // a slot's next message
  EXPECT_FALSE(check_pattern(buffer.data(), 1001, buffer.size()));
  // One packet's worth of stale bytes in the middle of an otherwise right message.
  std::vector<uint8_t> stale(1024);
  fill_pattern(stale.data(), 984, stale.size());
  std::memcpy(buffer.data() + 2048, stale.data(), 512);
  EXPECT_FALSE(check_pattern(buffer.data(), 1000, buffer.size()));
}

TEST(VerifyPattern, CatchesBytesPlacedAtTheWrongOffset) {
  std::vector<uint8_t> right(8192);
  fill_pattern(right.data(), 3, right.size());
  for (uint64_t shift : {1u, 8u, 16u, 64u, 512u, 4096u}) {
    std::vector<uint8_t> wrong = right;
    // The second half's bytes land `shift` bytes early.
    std::memcpy(wrong.data() + 4096 - shift, right.data() + 4096, 4096);
    EXPECT_FALSE(check_pattern(wrong.data(), 3, wrong.size())) << "shift " << shift;
  }
  // Two 64-byte blocks swapped, and two words swapped within a block.
  std::vector<uint8_t> swapped = right;
  std::memcpy(swapped.data(), right.data() + 64, 64);
  std::memcpy(swapped.data() + 64, right.data(), 64);
  EXPECT_FALSE(check_pattern(swapped.data(), 3, swapped.size()));
  swapped = right;
  std::memcpy(swapped.data() + 8, right.data() + 16, 8);
  std::memcpy(swapped.data() + 16, right.data() + 8, 8);
  EXPECT_FALSE(check_pattern(swapped.data(), 3, swapped.size()));
}

TEST(VerifyPattern, ZeroedOrShortTailIsCaught) {
  std::vector<uint8_t> buffer(1000);
  fill_pattern(buffer.data(), 9, buffer.size());
  buffer[999] = static_cast<uint8_t>(~buffer[999]);
  EXPECT_FALSE(check_pattern(buffer.data(), 9, buffer.size()));
  std::vector<uint8_t> zeros(4096, 0);
  EXPECT_FALSE(check_pattern(zeros.data(), 0, zeros.size()));
  EXPECT_TRUE(check_pattern(zeros.data(), 0, 0));  // nothing to check
}

}  // namespace
}  // namespace mrc::tools
