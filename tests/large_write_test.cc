// One RDMA WRITE-with-immediate larger than 4 GiB: it crosses the 32-bit RETH DMA-length
// limit (carried as several wire messages) and the 2^32 offset boundary. The source is a
// 64 MiB random pattern mapped again and again to make a 4.5 GiB region (little real memory);
// the target is real memory, checked byte for byte against the pattern.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include "pair.h"
#include "util/prng.h"

namespace mrc {
namespace {

constexpr uint64_t kPatternBytes = 64ull << 20;
constexpr uint64_t kTotalBytes = (4ull << 30) + (512ull << 20) + 12345;

uint8_t* map_repeated_pattern(uint64_t total) {
  const int fd = memfd_create("mrc-pattern", 0);
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(kPatternBytes)) != 0) return nullptr;
  auto* pattern = static_cast<uint8_t*>(
      mmap(nullptr, kPatternBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  Prng prng(7);
  for (uint64_t i = 0; i < kPatternBytes; i += 8) {
    const uint64_t v = prng.next_u64();
    std::memcpy(pattern + i, &v, 8);
  }
  const uint64_t span = (total + kPatternBytes - 1) / kPatternBytes * kPatternBytes;
  auto* base = static_cast<uint8_t*>(
      mmap(nullptr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  for (uint64_t off = 0; off < span; off += kPatternBytes) {
    mmap(base + off, kPatternBytes, PROT_READ, MAP_SHARED | MAP_FIXED, fd, 0);
  }
  munmap(pattern, kPatternBytes);
  close(fd);
  return base;
}

TEST(LargeWrite, MoreThanFourGibInOneWorkRequest) {
  QpConfig config;
  config.ev_count = 16;
  config.ev_min_active = 4;
  test::Pair pair(2, config, 4096, 3, Duration{1000});
  uint8_t* source = map_repeated_pattern(kTotalBytes);
  ASSERT_NE(source, nullptr);
  auto* target = static_cast<uint8_t*>(mmap(nullptr, kTotalBytes, PROT_READ | PROT_WRITE,
                                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
  ASSERT_NE(target, MAP_FAILED);
  test::Side& a = pair.side[0];
  test::Side& b = pair.side[1];
  const auto src_mr =
      a.endpoint->memory().register_region(a.pd, source, kTotalBytes, kAccessLocalWrite).value();
  const auto dst_mr =
      b.endpoint->memory().register_region(b.pd, target, kTotalBytes, kAccessRemoteWrite).value();
  // Two gather elements (a single SGE is 32-bit): the message still crosses 4 GiB.
  const uint64_t first = 0xF0000000ull;
  Sge sges[2] = {{src_mr.address, static_cast<uint32_t>(first), src_mr.lkey},
                 {src_mr.address + first, static_cast<uint32_t>(kTotalBytes - first), src_mr.lkey}};
  ASSERT_TRUE(b.qp->post_recv(99).ok());
  SendWr wr;
  wr.wr_id = 1;
  wr.opcode = SendOpcode::kWriteWithImm;
  wr.sg_list = sges;
  wr.num_sge = 2;
  wr.remote_addr = dst_mr.address;
  wr.rkey = dst_mr.rkey;
  wr.immediate = 0xFEED;
  ASSERT_TRUE(a.qp->post_send(wr).ok());
  pair.run(Instant{Duration::from_ms(60'000).ns});
  auto sent = pair.drain(0, false);
  auto received = pair.drain(1, true);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0].status, WcStatus::kSuccess);
  ASSERT_EQ(received.size(), 1u);
  EXPECT_EQ(received[0].immediate, 0xFEEDu);
  EXPECT_EQ(b.qp->stats().data_bytes_placed, kTotalBytes);
  for (uint64_t off = 0; off < kTotalBytes; off += kPatternBytes) {
    const uint64_t n = std::min(kPatternBytes, kTotalBytes - off);
    ASSERT_EQ(0, std::memcmp(target + off, source + off, n)) << "mismatch in block at " << off;
  }
  munmap(target, kTotalBytes);
}

}  // namespace
}  // namespace mrc
