#include "model/blocks/moe_ffn.hpp"

#include <cmath>

#include "tg/custom_kernel.hpp"
#include "tg/error.hpp"

namespace tg::llm {

MoeShape read_moe_shape(ModelBuilder& b, const RoutingSpec& routing, int64_t first) {
  const GGUFFile& f = b.file();
  MoeShape s;
  s.experts = f.get_int(b.key("expert_count"));
  // the experts' width: the key where the file has it, else their tensors' (llama.cpp's qwen3moe falls back to
  // feed_forward_length / k, olmoe reads feed_forward_length: the tensors agree with whichever applies)
  const GGUFTensor& gate = f.need_tensor(ModelBuilder::blk(first, "ffn_gate_exps.weight"));
  s.d_ff = f.get_int(b.key("expert_feed_forward_length"), gate.ne.size() == 3 ? gate.ne[1] : 0);
  s.shared_d_ff = f.get_int(b.key("expert_shared_feed_forward_length"), 0);
  s.routing = routing;
  s.routing.k = f.get_int(b.key("expert_used_count"));
  s.routing.normalize = f.get_bool(b.key("expert_weights_norm"), routing.normalize);
  s.routing.scale = f.get_float(b.key("expert_weights_scale"), routing.scale);
  if (s.routing.scale == 0) s.routing.scale = 1;  // llama.cpp: 0 is "not set"
  if (s.experts < 1 || s.experts > 4096 || s.routing.k < 1 || s.routing.k > s.experts || s.d_ff < 1 ||
      s.shared_d_ff < 0)
    throw Error("tg-llm: " + f.path() + ": implausible mixture of experts (" + std::to_string(s.routing.k) + " of " +
                std::to_string(s.experts) + " experts of width " + std::to_string(s.d_ff) + ")");
  if (!std::isfinite(s.routing.scale))
    throw Error("tg-llm: " + f.path() + ": " + b.key("expert_weights_scale") + " is not a finite number");
  return s;
}

namespace {

std::string blk(int64_t layer, const char* name) { return ModelBuilder::blk(layer, name); }

// Rows idx[i] of x (N, d) float32 -> (n, d); an index outside [0, N) gives a zero row.
Tensor rows_of(const Tensor& x, const std::vector<int32_t>& idx) {
  const int64_t N = x.shape()[0], d = x.shape()[1], n = static_cast<int64_t>(idx.size());
  CustomKernel k("gather_rows");
  auto c64 = [&](int64_t v) { return k.constant(static_cast<double>(v), dtypes::int64); };
  // 16 values a statement where d allows (vector loads and stores)
  const int64_t V = d % 16 == 0 ? 16 : 1;
  KExpr i = k.range(n, Axis::GLOBAL), cb = k.range(d / V, Axis::LOOP), cv = k.range(V, Axis::UPCAST),
        c = cb * c64(V) + cv;
  KExpr row = k.load(k.buffer(2, dtypes::int32), i).cast(dtypes::int64), ok = (c64(-1) < row) && (row < c64(N));
  KExpr v = KExpr::where(ok, k.load(k.buffer(1, dtypes::float32), KExpr::where(ok, row, c64(0)) * c64(d) + c),
                         k.constant(0, dtypes::float32));
  k.run(k.loop({k.store(k.buffer(0, dtypes::float32), i * c64(d) + c, v)}, {cb, cv}));
  k.parallel();
  return k({{{n, d}, dtypes::float32}}, {x.contiguous(), Tensor::from_vector(idx, {n}, dtypes::int32, x.device())})[0];
}

// An expert's token count padded to a few lengths, so that the tiled products' kernels are shared: multiples of
// 32 up to 128, then powers of two.
int64_t padded_tokens(int64_t n) {
  if (n <= 128) return (n + 31) / 32 * 32;
  int64_t p = 256;
  while (p < n) p *= 2;
  return p;
}

}  // namespace

MoeFfn::MoeFfn(ModelBuilder& b, int64_t layer, const MoeShape& shape)
    : MoeFfn(b, layer, shape,
             b.tp().share(shape.experts, 1, b.file().path() + ": " + std::to_string(shape.experts) + " experts")) {}

MoeFfn::MoeFfn(ModelBuilder& b, int64_t layer, const MoeShape& shape, std::pair<int64_t, int64_t> experts)
    : shape_(shape),
      first_(experts.first),
      local_(experts.second - experts.first),
      router_(b.matrix(blk(layer, "ffn_gate_inp.weight"), shape.experts, b.config().d_model)),
      // a decode step reads k of the E experts' rows
      gate_(b.matrix_rows(blk(layer, "ffn_gate_exps.weight"), shape.experts * shape.d_ff, b.config().d_model,
                          experts.first * shape.d_ff, experts.second * shape.d_ff,
                          static_cast<double>(shape.routing.k) / static_cast<double>(shape.experts))),
      up_(b.matrix_rows(blk(layer, "ffn_up_exps.weight"), shape.experts * shape.d_ff, b.config().d_model,
                        experts.first * shape.d_ff, experts.second * shape.d_ff,
                        static_cast<double>(shape.routing.k) / static_cast<double>(shape.experts))),
      down_(b.matrix_rows(blk(layer, "ffn_down_exps.weight"), shape.experts * b.config().d_model, shape.d_ff,
                          experts.first * b.config().d_model, experts.second * b.config().d_model,
                          static_cast<double>(shape.routing.k) / static_cast<double>(shape.experts))),
      gate_each_(b.expert_views(blk(layer, "ffn_gate_exps.weight"), shape.experts, experts)),
      up_each_(b.expert_views(blk(layer, "ffn_up_exps.weight"), shape.experts, experts)),
      down_each_(b.expert_views(blk(layer, "ffn_down_exps.weight"), shape.experts, experts)) {
  selection_bias_ = b.optional_vector(blk(layer, "exp_probs_b.bias"), shape.experts);
  if (shape.shared_d_ff > 0) {
    shared_ = std::make_unique<GatedFfn>(b, layer, Activation::silu, "_shexp", shape.shared_d_ff);
    if (b.has(blk(layer, "ffn_gate_inp_shexp.weight")))
      shared_gate_ = b.matrix(blk(layer, "ffn_gate_inp_shexp.weight"), 1, b.config().d_model);
  }
}

Tensor MoeFfn::local_ids(const Tensor& ids) const {
  if (first_ == 0 && local_ == shape_.experts) return ids;
  auto c = [&](int64_t v) { return Tensor::full(ids.shape(), static_cast<double>(v), dtypes::int32, ids.device()); };
  const Tensor rel = ids - c(first_), none = c(local_);
  return Tensor::where(rel.lt(c(0)), none, Tensor::where(rel.lt(none), rel, none));
}

Tensor MoeFfn::operator()(const Tensor& h, const Pass& p) const {
  ProductInput in{h, nullptr};
  Routes routes = route(qmatmul(router_, in), shape_.routing, selection_bias_);
  routes.ids = local_ids(routes.ids);
  const bool group = p.host_reads && p.T >= kGroupedTokens && !gate_each_.empty();
  Tensor out = group ? grouped(h, routes) : routed(in, routes);
  if (shared_) {
    Tensor s = (*shared_)(h, p);
    if (shared_gate_) s = s * qmatmul(*shared_gate_, in).sigmoid();
    out = out + s;
  }
  return out;
}

Tensor MoeFfn::routed(ProductInput& in, const Routes& routes) const {
  // (T * K, d_ff): pair t * K + s is token t's s-th expert
  Tensor g = qmatmul_experts(gate_, local_, in, routes.ids), u = qmatmul_experts(up_, local_, in, routes.ids);
  ProductInput act{(g.silu() * u).contiguous(), nullptr};
  return qmatmul_experts_summed(down_, local_, act, routes.ids, routes.weights);
}

Tensor MoeFfn::grouped(const Tensor& h, const Routes& routes) const {
  const int64_t T = h.shape()[0], K = shape_.routing.k, d = router_.cols;
  const std::vector<int32_t> ids = Tensor(routes.ids).to_vector<int32_t>();
  std::vector<std::vector<int32_t>> pairs(static_cast<size_t>(local_));
  for (int32_t p = 0; p < static_cast<int32_t>(ids.size()); ++p)
    if (ids[static_cast<size_t>(p)] >= 0 && ids[static_cast<size_t>(p)] < local_)
      pairs[static_cast<size_t>(ids[static_cast<size_t>(p)])].push_back(p);
  // one kernel a product for all the experts (qmatmul_grouped) where the formats have it, else each expert's own
  const bool one_kernel = grouped_product_runs(gate_) && grouped_product_runs(up_) && grouped_product_runs(down_);
  // each expert's tokens in a run of rows of their own, padded (zero rows) to what its products take; where each
  // pair's row landed
  std::vector<int32_t> tokens, row_of_pair(ids.size(), -1);  // -1: a padding pick, a zero row
  std::vector<std::pair<size_t, int64_t>> runs;              // (expert, padded rows), in row order
  for (size_t e = 0; e < pairs.size(); ++e) {
    if (pairs[e].empty()) continue;
    const int64_t n = static_cast<int64_t>(pairs[e].size());
    const int64_t np = one_kernel ? (n + kExpertRunTokens - 1) / kExpertRunTokens * kExpertRunTokens : padded_tokens(n);
    for (int64_t i = 0; i < np; ++i) {
      tokens.push_back(i < n ? pairs[e][static_cast<size_t>(i)] / static_cast<int32_t>(K) : -1);
      if (i < n)
        row_of_pair[static_cast<size_t>(pairs[e][static_cast<size_t>(i)])] = static_cast<int32_t>(tokens.size() - 1);
    }
    runs.push_back({e, np});
  }
  if (runs.empty()) return Tensor::zeros({T, d}, dtypes::float32, h.device());
  const Tensor x = rows_of(h, tokens);
  auto products = [&]() -> Tensor {
    if (one_kernel) {
      std::vector<int32_t> run_experts;  // the expert of each run of kExpertRunTokens rows
      for (const auto& [e, np] : runs)
        run_experts.insert(run_experts.end(), static_cast<size_t>(np / kExpertRunTokens), static_cast<int32_t>(e));
      const int64_t n = static_cast<int64_t>(run_experts.size());
      const Tensor experts = Tensor::from_vector(run_experts, {n}, dtypes::int32, h.device());
      ProductInput in{x, nullptr};
      Tensor g = qmatmul_grouped(gate_, local_, in, experts), u = qmatmul_grouped(up_, local_, in, experts);
      ProductInput act{(g.silu() * u).contiguous(), nullptr};
      return qmatmul_grouped(down_, local_, act, experts);
    }
    std::vector<Tensor> outputs;
    int64_t at = 0;
    for (const auto& [e, np] : runs) {
      ProductInput in{x.shrink({{at, at + np}, {0, x.shape()[1]}}), nullptr};
      Tensor g = qmatmul(gate_each_[e], in), u = qmatmul(up_each_[e], in);
      outputs.push_back(qmatmul(down_each_[e], (g.silu() * u).contiguous()).realize());
      at += np;
    }
    return outputs.size() == 1 ? outputs[0] : Tensor::cat(outputs, 0);
  };
  const Tensor y = rows_of(products(), row_of_pair);
  return (y.reshape({T, K, d}) * routes.weights.reshape({T, K, 1})).sum({1});
}

}  // namespace tg::llm
