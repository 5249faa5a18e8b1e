// BEAM's space: the action lists it times for a kernel, the heuristic's first.
#include "codegen/search.hpp"

#include <algorithm>
#include <set>

#include "codegen/heuristic.hpp"
#include "codegen/plan.hpp"

namespace tg::codegen {

std::vector<KirProgram> search_space(const sched::Kernel& kernel, const tg_renderer_caps& caps,
                                     const LowerSwitches& switches) {
  std::vector<KirProgram> space;
  std::set<uint64_t> seen;
  auto add = [&](const std::optional<Opts>& actions) {
    try {
      KirProgram k = lower_kernel(kernel, caps, {actions, switches});
      if (seen.insert(k.hash()).second) space.push_back(std::move(k));
    } catch (const OptError&) {  // a list this kernel cannot take: not a candidate
    }
  };
  add(std::nullopt);
  const Opts heuristic = space.at(0).opts;
  add(Opts{});
  // a list with the heuristic's THREAD for the loops it leaves (a list that does not apply is left as it is)
  auto threaded = [&](Opts actions) {
    try {
      const LowerOpts listed{actions, switches};  // the plan keeps a reference to it
      Plan q = start_plan(kernel, caps, listed);
      simplify_indices(q);
      apply_opts(q);
      if (const std::optional<Opt> t = thread_opt(q)) actions.push_back(*t);
    } catch (const OptError&) {}
    return actions;
  };
  Opts unthreaded;  // the heuristic's list on the submitting thread: whether a kernel pays for threads is timed too
  for (const Opt& o : heuristic)
    if (o.op != OptOp::THREAD) unthreaded.push_back(o);
  add(unthreaded);
  Opts unrolls;  // the heuristic's reductions, kept by every tile below (its search is over the output loops)
  for (const Opt& o : heuristic)
    if (o.op == OptOp::UNROLL) unrolls.push_back(o);
  const LowerOpts none{Opts{}, switches};
  Plan p = start_plan(kernel, caps, none);
  simplify_indices(p);
  const int n = static_cast<int>(p.axes.size());
  if (kernel.custom || n == 0) return space;
  const int last = n - 1, row = std::max(n - 2, 0);
  // staged panels on every host CPU, not only where the heuristic stages (that is how 512^3 was found to pay); a
  // kernel with no panel to stage turns those lists down
  const bool staged = caps.has_threads && !is_gpu(caps);
  const OptOp plan = heuristic.empty() ? OptOp::UPCAST : heuristic[0].op;
  // GPU plans: each tile per work-item; the work-group sizes (LOCAL's edge, GROUP's work-items)
  if ((plan == OptOp::TC || plan == OptOp::LOCAL) && n >= 2)
    for (int u : {1, 2, 4, 8})
      for (int c : {1, 2, 4, 8}) {
        add(threaded(Opts{{plan, 0, 0}, {OptOp::UPCAST, row, u}, {OptOp::UPCAST, last, c}}));
      }
  if (plan == OptOp::LOCAL)
    for (int edge : {8, 32}) add(Opts{{plan, 0, edge}});
  if (plan == OptOp::GROUP)
    for (int group : {16, 32, 64, 128, 256, 512}) add(Opts{{plan, 0, group}});
  const DType out = p.sink->src[0]->src[2]->dtype;
  // the output vector of w lanes, a u x c register tile, its panel staged (and the vector loop padded)
  auto tile = [&](int w, int u, int c, bool stage, bool pad, bool pad_rows = false) {
    Opts t = unrolls;
    t.reserve(unrolls.size() +
              6);  // GCC 12 -O2 reports a false -Wstringop-overflow in the regrowth of a copied vector otherwise
    t.push_back({OptOp::UPCAST, last, w});
    if (pad_rows) t.push_back({OptOp::PADTO, row, u});
    if (u > 1) t.push_back({OptOp::UPCAST, row, u});
    if (pad) t.push_back({OptOp::PADTO, last, c});
    if (c > 1) t.push_back({OptOp::UPCAST, last, c});
    if (stage) t.push_back({OptOp::STAGE, row, 0});
    return t;
  };
  for (int w : {2, 4, 8, 16}) {
    Plan q = start_plan(kernel, caps, none);  // the loops a tile of w-lane vectors takes
    simplify_indices(q);
    if (!apply_opt(q, {OptOp::UPCAST, last, w}).empty()) continue;
    add(threaded(tile(w, 1, 1, false, false)));
    const TileLoops t = tile_loops(q);
    int tried = 0;
    for (auto [u, c] : register_tiles(caps, out, w, staged ? 0 : t.rows, staged ? 0 : t.vecs)) {
      if (++tried > 11) break;
      if (t.rows % u) {  // staged only: the rows padded to whole tiles
        add(threaded(tile(w, u, c, true, false, true)));
        continue;
      }
      add(threaded(tile(w, u, c, false, false)));
      if (staged && u > 1 && c > 1) add(threaded(tile(w, u, c, true, false))), add(threaded(tile(w, u, c, true, true)));
    }
  }
  return space;
}

}  // namespace tg::codegen
