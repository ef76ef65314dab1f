// Assertions that stay on in release builds.
//
// MRC_ASSERT is for cheap invariants whose violation means a bug in mrc itself; it aborts with
// the failing expression and location, in every build type, because continuing on a corrupted
// transport state could write outside a registered memory region. Bad input from the network is
// never asserted on: it is an operating error, dropped and counted by the caller.
// MRC_DASSERT is for O(n) checks: compiled where NDEBUG is not defined (the debug and
// asan-ubsan presets), left out of the release preset (-DNDEBUG).
#pragma once

#include <cstdio>
#include <cstdlib>

namespace mrc::detail {
[[noreturn]] inline void assert_fail(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "mrc: assertion failed: %s at %s:%d\n", expr, file, line);
  std::abort();
}
}  // namespace mrc::detail

#define MRC_ASSERT(expr) \
  ((expr) ? static_cast<void>(0) : ::mrc::detail::assert_fail(#expr, __FILE__, __LINE__))

#ifdef NDEBUG
#define MRC_DASSERT(expr) static_cast<void>(0)
#else
#define MRC_DASSERT(expr) MRC_ASSERT(expr)
#endif
