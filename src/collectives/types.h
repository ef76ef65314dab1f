// Element types and reduction operators of the collectives, and the reduction kernels.
//
// Kernels work on raw bytes (the transport moves bytes) with the element type as a run-time
// value. Integer sums and products wrap modulo 2^bits (computed in unsigned arithmetic, so
// overflow is defined); float16 and bfloat16 are widened to float, combined, and rounded back
// to nearest-even after every step, so a result does not depend on the machine. `avg` reduces
// as a sum and divides once at the end (finalize_average), which keeps integer averages exact
// (truncating) and float averages equal to sum/ranks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace mrc::coll {

enum class DataType : uint8_t { kFloat32, kFloat64, kFloat16, kBFloat16, kInt32, kInt64, kUint8 };
enum class ReduceOp : uint8_t { kSum, kProd, kMin, kMax, kAvg };

inline constexpr DataType kAllDataTypes[] = {
    DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
    DataType::kInt32,   DataType::kInt64,   DataType::kUint8};
inline constexpr ReduceOp kAllReduceOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin,
                                             ReduceOp::kMax, ReduceOp::kAvg};

size_t size_of(DataType type);
const char* to_string(DataType type);  // "float32", "bfloat16", ...
const char* to_string(ReduceOp op);    // "sum", "prod", "min", "max", "avg"
// Accepts the names above and the nccl-tests / torch spellings ("float", "half", "bf16", ...).
std::optional<DataType> parse_data_type(const std::string& text);
std::optional<ReduceOp> parse_reduce_op(const std::string& text);

// IEEE binary16 and bfloat16 conversions (round to nearest even; NaN stays NaN).
// Writes `value` at `at` as one element of `type` (rounded or truncated as a cast would):
// how benchmarks and tests build inputs of any type from one formula.
void store_value(DataType type, uint8_t* at, double value);

uint16_t float_to_half(float value);
float half_to_float(uint16_t bits);
uint16_t float_to_bfloat16(float value);
float bfloat16_to_float(uint16_t bits);

// target[i] = target[i] OP source[i] for i < count. `avg` combines as a sum.
void reduce_into(DataType type, ReduceOp op, void* target, const void* source, size_t count);
// target[i] = left[i] OP right[i]; target may alias left or right.
void reduce_pair(DataType type, ReduceOp op, void* target, const void* left, const void* right,
                 size_t count);
// For ReduceOp::kAvg, divides every element by `ranks`; other ops: nothing.
void finalize_average(DataType type, ReduceOp op, void* data, size_t count, int ranks);

}  // namespace mrc::coll
