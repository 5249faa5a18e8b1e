// The mixture-of-experts FFN (llama.cpp's build_moe_ffn): a router picks k of E experts per token (routing.hpp);
// each picked expert is a SiLU-gated FFN of its own, read from the stacked ffn_{gate,up,down}_exps tensors (E,
// rows, cols) in place; their outputs are summed by the routing weights. Optionally a shared expert that every
// token runs (ffn_{gate,up,down}_shexp), behind a per-token sigmoid gate where the file has ffn_gate_inp_shexp.
// Tensor-parallel, each rank holds a share of the experts (and of the shared expert's columns): every rank routes
// every token, runs the picks of its own experts, and the ranks' partial outputs sum to the whole.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "model/blocks/ffn.hpp"
#include "model/blocks/routing.hpp"

namespace tg::llm {

struct MoeShape {
  int64_t experts = 0;      // expert_count
  int64_t d_ff = 0;         // each expert's width (expert_feed_forward_length)
  RoutingSpec routing;      // k = expert_used_count
  int64_t shared_d_ff = 0;  // the shared expert's width (expert_shared_feed_forward_length); 0: none
};

// The keys of a MoE architecture (<arch>.expert_count, expert_used_count, expert_feed_forward_length (default:
// the width of the experts' tensors), expert_shared_feed_forward_length, expert_weights_norm and
// expert_weights_scale over `routing`'s defaults), checked for plausibility.
// `first`: the first layer with experts (the width is read from its tensors).
MoeShape read_moe_shape(ModelBuilder& b, const RoutingSpec& routing, int64_t first = 0);

// Two ways to run the experts, the same sums:
// - routed (decode, and any pass a Jit replays): every (token, slot) pair's product reads its expert's rows, the
//   ids staying on the device (qmatmul_experts);
// - grouped (prefill chunks of kGroupedTokens tokens or more, on host devices): the ids are read on the host and the
//   tokens gathered into runs by expert, so each expert's weights are read once per run of its tokens instead of once
//   per pair (llama.cpp's mul_mat_id): one kernel a product for every expert (qmatmul_grouped) where the formats
//   have it, else each expert's own products (the float formats, and the matrix unit's).
// The prefill chunk of the architectures with experts (Decoder::prefill_chunk): with 256 tokens a Qwen3-30B-A3B
// expert sees 16 of them, which pay its weights' conversion to the matrix unit's tiles alone.
inline constexpr int64_t kMoePrefillChunk = 512;

class MoeFfn final : public FeedForward {
 public:
  static constexpr int64_t kGroupedTokens = 32;
  MoeFfn(ModelBuilder& b, int64_t layer, const MoeShape& shape);
  Tensor operator()(const Tensor& h, const Pass& p) const override;

 private:
  MoeFfn(ModelBuilder& b, int64_t layer, const MoeShape& shape, std::pair<int64_t, int64_t> experts);
  // the routes' expert ids numbered within this rank's experts; another rank's expert: local_ (out of range: the
  // expert products give it a zero row)
  Tensor local_ids(const Tensor& ids) const;
  Tensor routed(ProductInput& in, const Routes& routes) const;
  Tensor grouped(const Tensor& h, const Routes& routes) const;

  MoeShape shape_;
  int64_t first_, local_;  // this rank's experts: [first_, first_ + local_)
  QuantMatrix router_, gate_, up_, down_;
  std::vector<QuantMatrix> gate_each_, up_each_, down_each_;  // per expert (host devices)
  std::optional<Tensor> selection_bias_;                      // exp_probs_b
  std::unique_ptr<GatedFfn> shared_;
  std::optional<QuantMatrix> shared_gate_;  // ffn_gate_inp_shexp: (1, d_model)
};

}  // namespace tg::llm
