// Bytes as hex text and back, for text channels (connection strings, key files, the OCP
// controller's forwarded structures, decoding tools).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mrc {

// Two lower-case hex digits per byte.
std::string to_hex(std::span<const uint8_t> bytes);
// An even number of hex digits (either case) into `out`; false, `out` unspecified, if not.
bool from_hex(std::string_view text, std::vector<uint8_t>& out);

}  // namespace mrc
