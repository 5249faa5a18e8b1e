// Printable names of the ABI's dtypes, KIR ops and table slots, for messages and checks (core, SDK and tools
// share them).
#pragma once

#include <tg/plugin_abi.h>

#include <cstddef>
#include <cstdint>

namespace tg::sdk {

inline const char* dtype_name(uint32_t dtype) noexcept {
  static const char* const names[] = {"bool",     "int8",    "int16",  "int32",  "int64",
                                                    "uint8",    "uint16",  "uint32", "uint64", "float16",
                                                    "bfloat16", "float32", "float64"};
  static_assert(sizeof names / sizeof names[0] == TG_DTYPE_COUNT, "a dtype without a name");
  return dtype < TG_DTYPE_COUNT ? names[dtype] : "<bad dtype>";
}

inline const char* op_name(uint32_t op) noexcept {
  static const char* const names[] = {
      "PARAM", "CONST", "SPECIAL",   "DEFINE_REG", "DEFINE_LOCAL", "RANGE", "ENDRANGE", "IF",  "ENDIF", "BARRIER",
      "LOAD",  "STORE", "VECTORIZE", "GEP",        "NEG",          "EXP2",  "LOG2",     "SIN", "SQRT",  "RECIP",
      "TRUNC", "CAST",  "BITCAST",   "ADD",        "SUB",          "MUL",   "IDIV",     "MOD", "FDIV",  "MAX",
      "CMPLT", "CMPNE", "CMPEQ",     "AND",        "OR",           "XOR",   "SHL",      "SHR", "WHERE", "MULACC",
      "CUSTOM", "CUSTOMI", "FMA"};
  static_assert(sizeof names / sizeof names[0] == TG_KIR_OP_COUNT, "an op without a name");
  return op < TG_KIR_OP_COUNT ? names[op] : "<bad op>";
}

// The table slots ABI 1.0 made mandatory, by name and offset; the slots later minors appended are optional.
struct AbiSlot {
  const char* name;
  size_t offset;
};
#define TG_SDK_SLOT(member) AbiSlot{#member, offsetof(tg_plugin_api, member)}
inline constexpr AbiSlot kRequiredSlots[] = {
    TG_SDK_SLOT(status_free),       TG_SDK_SLOT(device_count),       TG_SDK_SLOT(device_open),
    TG_SDK_SLOT(device_close),      TG_SDK_SLOT(device_get_info),    TG_SDK_SLOT(renderer_create),
    TG_SDK_SLOT(renderer_destroy),  TG_SDK_SLOT(renderer_get_caps),  TG_SDK_SLOT(renderer_render),
    TG_SDK_SLOT(compiler_create),   TG_SDK_SLOT(compiler_destroy),   TG_SDK_SLOT(compiler_compile),
    TG_SDK_SLOT(blob_free),         TG_SDK_SLOT(allocator_alloc),    TG_SDK_SLOT(allocator_free),
    TG_SDK_SLOT(allocator_copy_in), TG_SDK_SLOT(allocator_copy_out), TG_SDK_SLOT(program_create),
    TG_SDK_SLOT(program_destroy),   TG_SDK_SLOT(hwqueue_create),     TG_SDK_SLOT(hwqueue_destroy),
    TG_SDK_SLOT(hwqueue_exec),      TG_SDK_SLOT(hwqueue_copy),       TG_SDK_SLOT(hwqueue_signal),
    TG_SDK_SLOT(hwqueue_timestamp), TG_SDK_SLOT(hwqueue_submit),     TG_SDK_SLOT(hwqueue_wait),
    TG_SDK_SLOT(hwqueue_read_timestamp)};
#undef TG_SDK_SLOT

}  // namespace tg::sdk
