// One layer's keys or values for every sequence slot, on the device: (width, slots * rows) with one column per
// token, realized once and written in place by a kernel (so q @ K vectorizes over contiguous keys and p @ V
// reduces over contiguous positions, with no copy of the cache per step).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tg/custom_kernel.hpp"
#include "tg/tensor.hpp"
#include "tg/variable.hpp"

namespace tg::llm {

// The KV cache's element type: float32; float16 (half the memory and bandwidth); q8_0 (ggml's: int8 with a
// float16 scale per 32 values of a key or value vector, 34 bytes per 32, as llama.cpp's --cache-type-k q8_0).
enum class KvType { f32, f16, q8_0 };
KvType parse_kv_type(const std::string& name);  // tg::Error listing f32, f16, q8_0 for anything else
// A recurrent state's element type (--ssm-type): f32 or f16; tg::Error naming both for anything else.
DType parse_ssm_type(const std::string& name);

// Where one sequence of a forward pass is: its KV-cache slot (as its first cache row, slot * rows per slot) and
// the position of its first token. Both are bound variables, so one graph serves every slot and position.
struct SeqPos {
  BoundVariable base, pos;
};

class KvCache {
 public:
  KvCache(int64_t width, int64_t positions, KvType type, const std::string& device);
  // Writes the T rows of `rows` (T, width) float32 as columns [base + pos, base + pos + T).
  void write(const Tensor& rows, const SeqPos& at);
  // Columns [base, base + len) as float32 (width, len).
  Tensor read(const SeqPos& at, const Dim& len) const;
  // Columns [from, from + len) copied to [to, to + len), in place (another slot's context: n choices).
  void copy(const BoundVariable& from, const BoundVariable& to, int64_t len);
  // For kernels that read the cache in place: its tensors (the values, then q8_0's scales), to pass as buffers
  // first, first + 1; and the float32 value at (row, column) read from them.
  std::vector<Tensor> tensors() const;
  KExpr element(CustomKernel& k, int first, const KExpr& row, const KExpr& col) const;

 private:
  Tensor data_;
  std::optional<Tensor> scales_;  // q8_0: (width / 32, positions) float16
};

}  // namespace tg::llm
