#include "model/blocks/ffn.hpp"

namespace tg::llm {

GatedFfn::GatedFfn(ModelBuilder& b, int64_t layer, Activation act)
    : act_(act),
      gate_(b.matrix(ModelBuilder::blk(layer, "ffn_gate.weight"), b.config().d_ff, b.config().d_model)),
      up_(b.matrix(ModelBuilder::blk(layer, "ffn_up.weight"), b.config().d_ff, b.config().d_model)),
      down_(b.matrix(ModelBuilder::blk(layer, "ffn_down.weight"), b.config().d_model, b.config().d_ff)) {}

Tensor GatedFfn::operator()(const Tensor& h) const {
  ProductInput in{h, nullptr};  // gate and up share the int8 form of h
  Tensor g = qmatmul(gate_, in), u = qmatmul(up_, in);
  return qmatmul(down_, (act_ == Activation::gelu_tanh ? g.gelu() : g.silu()) * u);
}

}  // namespace tg::llm
