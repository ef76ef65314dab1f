// mrc::prefetch: start loading the cache line at an address (for reading), without waiting and
// without faulting (any address, null included, is fine).
//
// Not __builtin_prefetch: GCC 12 at -O2 silently deletes the builtin from small inline
// functions that branch over three or more prefetches (the simulator's staged prefetch hooks,
// sim/fabric.h, compiled to nothing; seen in the disassembly). A
// volatile asm statement cannot be deleted, and passing the address in a register keeps the
// C++ side free of any dereference.
#pragma once

namespace mrc {

inline void prefetch(const void* address) {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 (%0)" : : "r"(address));
#elif defined(__aarch64__)
  asm volatile("prfm pldl1keep, [%0]" : : "r"(address));
#else
  __builtin_prefetch(address);
#endif
}

}  // namespace mrc
