// Multi-head attention with grouped KV heads over the sequence state's KV cache, and the variants the families
// use: QKV biases (qwen2), QK-norm per head (qwen3, gemma3) or over all heads (olmoe), NEOX or pair RoPE on all or part
// of each head (with scaling), and sliding windows (gemma3's local layers).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/blocks/rope.hpp"
#include "model/decoder.hpp"
#include "model/model_builder.hpp"
#include "model/pass.hpp"
#include "quant/quant.hpp"

namespace tg::llm {

struct AttentionSpec {
  bool neox = false;      // rotate halves (NEOX) rather than adjacent pairs (llama's converter permutes q and k)
  bool qkv_bias = false;  // attn_{q,k,v}.bias added to the projections where the file has them (optional, as llama.cpp)
  bool qk_norm = false;   // RMS-norm of q and k per head (attn_q_norm / attn_k_norm), before RoPE
  bool qk_norm_whole = false;  // the same over all heads' q (k) at once (olmoe)
  double rope_base = 0;        // 0: the file's rope.freq_base
  bool rope_scaled = true;     // the file's RoPE scaling applies (gemma3's sliding-window layers: not)
  int64_t window = 0;          // sliding window (keys within `window` positions of the query), 0: none
  bool output_gate = false;  // attn_q emits each head's query and then its gate; the output is x sigmoid(gate) (qwen35)
};

// The key length a pass of T tokens at `pos` attends over: a prefill chunk's static bucket (multiples of 128),
// decode's key_len, or (key_len 0) the symbolic pos + T.
Dim key_span(const SequenceState& state, int64_t T, const BoundVariable& pos, int64_t key_len);
// softmax over the keys of scores (A, B, T, len) of T queries at pos + first, the causal mask (and a sliding window
// of `window` positions, 0: none) applied from absolute positions; realized.
Tensor causal_softmax(const SequenceState& state, const Tensor& scores, int64_t T, const BoundVariable& pos,
                      const Dim& len, int64_t window = 0, int64_t first = 0);

// A rank's query heads [q0, q1) and KV heads [k0, k1) of a tensor-parallel model: whole KV groups where there
// are at least as many KV heads as ranks, else each KV head on world / KV ranks, each with a share of its group's
// query heads (as vLLM replicates KV heads). One rank: every head.
struct HeadShare {
  int64_t q0, q1, k0, k1;
};
HeadShare share_heads(const ModelBuilder& b, int64_t heads, int64_t kv_heads);

class Attention final : public Mixer {
 public:
  // Loads blk.<layer>.attn_{q,k,v,output} (and what the spec adds) and adds the layer's KV caches to the state;
  // tensor-parallel, this rank's heads (share_heads) and the partial output of its heads.
  Attention(ModelBuilder& b, int64_t layer, const AttentionSpec& spec);
  // h (T, d_model), already normed -> (T, d_model), after the output projection.
  Tensor forward(const Tensor& h, const Pass& p) override;

 private:
  // q (T, H, hd) and k (T, KV, hd) before RoPE, v (T, KV * hd): T tokens of one sequence -> (T, H * hd)
  Tensor attend(Tensor q, Tensor k, const Tensor& v, int64_t T, const SeqPos& at, int64_t key_len);
  // olmoe's RMS-norm over all heads' q and k (T, heads * hd each), of this rank's heads when split
  std::pair<Tensor, Tensor> norm_whole(const Tensor& q, const Tensor& k) const;

  HeadShare share_;
  TensorParallel tp_;
  AttentionSpec spec_;
  int64_t heads_, kv_heads_;  // of the whole model
  int64_t H_, KV_, hd_;       // this rank's
  double scale_, eps_;
  int64_t max_score_bytes_;
  std::shared_ptr<const RopeTable> rope_;
  const SequenceState* state_;
  QuantMatrix q_, k_, v_, o_;
  std::optional<Tensor> q_bias_, k_bias_, v_bias_, q_norm_, k_norm_;
  KvCache *k_cache_, *v_cache_;
};

}  // namespace tg::llm
