// Big-endian (network order) readers and writers over byte spans, with bounds checked by the
// caller's length arithmetic. Used by the wire codec; nothing here allocates.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace mrc {

// Whole-word loads and stores with one byte swap (memcpy: any alignment) where the host is
// little-endian, which the compiler turns into a mov and a bswap (or movbe); on a big-endian
// host the word is already in network order. Byte-wise code was ~1 % of a simulation's
// instructions: GCC merges only some of it.
namespace bytes_detail {
template <typename T>
inline T to_big(T v) {
  if constexpr (std::endian::native == std::endian::big) {
    return v;
  } else if constexpr (sizeof(T) == 2) {
    return __builtin_bswap16(v);
  } else if constexpr (sizeof(T) == 4) {
    return __builtin_bswap32(v);
  } else {
    return __builtin_bswap64(v);
  }
}
template <typename T>
inline void store(uint8_t* p, T v) {
  v = to_big(v);
  std::memcpy(p, &v, sizeof v);
}
template <typename T>
inline T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return to_big(v);
}
}  // namespace bytes_detail

inline void store_be16(uint8_t* p, uint16_t v) {
  bytes_detail::store(p, v);
}
inline void store_be24(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 16);
  store_be16(p + 1, static_cast<uint16_t>(v));
}
inline void store_be32(uint8_t* p, uint32_t v) {
  bytes_detail::store(p, v);
}
inline void store_be64(uint8_t* p, uint64_t v) {
  bytes_detail::store(p, v);
}
inline uint16_t load_be16(const uint8_t* p) {
  return bytes_detail::load<uint16_t>(p);
}
inline uint32_t load_be24(const uint8_t* p) {
  return (static_cast<uint32_t>(p[0]) << 16) | load_be16(p + 1);
}
inline uint32_t load_be32(const uint8_t* p) {
  return bytes_detail::load<uint32_t>(p);
}
inline uint64_t load_be64(const uint8_t* p) {
  return bytes_detail::load<uint64_t>(p);
}

}  // namespace mrc
