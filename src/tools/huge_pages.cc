// Walks /proc/self/maps and asks for transparent huge pages on the big anonymous writable
// mappings (huge_pages.h). Linux only; every step may fail and is then skipped.
#include "tools/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstdio>
#include <cstring>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif

namespace mrc::tools {

namespace {

constexpr uintptr_t kHugeBytes = uintptr_t{2} << 20;

// Anonymous (no file, or the heap) and writable.
bool is_anonymous_writable(const char* perms, const char* path) {
  if (perms[0] != 'r' || perms[1] != 'w') return false;
  return path[0] == '\0' || std::strcmp(path, "[heap]") == 0;
}

}  // namespace

HugePageReport back_heap_with_huge_pages(size_t min_bytes) {
  HugePageReport report;
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return report;
  char line[512];
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long begin = 0, end = 0;
    char perms[8] = {}, path[256] = {};
    if (std::sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &begin, &end, perms, path) < 3) continue;
    if (!is_anonymous_writable(perms, path) || end - begin < min_bytes) continue;
    // Whole huge pages inside the mapping only.
    const uintptr_t lo = (begin + kHugeBytes - 1) & ~(kHugeBytes - 1);
    const uintptr_t hi = end & ~(kHugeBytes - 1);
    if (hi <= lo) continue;
    void* at = reinterpret_cast<void*>(lo);
    ++report.mappings;
    report.bytes_asked += hi - lo;
    if (madvise(at, hi - lo, MADV_HUGEPAGE) != 0) continue;
    if (madvise(at, hi - lo, MADV_COLLAPSE) == 0) report.bytes_collapsed += hi - lo;
  }
  std::fclose(maps);
  return report;
}

}  // namespace mrc::tools
