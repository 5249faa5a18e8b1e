#include "model/blocks/mla_attention.hpp"

#include <vector>

#include "model/blocks/attention.hpp"
#include "model/blocks/norm.hpp"

namespace tg::llm {

namespace {
std::string blk(int64_t layer, const char* name) { return ModelBuilder::blk(layer, name); }
}  // namespace

MlaAttention::MlaAttention(ModelBuilder& b, int64_t layer, const MlaShape& s)
    : MlaAttention(
          b, layer, s,
          b.tp().share(b.config().n_heads, 1,
                       b.file().path() + ": " + std::to_string(b.config().n_heads) + " latent-attention heads")) {}

MlaAttention::MlaAttention(ModelBuilder& b, int64_t layer, const MlaShape& s, std::pair<int64_t, int64_t> heads)
    : s_(s),
      H_(heads.second - heads.first),
      eps_(b.config().norm_eps),
      rope_(b.rope(b.config().rope_base)),
      state_(&b.state()),
      kv_a_(b.matrix(blk(layer, "attn_kv_a_mqa.weight"), s.kv_lora + s.rope, b.config().d_model)),
      k_b_(b.matrix_rows(blk(layer, "attn_k_b.weight"), b.config().n_heads * s.kv_lora, s.nope, heads.first * s.kv_lora,
                         heads.second * s.kv_lora)),
      v_b_(b.matrix_rows(blk(layer, "attn_v_b.weight"), b.config().n_heads * s.v, s.kv_lora, heads.first * s.v,
                         heads.second * s.v)),
      o_(b.matrix_cols(blk(layer, "attn_output.weight"), b.config().d_model, b.config().n_heads * s.v,
                       heads.first * s.v, heads.second * s.v)),
      kv_a_norm_(b.vector(blk(layer, "attn_kv_a_norm.weight"), s.kv_lora)),
      cache_(&b.state().add_kv_cache(s.kv_lora + s.rope)) {
  const int64_t per_head = s.nope + s.rope, q_width = b.config().n_heads * per_head;
  const int64_t q0 = heads.first * per_head, q1 = heads.second * per_head;
  if (s.q_lora > 0) {
    q_a_ = b.matrix(blk(layer, "attn_q_a.weight"), s.q_lora, b.config().d_model);
    q_a_norm_ = b.vector(blk(layer, "attn_q_a_norm.weight"), s.q_lora);
    q_b_ = b.matrix_rows(blk(layer, "attn_q_b.weight"), q_width, s.q_lora, q0, q1);
  } else {
    q_ = b.matrix_rows(blk(layer, "attn_q.weight"), q_width, b.config().d_model, q0, q1);
  }
}

Tensor MlaAttention::forward(const Tensor& h, const Pass& p) {
  const int64_t T = p.T, H = H_, C = s_.kv_lora, R = s_.rope, N = s_.nope;
  ProductInput in{h, nullptr};  // q (or q_a) and kv_a share the int8 form of h
  Tensor q = q_ ? qmatmul(*q_, in) : qmatmul(*q_b_, rms_norm(qmatmul(*q_a_, in), *q_a_norm_, eps_));
  q = q.reshape({T, H, N + R});
  Tensor kv = qmatmul(kv_a_, in);
  Tensor c = rms_norm(kv.shrink({{0, T}, {0, C}}), kv_a_norm_, eps_),
         k_pe = kv.shrink({{0, T}, {C, C + R}}).reshape({T, 1, R});
  // every head's query absorbed into the latent space: head h's product by k_b[h], as stacked experts by head id
  std::vector<int32_t> heads(static_cast<size_t>(T * H));
  for (size_t i = 0; i < heads.size(); ++i) heads[i] = static_cast<int32_t>(i % static_cast<size_t>(H));
  const Tensor by_head = Tensor::from_vector(heads, {T, H}, dtypes::int32, h.device());
  Tensor q_lat = qmatmul_experts(k_b_, H, q.shrink({{0, T}, {0, H}, {0, N}}).reshape({T * H, N}).contiguous(), by_head)
                     .reshape({T, H, C});
  Tensor q_pe = q.shrink({{0, T}, {0, H}, {N, N + R}});
  auto one = [&](int64_t t0, int64_t n, const SeqPos& at) {
    auto rows = [&](const Tensor& x) { return x.shrink(0, Dim(t0), Dim(n)); };
    const BoundVariable& pos = at.pos;
    Tensor qr = Tensor::cat({rows(q_lat), rope_->apply(rows(q_pe).contiguous(), n, pos, false)}, 2);
    Tensor kr = Tensor::cat({rows(c), rope_->apply(rows(k_pe).contiguous(), n, pos, false).reshape({n, R})}, 1);
    return attend(qr, kr, n, at, p.key_len);
  };
  Tensor lat = [&] {
    if (p.seqs.size() == 1) return one(0, T, p.seqs[0]);
    std::vector<Tensor> outs;  // a decode batch: each sequence attends over its own slot
    for (int64_t b = 0; b < T; ++b) outs.push_back(one(b, 1, p.seqs[static_cast<size_t>(b)]));
    return Tensor::cat(outs, 0);
  }();
  Tensor o = qmatmul_experts(v_b_, H, lat.reshape({T * H, C}).contiguous(), by_head);  // (T * H, v)
  return qmatmul(o_, o.reshape({T, H * s_.v}));
}

Tensor MlaAttention::attend(const Tensor& q, const Tensor& rows, int64_t T, const SeqPos& at, int64_t key_len) {
  const int64_t H = H_, C = s_.kv_lora, W = C + s_.rope;
  cache_->write(rows, at);
  const Dim len = key_span(*state_, T, at.pos, key_len);
  Tensor keys = cache_->read(at, len);                           // (W, L): one row for every head
  Tensor vals = keys.shrink(0, Dim(0), Dim(C)).permute({1, 0});  // (L, C): the latent part
  if (T > 1) vals = vals.contiguous();
  Tensor qh = q.permute({1, 0, 2}).reshape({H * T, W});  // head-major: (H * T, W)
  // a prefill chunk's queries are stored once: fused into the scores' product, their concatenation and RoPE were
  // recomputed for every panel of keys (GLM-4.7-Flash's shape, 512 tokens: 650 -> ~60 ms a layer)
  if (T > 1) qh = qh.contiguous();
  Tensor scores = (qh.matmul(keys) * s_.scale).contiguous().reshape({Dim(1), Dim(H), Dim(T), len});
  Tensor p = causal_softmax(*state_, scores, T, at.pos, len).reshape({Dim(H * T), len});
  return p.matmul(vals).contiguous().reshape({H, T, C}).permute({1, 0, 2});  // (T, H, C)
}

}  // namespace tg::llm
