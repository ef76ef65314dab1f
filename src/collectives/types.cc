// Element types, operator names and reduction kernels (see types.h). The kernels are one
// template over (element type, operator) instantiated for every pair; a 16-bit float is
// stored as uint16_t and combined through float.
#include "collectives/types.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>

#include "mrc/assert.hpp"

namespace mrc::coll {

size_t size_of(DataType type) {
  switch (type) {
    case DataType::kUint8:
      return 1;
    case DataType::kFloat16:
    case DataType::kBFloat16:
      return 2;
    case DataType::kFloat32:
    case DataType::kInt32:
      return 4;
    case DataType::kFloat64:
    case DataType::kInt64:
      return 8;
  }
  return 1;
}

const char* to_string(DataType type) {
  switch (type) {
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
    case DataType::kFloat16:
      return "float16";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kUint8:
      return "uint8";
  }
  return "?";
}

const char* to_string(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return "sum";
    case ReduceOp::kProd:
      return "prod";
    case ReduceOp::kMin:
      return "min";
    case ReduceOp::kMax:
      return "max";
    case ReduceOp::kAvg:
      return "avg";
  }
  return "?";
}

std::optional<DataType> parse_data_type(const std::string& t) {
  if (t == "float32" || t == "float" || t == "f32") return DataType::kFloat32;
  if (t == "float64" || t == "double" || t == "f64") return DataType::kFloat64;
  if (t == "float16" || t == "half" || t == "f16") return DataType::kFloat16;
  if (t == "bfloat16" || t == "bf16") return DataType::kBFloat16;
  if (t == "int32" || t == "int") return DataType::kInt32;
  if (t == "int64") return DataType::kInt64;
  if (t == "uint8" || t == "char") return DataType::kUint8;
  return std::nullopt;
}

std::optional<ReduceOp> parse_reduce_op(const std::string& t) {
  for (ReduceOp op : kAllReduceOps)
    if (t == to_string(op)) return op;
  return std::nullopt;
}

uint16_t float_to_half(float value) {
  const uint32_t f = std::bit_cast<uint32_t>(value);
  const uint32_t sign = (f >> 16) & 0x8000u;
  const uint32_t exponent = (f >> 23) & 0xFFu;
  uint32_t mantissa = f & 0x7FFFFFu;
  if (exponent == 0xFF) return static_cast<uint16_t>(sign | 0x7C00u | (mantissa ? 0x200u : 0));
  const int e = static_cast<int>(exponent) - 127 + 15;
  if (e >= 31) return static_cast<uint16_t>(sign | 0x7C00u);  // overflow: infinity
  if (e <= 0) {                                               // subnormal or zero
    if (e < -10) return static_cast<uint16_t>(sign);
    mantissa |= 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mantissa >> shift;
    const uint32_t rest = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = (static_cast<uint32_t>(e) << 10) | (mantissa >> 13);
  const uint32_t rest = mantissa & 0x1FFFu;
  if (rest > 0x1000u || (rest == 0x1000u && (half & 1))) ++half;  // may carry into infinity
  return static_cast<uint16_t>(sign | half);
}

float half_to_float(uint16_t bits) {
  const uint32_t sign = static_cast<uint32_t>(bits & 0x8000u) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1Fu;
  uint32_t mantissa = bits & 0x3FFu;
  uint32_t f = 0;
  if (exponent == 0x1F) {
    f = sign | 0x7F800000u | (mantissa << 13);
  } else if (exponent != 0) {
    f = sign | ((exponent - 15 + 127) << 23) | (mantissa << 13);
  } else if (mantissa != 0) {  // subnormal: normalise
    int e = -1;
    do {
      ++e;
      mantissa <<= 1;
    } while ((mantissa & 0x400u) == 0);
    f = sign | (static_cast<uint32_t>(127 - 15 - e) << 23) | ((mantissa & 0x3FFu) << 13);
  } else {
    f = sign;
  }
  return std::bit_cast<float>(f);
}

uint16_t float_to_bfloat16(float value) {
  const uint32_t f = std::bit_cast<uint32_t>(value);
  if ((f & 0x7F800000u) == 0x7F800000u && (f & 0x7FFFFFu) != 0)
    return static_cast<uint16_t>((f >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounded = f + 0x7FFFu + ((f >> 16) & 1u);
  return static_cast<uint16_t>(rounded >> 16);
}

float bfloat16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

namespace {

struct Half {
  static float load(uint16_t v) { return half_to_float(v); }
  static uint16_t store(float v) { return float_to_half(v); }
};
struct BFloat {
  static float load(uint16_t v) { return bfloat16_to_float(v); }
  static uint16_t store(float v) { return float_to_bfloat16(v); }
};

// Element-wise target = f(left, right) in the arithmetic type A. The operation is chosen once
// per call (pair_with), not per element, so each loop is a plain one the compiler vectorizes.
template <typename A, typename T, typename F>
void pair_loop(T* target, const T* left, const T* right, size_t count, F f) {
  for (size_t i = 0; i < count; ++i)
    target[i] = static_cast<T>(f(static_cast<A>(left[i]), static_cast<A>(right[i])));
}

template <typename A, typename T>
void pair_with(ReduceOp op, T* target, const T* left, const T* right, size_t count) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return pair_loop<A>(target, left, right, count,
                          [](A a, A b) { return static_cast<A>(a + b); });
    case ReduceOp::kProd:
      return pair_loop<A>(target, left, right, count,
                          [](A a, A b) { return static_cast<A>(a * b); });
    case ReduceOp::kMin:
      return pair_loop<A>(target, left, right, count, [](A a, A b) { return std::min(a, b); });
    case ReduceOp::kMax:
      return pair_loop<A>(target, left, right, count, [](A a, A b) { return std::max(a, b); });
  }
}

template <typename T>
void pair_plain(ReduceOp op, T* target, const T* left, const T* right, size_t count) {
  // Integer sums and products wrap (in the unsigned type: no undefined overflow).
  if constexpr (std::is_integral_v<T>) {
    if (op == ReduceOp::kSum || op == ReduceOp::kAvg || op == ReduceOp::kProd)
      return pair_with<std::make_unsigned_t<T>>(op, target, left, right, count);
  }
  pair_with<T>(op, target, left, right, count);
}

template <typename Codec>
void pair_16(ReduceOp op, uint16_t* target, const uint16_t* left, const uint16_t* right,
             size_t count) {
  const auto each = [&](auto f) {
    for (size_t i = 0; i < count; ++i)
      target[i] = Codec::store(f(Codec::load(left[i]), Codec::load(right[i])));
  };
  switch (op) {  // chosen once per call, as in pair_with
    case ReduceOp::kSum:
    case ReduceOp::kAvg:
      return each([](float a, float b) { return a + b; });
    case ReduceOp::kProd:
      return each([](float a, float b) { return a * b; });
    case ReduceOp::kMin:
      return each([](float a, float b) { return std::min(a, b); });
    case ReduceOp::kMax:
      return each([](float a, float b) { return std::max(a, b); });
  }
}

template <typename T>
void divide_plain(T* data, size_t count, int ranks) {
  for (size_t i = 0; i < count; ++i) data[i] = static_cast<T>(data[i] / static_cast<T>(ranks));
}

template <typename Codec>
void divide_16(uint16_t* data, size_t count, int ranks) {
  for (size_t i = 0; i < count; ++i)
    data[i] = Codec::store(Codec::load(data[i]) / static_cast<float>(ranks));
}

}  // namespace

void reduce_pair(DataType type, ReduceOp op, void* target, const void* left, const void* right,
                 size_t count) {
  switch (type) {
    case DataType::kFloat32:
      return pair_plain(op, static_cast<float*>(target), static_cast<const float*>(left),
                        static_cast<const float*>(right), count);
    case DataType::kFloat64:
      return pair_plain(op, static_cast<double*>(target), static_cast<const double*>(left),
                        static_cast<const double*>(right), count);
    case DataType::kFloat16:
      return pair_16<Half>(op, static_cast<uint16_t*>(target), static_cast<const uint16_t*>(left),
                           static_cast<const uint16_t*>(right), count);
    case DataType::kBFloat16:
      return pair_16<BFloat>(op, static_cast<uint16_t*>(target), static_cast<const uint16_t*>(left),
                             static_cast<const uint16_t*>(right), count);
    case DataType::kInt32:
      return pair_plain(op, static_cast<int32_t*>(target), static_cast<const int32_t*>(left),
                        static_cast<const int32_t*>(right), count);
    case DataType::kInt64:
      return pair_plain(op, static_cast<int64_t*>(target), static_cast<const int64_t*>(left),
                        static_cast<const int64_t*>(right), count);
    case DataType::kUint8:
      return pair_plain(op, static_cast<uint8_t*>(target), static_cast<const uint8_t*>(left),
                        static_cast<const uint8_t*>(right), count);
  }
}

void reduce_into(DataType type, ReduceOp op, void* target, const void* source, size_t count) {
  reduce_pair(type, op, target, target, source, count);
}

void finalize_average(DataType type, ReduceOp op, void* data, size_t count, int ranks) {
  MRC_ASSERT(ranks >= 1);
  if (op != ReduceOp::kAvg || ranks == 1) return;
  switch (type) {
    case DataType::kFloat32:
      return divide_plain(static_cast<float*>(data), count, ranks);
    case DataType::kFloat64:
      return divide_plain(static_cast<double*>(data), count, ranks);
    case DataType::kFloat16:
      return divide_16<Half>(static_cast<uint16_t*>(data), count, ranks);
    case DataType::kBFloat16:
      return divide_16<BFloat>(static_cast<uint16_t*>(data), count, ranks);
    case DataType::kInt32:
      return divide_plain(static_cast<int32_t*>(data), count, ranks);
    case DataType::kInt64:
      return divide_plain(static_cast<int64_t*>(data), count, ranks);
    case DataType::kUint8:
      return divide_plain(static_cast<uint8_t*>(data), count, ranks);
  }
}

void store_value(DataType type, uint8_t* at, double v) {
  switch (type) {
    case DataType::kFloat32: {
      const float f = static_cast<float>(v);
      std::memcpy(at, &f, 4);
      return;
    }
    case DataType::kFloat64:
      std::memcpy(at, &v, 8);
      return;
    case DataType::kFloat16: {
      const uint16_t h = float_to_half(static_cast<float>(v));
      std::memcpy(at, &h, 2);
      return;
    }
    case DataType::kBFloat16: {
      const uint16_t h = float_to_bfloat16(static_cast<float>(v));
      std::memcpy(at, &h, 2);
      return;
    }
    case DataType::kInt32: {
      const int32_t x = static_cast<int32_t>(v);
      std::memcpy(at, &x, 4);
      return;
    }
    case DataType::kInt64: {
      const int64_t x = static_cast<int64_t>(v);
      std::memcpy(at, &x, 8);
      return;
    }
    case DataType::kUint8:
      *at = static_cast<uint8_t>(static_cast<int64_t>(v));
      return;
  }
}

}  // namespace mrc::coll
