// The lowering steps pipeline.cpp runs (plan.hpp) around the actions (apply_opts.cpp): the parameters, index
// simplification, hand-written kernels as written, the linearizer, and image reads. The Emitter (emitter.hpp)
// turns graphs into instructions.
#include "codegen/plan.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "codegen/emitter.hpp"
#include "codegen/lower_gpu.hpp"
#include "ir/spec.hpp"

namespace tg::codegen {

namespace {

// A hand-written kernel: its GLOBAL ranges around its statements, in order, exactly as written (with LOCAL ranges,
// a kernel of work-groups: linearize_work_groups).
KirProgram lower_custom(KirProgram& k, const sched::Kernel& kernel, const UOpPtr& sink, const tg_renderer_caps& caps,
                        std::map<std::string, int64_t> var_params) {
  if (!kernel.local_ranges.empty())
    return linearize_work_groups(k, {sink, kernel.out_ranges, kernel.local_ranges}, caps, std::move(var_params));
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

// A kernel of work-groups (a hand-written one with LOCAL ranges, or a GPU plan's): its i-th group range is the
// work-group id along dim i and its i-th item range the work-item id inside the group. Limits the device cannot
// meet are errors naming the limit (a hand-written kernel is not re-planned; a plan checks them first).
KirProgram linearize_work_groups(KirProgram& k, const WorkGroupPlan& w, const tg_renderer_caps& caps,
                                 std::map<std::string, int64_t> var_params) {
  auto fail = [&](const std::string& what) { throw Error("tg: kernel " + k.name + ": " + what); };
  if (!caps.has_local) fail("LOCAL ranges need work-groups with local memory, which this renderer does not have");
  if (w.groups.size() > caps.max_global_dims || w.items.size() > caps.max_global_dims)
    fail(std::to_string(w.groups.size()) + " GLOBAL and " + std::to_string(w.items.size()) +
         " LOCAL ranges; the renderer launches at most " + std::to_string(caps.max_global_dims) + " dims");
  Emitter e(k, caps, std::move(var_params));
  uint64_t threads = 1;
  for (size_t d = 0; d < w.items.size(); ++d) {
    const int64_t n = w.items[d]->src[0]->arg_int();
    if (n > caps.max_local[d])
      fail("LOCAL range " + std::to_string(d) + " has " + std::to_string(n) + " work-items; the device allows " +
           std::to_string(caps.max_local[d]) + " (max_local[" + std::to_string(d) + "])");
    threads *= static_cast<uint64_t>(n);
    e.special(w.items[d], TG_SPECIAL_LOCAL, static_cast<uint32_t>(d));
  }
  if (threads > caps.max_local_threads)
    fail("work-groups of " + std::to_string(threads) + " work-items; the device allows " +
         std::to_string(caps.max_local_threads) + " (max_local_threads)");
  for (size_t d = 0; d < w.groups.size(); ++d) {
    const int64_t n = w.groups[d]->src[0]->arg_int();
    if (n > caps.max_global[d])
      fail("GLOBAL range " + std::to_string(d) + " has " + std::to_string(n) + " work-groups; the device allows " +
           std::to_string(caps.max_global[d]));
    e.special(w.groups[d], TG_SPECIAL_GROUP, static_cast<uint32_t>(d));
  }
  e.declare_locals(w.sink);
  e.declare_registers(w.sink);
  for (const auto& st : w.sink->src) e.emit(st);
  if (e.local_bytes() > caps.local_mem_bytes)
    fail(std::to_string(e.local_bytes()) + " bytes of local arrays; the device has " +
         std::to_string(caps.local_mem_bytes) + " (local_mem_bytes)");
  k.flops = w.flops > 0 ? w.flops : e.flops();
  return std::move(k);
}

// ---- the steps pipeline.cpp runs, in its order --------------------------------------------------------------------

Plan start_plan(const sched::Kernel& kernel, const tg_renderer_caps& caps, const LowerOpts& opts) {
  Plan p{kernel, caps, opts};
  const std::vector<sched::BufferParam>& bufs = kernel.params;
  KirProgram& k = p.kir;
  k.name = kernel.name;
  // parameters: buffers in order; PARAM 0 is the output
  for (size_t i = 0; i < bufs.size(); ++i) {
    k.param_names.push_back("data" + std::to_string(i));
    bool written = i < static_cast<size_t>(kernel.n_outputs) ||
                   std::find(kernel.written_inputs.begin(), kernel.written_inputs.end(), static_cast<int>(i)) != kernel.written_inputs.end();
    k.params.push_back({TG_PARAM_BUFFER, dt(bufs[i].dtype), written ? 1u : 0u, 0, nullptr});
    k.bytes += static_cast<double>(bufs[i].numel) * static_cast<double>(bufs[i].dtype.itemsize());
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
  p.axes = p.ranges;
  for (const UOp* n : toposort(std::vector<UOpPtr>{p.sink}))  // each reduction's innermost loop, in reading order
    if (n->op == Op::REDUCE)
      if (UOpPtr r = reduce_loop(*n); r && std::find(p.reduce_axes.begin(), p.reduce_axes.end(), r) == p.reduce_axes.end())
        p.reduce_axes.push_back(r);
  p.lanes = {p.sink};
  p.rows = {p.lanes};
}

void decompose(Plan& p) {
  p.sink = rewrite(p.sink, pm_decompositions_for(p.caps), {.name = "decompose"});
  p.lanes = {p.sink};
  p.rows = {p.lanes};
}

void lower_as_written(Plan& p) {
  if (!p.kernel.custom) return;
  p.kir = lower_custom(p.kir, p.kernel, p.sink, p.caps, p.var_params);
  p.done = true;
}

// The kernel's instructions, through the Emitter (the linearizer, with linearize_work_groups): the grid, the loops,
// the staged panel, the tile's reductions and stores.
void linearize(Plan& p) {
  KirProgram& k = p.kir;
  const UOpPtr& sink = p.sink;
  const std::vector<UOpPtr>& ranges = p.ranges;
  Emitter e(k, p.caps, p.var_params);
  e.unroll_by(&p.unrolls);
  std::vector<int32_t> loops;
  // a host CPU's grid is THREAD's loop (output loops are independent, so one before it can run inside it); a
  // GPU's is bound below
  const size_t grid = p.grid ? static_cast<size_t>(std::find(ranges.begin(), ranges.end(), p.grid) - ranges.begin()) : ranges.size();
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
    for (const auto& st : sink->src) e.emit(st);
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
  const auto& bufs = p.kernel.params;
  const tg_renderer_caps& caps = p.caps;
  if (p.kernel.custom || !p.opts.switches.images || !TG_ABI_HAS(&caps, tg_renderer_caps, image_max_height) || caps.image_max_width == 0)
    return;
  std::vector<bool> image(k.params.size(), false);
  for (size_t i = 0; i < bufs.size() && i < k.params.size(); ++i) {
    tg_kir_param& param = k.params[i];
    if (param.kind != TG_PARAM_BUFFER || param.writable || param.dtype != TG_DTYPE_FLOAT32 || bufs[i].numel % 4 ||
        bufs[i].numel == 0)
      continue;
    if (const uint32_t w = image_width(bufs[i].numel / 4, caps)) param.kind = TG_PARAM_IMAGE, param.reserved = w, image[i] = true;
  }
  for (tg_kir_inst& in : k.insts)
    if (in.op == TG_KIR_PARAM && in.arg.i >= 0 && static_cast<size_t>(in.arg.i) < image.size() && image[in.arg.i])
      in.addrspace = TG_ADDR_IMAGE;
}

}  // namespace tg::codegen
