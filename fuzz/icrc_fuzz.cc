// Fuzz target for the ICRC: every implementation the CPU supports (slicing-by-8 tables,
// PCLMULQDQ folding, VPCLMULQDQ folding, and the dispatching icrc32) must return the CRC of a
// bit-at-a-time reference for the input at every starting offset within a 64-byte line, also
// when the input starts right after or ends right before an inaccessible page (the vector paths
// load the bytes in front of the message under a mask), and a bit flip must change it.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/wire/icrc.h"
#include "core/wire/packet.h"
#include "wire_fuzz_util.h"

namespace {

uint32_t reference_crc32(std::span<const uint8_t> bytes) {
  uint32_t crc = 0xFFFFFFFFu;
  for (uint8_t b : bytes) {
    crc ^= b;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ ((crc & 1u) ? 0xEDB88320u : 0u);
  }
  return ~crc;
}

void check_all(std::span<const uint8_t> bytes, uint32_t expected) {
  using namespace mrc::wire;
  WIRE_FUZZ_CHECK(detail::icrc32_portable(bytes) == expected);
  WIRE_FUZZ_CHECK(icrc32(bytes) == expected);
  if (detail::clmul_available()) WIRE_FUZZ_CHECK(detail::icrc32_clmul(bytes) == expected);
  if (detail::vclmul_available()) WIRE_FUZZ_CHECK(detail::icrc32_vclmul(bytes) == expected);
}

// Readable pages with an inaccessible page on each side, mapped once.
struct GuardedPages {
  static constexpr size_t kPages = 4;
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  uint8_t* data = nullptr;
  GuardedPages() {
    void* m = mmap(nullptr, (kPages + 2) * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    WIRE_FUZZ_CHECK(m != MAP_FAILED);
    data = static_cast<uint8_t*>(m) + page;
    WIRE_FUZZ_CHECK(mprotect(data, kPages * page, PROT_READ | PROT_WRITE) == 0);
  }
  size_t size() const { return kPages * page; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mrc::wire;
  const size_t shift = size > 0 ? data[0] % 64 : 0;
  // Exact-size copy at a chosen misalignment: ASan catches any read past the end.
  std::vector<uint8_t> storage(size + shift);
  if (size > 0) std::memcpy(storage.data() + shift, data, size);
  const std::span<const uint8_t> bytes(storage.data() + shift, size);

  const uint32_t expected = reference_crc32(bytes);
  check_all(bytes, expected);

  static GuardedPages guarded;
  if (size <= guarded.size()) {
    uint8_t* const after_guard = guarded.data;
    uint8_t* const before_guard = guarded.data + guarded.size() - size;
    if (size > 0) std::memcpy(after_guard, data, size);
    check_all(std::span<const uint8_t>(after_guard, size), expected);
    if (size > 0) std::memcpy(before_guard, data, size);
    check_all(std::span<const uint8_t>(before_guard, size), expected);
  }

  if (size > 0) {
    const size_t bit = (static_cast<size_t>(data[size - 1]) * 131) % (size * 8);
    storage[shift + bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    WIRE_FUZZ_CHECK(icrc32(bytes) != expected);
  }
  return 0;
}
