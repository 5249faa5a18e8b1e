// What the lowering steps hand each other (pipeline.cpp runs them in order; lower.cpp, apply_opts.cpp, expand.cpp,
// reduce_lowering.cpp, linearize.cpp and read_through_images.cpp have them): a kernel's graph, its form, the loops
// still to open, the lanes of its output vector and the entries of its register tile (until expand makes them one
// graph), and the KIR the linearizer writes. Each step reads and updates one Plan; every kernel goes through every
// step, and the form says what a step does to it.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/gpu/plans.hpp"
#include "codegen/lower.hpp"
#include "codegen/opt.hpp"
#include "codegen/stage_panel.hpp"

namespace tg::codegen {

struct Plan {
  // What the kernel is once planned, which says what the steps after the actions do with it: loops the linearizer
  // opens with the actions' lanes and tiles (planned); work-groups, a GPU plan's or a hand-written kernel's with LOCAL
  // ranges (work_groups); a hand-written kernel's loops as written (as_written).
  enum class Form { planned, work_groups, as_written };

  const sched::Kernel& kernel;
  const tg_renderer_caps& caps;
  const LowerOpts& opts;
  KirProgram kir;                             // parameters from the start; instructions from the linearizer
  std::map<std::string, int64_t> var_params;  // variable name -> parameter index
  ir::UOpPtr sink;                            // the kernel graph (SINK of STOREs)
  std::vector<ir::UOpPtr> axes;               // the output loops actions number (opt.hpp), outermost first
  std::vector<ir::UOpPtr> reduce_axes;        // then the reduce loops (UNROLL): each reduction's innermost
  std::map<const ir::UOp*, int> unrolls;      // UNROLL: reduce loop -> lanes per iteration
  std::vector<ir::UOpPtr> ranges;             // output loops still to open, outermost first
  std::vector<ir::UOpPtr> lanes;              // the output vector's lanes, one sink each (one: no vector, or expanded)
  size_t tile_axis = 0;                       // 1 when the vector's own loop is still in `ranges`
  TileRows rows;                              // the register tile's entries (one: no tile, or expanded)
  std::optional<PanelStage> staged;           // a panel copied where `staged_row` opens
  ir::UOpPtr staged_row;
  Opts applied;  // the actions taken, in order
  // what the actions ask for, built once the list is through (apply_opts.cpp build_planned)
  int tile_u = 1, tile_c = 1;                    // register tile: rows of the row loop x vectors of the vector loop
  int64_t pad_to = 0;                            // PADTO of the vector loop
  int64_t pad_rows = 0;                          // PADTO of the row loop
  bool stage = false;                            // STAGE of the shared panel
  std::optional<OptOp> gpu_plan;                 // TC, LOCAL or GROUP
  int gpu_group = 0;                             // its work-group size (0: the plan's own)
  std::vector<std::pair<int, int>> gpu_upcasts;  // (axis, amount) of its tile
  std::optional<Opt> thread;                     // THREAD, resolved to `grid` once the tile is built
  ir::UOpPtr grid;                               // host CPUs: the loop spread over the device's threads
  Form form = Form::planned;
  std::optional<WorkGroupPlan>
      work_groups;            // Form::work_groups: the group and item ranges, the flops (the graph: sink)
  ir::UOpPtr before_reduces;  // the written forms: the graph lower_reduces took, whose register arrays are declared
                              // up front (its accumulators are declared where their reductions run)

  std::string str() const;  // for DEBUG=5: loops, lanes, tile, panel, and the first tile entry's graph
  // A step rewrote the whole graph (before the actions, or after expand made it one): the one lane and tile entry.
  void rewrite_sink(ir::UOpPtr s) {
    sink = std::move(s);
    lanes = {sink};
    rows = {lanes};
  }
};

// The parameters (buffers, then variables) and the kernel's graph.
Plan start_plan(const sched::Kernel& kernel, const tg_renderer_caps& caps, const LowerOpts& opts);

void check_spec(Plan& p);              // the kernel spec (ir/spec.hpp), where the switches ask
void simplify_indices(Plan& p);        // symbolic rules; the output loops that are left
void decompose(Plan& p);               // ops the renderer's caps leave out, as ops it has (decompositions.hpp)
void take_as_written(Plan& p);         // a hand-written kernel keeps its loops (work-groups where it has LOCAL ranges)
void apply_opts(Plan& p);              // the actions given, or the heuristic's (heuristic.cpp): lanes, tiles, GPU plans
void unroll_written_reduces(Plan& p);  // the written forms: REDUCEs over UNROLL/UPCAST ranges, the widest that fits
void expand(Plan& p);          // lanes and tile entries (written forms: UPCAST stores) -> vector ops (expand.hpp)
void unroll_reduces(Plan& p);  // planned: UNROLL, reductions keep lanes of their loop in one vector (expand.hpp)
void lower_reduces(Plan& p);   // REDUCEs -> accumulators in registers, FMA by caps (reduce_lowering.hpp)
void linearize(Plan& p);       // the instructions (the Emitter): grid or work-groups, loops, panel copy, statements
void read_through_images(Plan& p);  // IMAGE: read-only float32 buffers as image2d views

// What apply_opts is made of (apply_opts.cpp), for the heuristic and the search: one action applied and recorded
// in `applied` ("" when it applied; else why not, the plan unchanged), the tile or GPU plan the actions asked for
// built, and a GPU plan made directly (the kernel's work-groups, where it fits).
std::string apply_opt(Plan& p, const Opt& o);
std::string build_planned(Plan& p);  // and THREAD's grid (build_thread)
std::string build_thread(Plan& p);
// Takes back a register tile's actions (those after the first `applied`) whose build failed: build_planned changes
// the loops only when it succeeds, so the plan is then as before them.
void forget_tile(Plan& p, size_t applied);
std::string run_gpu_plan(Plan& p, OptOp plan, GpuTile tile);
// The loops a register tile takes, once the output vector is made: the row loop just outside the vector loop
// (alone, the vector loop itself) and the vector loop, with their lengths and axes.
struct TileLoops {
  size_t ri = 0;               // the row loop's place in Plan::ranges
  ir::UOpPtr row, vec;         // null: no tile (no output vector); vec null: the vector covers the whole loop
  int64_t rows = 1, vecs = 1;  // a symbolic row loop counts 1 (it is not tiled)
  int row_axis = 0, vec_axis = 0;
  bool reduces = false;  // the kernel reduces (a tile pays only there)
};
TileLoops tile_loops(const Plan& p);
// The reductions whose innermost loop (the one UNROLL takes) is `loop`.
std::vector<const ir::UOp*> reductions_over(const Plan& p, const ir::UOpPtr& loop);
// The heuristic (heuristic.cpp): chooses the actions from the renderer's caps and the kernel's shape and applies them.
void hand_coded_opts(Plan& p);
// Whether the renderer's kernels run on host threads (THREAD applies).
bool host_threads(const tg_renderer_caps& caps);
// The heuristic's THREAD for a plan whose other actions are built (the search adds it to its lists): none for a
// kernel too small to pay for threads; else the first loop of constant length (a matmul's column panels).
std::optional<Opt> thread_opt(const Plan& p);

}  // namespace tg::codegen
