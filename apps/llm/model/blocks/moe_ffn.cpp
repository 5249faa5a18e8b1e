#include "model/blocks/moe_ffn.hpp"

#include <cmath>

#include "tg/error.hpp"

namespace tg::llm {

MoeShape read_moe_shape(ModelBuilder& b, const RoutingSpec& routing) {
  const GGUFFile& f = b.file();
  MoeShape s;
  s.experts = f.get_int(b.key("expert_count"));
  // the experts' width: the key where the file has it, else their tensors' (llama.cpp's qwen3moe falls back to
  // feed_forward_length / k, olmoe reads feed_forward_length: the tensors agree with whichever applies)
  const GGUFTensor& gate = f.need_tensor(ModelBuilder::blk(0, "ffn_gate_exps.weight"));
  s.d_ff = f.get_int(b.key("expert_feed_forward_length"), gate.ne.size() == 3 ? gate.ne[1] : 0);
  s.shared_d_ff = f.get_int(b.key("expert_shared_feed_forward_length"), 0);
  s.routing = routing;
  s.routing.k = f.get_int(b.key("expert_used_count"));
  s.routing.normalize = f.get_bool(b.key("expert_weights_norm"), routing.normalize);
  s.routing.scale = f.get_float(b.key("expert_weights_scale"), routing.scale);
  if (s.routing.scale == 0) s.routing.scale = 1;  // llama.cpp: 0 is "not set"
  if (s.experts < 1 || s.experts > 4096 || s.routing.k < 1 || s.routing.k > s.experts || s.d_ff < 1 || s.shared_d_ff < 0)
    throw Error("tg-llm: " + f.path() + ": implausible mixture of experts (" + std::to_string(s.routing.k) + " of " + std::to_string(s.experts) +
                " experts of width " + std::to_string(s.d_ff) + ")");
  if (!std::isfinite(s.routing.scale)) throw Error("tg-llm: " + f.path() + ": " + b.key("expert_weights_scale") + " is not a finite number");
  return s;
}

namespace {
std::string blk(int64_t layer, const char* name) { return ModelBuilder::blk(layer, name); }
}  // namespace

MoeFfn::MoeFfn(ModelBuilder& b, int64_t layer, const MoeShape& shape)
    : shape_(shape),
      router_(b.matrix(blk(layer, "ffn_gate_inp.weight"), shape.experts, b.config().d_model)),
      // a decode step reads k of the E experts' rows
      gate_(b.matrix(blk(layer, "ffn_gate_exps.weight"), shape.experts * shape.d_ff, b.config().d_model,
                     static_cast<double>(shape.routing.k) / static_cast<double>(shape.experts))),
      up_(b.matrix(blk(layer, "ffn_up_exps.weight"), shape.experts * shape.d_ff, b.config().d_model,
                   static_cast<double>(shape.routing.k) / static_cast<double>(shape.experts))),
      down_(b.matrix(blk(layer, "ffn_down_exps.weight"), shape.experts * b.config().d_model, shape.d_ff,
                     static_cast<double>(shape.routing.k) / static_cast<double>(shape.experts))) {
  selection_bias_ = b.optional_vector(blk(layer, "exp_probs_b.bias"), shape.experts);
  if (shape.shared_d_ff > 0) {
    shared_ = std::make_unique<GatedFfn>(b, layer, Activation::silu, "_shexp", shape.shared_d_ff);
    if (b.has(blk(layer, "ffn_gate_inp_shexp.weight"))) shared_gate_ = b.matrix(blk(layer, "ffn_gate_inp_shexp.weight"), 1, b.config().d_model);
  }
}

Tensor MoeFfn::operator()(const Tensor& h) const {
  const int64_t T = h.shape()[0], K = shape_.routing.k, d = router_.cols;
  ProductInput in{h, nullptr};
  const Routes routes = route(qmatmul(router_, in), shape_.routing, selection_bias_);
  // (T * K, d_ff): pair t * K + s is token t's s-th expert
  Tensor g = qmatmul_experts(gate_, shape_.experts, in, routes.ids), u = qmatmul_experts(up_, shape_.experts, in, routes.ids);
  Tensor y = qmatmul_experts(down_, shape_.experts, (g.silu() * u).contiguous(), routes.ids);
  Tensor out = (y.reshape({T, K, d}) * routes.weights.reshape({T, K, 1})).sum({1});
  if (shared_) {
    Tensor s = (*shared_)(h);
    if (shared_gate_) s = s * qmatmul(*shared_gate_, in).sigmoid();
    out = out + s;
  }
  return out;
}

}  // namespace tg::llm
