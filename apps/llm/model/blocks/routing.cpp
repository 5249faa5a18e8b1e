#include "model/blocks/routing.hpp"

#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <tuple>

#include "tg/custom_kernel.hpp"

namespace tg::llm {

namespace {

// One work item per token. Slot s takes the best expert after slot s - 1's in the order (score descending, index
// ascending): an expert is still pickable when its score is below the last pick's, or equal with a higher index.
// Two reductions over the experts per slot (the best pickable score, then the lowest index holding it): k x E
// steps a token, no sort, no state but the previous pick.
CustomKernel top_k_kernel(int64_t T, int64_t E, int64_t K, bool normalize, double scale) {
  const DType f32 = dtypes::float32, i32 = dtypes::int32, i64 = dtypes::int64;
  CustomKernel k("topk_experts");
  auto c64 = [&](int64_t v) { return k.constant(static_cast<double>(v), i64); };
  KExpr ids = k.buffer(0, i32), out_w = k.buffer(1, f32), score = k.buffer(2, f32), weight = k.buffer(3, f32);
  KExpr t = k.range(T, Axis::GLOBAL);
  // the picks so far: score and index per slot, and the picked weights
  KExpr picked = k.reg(f32, K), picked_id = k.reg(i32, K), picked_w = k.reg(f32, K);
  KExpr z = k.range(K, Axis::LOOP);
  KExpr init = k.loop({k.store(picked, z, k.constant(0, f32)), k.store(picked_id, z, k.constant(0, i32)),
                       k.store(picked_w, z, k.constant(0, f32))},
                      {z});
  k.run(init);
  KExpr s = k.range(K, Axis::LOOP), first = s == c64(0), prev = KExpr::where(first, c64(0), s - c64(1));
  const double inf = std::numeric_limits<double>::infinity();
  KExpr last = KExpr::where(first, k.constant(inf, f32), k.load(k.after(picked, {init}), prev));
  KExpr last_id = KExpr::where(first, k.constant(-1, i32), k.load(k.after(picked_id, {init}), prev));
  auto pickable = [&](const KExpr& v, const KExpr& e) { return v < last || (v == last && last_id < e.cast(i32)); };
  KExpr e1 = k.range(E, Axis::REDUCE), v1 = k.load(score, t * c64(E) + e1);
  KExpr best = k.reduce(KExpr::where(pickable(v1, e1), v1, k.constant(-inf, f32)), Reduce::MAX, {e1});
  KExpr e2 = k.range(E, Axis::REDUCE), v2 = k.load(score, t * c64(E) + e2);
  KExpr id =
      k.reduce(KExpr::where(pickable(v2, e2) && v2 == best, e2.cast(i32), k.constant(static_cast<double>(E), i32)),
               Reduce::MIN, {e2});
  KExpr found = id < k.constant(static_cast<double>(E), i32);
  KExpr w = k.load(weight, t * c64(E) + id.cast(i64), found);  // 0 where nothing was pickable
  KExpr pick = k.loop(
      {k.store(picked, s, best), k.store(picked_id, s, id), k.store(picked_w, s, w), k.store(ids, t * c64(K) + s, id)},
      {s});
  k.run(pick);
  KExpr ws = k.after(picked_w, {pick});
  KExpr factor = k.constant(scale, f32);
  if (normalize) {
    KExpr r = k.range(K, Axis::REDUCE), total = k.reduce(k.load(ws, r), Reduce::SUM, {r});
    factor = factor / KExpr::max(total, k.constant(6.103515625e-5,
                                                   f32));  // llama.cpp's clamp: a sum of tiny weights stays finite
  }
  KExpr o = k.range(K, Axis::LOOP);
  k.run(k.loop({k.store(out_w, t * c64(K) + o, k.load(ws, o) * factor)}, {o}));
  k.parallel();
  return k;
}

const CustomKernel& cached_top_k(int64_t T, int64_t E, int64_t K, bool normalize, double scale) {
  static std::mutex mu;
  static std::map<std::tuple<int64_t, int64_t, int64_t, bool, double>, std::unique_ptr<CustomKernel>> kernels;
  std::lock_guard lock(mu);
  auto& slot = kernels[{T, E, K, normalize, scale}];
  if (!slot) slot = std::make_unique<CustomKernel>(top_k_kernel(T, E, K, normalize, scale));
  return *slot;
}

// DeepSeek-V3's group limit: the selection scores (T, E) with the experts outside the spec.groups_used best of
// spec.groups groups set to -inf. A group's score is the sum of its two best (a tie at the top counts twice).
Tensor limit_to_groups(const Tensor& score, const RoutingSpec& spec) {
  const int64_t T = score.shape()[0], E = score.shape()[1], G = spec.groups, per = E / G;
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor none = Tensor::full({1}, -inf, dtypes::float32, score.device());
  const Tensor s = score.reshape({T, G, per});
  const Tensor best = s.max({2}, true);
  const Tensor ties = s.eq(best).cast(dtypes::int32).sum({2}, true);
  const Tensor runner_up = Tensor::where(s.lt(best), s, none).max({2}, true);
  const Tensor second = Tensor::where(ties.ge(Tensor::full({1}, 2, dtypes::int32, score.device())), best, runner_up);
  const Tensor group_score = (best + second).reshape({T, G}).contiguous();
  const Tensor picked = top_k_experts(group_score, group_score, {.k = spec.groups_used}).ids;  // (T, groups_used)
  const Tensor group_of = Tensor::arange(0, static_cast<double>(E), 1, dtypes::int32, score.device())
                              .idiv(Tensor::full({1}, static_cast<double>(per), dtypes::int32, score.device()));
  const Tensor open = picked.reshape({T, 1, spec.groups_used})
                          .eq(group_of.reshape({1, E, 1}))
                          .cast(dtypes::int32)
                          .max({2});  // (T, E): 1 where the expert's group was picked
  return Tensor::where(open.cast(dtypes::bool_), score, none).contiguous();
}

}  // namespace

bool groups_fit(const RoutingSpec& spec, int64_t experts) {
  if (spec.groups <= 1) return true;
  return experts % spec.groups == 0 && experts / spec.groups >= 2 && spec.groups_used >= 1 &&
         spec.groups_used < spec.groups && spec.k <= spec.groups_used * (experts / spec.groups);
}

Routes top_k_experts(const Tensor& score, const Tensor& weight, const RoutingSpec& spec) {
  if (score.ndim() != 2 || weight.shape() != score.shape() || score.dtype() != dtypes::float32 ||
      weight.dtype() != dtypes::float32)
    throw std::invalid_argument("tg-llm: expert routing takes (T, experts) float32 scores and weights, got " +
                                shape_str(score.shape()) + " and " + shape_str(weight.shape()));
  const int64_t T = score.shape()[0], E = score.shape()[1];
  if (spec.k < 1 || spec.k > E)
    throw std::invalid_argument("tg-llm: " + std::to_string(spec.k) + " experts per token out of " + std::to_string(E));
  const CustomKernel& k = cached_top_k(T, E, spec.k, spec.normalize, spec.scale);
  auto out =
      k({{{T, spec.k}, dtypes::int32}, {{T, spec.k}, dtypes::float32}}, {score.contiguous(), weight.contiguous()});
  return {out[0], out[1]};
}

Routes route(const Tensor& logits, const RoutingSpec& spec, const std::optional<Tensor>& bias) {
  Tensor w = spec.gate == RoutingSpec::Gate::softmax ? logits.softmax(-1) : logits.sigmoid();
  w = w.contiguous();  // read by the selection (twice a slot) and the weights: computed once
  Tensor select = bias ? (w + bias->reshape({1, bias->shape()[0]})).contiguous() : w;
  if (spec.groups > 1) {
    const int64_t E = logits.shape()[1];
    if (!groups_fit(spec, E))
      throw std::invalid_argument("tg-llm: " + std::to_string(spec.k) + " experts per token from " +
                                  std::to_string(spec.groups_used) + " of " + std::to_string(spec.groups) +
                                  " groups of " + std::to_string(E) + " experts");
    select = limit_to_groups(select, spec);
  }
  return top_k_experts(select, w, spec);
}

}  // namespace tg::llm
