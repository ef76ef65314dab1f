// An allocator whose value-initialising construct() default-initialises instead, so
// std::vector<uint8_t, DefaultInitAllocator<uint8_t>>::resize(n) grows without zero-filling the
// new bytes. For buffers that are always written before they are read (the simulator's packet
// bytes: the engine writes a datagram straight into them, no copy and no memset). Cost: a vector
// with any allocator but std::allocator copies ranges (insert, assign, copy construction)
// element by element instead of with memmove, so fill one with resize and memcpy.
#pragma once

#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace mrc {

template <typename T>
class DefaultInitAllocator : public std::allocator<T> {
 public:
  using value_type = T;
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };

  DefaultInitAllocator() noexcept = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}  // NOLINT: rebinding copy

  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <typename T, typename U>
bool operator==(const DefaultInitAllocator<T>&, const DefaultInitAllocator<U>&) noexcept {
  return true;
}

}  // namespace mrc
