// A decoder's hyper-parameters: the keys every architecture shares (read here, as llama.cpp names them under
// "<arch>.") and what an architecture file adds from its own keys.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gguf/gguf.hpp"

namespace tg::llm {

// How the RoPE angles are stretched past the trained context (llama.cpp's rope.scaling.*): linear divides every
// angle by `factor`; YaRN blends interpolated and extrapolated angles per dimension and scales cos and sin.
struct RopeScaling {
  enum class Type { none, linear, yarn } type = Type::none;
  double factor = 1;                     // rope.scaling.factor
  int64_t original_context = 0;          // rope.scaling.original_context_length (YaRN's n_ctx_orig)
  double attn_factor = 1;                // rope.scaling.attn_factor: scales cos and sin
  double beta_fast = 32, beta_slow = 1;  // YaRN's correction range (llama.cpp's defaults)
  // YaRN's magnitude terms (Hugging Face's rope_scaling mscale and mscale_all_dim; DeepSeek's): cos and sin are
  // scaled by get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim), or get_mscale(factor, 1) where
  // mscale_all_dim is 0 (not given), with get_mscale(f, m) = 1 + 0.1 m ln f (1 for f <= 1)
  double mscale = 1, mscale_all_dim = 0;

  // what cos and sin are multiplied by
  double magnitude() const;
};

// YaRN's get_mscale: the attention magnitude for a context stretched `factor` times
double yarn_get_mscale(double factor, double mscale);

struct ModelConfig {
  std::string arch;  // general.architecture
  int64_t n_layers = 0, d_model = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, d_ff = 0, vocab = 0;
  int64_t value_dim = 0;  // attention.value_length (multi-head attention: head_dim; deepseek2's MLA cache rows differ)
  int64_t context_length = 0;  // what the model was trained for
  double norm_eps = 1e-5;
  double rope_base = 10000;
  int64_t rope_dims = 0;  // rope.dimension_count: the rotated part of each head (the rest passes through)
  RopeScaling rope_scaling;
  double attn_scale = 0;             // 1/sqrt(head_dim) unless the architecture says otherwise
  int64_t sliding_window = 0;        // 0: none
  std::vector<bool> layer_is_local;  // per layer: sliding-window attention (every false without a window)
};

// The shared keys of `f` for architecture `c.arch`, checked for plausibility (tg::Error naming the key).
ModelConfig read_common_config(const GGUFFile& f);

}  // namespace tg::llm
