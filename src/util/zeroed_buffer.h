// A heap byte buffer that starts zeroed without writing it: calloc hands large blocks out as
// fresh zero pages, so a simulation that registers gigabytes of target memory pays for the
// pages it touches, not for a memset of all of them (std::vector value-initialises every byte).
#pragma once

#include <sys/mman.h>

#include <algorithm>
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
  // For bytes [from, to) of the block about to be written whole: maps their pages now, in one
  // call, instead of one page fault per page on first touch (the kernel still zeroes each page;
  // what goes is the trap per 4 KiB). Only whole pages; best effort (kernels before 5.14 refuse
  // it and the pages fault in as before). Setup time, never the engine.
  void prefault(size_t from, size_t to) {
#ifdef MADV_POPULATE_WRITE
    advise_whole_pages(MADV_POPULATE_WRITE, from, to);
#endif
  }
  // Keeps the block on 4 KiB pages even where the heap is asked for transparent huge pages
  // (tools/huge_pages.h): for bulk data touched once in order, such as a simulation's payload
  // buffers, huge pages save no TLB misses worth their cost, while allocating and zeroing
  // gigabytes of them (or collapsing them afterwards) can take longer than the run. Call it
  // before the first touch. Best effort, like prefault().
  void keep_off_huge_pages() {
    advise_whole_pages(MADV_NOHUGEPAGE, 0, size_);
  }

 private:
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  // madvise over the whole 4 KiB pages inside bytes [from, to) (never a neighbour's bytes).
  void advise_whole_pages(int advice, size_t from, size_t to) {
    const uintptr_t page = 4096;
    const uintptr_t base = reinterpret_cast<uintptr_t>(bytes_.get());
    const uintptr_t begin = (base + from + page - 1) & ~(page - 1);
    const uintptr_t end = (base + std::min(to, size_)) & ~(page - 1);
    if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, advice);
  }

  std::unique_ptr<uint8_t, Free> bytes_;
  size_t size_ = 0;
};

}  // namespace mrc
