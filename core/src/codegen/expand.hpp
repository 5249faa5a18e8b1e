// The expander: the lanes of an upcast axis (one graph per lane, as apply_opts makes them) become one graph of vector
// statements, which is all the linearizer then sees. A store of w lanes becomes one STORE of a VECTORIZE, and the
// vectorize rules turn a VECTORIZE of isomorphic lanes into one op on vectors of the renderer's widths. What they
// leave as a VECTORIZE, the Emitter (expand_lanes.cpp) gathers: lanes of few distinct values, two isomorphic halves,
// packed loads the renderer reads as bytes, ops it takes only per lane.
#pragma once

#include <functional>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/pattern_matcher.hpp"
#include "ir/uop.hpp"
#include "tg/plugin_abi.h"

namespace tg::codegen {

// The STOREs of w lanes as statements: one STORE of VECTORIZE(values) at the first lane's index where the indices
// are consecutive, every lane has the same gate and the renderer has vectors of w; else one STORE per lane, whose
// index and value are lane l of the lanes' VECTORIZEs (GEP), so what vectorizes among them still does.
std::vector<ir::UOpPtr> vector_store(const std::vector<ir::UOpPtr>& stores, const tg_renderer_caps& caps);

// A hand-written kernel's END whose innermost loop is an UPCAST range over stores: the stores of w lanes at once (w
// the widest vector the renderer has for every stored dtype that divides the range), through vector_store and the
// vectorize rules, as apply_opts' lanes are for planned kernels: a custom kernel's lanes reach the renderer as vectors
// instead of as 32 scalar statements that clang's SLP vectorizer may or may not regroup (measured on the LLM's Q5_0
// matrix-vector kernel: it regrouped them with a shuffle per lane), and reductions per lane become one vector REDUCE.
// Lanes are independent (UPCAST's contract), so each statement runs for a whole group before the next.
ir::UOpPtr expand_upcast_stores(const ir::UOpPtr& sink, const tg_renderer_caps& caps);

// A VECTORIZE of w isomorphic lanes as one vector op, where the renderer has the op on vectors of w: LOADs of
// consecutive elements (the same gate) one LOAD; ALU ops one op on VECTORIZEs of their sources (not on bools, not
// WHERE: renderers share no bool vectors); REDUCEs over the same loops one REDUCE of a VECTORIZE (one vector
// accumulator). ALU lanes the renderer takes only per lane: the op per lane on lanes of its sources' VECTORIZEs (GEP),
// which the rules take in turn. Lanes of few distinct values (a quarter of w or fewer) stay scalars: each is computed
// once.
// `sources`: applied to the VECTORIZEs of an op's sources that per_lane and equal_runs take apart (the Vectorizer
// passes itself, so those are vectorized before their lanes are built, not rebuilt after); none: left as they are.
ir::PatternMatcher pm_vectorize_for(const tg_renderer_caps& caps,
                                    std::function<ir::UOpPtr(const ir::UOpPtr&)> sources = {});

// Reductions unrolled, as rules: a REDUCE over UNROLL/UPCAST ranges (a hand-written kernel's) is written out in
// straight-line code over them; then a REDUCE whose innermost loop is unrolled by w keeps w lanes of that loop per
// iteration in one vector REDUCE over a loop of end / w, its lanes combined after it. w: the plan's UNROLL actions
// (`unrolls`), or for kernels the actions do not plan (null) the widest that fits - except a reduction read per
// output lane of an UPCAST range, which the lanes make one accumulator. A REDUCE whose lanes would not vectorize
// stays.
ir::PatternMatcher pm_unroll_reduces(const tg_renderer_caps& caps, const std::map<const ir::UOp*, int>* unrolls);

// pm_vectorize_for's rules to their fixpoint on a VECTORIZE: a vector op with the VECTORIZEs it made of its sources
// vectorized in turn; other lanes (per lane, equal runs, bytes) through the rules again (per_lane and equal_runs
// vectorize the sources they take apart through this one). Only VECTORIZEs are visited (the lanes' own graphs hold
// none: a whole-graph rewrite would walk every lane's graph for each VECTORIZE the linearizer makes). Each VECTORIZE is
// done once.
class Vectorizer {
 public:
  explicit Vectorizer(const tg_renderer_caps& caps)
      : pm_(pm_vectorize_for(caps, [this](const ir::UOpPtr& v) { return (*this)(v); })) {}
  Vectorizer(const Vectorizer&) = delete;  // (its rules call back into this one)
  Vectorizer& operator=(const Vectorizer&) = delete;
  ir::UOpPtr operator()(const ir::UOpPtr& u);
  // A statement whose value, index or lane of one (GEP) is a VECTORIZE, with those vectorized.
  ir::UOpPtr statement(const ir::UOpPtr& st);

 private:
  ir::PatternMatcher pm_;
  std::unordered_map<const ir::UOp*, std::pair<ir::UOpPtr, ir::UOpPtr>> done_;  // VECTORIZE -> (itself, result)
};

}  // namespace tg::codegen
