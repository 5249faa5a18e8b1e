// The ALU op sets renderers usually take whole, as bit masks for tg_renderer_caps.ops; a renderer starts from
// these and adds or drops what its target does differently.
#pragma once

#include <cstdint>

#include "tg/plugin_abi.h"

namespace tg::sdk {

constexpr uint64_t op_bit(uint32_t op) { return uint64_t{1} << op; }

inline constexpr uint64_t kIntegerOps =
    op_bit(TG_KIR_NEG) | op_bit(TG_KIR_ADD) | op_bit(TG_KIR_SUB) | op_bit(TG_KIR_MUL) | op_bit(TG_KIR_IDIV) |
    op_bit(TG_KIR_MOD) | op_bit(TG_KIR_MAX) | op_bit(TG_KIR_CMPLT) | op_bit(TG_KIR_CMPNE) | op_bit(TG_KIR_CMPEQ) |
    op_bit(TG_KIR_AND) | op_bit(TG_KIR_OR) | op_bit(TG_KIR_XOR) | op_bit(TG_KIR_SHL) | op_bit(TG_KIR_SHR) |
    op_bit(TG_KIR_WHERE) | op_bit(TG_KIR_MULACC) | op_bit(TG_KIR_CAST) | op_bit(TG_KIR_BITCAST);

inline constexpr uint64_t kBoolOps = op_bit(TG_KIR_AND) | op_bit(TG_KIR_OR) | op_bit(TG_KIR_XOR) |
                                     op_bit(TG_KIR_CMPNE) | op_bit(TG_KIR_CMPEQ) | op_bit(TG_KIR_CMPLT) |
                                     op_bit(TG_KIR_WHERE) | op_bit(TG_KIR_CAST);

// The float ops every IEEE target computes exactly. EXP2/LOG2/SIN are left out on purpose: the core's polynomials
// have measured ulp bounds that are the same on every device, and they vectorize where libm calls do not. FMA
// (one rounding) is what the core accumulates products with when a renderer has it: a matmul's inner loop.
inline constexpr uint64_t kFloatOps =
    op_bit(TG_KIR_NEG) | op_bit(TG_KIR_ADD) | op_bit(TG_KIR_SUB) | op_bit(TG_KIR_MUL) | op_bit(TG_KIR_FDIV) |
    op_bit(TG_KIR_MAX) | op_bit(TG_KIR_CMPLT) | op_bit(TG_KIR_CMPNE) | op_bit(TG_KIR_CMPEQ) | op_bit(TG_KIR_SQRT) |
    op_bit(TG_KIR_RECIP) | op_bit(TG_KIR_TRUNC) | op_bit(TG_KIR_WHERE) | op_bit(TG_KIR_MULACC) | op_bit(TG_KIR_CAST) |
    op_bit(TG_KIR_BITCAST) | op_bit(TG_KIR_FMA);

// Storage-only types (the core computes on them in float32): loads, stores and conversions.
inline constexpr uint64_t kStorageOps = op_bit(TG_KIR_CAST) | op_bit(TG_KIR_BITCAST);

// The common policy: bool, float16/bfloat16 as storage, IEEE float32/float64, integers.
constexpr uint64_t standard_ops(uint32_t dtype) {
  if (dtype == TG_DTYPE_BOOL) return kBoolOps;
  if (dtype == TG_DTYPE_FLOAT16 || dtype == TG_DTYPE_BFLOAT16) return kStorageOps;
  return dtype == TG_DTYPE_FLOAT32 || dtype == TG_DTYPE_FLOAT64 ? kFloatOps : kIntegerOps;
}

// ABI 1.3's packed loads (caps.packed_loads) for every dtype of 2, 4 or 8 bytes: what a renderer whose target
// reads memory at any alignment (a host CPU, an interpreter) can declare.
inline constexpr uint32_t kPackableDtypes =
    (1u << TG_DTYPE_INT16) | (1u << TG_DTYPE_INT32) | (1u << TG_DTYPE_INT64) | (1u << TG_DTYPE_UINT16) |
    (1u << TG_DTYPE_UINT32) | (1u << TG_DTYPE_UINT64) | (1u << TG_DTYPE_FLOAT16) | (1u << TG_DTYPE_BFLOAT16) |
    (1u << TG_DTYPE_FLOAT32) | (1u << TG_DTYPE_FLOAT64);

}  // namespace tg::sdk
