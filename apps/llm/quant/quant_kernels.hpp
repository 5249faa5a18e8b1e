// What the quantized kernels share (quant.cpp, quant_int8.cpp): the format lookup, a cache of built kernels and the
// weight-stream prefetch.
#pragma once

#include <compare>
#include <functional>

#include "quant/quant.hpp"
#include "quant/quant_formats.hpp"

namespace tg::llm::detail {

const Format& format_of(const QuantMatrix& w);  // tg::Error naming the supported types when there is none

// Kernels are built once per (what, format, shape) and reused: building the expression graph is host work.
enum class KernelKind {
  product,
  embedding,
  dequantize,
  int8_product,
  int8_argmax,
  int8_tiled,
  int8_quantize,
  int8_quantize_biased,
  int8_weight_sums,
  tile_weights,
  tile_activation,
  tile_product,
  expert_product,
  int8_expert_product
};
struct KernelKey {
  KernelKind kind;
  GGMLType type;
  int64_t rows, cols, tokens;
  int64_t variant = 0;  // what else shapes the kernel (the expert products': experts per token, shared input)
  auto operator<=>(const KernelKey&) const = default;
};
const CustomKernel& cached(const KernelKey& key, const std::function<CustomKernel()>& build);

// Whether the host's streams of weights gain from prefetch_ahead (Intel: yes; AMD: no, see quant.cpp).
bool prefetch_helps();
// Asks for the bytes kPrefetchBytes past [start, start + n) of `bytes` (total long) ahead of reading them.
KExpr prefetch_ahead(CustomKernel& k, const KExpr& bytes, const KExpr& start, int64_t n, int64_t total);

}  // namespace tg::llm::detail
