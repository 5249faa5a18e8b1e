// Hand-written kernels at the UOp level, called on Tensors (the LLM's quantized kernels are written this way).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tg/dtype.hpp"
#include "tg/tensor.hpp"

namespace tg {

namespace ir {
class UOp;
}

enum class Axis {
  GLOBAL,  // one output index per iteration; the first GLOBAL range of a `parallel` kernel is spread over cores
  LOOP,    // a sequential loop, run by loop()
  REDUCE,  // reduced over by reduce()
  UPCAST,  // like LOOP, but unrolled at compile time (a constant per iteration)
  UNROLL,  // like REDUCE, but unrolled at compile time
  LOCAL,   // work-group index: needs a renderer with local memory
};

enum class Reduce { SUM, MAX, MIN };

// A value or a statement of a custom kernel. Arithmetic follows the C rules of the operand dtypes (both sides
// must have the same dtype; use cast()).
class KExpr {
 public:
  KExpr() = default;
  explicit KExpr(std::shared_ptr<const ir::UOp> n) : node(std::move(n)) {}
  std::shared_ptr<const ir::UOp> node;

  DType dtype() const;
  KExpr cast(DType d) const;
  KExpr operator+(const KExpr& o) const;
  KExpr operator-(const KExpr& o) const;
  KExpr operator*(const KExpr& o) const;
  KExpr operator/(const KExpr& o) const;  // floats: IEEE division; ints: truncating (divisor must not be 0)
  KExpr operator%(const KExpr& o) const;
  KExpr operator<(const KExpr& o) const;
  KExpr operator==(const KExpr& o) const;
  KExpr operator!=(const KExpr& o) const;
  KExpr operator&&(const KExpr& o) const;
  KExpr operator||(const KExpr& o) const;
  // integers only: bitwise and shifts (shifting by the width or more is undefined in KIR, as in C)
  KExpr operator&(const KExpr& o) const;
  KExpr operator|(const KExpr& o) const;
  KExpr operator^(const KExpr& o) const;
  KExpr operator<<(const KExpr& o) const;
  KExpr operator>>(const KExpr& o) const;
  KExpr operator&(int64_t o) const;
  KExpr operator<<(int64_t o) const;
  KExpr operator>>(int64_t o) const;
  KExpr operator-(int64_t o) const;
  KExpr bitcast(DType d) const;  // same itemsize (float16 bits from a uint16, say)
  KExpr operator+(int64_t o) const;
  KExpr operator*(int64_t o) const;
  KExpr operator<(int64_t o) const;
  static KExpr max(const KExpr& a, const KExpr& b);
  // 2^x for floats: the renderer's exp2 where it has one, else the core's polynomial (as Tensor::exp's)
  KExpr exp2() const;
  static KExpr where(const KExpr& c, const KExpr& a, const KExpr& b);
  // a * b + c for floats: rounded once where the renderer has a fused multiply-add, else a product and a sum
  static KExpr fma(const KExpr& a, const KExpr& b, const KExpr& c);
  // acc + the sum over bytes i = 0..3 of (byte i of u, unsigned) * (byte i of s, signed), all int32, wrapping:
  // one instruction where the renderer has a byte dot product (x86 VNNI, dp4a), else shifts and multiplies.
  // `narrow`: the caller promises that each pair of byte products (bytes 0 and 1, bytes 2 and 3) sums within
  // int16 (every byte of u <= 127, or every byte of s within +-64, suffices), which lets x86 without VNNI sum the
  // pairs with saturation (vpmaddubsw, two instructions for 8 lanes); values outside the promise give wrong sums
  static KExpr dot4(const KExpr& acc, const KExpr& u, const KExpr& s, bool narrow = false);
  // byte i of the result = table[(byte i of idx) & 15], idx int32: one instruction where the renderer has a byte
  // table lookup (x86 pshufb), else shifts, masks and selects
  static KExpr lut16(const KExpr& idx, const std::array<uint8_t, 16>& table);
};

// An operand of CustomKernel::tile_mma: a buffer, the element index where the operand starts, and a stride in
// elements (C: between rows; A and B: between slabs of 16 rows or columns).
struct TileOperand {
  KExpr buffer, index, stride;
};

// The definition of a kernel. Buffers are the Tensor arguments in call order (outputs first, then inputs).
//
// Ordering model: statements run in the order they are added with run(); a statement inside loop() runs once per
// iteration; a load that must see an earlier store to the same register or local buffer takes the buffer through
// after(buffer, {store}) — without it the compiler may use a value loaded before the store.
class CustomKernel {
 public:
  explicit CustomKernel(std::string name);

  KExpr buffer(int index, DType dtype);  // the index-th Tensor argument, as a pointer
  KExpr range(int64_t n, Axis axis);     // an index in [0, n)
  KExpr constant(double v, DType dtype);
  // a variable's value at launch (bind it in operator()): one compiled kernel serves every value, and a Jit
  // replay patches it like any other kernel's variable
  KExpr variable(const Variable& v);
  KExpr load(const KExpr& buf, const KExpr& idx);
  KExpr load(const KExpr& buf, const KExpr& idx, const KExpr& gate);  // 0 where the gate is false
  // A `dtype` value (2, 4 or 8 bytes) read from a uint8 buffer at byte `idx`, little-endian, at any alignment:
  // one (vector) load where the renderer takes packed loads, else its bytes one by one
  KExpr load_packed(const KExpr& bytes, const KExpr& idx, DType dtype);
  KExpr reduce(const KExpr& value, Reduce op, const std::vector<KExpr>& ranges);
  KExpr reg(DType dtype, int64_t size);    // a private array
  KExpr local(DType dtype, int64_t size);  // a work-group array (renderers with local memory only)
  KExpr store(const KExpr& buf, const KExpr& idx, const KExpr& value);
  KExpr store(const KExpr& buf, const KExpr& idx, const KExpr& value, const KExpr& gate);
  KExpr loop(const std::vector<KExpr>& statements, const std::vector<KExpr>& ranges);
  KExpr after(const KExpr& buf, const std::vector<KExpr>& statements);
  KExpr barrier(const std::vector<KExpr>& statements);
  // Inline code pasted into the rendered source, one variant per source language (a renderer's caps.language:
  // "c" for CPU, "opencl-c" for QCOM, "cuda" for NV); {0}..{9} stand for `args` (values or buffers). The kernel
  // runs where its renderer's language has a variant, or where there is one for language "*" (any other,
  // including renderers without inline code); elsewhere the launch is a tg::Error naming both. An empty statement
  // is no statement: {{"c", "__builtin_prefetch(...)"}, {"*", ""}} is a hint that only C renderers take. An
  // expression has `dtype`; a statement is run() or put in loop() like a store. Identical statements (same code
  // and args) are one statement.
  using Code = std::vector<std::pair<std::string, std::string>>;  // {language, snippet}
  KExpr inline_expr(DType dtype, const Code& code, const std::vector<KExpr>& args);
  KExpr inline_stmt(const Code& code, const std::vector<KExpr>& args);
  void run(const KExpr& statement);  // appends a top-level statement

  // C = A . B (or C += A . B where `accumulate`), a statement: on the device's matrix unit where it has one (x86
  // AMX: KIR's TILE_MMA; plugin_abi.h gives the layouts of A's and B's slabs), else as the loops it means. C is
  // float32 from bfloat16 A and B, or int32 from int8 (signed) A and B; 16 * m_tiles rows by 16 * n_tiles columns
  // (1 or 2 each); K = steps * 64 / A's itemsize (32 bfloat16 or 64 int8 values a step; steps an integer).
  KExpr tile_mma(const TileOperand& c, const TileOperand& a, const TileOperand& b, const KExpr& steps, int m_tiles,
                 int n_tiles, bool accumulate = false);
  // Whether tile_mma with a C of `dtype` runs on `device`'s matrix unit (otherwise it runs as loops: correct, slow).
  static bool has_matrix_unit(const std::string& device, DType dtype);

  CustomKernel& parallel(bool on = true);  // spread the first GLOBAL range over cores / the grid

  // Runs the kernel: allocates the outputs, realizes the inputs, launches once.
  // `vars` binds every variable() the kernel reads. A kernel may also store into an input buffer (an in-place
  // update such as a KV-cache row): the store happens when the kernel runs, which is now.
  std::vector<Tensor> operator()(const std::vector<std::pair<Shape, DType>>& outputs, const std::vector<Tensor>& inputs,
                                 const std::vector<BoundVariable>& vars = {}) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace tg
