// The expand step (plan.hpp) and vector_store (expand.hpp): lanes and tile entries -> one graph of vector statements.
#include "codegen/expand.hpp"

#include <algorithm>

#include "codegen/lanes.hpp"
#include "codegen/plan.hpp"

namespace tg::codegen {

std::vector<UOpPtr> vector_store(const std::vector<UOpPtr>& stores, const tg_renderer_caps& caps) {
  const int w = static_cast<int>(stores.size());
  const UOpPtr& s0 = stores[0];
  const DType d = s0->src[2]->dtype;
  auto gate_of = [](const UOpPtr& st) { return st->src.size() > 3 ? st->src[3].get() : nullptr; };
  const bool same_gate = std::all_of(stores.begin(), stores.end(), [&](const UOpPtr& st) { return gate_of(st) == gate_of(s0); });
  const std::vector<UOpPtr> idx = src_lanes(stores, 1), val = src_lanes(stores, 2);
  const UOpPtr values = UOp::make(Op::VECTORIZE, d.vec(w), val);
  if (same_gate && consecutive_index(idx) && w <= 16 && e_vector_ok(caps, d, w)) {
    std::vector<UOpPtr> src{s0->src[0], idx[0], values};
    if (gate_of(s0)) src.push_back(s0->src[3]);
    return {UOp::make(Op::STORE, d.vec(w), std::move(src))};
  }
  const UOpPtr indices = UOp::make(Op::VECTORIZE, idx[0]->dtype.vec(w), idx);
  std::vector<UOpPtr> out;
  for (int l = 0; l < w; ++l) {
    std::vector<UOpPtr> src{s0->src[0], UOp::make(Op::GEP, idx[0]->dtype, {indices}, int64_t{l}), UOp::make(Op::GEP, d, {values}, int64_t{l})};
    if (gate_of(stores[l])) src.push_back(stores[l]->src[3]);
    out.push_back(UOp::make(Op::STORE, d, std::move(src)));
  }
  return out;
}

void expand(Plan& p) {
  if (p.lanes.size() <= 1) return;
  std::vector<UOpPtr> stmts;
  for (const auto& row : p.rows)
    for (size_t s = 0; s < p.sink->src.size(); ++s) {
      std::vector<UOpPtr> stores;
      for (const auto& lane : row) stores.push_back(lane->src[s]);
      for (UOpPtr& st : vector_store(stores, p.caps)) stmts.push_back(std::move(st));
    }
  if (p.staged)
    for (auto& copy : p.staged->copies) copy = vector_store(copy, p.caps);
  p.rewrite_sink(UOp::make(Op::SINK, dtypes::bool_, std::move(stmts)));
}

}  // namespace tg::codegen
