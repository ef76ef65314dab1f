// A heap byte buffer that starts zeroed without writing it: calloc hands large blocks out as
// fresh zero pages, so a simulation that registers gigabytes of target memory pays for the
// pages it touches, not for a memset of all of them (std::vector value-initialises every byte).
#pragma once

#include <sys/mman.h>

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
  // For a buffer about to be written whole: maps its pages now, in one call, instead of one
  // page fault per page on first touch (the kernel still zeroes each page; what goes is the
  // trap per 4 KiB). Only the whole pages inside the block; best effort (kernels before 5.14
  // refuse it and the pages fault in as before). Setup time, never the engine.
  void prefault() {
#ifdef MADV_POPULATE_WRITE
    const uintptr_t page = 4096;
    const uintptr_t begin = (reinterpret_cast<uintptr_t>(bytes_.get()) + page - 1) & ~(page - 1);
    const uintptr_t end = (reinterpret_cast<uintptr_t>(bytes_.get()) + size_) & ~(page - 1);
    if (end > begin)
      (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#endif
  }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> bytes_;
  size_t size_ = 0;
};

}  // namespace mrc
