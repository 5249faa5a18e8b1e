#include "model/config.hpp"

#include <cmath>

#include "tg/error.hpp"

namespace tg::llm {

namespace {

// As llama.cpp reads them for these architectures: a factor without a type is linear; type none ignores the
// factor; attn_factor scales cos and sin for linear and YaRN alike; YaRN's beta keys are not read (32 and 1).
RopeScaling read_rope_scaling(const GGUFFile& f, const std::string& p) {
  RopeScaling s;
  const std::string type = f.get_string(p + "rope.scaling.type", "linear");
  s.factor = f.get_float(p + "rope.scaling.factor", f.get_float(p + "rope.scale_linear", 1.0));
  s.attn_factor = f.get_float(p + "rope.scaling.attn_factor", 1.0);
  if (type == "none" || (type != "yarn" && s.factor == 1.0 && s.attn_factor == 1.0)) return {};
  if (!(s.factor > 0) || !std::isfinite(s.factor) || !(s.attn_factor > 0) || !std::isfinite(s.attn_factor))
    throw Error("tg-llm: " + f.path() + ": " + p + "rope.scaling.factor " + std::to_string(s.factor) +
                " / attn_factor " + std::to_string(s.attn_factor) + " must be positive numbers");
  if (type == "linear") {
    s.type = RopeScaling::Type::linear;
  } else if (type == "yarn") {
    s.type = RopeScaling::Type::yarn;
    s.original_context = f.get_int(p + "rope.scaling.original_context_length", f.get_int(p + "context_length", 4096));
    if (s.original_context <= 0)
      throw Error("tg-llm: " + f.path() + ": " + p + "rope.scaling.original_context_length must be positive");
  } else {
    throw Error("tg-llm: " + f.path() + ": " + p + "rope.scaling.type '" + type + "' is not one of none, linear, yarn");
  }
  return s;
}

}  // namespace

double yarn_get_mscale(double factor, double mscale) {
  return factor <= 1 ? 1.0 : 1.0 + 0.1 * mscale * std::log(factor);
}

double RopeScaling::magnitude() const {
  if (type != Type::yarn) return attn_factor;
  const double m = mscale_all_dim != 0 ? yarn_get_mscale(factor, mscale) / yarn_get_mscale(factor, mscale_all_dim)
                                       : yarn_get_mscale(factor, 1);
  return attn_factor * m;
}

ModelConfig read_common_config(const GGUFFile& f) {
  ModelConfig c;
  c.arch = f.get_string("general.architecture");
  const std::string p = c.arch + ".";
  c.n_layers = f.get_int(p + "block_count");
  c.d_model = f.get_int(p + "embedding_length");
  c.d_ff = f.get_int(p + "feed_forward_length");
  c.n_heads = f.get_int(p + "attention.head_count");
  c.n_kv_heads = f.get_int(p + "attention.head_count_kv", c.n_heads);
  c.head_dim = f.get_int(p + "attention.key_length", c.n_heads > 0 ? c.d_model / c.n_heads : 0);
  c.context_length = f.get_int(p + "context_length", 4096);
  c.norm_eps = f.get_float(p + "attention.layer_norm_rms_epsilon", 1e-5);
  c.rope_base = f.get_float(p + "rope.freq_base", 10000);
  c.rope_dims = f.get_int(p + "rope.dimension_count", c.head_dim);
  c.rope_scaling = read_rope_scaling(f, p);
  c.vocab = f.need_tensor("token_embd.weight").rows();
  if (c.n_layers <= 0 || c.d_model <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 || c.head_dim <= 0 || c.d_ff <= 0 ||
      c.n_heads % c.n_kv_heads != 0 || c.head_dim % 2 != 0 || c.n_layers > 4096)
    throw Error("tg-llm: " + f.path() + ": implausible hyper-parameters (layers " + std::to_string(c.n_layers) +
                ", width " + std::to_string(c.d_model) + ", heads " + std::to_string(c.n_heads) + "/" +
                std::to_string(c.n_kv_heads) + ", head dim " + std::to_string(c.head_dim) + ")");
  if (c.rope_dims <= 0 || c.rope_dims > c.head_dim || c.rope_dims % 2 != 0)
    throw Error("tg-llm: " + f.path() + ": " + p + "rope.dimension_count " + std::to_string(c.rope_dims) +
                " must be even and within the head dim " + std::to_string(c.head_dim));
  c.value_dim = f.get_int(p + "attention.value_length", c.head_dim);
  c.layer_is_local.assign(static_cast<size_t>(c.n_layers), false);
  c.attn_scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  return c;
}

}  // namespace tg::llm
