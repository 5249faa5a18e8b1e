#include "model/blocks/ffn.hpp"

namespace tg::llm {

GatedFfn::GatedFfn(ModelBuilder& b, int64_t layer, Activation act, const std::string& suffix, int64_t d_ff)
    : act_(act),
      gate_(b.matrix(ModelBuilder::blk(layer, "ffn_gate" + suffix + ".weight"), d_ff ? d_ff : b.config().d_ff, b.config().d_model)),
      up_(b.matrix(ModelBuilder::blk(layer, "ffn_up" + suffix + ".weight"), d_ff ? d_ff : b.config().d_ff, b.config().d_model)),
      down_(b.matrix(ModelBuilder::blk(layer, "ffn_down" + suffix + ".weight"), b.config().d_model, d_ff ? d_ff : b.config().d_ff)) {}

Tensor GatedFfn::operator()(const Tensor& h, const Pass&) const {
  ProductInput in{h, nullptr};  // gate and up share the int8 form of h
  Tensor g = qmatmul(gate_, in), u = qmatmul(up_, in);
  return qmatmul(down_, (act_ == Activation::gelu_tanh ? g.gelu() : g.silu()) * u);
}

}  // namespace tg::llm
