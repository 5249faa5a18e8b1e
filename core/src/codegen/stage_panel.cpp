// PADTO of a tile's vector loop and the staged panel of a register-tiled reduction (see stage_panel.hpp).
#include "codegen/stage_panel.hpp"

#include "codegen/emitter.hpp"
#include "ir/pattern_matcher.hpp"
#include "ir/symbolic.hpp"

namespace tg::codegen {

using namespace ir;

namespace {

// The loads of `lane` a row tile shares: inside a reduction over `k` alone, reading `vec` and `k` but not `row`.
std::vector<UOpPtr> shared_loads(const UOpPtr& lane, const UOpPtr& row, const UOpPtr& vec, UOpPtr& k) {
  std::vector<UOpPtr> out;
  for (const UOp* n : toposort(std::vector<UOpPtr>{lane})) {
    if (n->op != Op::REDUCE) continue;
    for (const UOp* m : toposort(std::vector<UOpPtr>{n->src[0]})) {
      if (m->op != Op::LOAD) continue;
      const UOpPtr load = m->ptr();
      if (!depends_on(load, vec.get()) || depends_on(load, row.get())) continue;
      if (n->src.size() != 2 || n->src[1]->op != Op::RANGE || !is_const_end(n->src[1]) || (k && k != n->src[1]))
        return {};  // a shared load in a reduction this plan does not stage
      k = n->src[1];
      out.push_back(load);
    }
  }
  return out;
}

// `stmt` with `replace(node)` in place of every node of `op` for which it returns one (bottom-up, one pass).
template <typename F>
UOpPtr replace_each(const UOpPtr& stmt, Op op, F replace) {
  std::vector<std::pair<const UOp*, UOpPtr>> map;
  for (const UOp* n : toposort(std::vector<UOpPtr>{stmt}))
    if (n->op == op)
      if (UOpPtr r = replace(n->ptr())) map.emplace_back(n, r);
  return map.empty() ? stmt : substitute(stmt, map);
}

UOpPtr with_gate(const UOpPtr& access, size_t gate_src, const UOpPtr& gate) {
  std::vector<UOpPtr> src(access->src.begin(), access->src.begin() + static_cast<long>(gate_src));
  src.push_back(access->src.size() > gate_src ? access->src[gate_src] & gate : gate);
  return access->replace_src(std::move(src));
}

// What the panel holds for a shared load: the load, or the conversion of it the lane computes (a bfloat16 or
// float16 operand of a float32 product), so the panel is converted once per copy instead of once per row tile.
UOpPtr staged_value(const UOpPtr& lane, const UOpPtr& load, const UOpPtr& row) {
  UOpPtr cast;
  for (const UOp* n : toposort(std::vector<UOpPtr>{lane}))
    for (const auto& s : n->src)
      if (s == load) {
        if (n->op != Op::CAST || cast || depends_on(n->ptr(), row.get())) return load;
        cast = n->ptr();
      }
  return cast ? cast : load;
}

}  // namespace

UOpPtr shared_reduce_range(const std::vector<UOpPtr>& lanes, const UOpPtr& row, const UOpPtr& vec) {
  UOpPtr k;
  for (const auto& lane : lanes)
    if (shared_loads(lane, row, vec, k).size() != 1) return nullptr;
  return k;
}

bool converted_broadcast(const std::vector<UOpPtr>& lanes, const UOpPtr& row, const UOpPtr& vec) {
  for (const auto& lane : lanes)
    for (const UOp* n : toposort(std::vector<UOpPtr>{lane}))
      if (n->op == Op::CAST && n->src[0]->op == Op::LOAD && depends_on(n->src[0], row.get()) &&
          !depends_on(n->src[0], vec.get()))
        return true;
  return false;
}

std::vector<UOpPtr> padding_gates(int c, const UOpPtr& vo, int64_t vecs) {
  std::vector<UOpPtr> gates;
  for (int p = 0; p < c; ++p) {
    UOpPtr g = simplify(vo * c + p < vecs);
    gates.push_back(g->op == Op::CONST && g->arg_int() != 0 ? nullptr : g);
  }
  return gates;
}

namespace {

// Entry e's stores, and its loads that read `loop`, take gate_of(e) (nothing where it is null).
template <class GateOf>
void gate_entries(TileRows& rows, const UOpPtr& loop, GateOf gate_of) {
  for (size_t e = 0; e < rows.size(); ++e) {
    const UOpPtr& gate = gate_of(e);
    if (!gate) continue;
    for (UOpPtr& lane : rows[e]) {
      if (loop)
        lane = replace_each(lane, Op::LOAD, [&](const UOpPtr& ld) {
          return depends_on(ld, loop.get()) ? with_gate(ld, 2, gate) : nullptr;
        });
      lane = replace_each(lane, Op::STORE, [&](const UOpPtr& st) { return with_gate(st, 3, gate); });
    }
  }
}

}  // namespace

void gate_padded_vectors(TileRows& rows, const UOpPtr& vo, const std::vector<UOpPtr>& gates) {
  gate_entries(rows, vo, [&](size_t e) -> const UOpPtr& { return gates[e % gates.size()]; });
}

void gate_padded_rows(TileRows& rows, int c, const std::vector<UOpPtr>& gates) {
  gate_entries(rows, nullptr, [&](size_t e) -> const UOpPtr& { return gates[e / static_cast<size_t>(c)]; });
}

std::optional<PanelStage> stage_panel(TileRows& rows, int c, const UOpPtr& row, const UOpPtr& vo,
                                      const UOpPtr& reduce_range, const std::vector<UOpPtr>& gates, int64_t& next_id) {
  const int64_t K = reduce_range->src[0]->arg_int(), w = static_cast<int64_t>(rows[0].size());
  const DType d = rows[0][0]->src[0]->src[2]->dtype;  // the product's dtype, which the panel must hold
  PanelStage st;
  st.buffer = UOp::make(Op::DEFINE_REG, d, {}, std::vector<int64_t>{K * c * w, next_id++});
  st.loop = UOp::make(Op::RANGE, reduce_range->dtype, {const_int(reduce_range->dtype, K)},
                      RangeInfo{next_id++, AxisType::LOOP});
  // the shared loads of vector p, lane l: the same nodes in every row q of the tile (they do not read the row)
  std::vector<std::pair<const UOp*, UOpPtr>> to_copy;
  for (int p = 0; p < c; ++p) {
    std::vector<UOpPtr> lane_copies;
    for (int64_t l = 0; l < w; ++l) {
      UOpPtr k;
      const std::vector<UOpPtr> loads = shared_loads(rows[p][l], row, vo, k);
      if (loads.size() != 1 || k != reduce_range) return std::nullopt;
      const UOpPtr value_node = staged_value(rows[p][l], loads[0], row);
      if (value_node->dtype != d) return std::nullopt;
      auto slot = [&](const UOpPtr& kk) { return simplify((kk * c + p) * w + l); };
      to_copy.emplace_back(value_node.get(), UOp::make(Op::LOAD, d, {st.buffer, slot(reduce_range)}));
      UOpPtr load = loads[0];
      if (!gates.empty() && gates[p]) load = with_gate(load, 2, gates[p]);
      UOpPtr value =
          simplify(substitute(substitute(value_node, {{loads[0].get(), load}}), {{reduce_range.get(), st.loop}}));
      lane_copies.push_back(UOp::make(Op::STORE, d, {st.buffer, slot(st.loop), value}));
    }
    st.copies.push_back(std::move(lane_copies));
  }
  for (auto& entry : rows)
    for (UOpPtr& lane : entry) lane = substitute(lane, to_copy);
  return st;
}

}  // namespace tg::codegen
