// Expert routing for mixture-of-experts FFNs: each token picks its k experts by score and weights their outputs.
// The gates (llama.cpp's build_moe_ffn, the seed's MoE): softmax over all experts (qwen3moe, qwen35moe, olmoe) or
// sigmoid with a selection bias added (deepseek2's exp_probs_b: it changes which experts are picked, not their
// weights); the picked weights optionally renormalized to sum 1 (the sum clamped below at 2^-14, as llama.cpp),
// then scaled. Group-limited routing (DeepSeek-V3's, llama.cpp's n_expert_groups): the experts fall in equal groups
// of consecutive indices, each group scored by the sum of its two best selection scores, and only the experts of
// the best groups can be picked.
#pragma once

#include <cstdint>
#include <optional>

#include "tg/tensor.hpp"

namespace tg::llm {

struct RoutingSpec {
  enum class Gate { softmax, sigmoid } gate = Gate::softmax;
  int64_t k = 1;            // experts per token (expert_used_count)
  bool normalize = false;   // the k weights divided by their sum (expert_weights_norm; qwen3moe's norm_topk_prob)
  double scale = 1.0;       // then multiplied by this (expert_weights_scale; deepseek2's routed_scaling_factor)
  int64_t groups = 1;       // expert_group_count: > 1 limits the picks to the best groups
  int64_t groups_used = 1;  // expert_group_used_count: how many groups (ties: the lower group)
};

struct Routes {
  Tensor ids;      // (T, k) int32: the experts, best first
  Tensor weights;  // (T, k) float32
};

// Whether spec's group limit fits E experts: equal groups of 2 or more, some but not all of them open, and k
// picks within the open groups' experts (always true without groups).
bool groups_fit(const RoutingSpec& spec, int64_t experts);

// The top-k of `score` (T, E) per row, best first; ties go to the lower expert index (on every device: a plain
// order, not a sort's). A NaN score is never picked; a row with fewer than k pickable scores pads with expert E
// (out of range: the expert products give it zero rows) and weight 0. weights[t, s] = weight[t, ids[t, s]],
// renormalized and scaled as `spec` says.
Routes top_k_experts(const Tensor& score, const Tensor& weight, const RoutingSpec& spec);

// The gate of `spec` over router logits (T, E), then (with spec.groups > 1) the experts outside the best groups
// barred, then top_k_experts. `bias` (E,): added to the scores that select (not to the weights).
Routes route(const Tensor& logits, const RoutingSpec& spec, const std::optional<Tensor>& bias = std::nullopt);

}  // namespace tg::llm
