// tools/huge_pages: moving the heap onto transparent huge pages must leave every byte where it
// was, whether or not this kernel grants the pages (MADV_COLLAPSE is Linux 6.1; elsewhere the
// calls fail and nothing moves), and must only ever claim what it asked for.
#include "tools/huge_pages.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace mrc::tools {
namespace {

TEST(HugePages, TheHeapKeepsItsContents) {
  // 24 MiB: above malloc's mmap threshold, so an anonymous mapping of its own.
  std::vector<uint64_t> block(size_t{3} << 20);
  for (size_t i = 0; i < block.size(); ++i) block[i] = i * 0x9E3779B97F4A7C15ull;
  const HugePageReport report = back_heap_with_huge_pages(size_t{4} << 20);
  EXPECT_GE(report.mappings, 1u);
  EXPECT_GE(report.bytes_asked, size_t{16} << 20);  // the block's whole 2 MiB pages at least
  EXPECT_LE(report.bytes_collapsed, report.bytes_asked);
  for (size_t i = 0; i < block.size(); ++i) ASSERT_EQ(block[i], i * 0x9E3779B97F4A7C15ull) << i;
  std::printf("huge pages: %zu mappings, %zu bytes asked, %zu collapsed\n", report.mappings,
              report.bytes_asked, report.bytes_collapsed);
}

}  // namespace
}  // namespace mrc::tools
