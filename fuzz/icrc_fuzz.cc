// Fuzz target for the ICRC: every implementation the CPU supports (slicing-by-8 tables,
// PCLMULQDQ folding, VPCLMULQDQ folding, and the dispatching icrc32) must return the same CRC for
// the input at every starting offset within a 64-byte line, and a bit flip must change it.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/wire/icrc.h"
#include "core/wire/packet.h"
#include "wire_fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace mrc::wire;
  const size_t shift = size > 0 ? data[0] % 64 : 0;
  // Exact-size copy at a chosen misalignment: ASan catches any read past the end.
  std::vector<uint8_t> storage(size + shift);
  if (size > 0) std::memcpy(storage.data() + shift, data, size);
  const std::span<const uint8_t> bytes(storage.data() + shift, size);

  const uint32_t expected = detail::icrc32_portable(bytes);
  WIRE_FUZZ_CHECK(icrc32(bytes) == expected);
  if (detail::clmul_available()) WIRE_FUZZ_CHECK(detail::icrc32_clmul(bytes) == expected);
  if (detail::vclmul_available()) WIRE_FUZZ_CHECK(detail::icrc32_vclmul(bytes) == expected);

  if (size > 0) {
    const size_t bit = (static_cast<size_t>(data[size - 1]) * 131) % (size * 8);
    storage[shift + bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    WIRE_FUZZ_CHECK(icrc32(bytes) != expected);
  }
  return 0;
}
