// Host reference semantics of KIR ops for the op battery: element bits <-> values, rounding to every float
// format, each op's documented result, and the tolerance a plugin's result is held to.
//
// Elements travel as raw bits: the low tg_dtype_size(dtype) bytes of a uint64_t, little-endian as in memory.
#pragma once

#include <tg/plugin_abi.h>

#include <cstdint>
#include <string>

namespace tg::conformance {

uint64_t truncate_bits(uint32_t dtype, uint64_t bits);  // keeps the dtype's low bytes
int64_t to_signed(uint32_t dtype, uint64_t bits);       // sign-extended for signed ints, zero-extended otherwise
double to_double(uint32_t dtype, uint64_t bits);        // floats (all four formats), ints, bool
// `value` rounded to nearest-even in a float dtype (float16, bfloat16, float32, float64), as its bits.
uint64_t from_double(uint32_t dtype, double value);
bool is_nan_bits(uint32_t dtype, uint64_t bits);

// Whether the battery knows what `op` means on `dtype` (an op a renderer claims but that has no documented
// meaning there, such as EXP2 on int32, is reported as skipped rather than guessed at).
bool has_reference(uint32_t op, uint32_t dtype);

// The documented result of `op` on operands of `src_dtype` (WHERE's operand 0 is bool), giving `dst_dtype`.
uint64_t evaluate(uint32_t op, uint32_t src_dtype, uint32_t dst_dtype, const uint64_t* srcs);

// Whether `got` is an acceptable result: the exact bits, any NaN for a NaN, either result of MULACC (fused or
// two roundings), either zero for MAX of zeros, and within the stated tolerance for EXP2, LOG2, SIN and SQRT.
bool acceptable(uint32_t op, uint32_t src_dtype, uint32_t dst_dtype, const uint64_t* srcs, uint64_t got);

// The rule a result is held to, for failure messages: "ints wrap", "within 2 ulp", ...
std::string rule_of(uint32_t op, uint32_t src_dtype, uint32_t dst_dtype);

// An element for a failure message: "-3", "1.5 (0x3fc00000)", "true".
std::string show(uint32_t dtype, uint64_t bits);

}  // namespace tg::conformance
