// How each weight format turns packed bytes into values: one decoder per format, written as custom-kernel
// expressions, so every kernel (and every plugin) decodes a block the same way.
#pragma once

#include <functional>

#include "gguf.hpp"
#include "tg/custom_kernel.hpp"

namespace tg::llm {

// Reads the bytes of one group (32 elements, or one 256-element super-block) from the packed weight bytes.
struct GroupReader {
  CustomKernel& k;
  KExpr words;  // the uint8 weight buffer
  KExpr base;   // int64 index of the group's first byte
  KExpr lut;    // float32 table of 16 entries (IQ4 formats), empty otherwise

  KExpr word(const KExpr& off) const;         // little-endian uint16 at a byte offset, as int32
  KExpr byte(const KExpr& off) const;         // unsigned byte at a byte offset, as int32 in [0, 255]
  KExpr byte(int64_t off) const;
  KExpr u32(int64_t off) const;               // little-endian uint32 at a byte offset
  KExpr sbyte(const KExpr& off) const;        // signed byte, int32 in [-128, 127]
  KExpr half(int64_t off) const;              // float16 at a byte offset, as float32
  KExpr c(int64_t v) const;                   // int64 constant (for offset arithmetic)
  KExpr i(int64_t v) const;                   // int32 constant (for bit arithmetic)
};

// value of element `e` (int64, in [0, group_elems)) of the group `r` reads, as float32
using Decoder = std::function<KExpr(const GroupReader& r, const KExpr& e)>;

struct Format {
  GGMLType type;
  int64_t group_elems;  // elements a decoder call covers: the block, or 32 for the plain float types
  int64_t group_bytes;
  bool needs_lut;       // reads the IQ4 16-entry codebook
  Decoder decode;
};

// The format of `t`, or nullptr when no decoder exists.
const Format* find_format(GGMLType t);
// The IQ4_NL / IQ4_XS codebook (ggml's kvalues_iq4nl).
const float* iq4_codebook();

}  // namespace tg::llm
