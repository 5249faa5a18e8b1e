// The Emitter: the linearizer's state, a kernel's UOp graph -> KIR instructions for one renderer. It walks the
// graph from the stores, opening one scope per loop: a value computed inside a loop is only reused inside it (the
// C-like renderers scope locals the same way), and clang/NVRTC hoist loop-invariant code, so it needs no separate
// scheduling pass. The linearizer (linearize.cpp) drives it over the loops and grid the earlier steps
// decided; the expand step (expand.hpp) made the lanes of its stores vector ops already, and lower_reduces
// (reduce_lowering.hpp) its reductions accumulators in registers. Its work is in two files, one per concern:
//   emit.cpp             the walk: values, loops, work-item ids, statements, inline code
//   expand_lanes.cpp     a VECTORIZE's lanes: the vectorize rules, then broadcasts, gathers and per-lane ops
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/decompositions.hpp"
#include "codegen/expand.hpp"
#include "codegen/kir.hpp"
#include "codegen/lanes.hpp"
#include "ir/symbolic.hpp"
#include "ir/uop.hpp"
#include "tg/error.hpp"

namespace tg::codegen {

using ir::Op;
using ir::UOp;
using ir::UOpPtr;

class Emitter {
 public:
  Emitter(KirProgram& k, const tg_renderer_caps& caps, std::map<std::string, int64_t> var_params)
      : k_(k), caps_(caps), var_params_(std::move(var_params)), vectorize_(caps) {
    scopes_.emplace_back();
  }

  // ---- the walk (emit.cpp) ----

  // u's value: found in an enclosing scope, else emitted (its sources first) into the innermost one.
  int32_t emit(const UOpPtr& u);
  void set(const UOpPtr& u, int32_t id) {
    scopes_.back()[u.get()] = id;
    keep_.push_back(u);
  }
  // Whether u already has a value in scope (a range bound to a work-item id, for one).
  bool bound(const UOpPtr& u) const {
    for (const auto& scope : scopes_)
      if (scope.count(u.get())) return true;
    return false;
  }
  // Local arrays are declared at the top of the kernel: OpenCL allows them nowhere else.
  void declare_locals(const UOpPtr& sink) { declare(sink, Op::DEFINE_LOCAL); }
  // A register array lives for the whole work-item: declared before the kernel's own loops, not inside the first
  // loop that happens to use it (a later loop would then see another, uninitialized array).
  void declare_registers(const UOpPtr& sink) { declare(sink, Op::DEFINE_REG); }
  // A loop to a constant, or to an expression of variables (a symbolic dim; flops counted at its max).
  int32_t open_loop(const UOpPtr& range);
  void close_loop(int32_t r);
  // Binds `range` to a work-item id of `kind` along `dim` and sizes the launch for it: GROUP ranges count
  // work-groups (launch global), LOCAL ranges work-items per group (launch local), and a GLOBAL range of n is n /
  // `local` groups of `local` work-items (local divides n).
  void special(const UOpPtr& range, uint32_t kind = TG_SPECIAL_GLOBAL, uint32_t dim = 0, uint32_t local = 1);

  bool supports(Op op, DType d) const { return e_supports(caps_, op, d); }
  bool vector_ok(DType d, int w) const { return codegen::vector_ok(caps_, d, w); }
  bool takes_packed(DType d) const { return codegen::takes_packed(caps_, d); }
  // Local memory the kernel declared so far, in bytes.
  uint64_t local_bytes() const { return local_bytes_; }
  double flops() const { return flops_; }

  // ---- lanes -> vectors (expand_lanes.cpp) ----

  // A value computed for several lanes at once: one vector instruction, or a scalar shared by every lane.
  struct Lanes {
    int32_t id;
    int vcount;  // 1: the same scalar in every lane
  };
  // Emits the lane graphs of an upcast axis (lane l has the axis index replaced by base + l): one vector op where
  // the vectorize rules take them (expand.hpp), else computed per lane and gathered with VECTORIZE.
  Lanes emit_lanes(const std::vector<UOpPtr>& lanes);

 private:
  KirProgram& k_;
  const tg_renderer_caps& caps_;
  std::map<std::string, int64_t> var_params_;  // variable name -> KIR parameter index
  Vectorizer vectorize_;                       // pm_vectorize_for(caps): lanes -> one vector op
  std::vector<std::unordered_map<const UOp*, int32_t>> scopes_;
  std::vector<std::map<std::vector<const UOp*>, Lanes>> vscopes_{1};
  std::vector<UOpPtr> keep_;
  std::vector<int64_t> ends_;
  std::vector<std::vector<int32_t>> bool_lanes_;  // Lanes with id -k-1: per-lane scalars, not one vector
  double mult_ = 1, flops_ = 0;
  uint64_t local_bytes_ = 0;

  // ---- the walk (emit.cpp) ----
  int32_t emit_uncached(const UOpPtr& u);
  void declare(const UOpPtr& sink, Op op);
  void require_local(const char* what) const;
  // The variant of an inline snippet ("lang\0code\0lang\0code...") written in the renderer's language, else
  // the one for any language ("*"); nullopt when there is neither.
  std::optional<std::string> custom_code_in(const std::string& variants) const;
  std::string custom_code_for(const std::string& variants) const;
  static std::vector<std::pair<std::string, std::string>> custom_variants(const std::string& variants);
  // A register END's statements carry from one iteration to the next (STORE(reg, ..) of a value that reads
  // AFTER(reg, init): a reduction's accumulator) starts from its initial stores: where they do not depend on the END's
  // ranges they run once before its loops open, not once per iteration where the walk first meets them.
  void emit_carried_inits(const std::vector<UOpPtr>& stmts, const std::vector<UOpPtr>& ranges);
  // Statements for each iteration of ranges[i..]: loops for LOOP ranges, one copy per index for unrolled ones.
  void emit_end(const std::vector<UOpPtr>& stmts, const std::vector<UOpPtr>& ranges, size_t i);

  // ---- lanes -> vectors (expand_lanes.cpp) ----
  static std::vector<const UOp*> key_of(const std::vector<UOpPtr>& lanes);
  Lanes emit_lanes_uncached(const std::vector<UOpPtr>& lanes);
  int32_t broadcast(Lanes v, DType d, int w);  // v in all w lanes
  int32_t lane(Lanes v, DType d, int l);       // lane l of v, as a scalar
  // One scalar instruction per lane on the lanes of already-emitted sources, gathered into a vector.
  Lanes per_lane(const std::vector<UOpPtr>& lanes, const std::vector<Lanes>& srcs);
  // Each lane through the scalar path.
  Lanes gather_lanes(const std::vector<UOpPtr>& lanes);
  Lanes pack(const std::vector<int32_t>& scalars, DType d);
  // A VECTORIZE the linearizer made, through the vectorize rules (expand.hpp) to their fixpoint.
  UOpPtr vectorized(const UOpPtr& vectorize) { return vectorize_(vectorize); }
};

}  // namespace tg::codegen
