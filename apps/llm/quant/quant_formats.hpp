// How each weight format turns packed bytes into values: one decoder per format, written as custom-kernel
// expressions, so every kernel (and every plugin) decodes a block the same way.
#pragma once

#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "gguf/gguf.hpp"
#include "tg/custom_kernel.hpp"

namespace tg::llm {

// Reads the bytes of one group (32 elements, or one 256-element super-block) from the packed weight bytes.
struct GroupReader {
  CustomKernel& k;
  KExpr words;  // the uint8 weight buffer
  KExpr base;   // int64 index of the group's first byte
  KExpr table;  // int64 index in `words` of the format's grid (Format::grid, stored after the weights), if it has one

  KExpr word(const KExpr& off) const;  // little-endian uint16 at a byte offset, as int32
  KExpr byte(const KExpr& off) const;  // unsigned byte at a byte offset, as int32 in [0, 255]
  KExpr byte(int64_t off) const;
  KExpr u32(int64_t off) const;          // little-endian uint32 at a byte offset
  KExpr sbyte(const KExpr& off) const;   // signed byte, int32 in [-128, 127]
  KExpr half(int64_t off) const;         // float16 at a byte offset, as float32
  KExpr packed(const KExpr& off) const;  // little-endian int32 of 4 bytes at a byte offset, any alignment
  KExpr packed(int64_t off) const;
  KExpr c(int64_t v) const;  // int64 constant (for offset arithmetic)
  KExpr i(int64_t v) const;  // int32 constant (for bit arithmetic)
  // byte j of grid entry `entry` (int32) of a grid with `width`-byte entries, as int32: unsigned, or signed bytes
  KExpr grid(const KExpr& entry, const KExpr& j, int64_t width, bool is_signed = false) const;
};

// value of element `e` (int64, in [0, group_elems)) of the group `r` reads, as float32
using Decoder = std::function<KExpr(const GroupReader& r, const KExpr& e)>;

// The byte form of the integer formats, for products on byte dot products (KExpr::dot4): the weights of 32-element
// sub-block `sub` of a block as unsigned bytes u, with w = a * (u - offset) + m. word(r, sub, j) packs elements
// 4j .. 4j + 3 (j in [0, 8)) of the sub-block, element 4j in the low byte; scale(r, sub, half) is (a, m) of the
// half's 16 elements as float32 (m only where the format has a minimum).
struct ByteForm {
  std::function<KExpr(const GroupReader& r, const KExpr& sub, const KExpr& j)> word;
  std::function<std::pair<KExpr, KExpr>(const GroupReader& r, const KExpr& sub, const KExpr& half)> scale;
  int64_t offset = 0;  // a fixed zero point (Q8_0: 128, Q4_0: 8), subtracted in integers
  // the bytes `word` yields lie in [word_min, word_max]: bounds that let the int8 products promise narrow byte dot
  // products (KExpr::dot4's `narrow`, x86's vpmaddubsw where there is no VNNI)
  int64_t word_min = 0, word_max = 255;
  bool has_min = false;       // m is used (Q4_1, Q5_1, Q4_K, Q5_K)
  bool split_halves = false;  // the halves have scales of their own (Q6_K's 16-element scales)
  // Where the weights are stored as plain signed bytes (Q8_0): word j as stored, w = a * s. The tiled product then
  // takes the weights as dot4's signed operand, straight from memory (vpdpbusd broadcasts it in the instruction:
  // no decode, no general-register round trip), and the activation as the unsigned one.
  std::function<KExpr(const GroupReader& r, const KExpr& sub, const KExpr& j)> signed_word;
};

struct Format {
  GGMLType type;
  int64_t group_elems;  // elements a decoder call covers: the block, or 32 for the plain float types
  int64_t group_bytes;
  Decoder decode;
  const ByteForm* bytes = nullptr;  // the byte form, for the formats meant to run on int8 dot products
  // the lattice an IQ format's indices pick from (generated from the gguf package: gen_iq_grids.py); its bytes are
  // stored after the weights' (upload_matrix), where GroupReader::table finds them
  std::span<const uint8_t> grid;
};

// The format of `t`, or nullptr when no decoder exists.
const Format* find_format(GGMLType t);
// Every type with a format, in the table's order.
std::vector<GGMLType> format_types();

}  // namespace tg::llm
