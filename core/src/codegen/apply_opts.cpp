// Applying optimization actions (opt.hpp) to a kernel's plan: the one step that changes its loops. Each action
// applies or says why not, leaving the plan as it was. The register tile and the GPU plans are asked for by
// several actions (rows, vectors, padding, staging; a plan and its tile), so they are built once the list is
// through (build_planned).
#include <algorithm>
#include <map>
#include <utility>

#include "codegen/emitter.hpp"
#include "codegen/gpu/plans.hpp"
#include "codegen/heuristic.hpp"
#include "codegen/plan.hpp"
#include "codegen/stage_panel.hpp"

namespace tg::codegen {

using namespace ir;

namespace {

int innermost(const Plan& p) { return static_cast<int>(p.axes.size()) - 1; }
// The loop a register tile's rows come from: the one just outside the vector loop (alone, the vector loop itself:
// adjacent vectors).
int row_axis(const Plan& p) { return p.axes.size() >= 2 ? innermost(p) - 1 : innermost(p); }
DType out_dtype(const Plan& p) { return p.sink->src[0]->src[2]->dtype; }

// The first UPCAST of the innermost loop: its lanes become one output vector, where the store is contiguous and
// every value vectorizes.
std::string upcast_lanes(Plan& p, int w) {
  const UOpPtr r = p.ranges.back();
  if (!is_const_end(r)) return "the loop has a symbolic length";
  const int64_t end = r->src[0]->arg_int();
  const DType out = out_dtype(p);
  if (end % w) return std::to_string(w) + " does not divide its " + std::to_string(end) + " iterations";
  if (w * out.itemsize() > 64 || !e_vector_ok(p.caps, out, w))
    return "the renderer has no vector of " + std::to_string(w) + " " + out.name();
  UOpPtr outer = end == w ? const_int(r->dtype, 0)
                          : UOp::make(Op::RANGE, r->dtype, {const_int(r->dtype, end / w)},
                                      RangeInfo{r->range().id, AxisType::UPCAST});
  std::vector<UOpPtr> lanes;
  for (int l = 0; l < w; ++l)
    lanes.push_back(simplify(substitute(
        p.sink, {{r.get(), alu(Op::ADD, alu(Op::MUL, outer, const_int(r->dtype, w)), const_int(r->dtype, l))}})));
  std::vector<UOpPtr> idx, vals;
  for (const auto& ls : lanes) idx.push_back(ls->src[0]->src[1]), vals.push_back(ls->src[0]->src[2]);
  std::map<const UOp*, bool> memo;
  if (!consecutive_index(idx)) return "its lanes would be stored apart (the store is not contiguous along it)";
  if (!vectorizable(vals, memo)) return "its lanes would be gathered (a value does not vectorize along it)";
  if (end == w)
    p.ranges.pop_back();  // the lanes cover the whole loop
  else
    p.ranges.back() = outer, ++p.tile_axis;
  p.lanes = std::move(lanes);
  p.rows = {p.lanes};
  return "";
}

// UPCASTs after the output vector: rows of the loop outside it, or more vectors of the vector loop.
std::string upcast_tile(Plan& p, int axis, int amount) {
  const bool vector_loop = p.tile_axis == 1;
  int& slot = axis == innermost(p) && row_axis(p) != axis ? p.tile_c : p.tile_u;
  if (axis != innermost(p) && axis != row_axis(p))
    return "a register tile takes the loop just outside the vector loop (axis " + std::to_string(row_axis(p)) +
           ") and the vector loop (axis " + std::to_string(innermost(p)) + ")";
  if (&slot == &p.tile_c && !vector_loop) return "the output vector covers the whole loop";
  if (slot != 1) return "the axis is upcast already";
  slot = amount;
  return "";
}

}  // namespace

std::vector<const UOp*> reductions_over(const Plan& p, const UOpPtr& loop) {
  std::vector<const UOp*> out;
  for (const UOp* n : toposort(std::vector<UOpPtr>{p.sink}))
    if (n->op == Op::REDUCE && reduce_loop(*n) == loop) out.push_back(n);
  return out;
}

namespace {

// UNROLL of a reduce loop: every reduction over it keeps `w` lanes of it per iteration in one vector.
std::string unroll(Plan& p, int axis, int w) {
  const int i = axis - static_cast<int>(p.axes.size());
  if (i < 0 || i >= static_cast<int>(p.reduce_axes.size()))
    return "the kernel's reduce loops are axes " + std::to_string(p.axes.size()) + " to " +
           std::to_string(p.axes.size() + p.reduce_axes.size()) + " (exclusive)";
  const UOpPtr& r = p.reduce_axes[i];
  if (w < 2) return "an UNROLL takes 2 or more";
  if (p.unrolls.count(r.get())) return "the reduce loop is unrolled already";
  if (p.gpu_plan) return "a GPU plan lowers its reductions itself";
  for (const UOp* n : reductions_over(p, r)) {
    if (!unroll_fits(p.caps, *n, w))
      return "a reduction over it has no vector of " + std::to_string(w) + " " + n->dtype.name() +
             " accumulators (the loop's length, the renderer's widths or its combine)";
    std::map<const UOp*, bool> memo;
    if (!vectorizable(unrolled_lanes(*n, w).lanes, memo))
      return "its lanes would be gathered (a value does not vectorize along it)";
  }
  p.unrolls[r.get()] = w;
  return "";
}

// What one action does to the plan; "" when it applied.
std::string apply(Plan& p, const Opt& o) {
  const bool plan_op = o.op == OptOp::TC || o.op == OptOp::LOCAL || o.op == OptOp::GROUP;
  if (o.op == OptOp::UNROLL) return unroll(p, o.axis, o.amount);
  if (!plan_op && (o.axis < 0 || o.axis > innermost(p)))
    return "the kernel has " + std::to_string(p.axes.size()) + " output loops";
  switch (o.op) {
    case OptOp::UPCAST:
      if (p.gpu_plan) {  // 1 is a choice here: one output (tile) per work-item (warp) along the axis
        if (*p.gpu_plan == OptOp::GROUP) return "a group reduce takes no tile";
        if (o.amount < 1) return "an UPCAST takes 1 or more after a GPU plan";
        if (o.axis + 2 < static_cast<int>(p.axes.size()))
          return "a matmul plan's tile is along m and n, the two innermost loops";
        p.gpu_upcasts.emplace_back(o.axis, o.amount);
        return "";
      }
      if (o.amount < 2) return "an UPCAST takes 2 or more";
      if (p.lanes.size() <= 1)
        return o.axis == innermost(p) ? upcast_lanes(p, o.amount)
                                      : "the innermost loop is upcast first (the output vector)";
      return upcast_tile(p, o.axis, o.amount);
    case OptOp::PADTO: {
      const bool rows = o.axis == row_axis(p) && o.axis != innermost(p);
      if (!rows && (o.axis != innermost(p) || p.tile_axis != 1)) return "only the vector loop and the row loop pad";
      int64_t& pad = rows ? p.pad_rows : p.pad_to;
      if (o.amount < 2 || pad) return "a PADTO takes 2 or more, once per loop";
      pad = o.amount;
      return "";
    }
    case OptOp::STAGE:
      if (o.axis != row_axis(p) || p.stage)
        return "a panel is staged once, where the row loop opens (axis " + std::to_string(row_axis(p)) + ")";
      p.stage = true;
      return "";
    case OptOp::UNROLL: break;  // above: its axis is a reduce loop
    case OptOp::THREAD:
      if (!host_threads(p.caps)) return "the renderer's kernels run on no host threads (THREAD is for host CPUs)";
      if (p.thread) return "a kernel takes one THREAD";
      if (o.amount < 1) return "a THREAD takes the loop's iteration count";
      p.thread = o;
      return "";
    case OptOp::TC:
    case OptOp::LOCAL:
    case OptOp::GROUP:
      if (!is_gpu(p.caps)) return "the renderer has no work-groups";
      if (p.gpu_plan || p.lanes.size() > 1 || !p.unrolls.empty()) return "a GPU plan comes first and alone";
      if (o.op == OptOp::TC && !p.opts.switches.tensor_cores) return "tensor cores are off (TC=0)";
      if (o.op == OptOp::TC && o.amount != 0) return "TC's work-group is its own (2 x 2 warps): its amount is 0";
      if (o.amount < 0 || o.amount == 1) return "a work-group size is 2 or more (0: the plan's own)";
      p.gpu_plan = o.op, p.gpu_group = o.amount;
      return "";
  }
  return "";
}

// The register tile the actions asked for: u x c entries, the vector loop padded to whole tiles, the panel staged.
std::string build_tile(Plan& p) {
  const int u = p.tile_u, c = p.tile_c;
  if (u == 1 && c == 1) return p.stage || p.pad_to || p.pad_rows ? "STAGE and PADTO need a register tile" : "";
  const UOpPtr& sink = p.sink;
  std::vector<UOpPtr>& ranges = p.ranges;
  const TileLoops t = tile_loops(p);
  if (!t.reduces || !t.row) return "a register tile needs a reduction and a loop";
  const size_t ri = t.ri;
  const UOpPtr &r = t.row, &v = t.vec;
  const int64_t end = t.rows, vend = t.vecs;
  const bool has_vector_loop = v != nullptr;
  const int64_t rpad = p.pad_rows ? (end + p.pad_rows - 1) / p.pad_rows * p.pad_rows : end;
  if (rpad % u)
    return std::to_string(u) + " rows do not divide the row loop's " +
           (is_const_end(r) ? std::to_string(rpad) + " iterations" : "symbolic length");
  if (c > 1 && !v) return "no vector loop to take " + std::to_string(c) + " vectors";
  const int64_t vpad = p.pad_to ? (vend + p.pad_to - 1) / p.pad_to * p.pad_to : vend;
  if (vpad % c)
    return std::to_string(c) + " vectors do not divide the vector loop's " + std::to_string(vpad) + " iterations";
  // the loads every row tile shares (a matmul's B) are what STAGE copies; padded vectors' loads are gated there
  const UOpPtr shared_k = p.stage && v && c > 1 && vend > c ? shared_reduce_range(p.lanes, r, v) : nullptr;
  if (p.stage && !shared_k) return "no operand every row tile reads alike across several vector tiles";
  if (vpad != vend && !p.stage)
    return "a padded vector loop needs STAGE (the padded vectors' loads are gated in the copy)";
  if (rpad != end && (vpad != vend || !is_const_end(r) || rpad == u))
    return "a tile pads its rows or its vectors, not both, and rows only across several tiles";
  auto split = [](const UOpPtr& range, int64_t n, int f) {
    return n == f ? const_int(range->dtype, 0)
                  : UOp::make(Op::RANGE, range->dtype, {const_int(range->dtype, n / f)},
                              RangeInfo{range->range().id, AxisType::UPCAST});
  };
  UOpPtr ro = u > 1 ? split(r, rpad, u) : r, vo = c > 1 ? split(v, vpad, c) : v;
  TileRows rows;
  for (int q = 0; q < u; ++q)
    for (int c0 = 0; c0 < c; ++c0) {
      std::vector<std::pair<const UOp*, UOpPtr>> at;
      if (u > 1) {
        UOpPtr row_q = alu(Op::ADD, alu(Op::MUL, ro, const_int(r->dtype, u)), const_int(r->dtype, q));
        if (rpad != end)  // a padded row reads the last real one (its stores are gated off)
          row_q = alu(Op::WHERE, alu(Op::CMPLT, row_q, const_int(r->dtype, end)), row_q, const_int(r->dtype, end - 1));
        at.emplace_back(r.get(), row_q);
      }
      if (c > 1)
        at.emplace_back(v.get(), alu(Op::ADD, alu(Op::MUL, vo, const_int(v->dtype, c)), const_int(v->dtype, c0)));
      std::vector<UOpPtr> row;
      for (const auto& ls : p.lanes) row.push_back(simplify(substitute(ls, at)));
      rows.push_back(std::move(row));
    }
  std::vector<UOpPtr> new_ranges = ranges;
  if (c > 1 && vpad == c)
    new_ranges.pop_back();
  else if (c > 1)
    new_ranges.back() = vo;
  if (u > 1 && rpad == u)
    new_ranges.erase(new_ranges.begin() + static_cast<long>(ri));
  else if (u > 1)
    new_ranges[ri] = ro;
  // the vector loop outermost: one column panel of B stays in cache while every row tile passes over it
  // (not on a GPU: its contiguous loop must stay innermost, on grid dim 0)
  if (u > 1 && has_vector_loop && vend > c && new_ranges.size() > 1 && !is_gpu(p.caps))
    std::rotate(new_ranges.begin(), new_ranges.end() - 1, new_ranges.end());
  // the panel is copied where the row loop opens: it must be the innermost, after every loop the copy reads
  const std::vector<UOpPtr> gates = vpad != vend ? padding_gates(c, vo, vend) : std::vector<UOpPtr>{};
  const UOpPtr& row = u > 1 ? ro : r;
  if (p.stage) {
    int64_t next_id = next_range_id(sink);
    if (row->op != Op::RANGE || new_ranges.back() != row)
      return "the row loop is not the innermost, where the panel would be copied";
    p.staged = stage_panel(rows, c, row, vo, shared_k, gates, next_id);
    if (!p.staged) return "the shared loads do not form one panel";
    p.staged_row = row;
  }
  if (!gates.empty()) gate_padded_vectors(rows, vo, gates);
  if (rpad != end) gate_padded_rows(rows, c, padding_gates(u, ro, end));
  p.rows = std::move(rows);
  ranges = std::move(new_ranges);
  return "";
}

// The GPU plan the actions chose, with the tile their UPCASTs ask for (m: the second innermost loop, n: the
// innermost).
std::string build_gpu_plan(Plan& p) {
  GpuTile tile{.group = p.gpu_group};
  for (auto [axis, amount] : p.gpu_upcasts) (axis == innermost(p) ? tile.cols : tile.rows) = amount;
  return run_gpu_plan(p, *p.gpu_plan, tile);
}

}  // namespace

TileLoops tile_loops(const Plan& p) {
  TileLoops t;
  for (const UOp* n : toposort(std::vector<UOpPtr>{p.sink})) t.reduces |= n->op == Op::REDUCE;
  t.row_axis = row_axis(p), t.vec_axis = innermost(p);
  const std::vector<UOpPtr>& ranges = p.ranges;
  if (p.lanes.size() <= 1 || ranges.empty()) return t;
  // with the vector loop still open (tile_axis 1) the row loop is the one before it; alone, the vector loop itself
  t.ri = ranges.size() >= p.tile_axis + 1 ? ranges.size() - 1 - p.tile_axis : ranges.size() - 1;
  t.row = ranges[t.ri];
  t.rows = is_const_end(t.row) ? t.row->src[0]->arg_int() : 1;  // a symbolic loop is not tiled
  if (p.tile_axis == 1 && t.ri + 1 < ranges.size() && is_const_end(ranges.back()))
    t.vec = ranges.back(), t.vecs = t.vec->src[0]->arg_int();
  return t;
}

std::string apply_opt(Plan& p, const Opt& o) {
  std::string why = apply(p, o);
  if (why.empty()) p.applied.push_back(o);
  return why;
}

void forget_tile(Plan& p, size_t applied) {
  p.applied.resize(applied);
  p.tile_u = p.tile_c = 1, p.pad_to = 0, p.pad_rows = 0, p.stage = false, p.thread.reset(), p.grid = nullptr;
}

std::string build_planned(Plan& p) {
  std::string why = p.gpu_plan ? build_gpu_plan(p) : build_tile(p);
  return why.empty() ? build_thread(p) : why;
}

// The axis' loop as the tile left it (a split loop keeps its range id) becomes the grid.
std::string build_thread(Plan& p) {
  if (!p.thread || p.grid) return "";
  const int64_t id = p.axes[p.thread->axis]->range().id;
  auto it = std::find_if(p.ranges.begin(), p.ranges.end(),
                         [&](const UOpPtr& r) { return r->op == Op::RANGE && r->range().id == id; });
  if (it == p.ranges.end()) return "the axis' loop is covered by the tile (no loop is left to spread)";
  if (!is_const_end(*it)) return "the axis' loop has a symbolic length (launch dims are fixed)";
  const int64_t n = (*it)->src[0]->arg_int();
  if (n != p.thread->amount) return "THREAD takes the loop's whole " + std::to_string(n) + " iterations";
  p.grid = *it;
  return "";
}

std::string run_gpu_plan(Plan& p, OptOp plan, GpuTile tile) {
  std::optional<WorkGroupPlan> planned;
  if (plan == OptOp::TC) planned = plan_tc_matmul(p.sink, p.ranges, p.caps, tile);
  if (plan == OptOp::LOCAL) planned = plan_tiled_matmul(p.sink, p.ranges, p.caps, tile);
  if (plan == OptOp::GROUP) planned = plan_grouped(p.sink, p.ranges, p.caps, tile.group);
  if (!planned) return std::string(opt_name(plan)) + " does not fit the kernel's shape or the device";
  p.form = Plan::Form::work_groups;
  p.rewrite_sink(std::exchange(planned->sink, nullptr));
  p.work_groups = std::move(planned);
  return "";
}

void apply_opts(Plan& p) {
  if (p.kernel.custom) return;
  if (!p.opts.actions) {
    hand_coded_opts(p);
    if (const std::optional<Opt> t = thread_opt(p); t && apply_opt(p, *t).empty()) build_thread(p);
    return;
  }
  auto fail = [&](const std::string& what, const std::string& why) {
    throw OptError("tg: kernel " + p.kernel.name + ": " + what + " does not apply: " + why);
  };
  for (const Opt& o : *p.opts.actions)
    if (std::string why = apply_opt(p, o); !why.empty()) fail(str(o) + " after " + str(p.applied), why);
  if (std::string why = build_planned(p); !why.empty()) fail(str(p.applied), why);
}

}  // namespace tg::codegen
