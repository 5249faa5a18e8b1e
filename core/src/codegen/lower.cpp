// The lowering steps before the actions (pipeline.cpp runs them; plan.hpp declares them): the parameters, the
// kernel spec, index simplification, decompositions by caps, and hand-written kernels taken as written.
#include "codegen/plan.hpp"

#include <algorithm>

#include "ir/spec.hpp"

namespace tg::codegen {

using namespace ir;

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
                   std::find(kernel.written_inputs.begin(), kernel.written_inputs.end(), static_cast<int>(i)) !=
                       kernel.written_inputs.end();
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
  p.rewrite_sink(graph_rewrite(p.sink, pm_symbolic(), "lower"));
  for (const auto& r : p.kernel.out_ranges)  // output loops still present after simplification, outermost first
    if (!is_const_end(r) || r->src[0]->arg_int() > 1) p.ranges.push_back(r);
  p.axes = p.ranges;
  for (const UOp* n : toposort(std::vector<UOpPtr>{p.sink}))  // each reduction's innermost loop, in reading order
    if (n->op == Op::REDUCE)
      if (UOpPtr r = reduce_loop(*n);
          r && std::find(p.reduce_axes.begin(), p.reduce_axes.end(), r) == p.reduce_axes.end())
        p.reduce_axes.push_back(r);
}

// Every kernel, hand-written ones included. The linearizer still decomposes, per node, what it builds itself (a
// reduction's combine step, packed loads from bytes).
void decompose(Plan& p) { p.rewrite_sink(rewrite(p.sink, pm_decompositions_for(p.caps), {.name = "decompose"})); }

void take_as_written(Plan& p) {
  if (!p.kernel.custom) return;
  if (p.kernel.local_ranges.empty()) {
    p.form = Plan::Form::as_written;
    return;
  }
  p.form = Plan::Form::work_groups;
  p.work_groups = WorkGroupPlan{nullptr, p.kernel.out_ranges, p.kernel.local_ranges};
}

}  // namespace tg::codegen
