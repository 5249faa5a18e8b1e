// The lowering steps pipeline.cpp runs (plan.hpp): the plan every device shares (output vectors, register tiles,
// staged panels, the grid's first loop), hand-written kernels as written, and the linearizer; work-group devices
// take their own plan where one applies (lower_gpu.cpp). The Emitter (emitter.hpp) turns graphs into instructions.
#include "codegen/plan.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "codegen/emitter.hpp"
#include "codegen/heuristic.hpp"
#include "codegen/lower_gpu.hpp"
#include "codegen/stage_panel.hpp"
#include "ir/spec.hpp"
#include "runtime/buffer.hpp"

namespace tg::codegen {

namespace {

// A hand-written kernel: its GLOBAL ranges around its statements, in order, exactly as written.
// A custom kernel with LOCAL ranges runs as a grid of work-groups: its i-th GLOBAL range is the group id along dim
// i and its i-th LOCAL range the work-item id inside the group. Limits the device cannot meet are errors naming
// the limit (a hand-written kernel is not re-planned).
KirProgram lower_work_groups(KirProgram& k, const sched::Kernel& kernel, const UOpPtr& sink,
                             const tg_renderer_caps& caps, std::map<std::string, int64_t> var_params) {
  auto fail = [&](const std::string& what) { throw Error("tg: kernel " + kernel.name + ": " + what); };
  if (!caps.has_local) fail("LOCAL ranges need work-groups with local memory, which this renderer does not have");
  if (kernel.out_ranges.size() > caps.max_global_dims || kernel.local_ranges.size() > caps.max_global_dims)
    fail(std::to_string(kernel.out_ranges.size()) + " GLOBAL and " + std::to_string(kernel.local_ranges.size()) +
         " LOCAL ranges; the renderer launches at most " + std::to_string(caps.max_global_dims) + " dims");
  Emitter e(k, caps, std::move(var_params));
  uint64_t threads = 1;
  for (size_t d = 0; d < kernel.local_ranges.size(); ++d) {
    const int64_t n = kernel.local_ranges[d]->src[0]->arg_int();
    if (n > caps.max_local[d])
      fail("LOCAL range " + std::to_string(d) + " has " + std::to_string(n) + " work-items; the device allows " +
           std::to_string(caps.max_local[d]) + " (max_local[" + std::to_string(d) + "])");
    threads *= static_cast<uint64_t>(n);
    e.special(kernel.local_ranges[d], TG_SPECIAL_LOCAL, static_cast<uint32_t>(d));
  }
  if (threads > caps.max_local_threads)
    fail("work-groups of " + std::to_string(threads) + " work-items; the device allows " +
         std::to_string(caps.max_local_threads) + " (max_local_threads)");
  for (size_t d = 0; d < kernel.out_ranges.size(); ++d) {
    const int64_t n = kernel.out_ranges[d]->src[0]->arg_int();
    if (n > caps.max_global[d])
      fail("GLOBAL range " + std::to_string(d) + " has " + std::to_string(n) + " work-groups; the device allows " +
           std::to_string(caps.max_global[d]));
    e.special(kernel.out_ranges[d], TG_SPECIAL_GROUP, static_cast<uint32_t>(d));
  }
  e.declare_locals(sink);
  e.declare_registers(sink);
  for (const auto& st : sink->src) e.emit(st);
  if (e.local_bytes() > caps.local_mem_bytes)
    fail(std::to_string(e.local_bytes()) + " bytes of local arrays; the device has " +
         std::to_string(caps.local_mem_bytes) + " (local_mem_bytes)");
  k.flops = e.flops();
  return std::move(k);
}

KirProgram lower_custom(KirProgram& k, const sched::Kernel& kernel, const UOpPtr& sink, const tg_renderer_caps& caps,
                        std::map<std::string, int64_t> var_params) {
  if (!kernel.local_ranges.empty()) return lower_work_groups(k, kernel, sink, caps, std::move(var_params));
  Emitter e(k, caps, std::move(var_params));
  e.declare_locals(sink);
  std::vector<int32_t> loops;
  bool first = true;
  for (const auto& r : kernel.out_ranges) {
    if (r->src[0]->arg_int() <= 1) continue;
    if (first && kernel.parallel && caps.max_global_dims >= 1) e.special(r);
    else loops.push_back(e.open_loop(r));
    first = false;
  }
  e.declare_registers(sink);
  for (const auto& st : sink->src) e.emit(st);
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) e.close_loop(*it);
  k.flops = e.flops();
  return std::move(k);
}


}  // namespace

// ---- the steps pipeline.cpp runs, in its order --------------------------------------------------------------------

Plan start_plan(const sched::Kernel& kernel, const std::vector<std::shared_ptr<rt::Buffer>>& bufs,
                const tg_renderer_caps& caps, const LowerOpts& opts) {
  Plan p{kernel, bufs, caps, opts};
  KirProgram& k = p.kir;
  k.name = kernel.name;
  // parameters: buffers in order; PARAM 0 is the output
  for (size_t i = 0; i < bufs.size(); ++i) {
    k.param_names.push_back("data" + std::to_string(i));
    bool written = i < static_cast<size_t>(kernel.n_outputs) ||
                   std::find(kernel.written_inputs.begin(), kernel.written_inputs.end(), static_cast<int>(i)) != kernel.written_inputs.end();
    k.params.push_back({TG_PARAM_BUFFER, dt(bufs[i]->dtype()), written ? 1u : 0u, 0, nullptr});
    k.bytes += static_cast<double>(bufs[i]->nbytes());
  }
  for (const auto& v : kernel.vars) {
    p.var_params[v->var().name] = static_cast<int64_t>(k.params.size());
    k.param_names.push_back(v->var().name);
    k.params.push_back({TG_PARAM_VAR, dt(v->dtype), 0, 0, nullptr});
  }
  for (size_t i = 0; i < k.params.size(); ++i) k.params[i].name = k.param_names[i].c_str();
  if (k.params.size() > caps.max_params && caps.max_params)
    throw Error("tg: kernel " + k.name + " needs " + std::to_string(k.params.size()) + " buffers, renderer allows " +
                std::to_string(caps.max_params));
  p.sink = kernel.sink;
  return p;
}

void check_spec(Plan& p) {
  if (p.opts.switches.check_ir) ir::verify(p.sink, ir::pm_spec_kernel(), p.kernel.name);
}

void simplify_indices(Plan& p) {
  p.sink = graph_rewrite(p.sink, pm_symbolic(), "lower");
  for (const auto& r : p.kernel.out_ranges)  // output loops still present after simplification, outermost first
    if (!is_const_end(r) || r->src[0]->arg_int() > 1) p.ranges.push_back(r);
  p.lanes = {p.sink};
  p.rows = {p.lanes};
}

void lower_as_written(Plan& p) {
  if (!p.kernel.custom) return;
  p.kir = lower_custom(p.kir, p.kernel, p.sink, p.caps, p.var_params);
  p.done = true;
}

void gpu_plans(Plan& p) {
  if (!is_gpu(p.caps) || p.opts.plain) return;
  std::optional<KirProgram> planned = lower_tc_matmul(p.kir, p.sink, p.ranges, p.caps, p.var_params, p.opts);
  if (!planned) planned = lower_tiled_matmul(p.kir, p.sink, p.ranges, p.caps, p.var_params, p.opts);
  if (!planned) planned = lower_grouped(p.kir, p.sink, p.ranges, p.caps, p.var_params);
  if (planned) p.kir = std::move(*planned), p.done = true;
}

void upcast_lanes(Plan& p) {
  const UOpPtr& sink = p.sink;
  std::vector<UOpPtr>& ranges = p.ranges;
  if (ranges.empty() || !is_const_end(ranges.back())) return;
  const UOpPtr& r = ranges.back();
  int64_t end = r->src[0]->arg_int();
  DType out = sink->src[0]->src[2]->dtype;
  const int widest = widest_lanes(p.caps, out);  // one register (a GPU work-item: float4-sized)
  for (int w : {16, 8, 4, 2}) {
    if (p.opts.upcast ? w != p.opts.upcast : w > widest) continue;
    if (end % w || w * out.itemsize() > 64 || !e_vector_ok(p.caps, out, w)) continue;
    UOpPtr outer = end == w ? const_int(r->dtype, 0)
                            : UOp::make(Op::RANGE, r->dtype, {const_int(r->dtype, end / w)}, RangeInfo{r->range().id, AxisType::UPCAST});
    std::vector<UOpPtr> lanes;
    for (int l = 0; l < w; ++l)
      lanes.push_back(simplify(substitute(sink, {{r.get(), alu(Op::ADD, alu(Op::MUL, outer, const_int(r->dtype, w)), const_int(r->dtype, l))}})));
    std::vector<UOpPtr> idx, vals;
    for (const auto& ls : lanes) idx.push_back(ls->src[0]->src[1]), vals.push_back(ls->src[0]->src[2]);
    std::map<const UOp*, bool> memo;
    if (!consecutive_index(idx) || !vectorizable(vals, memo)) return;  // lanes would be gathered: stay scalar
    if (end == w) ranges.pop_back();  // the lanes cover the whole loop
    else ranges.back() = outer, ++p.tile_axis;
    p.lanes = std::move(lanes);
    p.rows = {p.lanes};
    return;
  }
}

void register_tile(Plan& p) {
  const UOpPtr& sink = p.sink;
  const tg_renderer_caps& caps = p.caps;
  std::vector<UOpPtr>& ranges = p.ranges;
  const std::vector<UOpPtr>& lane_sinks = p.lanes;
  bool has_reduce = false;
  for (const UOp* n : toposort(std::vector<UOpPtr>{sink})) has_reduce |= n->op == Op::REDUCE;
  // (with no other output loop, the vector loop itself is tiled: u adjacent vectors per iteration)
  if (lane_sinks.size() <= 1 || !has_reduce || ranges.empty()) return;
  const size_t tile_axis = p.tile_axis;
  size_t ri = ranges.size() >= tile_axis + 1 ? ranges.size() - 1 - tile_axis : ranges.size() - 1;
  const UOpPtr r = ranges[ri];
  int64_t end = is_const_end(r) ? r->src[0]->arg_int() : 1;  // a symbolic loop is not tiled (u = 1 leaves it be)
  const bool has_vector_loop = tile_axis == 1 && ri + 1 < ranges.size() && is_const_end(ranges.back());
  const UOpPtr v = has_vector_loop ? ranges.back() : nullptr;
  const int64_t vend = v ? v->src[0]->arg_int() : 1;
  auto split = [](const UOpPtr& range, int64_t n, int f) {
    return n == f ? const_int(range->dtype, 0)
                  : UOp::make(Op::RANGE, range->dtype, {const_int(range->dtype, n / f)}, RangeInfo{range->range().id, AxisType::UPCAST});
  };
  // the loads every row tile shares (a matmul's B): where the heuristic stages them per panel, the vector loop
  // may also pad to whole tiles (stage_panel.hpp)
  const DType out = sink->src[0]->src[2]->dtype;
  const int lanes = static_cast<int>(lane_sinks.size());
  const UOpPtr shared_k = v && has_vector_loop ? shared_reduce_range(lane_sinks, r, v) : nullptr;
  auto stages = [&](int u, int c) {
    const int64_t bytes = shared_k ? shared_k->src[0]->arg_int() * lanes * static_cast<int64_t>(out.itemsize()) : 0;
    return shared_k && c > 1 && vend > c && stages_pay(caps, end / u, bytes * vend, bytes * c);
  };
  // u x c accumulators as many as the register file holds beside the loads (heuristic.cpp), or BEAM's choice
  std::vector<std::pair<int, int>> tiles = register_tiles(caps, out, lanes, end, shared_k ? 0 : vend);
  if (p.opts.tile_rows) tiles = {{p.opts.tile_rows, std::max(p.opts.tile_vecs, 1)}};
  for (auto [u, c] : tiles) {
    const bool stage = stages(u, c);
    const int64_t vpad = vend % c == 0 ? vend : stage ? padded_vecs(vend, c) : 0;
    if (end % u || !vpad || (u == 1 && c == 1)) continue;
    UOpPtr ro = u > 1 ? split(r, end, u) : r, vo = c > 1 ? split(v, vpad, c) : v;
    TileRows& rows = p.rows;
    rows.clear();
    for (int q = 0; q < u; ++q)
      for (int c0 = 0; c0 < c; ++c0) {
        std::vector<std::pair<const UOp*, UOpPtr>> at;
        if (u > 1) at.emplace_back(r.get(), alu(Op::ADD, alu(Op::MUL, ro, const_int(r->dtype, u)), const_int(r->dtype, q)));
        if (c > 1) at.emplace_back(v.get(), alu(Op::ADD, alu(Op::MUL, vo, const_int(v->dtype, c)), const_int(v->dtype, c0)));
        std::vector<UOpPtr> row;
        for (const auto& ls : lane_sinks) row.push_back(simplify(substitute(ls, at)));
        rows.push_back(std::move(row));
      }
    if (c > 1 && vpad == c) ranges.pop_back();
    else if (c > 1) ranges.back() = vo;
    if (u > 1 && end == u) ranges.erase(ranges.begin() + static_cast<long>(ri));
    else if (u > 1) ranges[ri] = ro;
    // the vector loop outermost: one column panel of B stays in cache while every row tile passes over it
    // (not on a GPU: its contiguous loop must stay innermost, on grid dim 0)
    if (u > 1 && has_vector_loop && vend > c && ranges.size() > 1 && !is_gpu(caps))
      std::rotate(ranges.begin(), ranges.end() - 1, ranges.end());
    // the panel is copied where the row loop opens: it must be the innermost, after every loop the copy reads
    const std::vector<UOpPtr> gates = vpad != vend ? padding_gates(c, vo, vend) : std::vector<UOpPtr>{};
    const UOpPtr& row = u > 1 ? ro : r;
    int64_t next_id = next_range_id(sink);
    if (stage && row->op == Op::RANGE && ranges.back() == row)
      if ((p.staged = stage_panel(rows, c, row, vo, shared_k, gates, next_id))) p.staged_row = row;
    if (!gates.empty()) gate_padded_vectors(rows, vo, gates);
    return;
  }
}

// The only code that writes the kernel's instructions (the GPU plans and hand-written kernels aside): the grid,
// the loops, the staged panel, the tile's reductions and stores.
void linearize(Plan& p) {
  KirProgram& k = p.kir;
  const UOpPtr& sink = p.sink;
  const std::vector<UOpPtr>& ranges = p.ranges;
  Emitter e(k, p.caps, p.var_params);
  std::vector<int32_t> loops;
  // the grid takes the first loop of constant length (launch dims do not depend on variables); output loops are
  // independent, so a symbolic loop before it can run inside it
  size_t grid = ranges.size();
  for (size_t i = 0; i < ranges.size() && grid == ranges.size(); ++i)
    if (is_const_end(ranges[i])) grid = i;
  if (p.caps.max_global_dims < 1 || is_gpu(p.caps)) grid = ranges.size();
  if (grid < ranges.size()) e.special(ranges[grid]);
  if (is_gpu(p.caps)) bind_gpu_grid(e, ranges, p.caps, next_range_id(sink));
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (p.staged && ranges[i] == p.staged_row) {  // the panel, once per iteration of the loops outside the rows
      e.emit(p.staged->buffer);
      const int32_t copy = e.open_loop(p.staged->loop);
      for (const auto& lanes : p.staged->copies) e.store_lanes(lanes);
      e.close_loop(copy);
    }
    if (i != grid && !e.bound(ranges[i])) loops.push_back(e.open_loop(ranges[i]));
  }
  if (p.lanes.size() == 1) {
    for (const auto& st : sink->src) {
      int32_t ptr = e.emit(st->src[0]), idx = e.emit(st->src[1]), v = e.emit(st->src[2]);
      k.add(TG_KIR_STORE, dt(st->dtype), 1, {ptr, idx, v});
    }
  } else {
    std::vector<std::vector<UOpPtr>> reduces;
    std::set<const UOp*> seen;
    for (const auto& row : p.rows)
      for (size_t s = 0; s < sink->src.size(); ++s) {
        std::vector<UOpPtr> vals;
        for (const auto& ls : row) vals.push_back(ls->src[s]->src[2]);
        collect_reduce_lanes(vals, seen, reduces);
      }
    e.prefuse_reduces(reduces);
    for (const auto& row : p.rows)
      for (size_t s = 0; s < sink->src.size(); ++s) {
        std::vector<UOpPtr> stores;
        for (const auto& ls : row) stores.push_back(ls->src[s]);
        e.store_lanes(stores);
      }
  }
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) e.close_loop(*it);
  k.flops = e.flops();
}

namespace {

// The widest image2d view of `texels` RGBA texels within the renderer's limits: a power-of-two width that divides
// them, with at most image_max_height rows. 0 when there is none.
uint32_t image_width(int64_t texels, const tg_renderer_caps& caps) {
  for (uint64_t w = uint64_t{1} << 30; w >= 1; w /= 2)
    if (w <= caps.image_max_width && texels % static_cast<int64_t>(w) == 0 &&
        static_cast<uint64_t>(texels) / w <= caps.image_max_height)
      return static_cast<uint32_t>(w);
  return 0;
}

}  // namespace

// Images (IMAGE=1) on a renderer with image2d reads (caps.image_max_width): every float32 buffer a kernel only
// reads goes through an image view (the texture path, which Adreno's caches serve better than plain loads). The
// lowering does not change: only the parameters' kind and their PARAM instructions' address space.
void read_through_images(Plan& p) {
  KirProgram& k = p.kir;
  const auto& bufs = p.bufs;
  const tg_renderer_caps& caps = p.caps;
  if (p.kernel.custom || !p.opts.switches.images || !TG_ABI_HAS(&caps, tg_renderer_caps, image_max_height) || caps.image_max_width == 0)
    return;
  std::vector<bool> image(k.params.size(), false);
  for (size_t i = 0; i < bufs.size() && i < k.params.size(); ++i) {
    tg_kir_param& param = k.params[i];
    if (param.kind != TG_PARAM_BUFFER || param.writable || param.dtype != TG_DTYPE_FLOAT32 || bufs[i]->numel() % 4 ||
        bufs[i]->numel() == 0)
      continue;
    if (const uint32_t w = image_width(bufs[i]->numel() / 4, caps)) param.kind = TG_PARAM_IMAGE, param.reserved = w, image[i] = true;
  }
  for (tg_kir_inst& in : k.insts)
    if (in.op == TG_KIR_PARAM && in.arg.i >= 0 && static_cast<size_t>(in.arg.i) < image.size() && image[in.arg.i])
      in.addrspace = TG_ADDR_IMAGE;
}

}  // namespace tg::codegen
