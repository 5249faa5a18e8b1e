// Printable names of the ABI's dtypes and KIR ops, for messages and dumps (core, SDK and tools share them).
#pragma once

#include <tg/plugin_abi.h>

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

}  // namespace tg::sdk
