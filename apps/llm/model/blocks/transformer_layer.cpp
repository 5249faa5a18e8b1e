#include "model/blocks/transformer_layer.hpp"

#include "model/blocks/norm.hpp"

namespace tg::llm {

namespace {
std::string blk(int64_t layer, const char* name) { return ModelBuilder::blk(layer, name) + ".weight"; }
}  // namespace

TransformerLayer::TransformerLayer(ModelBuilder& b, int64_t layer, std::unique_ptr<Mixer> mixer, const Spec& spec)
    : TransformerLayer(b, layer, std::move(mixer), std::make_unique<GatedFfn>(b, layer, spec.ffn), spec) {}

TransformerLayer::TransformerLayer(ModelBuilder& b, int64_t layer, std::unique_ptr<Mixer> mixer,
                                   std::unique_ptr<FeedForward> ffn, const Spec& spec)
    : eps_(b.config().norm_eps),
      tp_(b.tp()),
      attn_norm_(b.vector(blk(layer, "attn_norm"), b.config().d_model)),
      ffn_norm_(b.vector(blk(layer, spec.ffn_norm), b.config().d_model)),
      mixer_(std::move(mixer)),
      ffn_(std::move(ffn)) {
  if (spec.post_norms) {
    post_attn_norm_ = b.vector(blk(layer, "post_attention_norm"), b.config().d_model);
    post_ffn_norm_ = b.vector(blk(layer, "post_ffw_norm"), b.config().d_model);
  }
}

Tensor TransformerLayer::forward(const Tensor& x, const Pass& p) {
  Tensor a = tp_.sum(mixer_->forward(rms_norm(x, attn_norm_, eps_), p));
  if (post_attn_norm_) a = rms_norm(a, *post_attn_norm_, eps_);
  Tensor r = (x + a).realize();  // the residual stream is read twice: realized once, not recomputed by each reader
  Tensor f = tp_.sum((*ffn_)(rms_norm(r, ffn_norm_, eps_), p));
  if (post_ffn_norm_) f = rms_norm(f, *post_ffn_norm_, eps_);
  return (r + f).realize();
}

Decoder transformer_stack(ModelBuilder& b, const AttentionSpec& attention, const TransformerLayer::Spec& spec) {
  Decoder d;
  for (int64_t il = 0; il < b.config().n_layers; ++il)
    d.layers.push_back(std::make_unique<TransformerLayer>(b, il, std::make_unique<Attention>(b, il, attention), spec));
  return d;
}

Decoder transformer_stack(ModelBuilder& b, const AttentionSpec& attention,
                          const std::function<std::unique_ptr<FeedForward>(int64_t layer)>& ffn) {
  Decoder d;
  for (int64_t il = 0; il < b.config().n_layers; ++il)
    d.layers.push_back(std::make_unique<TransformerLayer>(b, il, std::make_unique<Attention>(b, il, attention), ffn(il),
                                                          TransformerLayer::Spec{}));
  return d;
}

}  // namespace tg::llm
