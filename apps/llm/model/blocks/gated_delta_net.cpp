#include "model/blocks/gated_delta_net.hpp"

#include <cmath>

#include "model/blocks/norm.hpp"
#include "model/blocks/recurrent_kernels.hpp"

namespace tg::llm {

namespace {
int64_t conv_width(const DeltaNetShape& s) { return (2 * s.key_heads + s.value_heads) * s.head_dim; }
}  // namespace

// Tensor parallelism: this rank's key heads [k0, k1), and the value heads that read them. Value head j reads key
// head j % key_heads (tiled), so the rank takes value heads t * key_heads + [k0, k1) of every tile t; kept in that
// order, its local value head j' still reads its local key head j' % (k1 - k0).
struct GatedDeltaNet::Share {
  DeltaNetShape local;
  IndexRanges keys, values, channels;  // heads, and the conv's channels (rows of attn_qkv: q, k, then v)

  Share(const ModelBuilder& b, const DeltaNetShape& s) : local(s) {
    const auto [k0, k1] = b.tp().share(
        s.key_heads, 1, b.file().path() + ": the gated delta net's " + std::to_string(s.key_heads) + " key heads");
    keys = {{k0, k1}};
    for (int64_t t = 0; t < s.value_heads / s.key_heads; ++t)
      values.emplace_back(t * s.key_heads + k0, t * s.key_heads + k1);
    local.key_heads = k1 - k0;
    local.value_heads = count(values);
    const int64_t dk = s.head_dim, kd = s.key_heads * dk;
    for (const IndexRanges& part : {scaled(keys, dk), scaled(keys, dk, kd), scaled(values, dk, 2 * kd)})
      channels.insert(channels.end(), part.begin(), part.end());
    channels = merged(channels);
  }
};

GatedDeltaNet::GatedDeltaNet(ModelBuilder& b, int64_t layer, const DeltaNetShape& shape)
    : GatedDeltaNet(b, layer, shape, Share(b, shape)) {}

GatedDeltaNet::GatedDeltaNet(ModelBuilder& b, int64_t layer, const DeltaNetShape& whole, const Share& part)
    : s_(part.local),
      eps_(b.config().norm_eps),
      rows_per_slot_(b.state().rows_per_slot()),
      state_(&b.state()),
      qkv_(b.matrix_rows(ModelBuilder::blk(layer, "attn_qkv.weight"), conv_width(whole), b.config().d_model,
                         part.channels)),
      z_(b.matrix_rows(ModelBuilder::blk(layer, "attn_gate.weight"), whole.value_heads * whole.head_dim,
                       b.config().d_model, scaled(part.values, whole.head_dim))),
      alpha_(b.matrix_rows(ModelBuilder::blk(layer, "ssm_alpha.weight"), whole.value_heads, b.config().d_model,
                           part.values)),
      beta_(b.matrix_rows(ModelBuilder::blk(layer, "ssm_beta.weight"), whole.value_heads, b.config().d_model,
                          part.values)),
      out_(b.matrix_cols(ModelBuilder::blk(layer, "ssm_out.weight"), b.config().d_model,
                         whole.value_heads * whole.head_dim, scaled(part.values, whole.head_dim))),
      conv_w_(b.vector(ModelBuilder::blk(layer, "ssm_conv1d.weight"), conv_width(whole) * whole.conv_kernel,
                       scaled(part.channels, whole.conv_kernel))
                  .reshape({conv_width(s_), whole.conv_kernel})),
      dt_bias_(b.vector(ModelBuilder::blk(layer, "ssm_dt.bias"), whole.value_heads, part.values)),
      a_(b.vector(ModelBuilder::blk(layer, "ssm_a"), whole.value_heads,
                  part.values)),  // -exp(A_log), no .weight suffix
      norm_(b.vector(ModelBuilder::blk(layer, "ssm_norm.weight"), whole.head_dim)),
      conv_state_(b.state().add_recurrent_state(whole.conv_kernel - 1, conv_width(s_))),
      delta_state_(b.state().add_recurrent_state(s_.value_heads * s_.head_dim, s_.head_dim)) {}

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
