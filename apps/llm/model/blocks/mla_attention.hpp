// Multi-head latent attention (deepseek2: DeepSeek-V2/V3, Moonlight, GLM-4.7-Flash; llama.cpp's MLA path), in the
// absorbed form. Keys and values of every head are one compressed row per token, c = norm(kv_a(h)[:kv_lora]), and
// a RoPE key shared by the heads, k_pe = rope(kv_a(h)[kv_lora:]); the cache holds [c | k_pe] (kv_lora + rope values
// a token, one row for all heads: no per-head keys or values). Each head's query is absorbed into the latent space
// (q_lat = k_b[h] . q_nope, per head), so a score is [q_lat | rope(q_pe)] . [c | k_pe]; the head's output is
// v_b[h] . (softmax . c). Decode keeps that form: it reads kv_lora + rope values a cached token instead of heads x
// (key + value). A prefill chunk, whose queries outnumber what expanding costs, expands c into every head's keys and
// values (k_b[h]^T c, v_b[h] c) and attends as plain multi-head attention (`expanded_is_cheaper` counts both).
// Tensor-parallel, each rank takes a share of the heads (their rows of q, k_b and v_b, their columns of
// attn_output); the compression (q_a, kv_a) and the latent cache are whole on every rank.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "model/blocks/rope.hpp"
#include "model/decoder.hpp"
#include "model/kv_cache.hpp"
#include "model/model_builder.hpp"
#include "quant/quant.hpp"

namespace tg::llm {

struct MlaShape {
  int64_t q_lora = 0;                 // attention.q_lora_rank: q through attn_q_a, its norm and attn_q_b; 0: attn_q
  int64_t kv_lora = 0;                // attention.kv_lora_rank
  int64_t nope = 0, rope = 0, v = 0;  // per head: the query's non-rotated and rotated parts, the value width
  double scale = 0;                   // the scores' scale
};

class MlaAttention final : public Mixer {
 public:
  MlaAttention(ModelBuilder& b, int64_t layer, const MlaShape& shape);
  Tensor forward(const Tensor& h, const Pass& p) override;

 private:
  MlaAttention(ModelBuilder& b, int64_t layer, const MlaShape& s, std::pair<int64_t, int64_t> heads);
  // T queries' non-rotated parts (T, H, nope) -> their latent forms k_b[h] . q (T, H, kv_lora)
  Tensor absorb(const Tensor& q_nope, int64_t T) const;
  Tensor values(const Tensor& lat, int64_t T) const;  // latent outputs (T, H, kv_lora) -> v_b[h] . lat (T, H * v)
  Tensor by_head(int64_t T) const;                    // (T, H) head ids: the per-head products as stacked experts
  // whether a chunk of T queries over L keys costs fewer multiply-adds expanded than absorbed
  bool expanded_is_cheaper(int64_t T, int64_t L) const;
  // T queries of one sequence, their rows already cached, over `len` keys. Absorbed: latent queries q_lat (T, H,
  // kv_lora) and rotated parts q_rot (T, H, rope) score the cached rows directly -> latent outputs (T, H, kv_lora).
  // Expanded (prefill chunks): the cached rows become every head's keys and values first -> (T, H * v).
  Tensor attend_absorbed(const Tensor& q_lat, const Tensor& q_rot, int64_t T, const SeqPos& at, const Dim& len);
  Tensor attend_expanded(const Tensor& q_nope, const Tensor& q_rot, int64_t T, const SeqPos& at, int64_t L);

  MlaShape s_;
  int64_t H_;  // this rank's heads
  double eps_;
  std::shared_ptr<const RopeTable> rope_;
  const SequenceState* state_;
  std::optional<QuantMatrix> q_, q_a_, q_b_;
  std::optional<Tensor> q_a_norm_;
  QuantMatrix kv_a_, k_b_, v_b_, o_;  // k_b: (H * kv_lora, nope), v_b: (H * v, kv_lora), per head as stacked experts
  Tensor kv_a_norm_;
  KvCache* cache_;
};

}  // namespace tg::llm
