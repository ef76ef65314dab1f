// Walks /proc/self/maps and asks for transparent huge pages on the big anonymous writable
// mappings (huge_pages.h). Linux only; every step may fail and is then skipped.
#include "tools/huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

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

void reexec_with_malloc_huge_pages(char** argv) {
  constexpr const char* kTunable = "glibc.malloc.hugetlb";
  const char* found = std::getenv("GLIBC_TUNABLES");
  const std::string before = found != nullptr ? found : "";
  if (before.find(kTunable) != std::string::npos) return;
  const char* preload = std::getenv("LD_PRELOAD");
  if (preload != nullptr && std::strstr(preload, "vgpreload") != nullptr) return;
  const std::string value = (before.empty() ? "" : before + ":") + kTunable + "=1";
  if (setenv("GLIBC_TUNABLES", value.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  if (found != nullptr) {  // still here: run as before (the built heap is collapsed)
    setenv("GLIBC_TUNABLES", before.c_str(), 1);
  } else {
    unsetenv("GLIBC_TUNABLES");
  }
}

}  // namespace mrc::tools
