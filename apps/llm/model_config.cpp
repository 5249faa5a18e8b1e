// Hyper-parameters from GGUF metadata, with one rule row per architecture for what differs between families.
#include <cmath>

#include "model.hpp"

namespace tg::llm {

namespace {

struct ArchRules {
  const char* name;
  bool rope_neox, gelu_ffn, qk_norm, post_norms, scale_embeddings;
  int64_t swa_pattern;  // every n-th layer is global, the others slide (0: no sliding window)
};

// llama.cpp's conventions: llama's GGUF converter permutes q/k so adjacent-pair RoPE applies; qwen3 and gemma3
// rotate halves. Gemma 3 has 5 local layers to 1 global.
constexpr ArchRules kArchs[] = {
    {"llama", false, false, false, false, false, 0},
    {"qwen3", true, false, true, false, false, 0},
    {"gemma3", true, true, true, true, true, 6},
};

}  // namespace

const std::vector<std::string>& supported_architectures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& a : kArchs) v.push_back(a.name);
    return v;
  }();
  return names;
}

ModelConfig read_config(const GGUFFile& f) {
  ModelConfig c;
  c.arch = f.get_string("general.architecture");
  const ArchRules* rules = nullptr;
  for (const auto& a : kArchs)
    if (c.arch == a.name) rules = &a;
  if (!rules) {
    std::string list;
    for (const auto& n : supported_architectures()) list += (list.empty() ? "" : ", ") + n;
    throw Error("tg-llm: " + f.path() + ": architecture '" + c.arch + "' is not supported (supported: " + list + ")");
  }
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
  c.rope_base_local = 10000;
  // RoPE scaling (Llama 3.1+'s rope_freqs, Gemma 3 4B+'s linear factor) is not implemented: refuse rather than
  // compute wrong angles
  const bool scaled = f.get_string(p + "rope.scaling.type", "none") != "none" && f.get_float(p + "rope.scaling.factor", 1.0) != 1.0;
  if (f.tensor("rope_freqs.weight") || scaled)
    throw Error("tg-llm: " + f.path() + ": RoPE scaling (rope_freqs / " + p + "rope.scaling.*) is not supported yet");
  c.rope_neox = rules->rope_neox;
  c.gelu_ffn = rules->gelu_ffn;
  c.qk_norm = rules->qk_norm;
  c.post_norms = rules->post_norms;
  c.vocab = f.need_tensor("token_embd.weight").rows();
  if (c.n_layers <= 0 || c.d_model <= 0 || c.n_heads <= 0 || c.n_kv_heads <= 0 || c.head_dim <= 0 || c.d_ff <= 0 ||
      c.n_heads % c.n_kv_heads != 0 || c.head_dim % 2 != 0 || c.n_layers > 4096)
    throw Error("tg-llm: " + f.path() + ": implausible hyper-parameters (layers " + std::to_string(c.n_layers) + ", width " +
                std::to_string(c.d_model) + ", heads " + std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + ", head dim " +
                std::to_string(c.head_dim) + ")");
  if (int64_t v = f.get_int(p + "attention.value_length", c.head_dim); v != c.head_dim)
    throw Error("tg-llm: " + f.path() + ": value length " + std::to_string(v) + " differs from key length " + std::to_string(c.head_dim));
  if (rules->swa_pattern) c.sliding_window = f.get_int(p + "attention.sliding_window", 0);
  for (int64_t il = 0; il < c.n_layers; ++il)
    c.layer_is_local.push_back(c.sliding_window > 0 && il % rules->swa_pattern != rules->swa_pattern - 1);
  c.embed_scale = rules->scale_embeddings ? std::sqrt(static_cast<double>(c.d_model)) : 1.0;
  c.attn_scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  return c;
}

}  // namespace tg::llm
