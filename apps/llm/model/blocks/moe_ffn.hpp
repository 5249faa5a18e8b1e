// The mixture-of-experts FFN (llama.cpp's build_moe_ffn): a router picks k of E experts per token (routing.hpp);
// each picked expert is a SiLU-gated FFN of its own, read from the stacked ffn_{gate,up,down}_exps tensors (E,
// rows, cols) in place; their outputs are summed by the routing weights. Optionally a shared expert that every
// token runs (ffn_{gate,up,down}_shexp), behind a per-token sigmoid gate where the file has ffn_gate_inp_shexp.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "model/blocks/ffn.hpp"
#include "model/blocks/routing.hpp"

namespace tg::llm {

struct MoeShape {
  int64_t experts = 0;  // expert_count
  int64_t d_ff = 0;     // each expert's width (expert_feed_forward_length)
  RoutingSpec routing;  // k = expert_used_count
  int64_t shared_d_ff = 0;  // the shared expert's width (expert_shared_feed_forward_length); 0: none
};

// The keys of a MoE architecture (<arch>.expert_count, expert_used_count, expert_feed_forward_length (default:
// the file's feed_forward_length), expert_shared_feed_forward_length) with `routing`'s gate, normalization and
// scale, checked for plausibility.
MoeShape read_moe_shape(ModelBuilder& b, const RoutingSpec& routing);

class MoeFfn final : public FeedForward {
 public:
  MoeFfn(ModelBuilder& b, int64_t layer, const MoeShape& shape);
  Tensor operator()(const Tensor& h) const override;

 private:
  MoeShape shape_;
  QuantMatrix router_, gate_, up_, down_;
  std::optional<Tensor> selection_bias_;  // exp_probs_b
  std::unique_ptr<GatedFfn> shared_;
  std::optional<QuantMatrix> shared_gate_;  // ffn_gate_inp_shexp: (1, d_model)
};

}  // namespace tg::llm
