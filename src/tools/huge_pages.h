// Backing the simulator's heap with transparent huge pages once a run is built.
//
// A fabric-scale run touches a few cache lines of each of thousands of hosts per step, spread
// over hundreds of megabytes: with 4 KiB pages nearly every such touch also misses the TLB and
// walks the page table. Where the kernel leaves transparent huge pages to madvise (Debian's
// default), the heap gets them only if asked: this asks for the anonymous writable mappings
// the process has (the malloc heap and its large blocks), and collapses what is already there
// (MADV_COLLAPSE, Linux 6.1) so the built hosts move onto 2 MiB pages at once. It changes no
// result, only speed; on kernels without it every call fails harmlessly.
#pragma once

#include <cstddef>

namespace mrc::tools {

struct HugePageReport {
  size_t mappings = 0;         // anonymous writable mappings asked
  size_t bytes_asked = 0;      // their size
  size_t bytes_collapsed = 0;  // of which the kernel collapsed into huge pages now
};

// Asks for huge pages on the process's anonymous writable mappings of at least `min_bytes`.
HugePageReport back_heap_with_huge_pages(size_t min_bytes = size_t{4} << 20);

}  // namespace mrc::tools
