// The pieces the GPU plans share (plan_parts.hpp says what each is).
#include "codegen/gpu/plan_parts.hpp"

#include <set>

namespace tg::codegen {

using namespace ir;

int64_t next_range_id(const UOpPtr& sink) {
  int64_t id = 0;
  for (const UOp* n : toposort(std::vector<UOpPtr>{sink}))
    if (n->op == Op::RANGE) id = std::max(id, n->range().id + 1);
  return id;
}

std::vector<UOpPtr> top_reduces(const UOpPtr& sink) {
  std::vector<UOpPtr> out;
  std::set<const UOp*> seen;
  std::function<void(const UOpPtr&)> walk = [&](const UOpPtr& u) {
    if (!seen.insert(u.get()).second) return;
    if (u->op == Op::REDUCE) return out.push_back(u);
    for (const auto& s : u->src) walk(s);
  };
  walk(sink);
  return out;
}

int64_t extent(const UOpPtr& range) { return range->src[0]->arg_int(); }

UOpPtr new_range(int64_t n, AxisType type, int64_t& id) {
  return UOp::make(Op::RANGE, dtypes::int32, {const_int(dtypes::int32, n)}, RangeInfo{id++, type});
}

namespace {

bool depends_on(const UOpPtr& u, const UOpPtr& r) { return ir::depends_on(u, r.get()); }

}  // namespace

std::optional<Matmul> match_matmul(const UOpPtr& sink, const std::vector<UOpPtr>& ranges) {
  if (sink->src.size() != 1 || ranges.size() < 2 || ranges.size() > 3) return std::nullopt;
  for (const auto& r : ranges)
    if (!is_const_end(r)) return std::nullopt;
  const std::vector<UOpPtr> reduces = top_reduces(sink);
  if (reduces.size() != 1) return std::nullopt;
  const UOpPtr& u = reduces[0];
  if (static_cast<ReduceOp>(u->arg_int()) != ReduceOp::SUM || u->src.size() != 2 || u->src[1]->op != Op::RANGE ||
      !is_const_end(u->src[1]) || u->src[0]->op != Op::MUL || !u->dtype.is_float())
    return std::nullopt;
  Matmul mm{u,
            ranges[ranges.size() - 2],
            ranges.back(),
            u->src[1],
            u->src[0]->src[0],
            u->src[0]->src[1],
            ranges.size() == 3 ? ranges[0] : nullptr};
  if (depends_on(mm.a, mm.n)) std::swap(mm.a, mm.b);
  if (depends_on(mm.a, mm.n) || depends_on(mm.b, mm.m) || !depends_on(mm.a, mm.m) || !depends_on(mm.b, mm.n))
    return std::nullopt;
  // a factor with a reduction of its own (a fused softmax) would be recomputed for every staged element
  for (const UOpPtr& f : {mm.a, mm.b})
    for (const UOp* n : toposort(std::vector<UOpPtr>{f}))
      if (n->op == Op::REDUCE) return std::nullopt;
  return mm;
}

UOpPtr at(const UOpPtr& value, std::initializer_list<std::pair<const UOpPtr*, UOpPtr>> where) {
  std::vector<std::pair<const UOp*, UOpPtr>> map;
  for (const auto& [range, idx] : where) map.emplace_back(range->get(), cast(idx, (*range)->dtype));
  return simplify_substituted(value, map);
}

std::vector<UOpPtr> stage_tile(const tg_renderer_caps& caps, const UOpPtr& local, int64_t rows, int64_t cols,
                               const UOpPtr& tid, int64_t threads, int64_t& id,
                               const std::function<UOpPtr(const UOpPtr&, const UOpPtr&)>& value,
                               const std::function<UOpPtr(const UOpPtr&, const UOpPtr&)>& slot) {
  if ((rows * cols) % threads)
    throw Error("tg: internal: a " + std::to_string(rows) + " x " + std::to_string(cols) +
                " tile does not split over " + std::to_string(threads) + " work-items");
  int64_t w = 4;
  while (w > 1 && (cols % w || (rows * cols) % (threads * w) || !e_vector_ok(caps, local->dtype, static_cast<int>(w))))
    w /= 2;
  std::vector<UOpPtr> stmts;
  for (int64_t first = 0; first < rows * cols; first += threads * w) {
    const UOpPtr lin = tid * w + first, r = simplify(lin / cols), c = simplify(lin % cols);
    if (w == 1) {
      stmts.push_back(UOp::make(Op::STORE, local->dtype, {local, simplify(slot(r, c)), value(r, c)}));
      continue;
    }
    const UOpPtr l =
        UOp::make(Op::RANGE, dtypes::int32, {const_int(dtypes::int32, w)}, RangeInfo{id++, AxisType::UPCAST});
    const UOpPtr st = UOp::make(Op::STORE, local->dtype, {local, simplify(slot(r, c + l)), value(r, simplify(c + l))});
    stmts.push_back(UOp::make(Op::END, dtypes::bool_, {st, l}, int64_t{1}));
  }
  return stmts;
}

UOpPtr output_store(const UOpPtr& sink, const Matmul& mm, const UOpPtr& m, const UOpPtr& n, const UOpPtr& result) {
  return at(substitute(sink->src[0], {{mm.reduce.get(), result}}), {{&mm.m, m}, {&mm.n, n}});
}

Blocks blocks(const Matmul& mm, int64_t BM, int64_t BN, DType tile, int64_t a_elems, int64_t b_elems, int64_t& id) {
  Blocks b{new_range(extent(mm.n) / BN, AxisType::GLOBAL, id), new_range(extent(mm.m) / BM, AxisType::GLOBAL, id),
           nullptr, nullptr};
  b.as = UOp::make(Op::DEFINE_LOCAL, tile, {}, std::vector<int64_t>{a_elems, id++});
  b.bs = UOp::make(Op::DEFINE_LOCAL, tile, {}, std::vector<int64_t>{b_elems, id++});
  return b;
}

}  // namespace tg::codegen
