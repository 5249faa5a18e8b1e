#include "model/blocks/ffn.hpp"

namespace tg::llm {

namespace {

// This rank's FFN columns: whole quantization blocks of ffn_down's rows (its columns are split, copied out).
std::pair<int64_t, int64_t> ffn_share(ModelBuilder& b, int64_t layer, const std::string& suffix, int64_t d_ff) {
  const std::string down = ModelBuilder::blk(layer, "ffn_down" + suffix + ".weight");
  return b.tp().share(d_ff, b.block_elems(down),
                      b.file().path() + ": the " + std::to_string(d_ff) + " FFN columns of '" + down + "'");
}

}  // namespace

GatedFfn::GatedFfn(ModelBuilder& b, int64_t layer, Activation act, const std::string& suffix, int64_t d_ff)
    : GatedFfn(b, layer, act, suffix, d_ff ? d_ff : b.config().d_ff,
               ffn_share(b, layer, suffix, d_ff ? d_ff : b.config().d_ff)) {}

GatedFfn::GatedFfn(ModelBuilder& b, int64_t layer, Activation act, const std::string& suffix, int64_t f,
                   std::pair<int64_t, int64_t> cols)
    : act_(act),
      gate_(b.matrix_rows(ModelBuilder::blk(layer, "ffn_gate" + suffix + ".weight"), f, b.config().d_model, cols.first,
                          cols.second)),
      up_(b.matrix_rows(ModelBuilder::blk(layer, "ffn_up" + suffix + ".weight"), f, b.config().d_model, cols.first,
                        cols.second)),
      down_(b.matrix_cols(ModelBuilder::blk(layer, "ffn_down" + suffix + ".weight"), b.config().d_model, f, cols.first,
                          cols.second)) {}

Tensor GatedFfn::operator()(const Tensor& h, const Pass&) const {
  ProductInput in{h, nullptr};  // gate and up share the int8 form of h
  Tensor g = qmatmul(gate_, in), u = qmatmul(up_, in);
  return qmatmul(down_, (act_ == Activation::gelu_tanh ? g.gelu() : g.silu()) * u);
}

}  // namespace tg::llm
