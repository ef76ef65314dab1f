// A vector of trivially copyable elements whose first N live inside the object: a container
// that usually holds a few elements (an endpoint's queue pairs in its schedule) costs no
// allocation of its own. Past N it moves to the heap, doubling. Only what its users need: no
// copies (moves only), no insert or erase in the middle. It keeps a pointer to its elements
// (the inline ones or the heap's), so an access is one load rather than a test of where they
// are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "mrc/assert.hpp"

namespace mrc {

template <typename T, uint32_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T> && N > 0);

 public:
  SmallVector() = default;
  SmallVector(const SmallVector&) = delete;
  SmallVector& operator=(const SmallVector&) = delete;
  SmallVector(SmallVector&& other) noexcept { take(other); }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      release();
      take(other);
    }
    return *this;
  }
  ~SmallVector() { release(); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& front() { return data()[0]; }
  const T& front() const { return data()[0]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

  void push_back(const T& value) {
    if (size_ == capacity_) grow(size_ + 1);
    data()[size_++] = value;
  }
  void pop_back() {
    MRC_DASSERT(size_ > 0);
    --size_;
  }
  void clear() { size_ = 0; }
  // Grows with copies of `value` or shrinks to `n` elements.
  void resize(uint32_t n, const T& value = T{}) {
    if (n > capacity_) grow(n);
    for (uint32_t i = size_; i < n; ++i) data()[i] = value;
    size_ = n;
  }

 private:
  bool on_heap() const { return data_ != inline_; }
  void release() {
    if (on_heap()) delete[] data_;
    data_ = inline_;
  }
  void grow(uint32_t at_least) {
    uint32_t capacity = capacity_ * 2;
    if (capacity < at_least) capacity = at_least;
    T* bigger = new T[capacity];
    std::memcpy(static_cast<void*>(bigger), data_, sizeof(T) * size_);
    release();
    data_ = bigger;
    capacity_ = capacity;
  }
  // REQUIRES: this holds no heap block (data_ == inline_).
  void take(SmallVector& other) {
    size_ = other.size_;
    capacity_ = other.capacity_;
    if (other.on_heap()) {
      data_ = other.data_;
    } else {
      std::memcpy(static_cast<void*>(inline_), other.inline_, sizeof(T) * size_);
    }
    other.data_ = other.inline_;
    other.size_ = 0;
    other.capacity_ = N;
  }

  T* data_ = inline_;  // inline_, or the heap block of capacity_ elements once past N
  uint32_t size_ = 0;
  uint32_t capacity_ = N;
  T inline_[N];
};

}  // namespace mrc
