// A heap byte buffer that starts zeroed without writing it: calloc hands large blocks out as
// fresh zero pages, so a simulation that registers gigabytes of target memory pays for the
// pages it touches, not for a memset of all of them (std::vector value-initialises every byte).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <new>

namespace mrc {

class ZeroedBuffer {
 public:
  ZeroedBuffer() = default;
  // At least one byte is allocated, so data() is a valid address for a zero-length region.
  explicit ZeroedBuffer(size_t size)
      : bytes_(static_cast<uint8_t*>(std::calloc(size > 0 ? size : 1, 1))), size_(size) {
    if (bytes_ == nullptr) throw std::bad_alloc();  // setup time, not the datapath
  }
  uint8_t* data() { return bytes_.get(); }
  const uint8_t* data() const { return bytes_.get(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> bytes_;
  size_t size_ = 0;
};

}  // namespace mrc
