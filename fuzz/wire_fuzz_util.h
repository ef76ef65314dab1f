// Helpers shared by the wire fuzz targets: a reader that turns fuzz bytes into field values (zeros
// once the input runs out), packet equality, and a check that aborts with a message, so libFuzzer
// records the input as a crash.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <variant>

#include "core/wire/packet.h"

#define WIRE_FUZZ_CHECK(cond)                                                                   \
  do {                                                                                          \
    if (!(cond)) {                                                                              \
      std::fprintf(stderr, "wire fuzz check failed: %s at %s:%d\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                             \
    }                                                                                           \
  } while (false)

namespace mrc::wire::fuzz {

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  template <typename T>
  T take() {
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v = (v << 8) | take_byte();
    return static_cast<T>(v);
  }
  bool take_bool() { return (take_byte() & 1u) != 0; }
  // The rest of the input.
  std::span<const uint8_t> rest() {
    const std::span<const uint8_t> r(data_ + offset_, size_ - offset_);
    offset_ = size_;
    return r;
  }

 private:
  uint8_t take_byte() { return offset_ < size_ ? data_[offset_++] : uint8_t{0}; }
  const uint8_t* data_;
  size_t size_;
  size_t offset_ = 0;
};

inline bool same_packet(const Packet& a, const Packet& b) {
  if (a.index() != b.index()) return false;
  if (const auto* da = std::get_if<DataPacket>(&a)) {
    const auto* db = std::get_if<DataPacket>(&b);
    return db != nullptr && da->header == db->header &&
           std::equal(da->payload.begin(), da->payload.end(), db->payload.begin(),
                      db->payload.end());
  }
  const auto* ca = std::get_if<ControlPacket>(&a);
  const auto* cb = std::get_if<ControlPacket>(&b);
  return ca != nullptr && cb != nullptr && ca->bth == cb->bth && ca->body == cb->body;
}

}  // namespace mrc::wire::fuzz
