// How much memory this machine has, for the tools' checks of test sizes: a run whose buffers
// could not fit is refused with a message before it allocates (an allocation that fails would
// end the process with std::bad_alloc instead).
#pragma once

#include <unistd.h>

#include <cstdint>
#include <string>

namespace mrc::tools {

// Physical memory in bytes, or 0 if the system does not say.
inline uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_bytes = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page_bytes > 0 ? uint64_t(pages) * uint64_t(page_bytes) : 0;
}

// Why `bytes` of buffers (`what`) cannot be asked of this machine, or "": more than half its
// memory is refused, so that a typo in a size ends in a message, not in the OOM killer.
inline std::string buffers_too_large(uint64_t bytes, const std::string& what) {
  const uint64_t memory = physical_memory_bytes();
  if (memory == 0 || bytes <= memory / 2) return "";
  return what + " need " + std::to_string(bytes >> 20) +
         " MiB, more than half of this machine's memory (" + std::to_string(memory >> 20) + " MiB)";
}

}  // namespace mrc::tools
