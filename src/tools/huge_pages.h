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

// Better still, glibc's malloc can ask for huge pages itself as its heap grows (the tunable
// glibc.malloc.hugetlb=1, glibc 2.35 on): a run is then built on 2 MiB pages, without a fault
// per 4 KiB page and with nothing left for back_heap_with_huge_pages to copy (an all-to-all
// with payload spent most of its setup copying gigabytes into huge pages). Tunables are read
// when a process starts, so this re-executes the program (/proc/self/exe, same arguments) with
// the tunable added to GLIBC_TUNABLES, which its children inherit. It returns, changing
// nothing, if GLIBC_TUNABLES already names the tunable (the user's choice, or the re-executed
// process), under valgrind (the new process would run outside it) or if exec fails.
void reexec_with_malloc_huge_pages(char** argv);

}  // namespace mrc::tools
