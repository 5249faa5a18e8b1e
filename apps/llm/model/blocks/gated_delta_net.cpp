#include "model/blocks/gated_delta_net.hpp"

#include <cmath>

#include "model/blocks/norm.hpp"
#include "model/blocks/recurrent_kernels.hpp"

namespace tg::llm {

namespace {
int64_t conv_width(const DeltaNetShape& s) { return (2 * s.key_heads + s.value_heads) * s.head_dim; }
}  // namespace

GatedDeltaNet::GatedDeltaNet(ModelBuilder& b, int64_t layer, const DeltaNetShape& shape)
    : s_((b.refuse_split("gated delta net"), shape)),
      eps_(b.config().norm_eps),
      rows_per_slot_(b.state().rows_per_slot()),
      state_(&b.state()),
      qkv_(b.matrix(ModelBuilder::blk(layer, "attn_qkv.weight"), conv_width(shape), b.config().d_model)),
      z_(b.matrix(ModelBuilder::blk(layer, "attn_gate.weight"), shape.value_heads * shape.head_dim, b.config().d_model)),
      alpha_(b.matrix(ModelBuilder::blk(layer, "ssm_alpha.weight"), shape.value_heads, b.config().d_model)),
      beta_(b.matrix(ModelBuilder::blk(layer, "ssm_beta.weight"), shape.value_heads, b.config().d_model)),
      out_(b.matrix(ModelBuilder::blk(layer, "ssm_out.weight"), b.config().d_model, shape.value_heads * shape.head_dim)),
      conv_w_(b.vector(ModelBuilder::blk(layer, "ssm_conv1d.weight"), conv_width(shape) * shape.conv_kernel).reshape({conv_width(shape), shape.conv_kernel})),
      dt_bias_(b.vector(ModelBuilder::blk(layer, "ssm_dt.bias"), shape.value_heads)),
      a_(b.vector(ModelBuilder::blk(layer, "ssm_a"), shape.value_heads)),  // -exp(A_log), no .weight suffix
      norm_(b.vector(ModelBuilder::blk(layer, "ssm_norm.weight"), shape.head_dim)),
      conv_state_(b.state().add_recurrent_state(shape.conv_kernel - 1, conv_width(shape))),
      delta_state_(b.state().add_recurrent_state(shape.value_heads * shape.head_dim, shape.head_dim)) {}

Tensor GatedDeltaNet::forward(const Tensor& h, const Pass& p) {
  const int64_t T = p.T, dk = s_.head_dim, nk = s_.key_heads, nv = s_.value_heads, kd = nk * dk;
  const std::string& device = state_->device();
  ProductInput in{h, nullptr};  // the five projections share the int8 form of h
  Tensor qkv = qmatmul(qkv_, in), z = qmatmul(z_, in), b = qmatmul(beta_, in), a = qmatmul(alpha_, in);
  const Tensor seqs = state_->sequence_table(p.seqs, p.valid);
  Tensor c = causal_conv(qkv, conv_w_, conv_state_, seqs, rows_per_slot_).silu();
  auto l2norm = [&](const Tensor& x) {  // x / max(|x|, eps) per head
    return x * (x * x).sum({-1}, true).sqrt().maximum(Tensor::full({1}, eps_, dtypes::float32, device)).reciprocal();
  };
  Tensor q = l2norm(c.slice(1, 0, kd).reshape({T, nk, dk})) * (1.0 / std::sqrt(static_cast<double>(dk)));
  Tensor k = l2norm(c.slice(1, kd, 2 * kd).reshape({T, nk, dk}));
  Tensor v = c.slice(1, 2 * kd, 2 * kd + nv * dk).reshape({T, nv, dk});
  // alpha = exp(A softplus(a + dt_bias)) in (0, 1); softplus(x) = x past 20, as ggml
  Tensor x = a + dt_bias_;
  Tensor softplus = Tensor::where(x.gt(Tensor::full({1}, 20.0, dtypes::float32, device)), x, (x.exp() + 1.0).log());
  Tensor alpha = (softplus * a_).exp(), beta = b.sigmoid();
  Tensor o = gated_delta(q, k, v, alpha, beta, delta_state_, seqs, rows_per_slot_);
  Tensor y = rms_norm(o, norm_, eps_) * z.reshape({T, nv, dk}).silu();
  return qmatmul(out_, y.reshape({T, nv * dk}));
}

}  // namespace tg::llm
