// Walks /proc/self/smaps and asks for transparent huge pages on the big anonymous writable
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

// Asks for huge pages on [begin, end) (whole huge pages inside it) and collapses them.
void back_mapping(uintptr_t begin, uintptr_t end, HugePageReport& report) {
  const uintptr_t lo = (begin + kHugeBytes - 1) & ~(kHugeBytes - 1);
  const uintptr_t hi = end & ~(kHugeBytes - 1);
  if (hi <= lo) return;
  void* at = reinterpret_cast<void*>(lo);
  ++report.mappings;
  report.bytes_asked += hi - lo;
  if (madvise(at, hi - lo, MADV_HUGEPAGE) != 0) return;
  if (madvise(at, hi - lo, MADV_COLLAPSE) == 0) report.bytes_collapsed += hi - lo;
}

}  // namespace

// /proc/self/smaps: a header line per mapping ("begin-end perms offset dev inode [path]"), then
// its fields, the last of which is "VmFlags:"; a mapping flagged "nh" was asked to stay on small
// pages (ZeroedBuffer::keep_off_huge_pages) and is left so: MADV_HUGEPAGE would undo that.
HugePageReport back_heap_with_huge_pages(size_t min_bytes) {
  HugePageReport report;
  std::FILE* smaps = std::fopen("/proc/self/smaps", "r");
  if (smaps == nullptr) return report;
  char line[512];
  unsigned long begin = 0, end = 0;  // of the mapping whose fields are being read
  bool candidate = false;
  while (std::fgets(line, sizeof line, smaps) != nullptr) {
    // Scanned into locals: a field line such as "Anonymous:" matches "%lx" in part.
    unsigned long lo = 0, hi = 0;
    char perms[8] = {}, path[256] = {};
    if (std::sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &lo, &hi, perms, path) >= 3) {
      begin = lo;
      end = hi;
      candidate = is_anonymous_writable(perms, path) && end - begin >= min_bytes;
    } else if (candidate && std::strncmp(line, "VmFlags:", 8) == 0) {
      candidate = false;
      if (std::strstr(line, " nh") == nullptr) back_mapping(begin, end, report);
    }
  }
  std::fclose(smaps);
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
