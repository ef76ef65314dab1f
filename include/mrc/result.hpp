// Result<T, E>: a value or an error, for operations that can fail for reasons that are not bugs
// (bad input, bad configuration). mrc uses no exceptions on the datapath; programmer errors are
// MRC_ASSERTs instead. C++20 has no std::expected, so this is the small subset we need.
#pragma once

#include <utility>
#include <variant>

#include "mrc/assert.hpp"

namespace mrc {

template <typename E>
struct Err {
  E error;
};
template <typename E>
Err(E) -> Err<E>;

template <typename T, typename E>
class [[nodiscard]] Result {
 public:
  Result(T value) : storage_(std::in_place_index<0>, std::move(value)) {}         // NOLINT
  Result(Err<E> err) : storage_(std::in_place_index<1>, std::move(err.error)) {}  // NOLINT

  bool ok() const { return storage_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() {
    MRC_ASSERT(ok());
    return std::get<0>(storage_);
  }
  const T& value() const {
    MRC_ASSERT(ok());
    return std::get<0>(storage_);
  }
  const E& error() const {
    MRC_ASSERT(!ok());
    return std::get<1>(storage_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, E> storage_;
};

// For operations that return nothing on success.
struct Ok {};

}  // namespace mrc
