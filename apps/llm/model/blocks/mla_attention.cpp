#include "model/blocks/mla_attention.hpp"

#include <algorithm>
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
  Tensor q_nope = q.shrink({{0, T}, {0, H}, {0, N}}), q_pe = q.shrink({{0, T}, {0, H}, {N, N + R}});
  // each sequence's rows [c | rope(k_pe)] cached, its queries' RoPE parts rotated
  auto cached = [&](int64_t t0, int64_t n, const SeqPos& at) {
    auto rows = [&](const Tensor& x) { return x.shrink(0, Dim(t0), Dim(n)); };
    cache_->write(Tensor::cat({rows(c), rope_->apply(rows(k_pe).contiguous(), n, at.pos, false).reshape({n, R})}, 1),
                  at);
    return rope_->apply(rows(q_pe).contiguous(), n, at.pos, false).contiguous();  // (n, H, R), rotated once
  };
  if (p.seqs.size() == 1) {
    const SeqPos& at = p.seqs[0];
    Tensor q_rot = cached(0, T, at);
    const Dim len = key_span(*state_, T, at.pos, p.key_len);
    if (len.is_static() && expanded_is_cheaper(T, len.value()))
      return qmatmul(o_, attend_expanded(q_nope, q_rot, T, at, len.value()));
    return qmatmul(o_, values(attend_absorbed(absorb(q_nope, T), q_rot, T, at, len), T));
  }
  // a decode batch: each sequence attends over its own slot, in the latent space; the values' product once
  Tensor q_lat = absorb(q_nope, T);
  std::vector<Tensor> outs;
  for (int64_t b = 0; b < T; ++b) {
    const SeqPos& at = p.seqs[static_cast<size_t>(b)];
    Tensor q_rot = cached(b, 1, at);
    outs.push_back(attend_absorbed(q_lat.slice(0, b, b + 1), q_rot, 1, at, key_span(*state_, 1, at.pos, p.key_len)));
  }
  return qmatmul(o_, values(Tensor::cat(outs, 0), T));
}

bool MlaAttention::expanded_is_cheaper(int64_t T, int64_t L) const {
  // multiply-adds a head: absorbing maps T queries into the latent space and back (k_b, v_b) and scores and sums
  // over latent rows (C + R wide, then C); expanding maps L cached rows into keys and values, then scores and sums
  // over them (N + R, then V wide). GLM-4.7-Flash's shape, a 512-token prefill: 16.1 -> 10.0 GFLOP a layer
  const int64_t C = s_.kv_lora, N = s_.nope, R = s_.rope, V = s_.v;
  const int64_t absorbed = T * C * (N + V) + T * L * (2 * C + R), expanded = L * C * (N + V) + T * L * (N + R + V);
  return expanded < absorbed;
}

Tensor MlaAttention::absorb(const Tensor& q_nope, int64_t T) const {
  // every head's query absorbed into the latent space: head h's product by k_b[h], as stacked experts by head id
  const int64_t H = H_, N = s_.nope;
  return qmatmul_experts(k_b_, H, q_nope.reshape({T * H, N}).contiguous(), by_head(T)).reshape({T, H, s_.kv_lora});
}

Tensor MlaAttention::values(const Tensor& lat, int64_t T) const {
  // each head's output v_b[h] . lat, as stacked experts by head id
  const int64_t H = H_, C = s_.kv_lora;
  return qmatmul_experts(v_b_, H, lat.reshape({T * H, C}).contiguous(), by_head(T)).reshape({T, H * s_.v});
}

Tensor MlaAttention::by_head(int64_t T) const {
  std::vector<int32_t> heads(static_cast<size_t>(T * H_));
  for (size_t i = 0; i < heads.size(); ++i) heads[i] = static_cast<int32_t>(i % static_cast<size_t>(H_));
  return Tensor::from_vector(heads, {T, H_}, dtypes::int32, state_->device());
}

Tensor MlaAttention::attend_expanded(const Tensor& q_nope, const Tensor& q_rot, int64_t T, const SeqPos& at,
                                     int64_t L) {
  const int64_t H = H_, C = s_.kv_lora, R = s_.rope, N = s_.nope, V = s_.v;
  const Dim len(L);
  Tensor rows = cache_->read(at, len);  // (C + R, L)
  Tensor lat = rows.shrink(0, Dim(0), Dim(C)), k_pe = rows.shrink(0, Dim(C), Dim(R));
  // every head's keys [k_b[h]^T c | k_pe] (H, N + R, L) and values v_b[h] c (H, L, V) from the latent rows, stored:
  // as two products summed, the scores' kernel ran at a third of one product's speed
  Tensor k_nope = dequantize(k_b_).reshape({H, C, N}).permute({0, 2, 1}).matmul(lat).contiguous();
  Tensor keys = Tensor::cat({k_nope, k_pe.reshape({1, R, L}).expand({H, R, L})}, 1).contiguous();
  Tensor vals = qmatmul(v_b_, lat.permute({1, 0}).contiguous()).reshape({L, H, V}).permute({1, 0, 2}).contiguous();
  Tensor qh = Tensor::cat({q_nope, q_rot}, 2).permute({1, 0, 2}).contiguous();  // head-major (H, T, N + R)
  // a quarter of the queries at a time (at least 16), each block over the keys its last query sees (rounded up to
  // 128; the mask hides the rest): a 512-token chunk at position 0 scores 62.5% of the (query, key) pairs
  const int64_t Tb = std::max<int64_t>(16, T / 4 / 16 * 16);
  std::vector<Tensor> outs;
  for (int64_t t0 = 0; t0 < T; t0 += Tb) {
    const int64_t n = std::min(Tb, T - t0), Lb = std::min(L, (at.pos.value() + t0 + n + 127) / 128 * 128);
    Tensor scores = (qh.shrink(1, Dim(t0), Dim(n)).matmul(keys.shrink(2, Dim(0), Dim(Lb))) * s_.scale)
                        .contiguous()
                        .reshape({1, H, n, Lb});
    Tensor p = causal_softmax(*state_, scores, n, at.pos, Dim(Lb), 0, t0).reshape({H, n, Lb});
    outs.push_back(p.matmul(vals.shrink(1, Dim(0), Dim(Lb))).contiguous());  // (H, n, V)
  }
  return Tensor::cat(outs, 1).permute({1, 0, 2}).reshape({T, H * V});
}

Tensor MlaAttention::attend_absorbed(const Tensor& q_lat, const Tensor& q_rot, int64_t T, const SeqPos& at,
                                     const Dim& len) {
  const int64_t H = H_, C = s_.kv_lora, W = C + s_.rope;
  Tensor keys = cache_->read(at, len);                           // (W, L): one row for every head
  Tensor vals = keys.shrink(0, Dim(0), Dim(C)).permute({1, 0});  // (L, C): the latent part
  if (T > 1) vals = vals.contiguous();
  Tensor qh = Tensor::cat({q_lat, q_rot}, 2).permute({1, 0, 2}).reshape({H * T, W});  // head-major: (H * T, W)
  // a prefill chunk's queries are stored once: fused into the scores' product, their concatenation and RoPE were
  // recomputed for every panel of keys (GLM-4.7-Flash's shape, 512 tokens: 650 -> ~60 ms a layer)
  if (T > 1) qh = qh.contiguous();
  Tensor scores = (qh.matmul(keys) * s_.scale).contiguous().reshape({Dim(1), Dim(H), Dim(T), len});
  Tensor p = causal_softmax(*state_, scores, T, at.pos, len).reshape({Dim(H * T), len});
  return p.matmul(vals).contiguous().reshape({H, T, C}).permute({1, 0, 2});  // (T, H, C)
}

}  // namespace tg::llm
