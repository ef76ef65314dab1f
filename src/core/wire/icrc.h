// Internal interface of the ICRC implementations behind wire::icrc32 (declared in packet.h).
//
// icrc32() picks the fastest implementation the CPU supports at run time. The individual
// implementations are exposed here so tests, fuzzers and benchmarks can check them against each
// other; nothing outside src/core/wire, tests, fuzz and bench should need this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace mrc::wire::detail {

// Slicing-by-8 table CRC-32 (IEEE 802.3, reflected, init/final xor 0xFFFFFFFF). Any CPU.
uint32_t icrc32_portable(std::span<const uint8_t> bytes);

// True if this CPU can run icrc32_clmul (x86-64 with PCLMULQDQ and SSE4.1).
bool clmul_available();

// The same CRC by carry-less multiplication folding (the table below 16 bytes).
// REQUIRES: clmul_available().
uint32_t icrc32_clmul(std::span<const uint8_t> bytes);

// True if this CPU can run icrc32_vclmul (x86-64 with VPCLMULQDQ and AVX-512F/BW/VL).
bool vclmul_available();

// The same CRC by 512-bit carry-less multiplication folding, for every non-empty length. Its
// first load may start up to 63 bytes before the message, under a byte mask that leaves those
// bytes unread (masked-off bytes cannot fault); nothing past the end is loaded.
// REQUIRES: vclmul_available().
uint32_t icrc32_vclmul(std::span<const uint8_t> bytes);

}  // namespace mrc::wire::detail
