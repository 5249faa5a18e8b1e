// lower_kernel: a kernel graph -> KIR for one renderer, as a table of named steps (plan.hpp says what each does;
// lower.cpp, apply_opts.cpp, expand.cpp, reduce_lowering.cpp, linearize.cpp and read_through_images.cpp have them).
// DEBUG=5 prints the plan after each step ("(unchanged)" where a step had nothing to do); TG_TIME_PASSES=1 prints each
// step's time per kernel, and the sums when the process exits.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <sstream>
#include <utility>

#include "codegen/plan.hpp"

namespace tg::codegen {

namespace {

using Step = void (*)(Plan&);
// Every kernel goes through every step, in this order; the plan's form (plan.hpp) says what a step does to it.
constexpr std::pair<const char*, Step> kSteps[] = {
    {"check_spec", check_spec},              // the kernel graph against its spec (debug builds, TG_CHECK_IR)
    {"simplify_indices", simplify_indices},  // symbolic rules over the index arithmetic
    {"decompose", decompose},                // ops the renderer lacks, by its caps
    {"take_as_written", take_as_written},    // a hand-written kernel keeps its loops (work-groups: LOCAL ranges)
    {"apply_opts", apply_opts},  // the actions (opt.hpp): output vector, register tile, or a GPU plan's work-groups
    {"unroll_written_reduces", unroll_written_reduces},  // written forms: REDUCEs over UNROLL/UPCAST ranges
    {"expand", expand},                  // lanes and tile entries (written: UPCAST stores) -> vector ops
    {"unroll_reduces", unroll_reduces},  // planned: UNROLL, a reduction's loop lanes in one vector accumulator
    {"lower_reduces", lower_reduces},    // REDUCE -> one accumulator: DEFINE_REG, STORE, END, AFTER; FMA by caps
    {"linearize", linearize},            // instructions
    {"read_through_images", read_through_images},  // IMAGE=1 parameters
};

// Step times summed over the process, printed at exit under TG_TIME_PASSES.
struct PassTotals {
  std::mutex mu;
  std::vector<std::pair<std::string, double>> ms;  // in pipeline order
  int kernels = 0;
  ~PassTotals() {
    if (kernels == 0) return;
    double total = 0;
    std::fprintf(stderr, "TG_TIME_PASSES: %d kernels lowered\n", kernels);
    for (const auto& [name, t] : ms) std::fprintf(stderr, "  %-20s %10.3f ms\n", name.c_str(), t), total += t;
    std::fprintf(stderr, "  %-20s %10.3f ms\n", "total", total);
  }
  void add(const std::vector<std::pair<std::string, double>>& kernel) {
    std::lock_guard lock(mu);
    ++kernels;
    for (const auto& [name, t] : kernel) {
      auto it = std::find_if(ms.begin(), ms.end(), [&](const auto& e) { return e.first == name; });
      if (it == ms.end())
        ms.emplace_back(name, t);
      else
        it->second += t;
    }
  }
};
PassTotals& pass_totals() {
  static PassTotals totals;
  return totals;
}

}  // namespace

std::string Plan::str() const {
  if (!kir.insts.empty()) return kir.dump();
  std::ostringstream os;
  auto loop = [](const ir::UOpPtr& r) {
    return " " + r->str() +
           (r->src[0]->op == ir::Op::CONST ? "(" + std::to_string(r->src[0]->arg_int()) + ")" : "(var)");
  };
  if (form != Form::planned) {  // the written forms and GPU plans: their ranges and the whole graph
    os << (form == Form::work_groups ? "  work-groups:" : "  as written:");
    for (const auto& r : form == Form::work_groups ? work_groups->groups : kernel.out_ranges) os << loop(r);
    if (form == Form::work_groups) os << " | work-items:";
    if (form == Form::work_groups)
      for (const auto& r : work_groups->items) os << loop(r);
    os << " | opts " << codegen::str(applied) << "\n  " << sink->str(12) << "\n";
    return os.str();
  }
  os << "  loops:";
  for (const auto& r : ranges) os << loop(r);
  if (!reduce_axes.empty()) os << " | reduce loops:";
  for (const auto& r : reduce_axes) os << loop(r);
  os << " | opts " << codegen::str(applied) << " | lanes " << lanes.size() << " | tile entries " << rows.size();
  if (staged)
    os << " | panel " << staged->buffer->arg_ints()[0] << " elements, copied where " << staged_row->str() << " opens";
  os << "\n  " << (rows.empty() || rows[0].empty() ? sink : rows[0][0])->str(12) << "\n";
  return os.str();
}

KirProgram lower_kernel(const sched::Kernel& kernel, const tg_renderer_caps& caps, const LowerOpts& opts) {
  Plan p = start_plan(kernel, caps, opts);
  const bool show = opts.switches.debug >= 5, time = opts.switches.time_passes;
  std::vector<std::pair<std::string, double>> times;
  std::string before = show ? p.str() : "";
  auto run = [&](const char* name, Step step) {
    const auto t0 = std::chrono::steady_clock::now();
    step(p);
    if (time)
      times.emplace_back(name,
                         std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (!show) return;
    std::string after = p.str();
    std::fprintf(stderr, "lower %s: after %s%s", kernel.name.c_str(), name, after == before ? " (unchanged)\n" : ":\n");
    if (after != before) std::fprintf(stderr, "%s", after.c_str());
    before = std::move(after);
  };
  for (const auto& [name, step] : kSteps) run(name, step);
  if (time) {
    double total = 0;
    std::fprintf(stderr, "TG_TIME_PASSES %s:", kernel.name.c_str());
    for (const auto& [name, t] : times) std::fprintf(stderr, " %s %.3f", name.c_str(), t), total += t;
    std::fprintf(stderr, " | %.3f ms\n", total);
    pass_totals().add(times);
  }
  p.kir.opts = std::move(p.applied);
  return std::move(p.kir);
}

}  // namespace tg::codegen
