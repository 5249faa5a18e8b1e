// Facts about the ABI that the core, the SDK and tools share: printable names of dtypes and KIR ops, operand counts
// of KIR ops, and the mandatory table slots.
#pragma once

#include <tg/plugin_abi.h>

#include <cstddef>
#include <cstdint>
#include <utility>

namespace tg::sdk {

inline const char* dtype_name(uint32_t dtype) noexcept {
  static const char* const names[] = {"bool",   "int8",   "int16",   "int32",    "int64",   "uint8",  "uint16",
                                      "uint32", "uint64", "float16", "bfloat16", "float32", "float64"};
  static_assert(sizeof names / sizeof names[0] == TG_DTYPE_COUNT, "a dtype without a name");
  return dtype < TG_DTYPE_COUNT ? names[dtype] : "<bad dtype>";
}

inline const char* op_name(uint32_t op) noexcept {
  static const char* const names[] = {
      "PARAM",  "CONST",   "SPECIAL",   "DEFINE_REG", "DEFINE_LOCAL", "RANGE", "ENDRANGE", "IF",  "ENDIF", "BARRIER",
      "LOAD",   "STORE",   "VECTORIZE", "GEP",        "NEG",          "EXP2",  "LOG2",     "SIN", "SQRT",  "RECIP",
      "TRUNC",  "CAST",    "BITCAST",   "ADD",        "SUB",          "MUL",   "IDIV",     "MOD", "FDIV",  "MAX",
      "CMPLT",  "CMPNE",   "CMPEQ",     "AND",        "OR",           "XOR",   "SHL",      "SHR", "WHERE", "MULACC",
      "CUSTOM", "CUSTOMI", "FMA",       "WMMA",       "DOT4",         "LUT16", "TILE_MMA"};
  static_assert(sizeof names / sizeof names[0] == TG_KIR_OP_COUNT, "an op without a name");
  return op < TG_KIR_OP_COUNT ? names[op] : "<bad op>";
}

// The operand count range of a KIR instruction ({lo, hi}); {1, 0} for an unknown op, which no count fits.
inline std::pair<uint32_t, uint32_t> kir_arity(const tg_kir_inst& in) noexcept {
  switch (static_cast<tg_kir_op>(in.op)) {
    case TG_KIR_PARAM:
    case TG_KIR_CONST:
    case TG_KIR_DEFINE_REG:
    case TG_KIR_DEFINE_LOCAL:
    case TG_KIR_BARRIER: return {0, 0};
    case TG_KIR_SPECIAL: return {0, 1};
    case TG_KIR_RANGE:
    case TG_KIR_ENDRANGE:
    case TG_KIR_IF:
    case TG_KIR_ENDIF:
    case TG_KIR_GEP:
    case TG_KIR_NEG:
    case TG_KIR_EXP2:
    case TG_KIR_LOG2:
    case TG_KIR_SIN:
    case TG_KIR_SQRT:
    case TG_KIR_RECIP:
    case TG_KIR_TRUNC:
    case TG_KIR_CAST:
    case TG_KIR_BITCAST: return {1, 1};
    case TG_KIR_LOAD: return {2, 3};
    case TG_KIR_STORE: return {3, 4};
    case TG_KIR_VECTORIZE: return {in.vcount, in.vcount};
    case TG_KIR_ADD:
    case TG_KIR_SUB:
    case TG_KIR_MUL:
    case TG_KIR_IDIV:
    case TG_KIR_MOD:
    case TG_KIR_FDIV:
    case TG_KIR_MAX:
    case TG_KIR_CMPLT:
    case TG_KIR_CMPNE:
    case TG_KIR_CMPEQ:
    case TG_KIR_AND:
    case TG_KIR_OR:
    case TG_KIR_XOR:
    case TG_KIR_SHL:
    case TG_KIR_SHR: return {2, 2};
    case TG_KIR_WHERE:
    case TG_KIR_MULACC:
    case TG_KIR_FMA:
    case TG_KIR_DOT4: return {3, 3};
    case TG_KIR_WMMA: return {3, 3};
    case TG_KIR_LUT16: return {5, 5};
    case TG_KIR_TILE_MMA: return {10, 10};
    case TG_KIR_CUSTOM:
    case TG_KIR_CUSTOMI: return {0, 10};  // {0}..{9}
    case TG_KIR_OP_COUNT: break;
  }
  return {1, 0};  // no count fits: an unknown op
}

// The case labels of every ALU op, for switches over the whole op enum that treat the ALU ops alike (the verifier,
// the C renderer base, INTERP): one list to extend when an op is added.
#define TG_SDK_KIR_ALU_CASES \
  case TG_KIR_NEG:           \
  case TG_KIR_EXP2:          \
  case TG_KIR_LOG2:          \
  case TG_KIR_SIN:           \
  case TG_KIR_SQRT:          \
  case TG_KIR_RECIP:         \
  case TG_KIR_TRUNC:         \
  case TG_KIR_ADD:           \
  case TG_KIR_SUB:           \
  case TG_KIR_MUL:           \
  case TG_KIR_IDIV:          \
  case TG_KIR_MOD:           \
  case TG_KIR_FDIV:          \
  case TG_KIR_MAX:           \
  case TG_KIR_CMPLT:         \
  case TG_KIR_CMPNE:         \
  case TG_KIR_CMPEQ:         \
  case TG_KIR_AND:           \
  case TG_KIR_OR:            \
  case TG_KIR_XOR:           \
  case TG_KIR_SHL:           \
  case TG_KIR_SHR:           \
  case TG_KIR_WHERE:         \
  case TG_KIR_MULACC:        \
  case TG_KIR_FMA:           \
  case TG_KIR_DOT4:          \
  case TG_KIR_LUT16

// The table slots ABI 1.0 made mandatory, by name and offset; the slots later minors appended are optional.
struct AbiSlot {
  const char* name;
  size_t offset;
};
#define TG_SDK_SLOT(member) \
  AbiSlot { #member, offsetof(tg_plugin_api, member) }
inline constexpr AbiSlot kRequiredSlots[] = {TG_SDK_SLOT(status_free),        TG_SDK_SLOT(device_count),
                                             TG_SDK_SLOT(device_open),        TG_SDK_SLOT(device_close),
                                             TG_SDK_SLOT(device_get_info),    TG_SDK_SLOT(renderer_create),
                                             TG_SDK_SLOT(renderer_destroy),   TG_SDK_SLOT(renderer_get_caps),
                                             TG_SDK_SLOT(renderer_render),    TG_SDK_SLOT(compiler_create),
                                             TG_SDK_SLOT(compiler_destroy),   TG_SDK_SLOT(compiler_compile),
                                             TG_SDK_SLOT(blob_free),          TG_SDK_SLOT(allocator_alloc),
                                             TG_SDK_SLOT(allocator_free),     TG_SDK_SLOT(allocator_copy_in),
                                             TG_SDK_SLOT(allocator_copy_out), TG_SDK_SLOT(program_create),
                                             TG_SDK_SLOT(program_destroy),    TG_SDK_SLOT(hwqueue_create),
                                             TG_SDK_SLOT(hwqueue_destroy),    TG_SDK_SLOT(hwqueue_exec),
                                             TG_SDK_SLOT(hwqueue_copy),       TG_SDK_SLOT(hwqueue_signal),
                                             TG_SDK_SLOT(hwqueue_timestamp),  TG_SDK_SLOT(hwqueue_submit),
                                             TG_SDK_SLOT(hwqueue_wait),       TG_SDK_SLOT(hwqueue_read_timestamp)};
#undef TG_SDK_SLOT

}  // namespace tg::sdk
