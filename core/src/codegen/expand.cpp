// The expand step (plan.hpp) and vector_store (expand.hpp): lanes and tile entries -> one graph of vector statements.
#include "codegen/expand.hpp"

#include <algorithm>

#include "codegen/decompositions.hpp"
#include "codegen/lanes.hpp"
#include "codegen/plan.hpp"

namespace tg::codegen {

using namespace ir;

std::vector<UOpPtr> vector_store(const std::vector<UOpPtr>& stores, const tg_renderer_caps& caps) {
  const int w = static_cast<int>(stores.size());
  const UOpPtr& s0 = stores[0];
  const DType d = s0->src[2]->dtype;
  const bool same_buffer =
      std::all_of(stores.begin(), stores.end(), [&](const UOpPtr& st) { return st->src[0].get() == s0->src[0].get(); });
  const std::vector<UOpPtr> idx = src_lanes(stores, 1), val = src_lanes(stores, 2);
  const UOpPtr values = UOp::make(Op::VECTORIZE, d.vec(w), val);
  if (same_buffer && same_gate(stores, 3) && consecutive_index(idx) && vector_ok(caps, d, w)) {
    std::vector<UOpPtr> src(s0->src);  // the buffer and any gate (the same in every lane)
    src[2] = values;
    return {UOp::make(Op::STORE, d.vec(w), std::move(src))};
  }
  const UOpPtr indices = UOp::make(Op::VECTORIZE, idx[0]->dtype.vec(w), idx);
  std::vector<UOpPtr> out;
  for (int l = 0; l < w; ++l) {
    std::vector<UOpPtr> src(stores[l]->src);  // its buffer and gate; index and value: lane l of the vectors
    src[1] = UOp::make(Op::GEP, idx[0]->dtype, {indices}, int64_t{l});
    src[2] = UOp::make(Op::GEP, d, {values}, int64_t{l});
    out.push_back(UOp::make(Op::STORE, d, std::move(src)));
  }
  return out;
}

namespace {

// Lanes worth one vector op: not all one value (a broadcast), not a few values repeated (a sub-block's scale over
// half the lanes: a vector would do the same work w times), and alike.
bool vector_lanes(const std::vector<UOpPtr>& lanes) {
  if (!isomorphic(lanes)) return false;
  const size_t n = distinct_values(lanes);
  return n > 1 && n * 4 > lanes.size();
}

UOpPtr vector_load(const tg_renderer_caps& caps, const std::vector<UOpPtr>& lanes) {
  const UOpPtr& u0 = lanes[0];
  const int w = static_cast<int>(lanes.size());
  if (is_packed_load(*u0) && !takes_packed(caps, u0->dtype)) return nullptr;  // (read from bytes: packed_from_bytes)
  if (!vector_ok(caps, u0->dtype, w) || !consecutive_index(src_lanes(lanes, 1), lane_stride(*u0))) return nullptr;
  if (!std::all_of(lanes.begin(), lanes.end(), [&](const UOpPtr& l) { return l->src[0].get() == u0->src[0].get(); }))
    return nullptr;
  if (!same_gate(lanes, 2)) return nullptr;
  return UOp::make(Op::LOAD, u0->dtype.vec(w), u0->src);  // the first lane's buffer, index and gate
}

// The VECTORIZEs of an op's sources a rule takes apart, through `sources` (pm_vectorize_for's) where given.
using Sources = std::function<UOpPtr(const UOpPtr&)>;
UOpPtr made_of(const Sources& sources, UOpPtr v) { return sources ? sources(v) : v; }

// Packed loads the renderer does not read whole: each lane from its bytes, which the rules then take.
UOpPtr packed_from_bytes(const tg_renderer_caps& caps, const std::vector<UOpPtr>& lanes) {
  const UOpPtr& u0 = lanes[0];
  if (!is_packed_load(*u0) || takes_packed(caps, u0->dtype)) return nullptr;
  std::vector<UOpPtr> bytes;
  for (const auto& l : lanes) bytes.push_back(packed_load_from_bytes(l));
  return UOp::make(Op::VECTORIZE, u0->dtype.vec(static_cast<int>(lanes.size())), std::move(bytes));
}

// Lanes made of equal runs, each alike (an int8 weight word: lanes 0-3 a load's low nibbles, lanes 4-7 the same
// load's high ones, and 8 more lanes so for the next block where two go together; or runs of consecutive loads): one
// vector per run, taken apart into the lanes again (the renderer joins them). The fewest runs that are each alike:
// two halves, or more runs of 4 lanes or more (the Q5_0 decode product's 16 lanes are 4 runs; as 2 halves, not alike,
// they were 16 scalar loads). Loads must be one vector access per run (or one value).
UOpPtr equal_runs(const tg_renderer_caps& caps, const std::vector<UOpPtr>& lanes, const Sources& sources) {
  const int w = static_cast<int>(lanes.size());
  const DType d = lanes[0]->dtype;
  if (w < 4 || d.is_bool() || !vector_ok(caps, d, w)) return nullptr;
  auto alike = [&](const std::vector<UOpPtr>& run) {
    if (!isomorphic(run) || run[0]->op == Op::RANGE) return false;
    return run[0]->op != Op::LOAD || run[0].get() == run.back().get() ||
           consecutive_index(src_lanes(run, 1), lane_stride(*run[0]));
  };
  for (int k = 2; k == 2 || w / k >= 4; k *= 2) {
    if (w % k || !vector_ok(caps, d, w / k)) continue;
    std::vector<std::vector<UOpPtr>> runs;
    for (int r = 0; r < k; ++r) runs.emplace_back(lanes.begin() + r * (w / k), lanes.begin() + (r + 1) * (w / k));
    if (!std::all_of(runs.begin(), runs.end(), alike)) continue;
    std::vector<UOpPtr> out;
    for (const auto& run : runs) {
      const UOpPtr v = made_of(sources, UOp::make(Op::VECTORIZE, d.vec(w / k), run));
      for (int l = 0; l < w / k; ++l) out.push_back(UOp::make(Op::GEP, d, {v}, int64_t{l}));
    }
    return UOp::make(Op::VECTORIZE, d.vec(w), std::move(out));
  }
  return nullptr;
}

UOpPtr vector_alu(const tg_renderer_caps& caps, const std::vector<UOpPtr>& lanes) {
  const UOpPtr& u0 = lanes[0];
  const int w = static_cast<int>(lanes.size());
  const DType d = u0->dtype, od = op_dtype(*u0);
  if (u0->op == Op::WHERE || d.is_bool() || !e_supports(caps, u0->op, od) || !vector_ok(caps, d, w) ||
      !vector_ok(caps, od, w))
    return nullptr;
  std::vector<UOpPtr> src;
  for (size_t i = 0; i < u0->src.size(); ++i) {
    const DType sd = u0->src[i]->dtype;
    if (sd.is_bool() || !vector_ok(caps, sd, w)) return nullptr;
    src.push_back(UOp::make(Op::VECTORIZE, sd.vec(w), src_lanes(lanes, i)));
  }
  return UOp::make(u0->op, d.vec(w), std::move(src), u0->arg);
}

// Lanes of an op the renderer takes only per lane (a select, bools, a width it lacks): the op per lane on lane l of
// VECTORIZEs of its sources, so what vectorizes among the sources still does (a tile's reductions under a select
// stay one vector REDUCE, which lower_reduces then gives one accumulator). Lanes that already read lane l of one
// vector per source are what this rule makes: left alone.
UOpPtr vector_per_lane(const tg_renderer_caps& caps, const std::vector<UOpPtr>& lanes, const Sources& sources) {
  const UOpPtr& u0 = lanes[0];
  const int w = static_cast<int>(lanes.size());
  if (!e_supports(caps, u0->op, op_dtype(*u0))) return nullptr;  // decomposed per lane at emission
  bool done = true;
  for (size_t i = 0; done && i < u0->src.size(); ++i) done = is_whole_vector(src_lanes(lanes, i));
  if (done) return nullptr;
  std::vector<UOpPtr> vsrc;
  for (size_t i = 0; i < u0->src.size(); ++i)
    vsrc.push_back(made_of(sources, UOp::make(Op::VECTORIZE, u0->src[i]->dtype.vec(w), src_lanes(lanes, i))));
  std::vector<UOpPtr> out;
  for (int l = 0; l < w; ++l) {
    std::vector<UOpPtr> src;
    for (const auto& v : vsrc) src.push_back(UOp::make(Op::GEP, DType(v->dtype.scalar), {v}, int64_t{l}));
    out.push_back(UOp::make(u0->op, u0->dtype, std::move(src), u0->arg));
  }
  return UOp::make(Op::VECTORIZE, u0->dtype.vec(w), std::move(out));
}

UOpPtr vector_reduce(const std::vector<UOpPtr>& lanes, const tg_renderer_caps& caps) {
  const UOpPtr& u0 = lanes[0];
  const int w = static_cast<int>(lanes.size());
  if (!std::all_of(lanes.begin(), lanes.end(), [&](const UOpPtr& l) { return same_loops(*l, *u0); })) return nullptr;
  if (!reduce_vector_ok(caps, static_cast<ReduceOp>(u0->arg_int()), u0->dtype, w)) return nullptr;
  std::vector<UOpPtr> src{UOp::make(Op::VECTORIZE, u0->dtype.vec(w), src_lanes(lanes, 0))};
  src.insert(src.end(), u0->src.begin() + 1, u0->src.end());
  return UOp::make(Op::REDUCE, u0->dtype.vec(w), std::move(src), u0->arg);
}

}  // namespace

ir::PatternMatcher pm_vectorize_for(const tg_renderer_caps& caps, std::function<UOpPtr(const UOpPtr&)> sources) {
  using namespace pat;
  auto lanes_of = [](Op op) {
    return [op](const UOp& u) { return !u.src.empty() && u.src[0]->op == op && vector_lanes(u.src); };
  };
  auto alu_lanes = [](const UOp& u) { return !u.src.empty() && is_alu(u.src[0]->op) && vector_lanes(u.src); };
  // (equal runs each alike: lanes that are not alike as a whole, or loads that are not one access)
  auto runs = [](const UOp& u) {
    const size_t n = distinct_values(u.src);
    return n * 4 > u.src.size() && (!isomorphic(u.src) || u.src[0]->op == Op::LOAD);
  };
  return PatternMatcher(
      "vectorize",
      {
          {ops({Op::VECTORIZE}).where(lanes_of(Op::LOAD)),
           [caps](const Match&, const UOpPtr& u) { return vector_load(caps, u->src); }, "vector_load"},
          {ops({Op::VECTORIZE}).where(lanes_of(Op::LOAD)),
           [caps](const Match&, const UOpPtr& u) { return packed_from_bytes(caps, u->src); }, "packed_from_bytes"},
          {ops({Op::VECTORIZE}).where(runs),
           [caps, sources](const Match&, const UOpPtr& u) { return equal_runs(caps, u->src, sources); }, "equal_runs"},
          {ops({Op::VECTORIZE}).where(alu_lanes),
           [caps](const Match&, const UOpPtr& u) { return vector_alu(caps, u->src); }, "vector_alu"},
          {ops({Op::VECTORIZE}).where(alu_lanes),
           [caps, sources](const Match&, const UOpPtr& u) { return vector_per_lane(caps, u->src, sources); },
           "per_lane"},
          {ops({Op::VECTORIZE}).where(lanes_of(Op::REDUCE)),
           [caps](const Match&, const UOpPtr& u) { return vector_reduce(u->src, caps); }, "vector_reduce"},
      });
}

namespace {

// A REDUCE over UNROLL/UPCAST ranges: the value for each index combined in straight-line code (the remaining ranges,
// if any, stay a loop). nullptr when nothing is unrolled.
UOpPtr written_out(const Match&, const UOpPtr& u) {
  std::vector<UOpPtr> loops, unrolled;
  for (size_t i = 1; i < u->src.size(); ++i) (is_unrolled(u->src[i]) ? unrolled : loops).push_back(u->src[i]);
  if (unrolled.empty()) return nullptr;
  const auto rop = static_cast<ReduceOp>(u->arg_int());
  UOpPtr value = u->src[0];
  for (const auto& r : unrolled) {
    UOpPtr acc;
    for (int64_t k = 0; k < r->src[0]->arg_int(); ++k) {
      UOpPtr term = simplify_substituted(value, {{r.get(), const_int(r->dtype, k)}});
      acc = acc ? reduce_combine(rop, acc, term) : term;
    }
    value = acc;
  }
  if (loops.empty()) return value;
  std::vector<UOpPtr> src{value};
  src.insert(src.end(), loops.begin(), loops.end());
  return UOp::make(Op::REDUCE, u->dtype, std::move(src), u->arg);
}

}  // namespace

ir::PatternMatcher pm_unroll_reduces(const tg_renderer_caps& caps, const std::map<const UOp*, int>* unrolls) {
  auto unrolled = [caps, unrolls](const Match&, const UOpPtr& u) -> UOpPtr {
    const UOpPtr r = reduce_loop(*u);
    if (!r) return nullptr;
    int w = 0;
    if (!unrolls) {
      // a hand-written kernel's reduction that reads an UPCAST (output lane) range is left to the lanes: vectorized
      // across them at emission it is one accumulator for all of them, where unrolled here it would be one per lane
      for (const UOp* n : toposort(std::vector<UOpPtr>{u->src[0]}))
        if (n->op == Op::RANGE && n->range().type == AxisType::UPCAST) return nullptr;
      w = widest_unroll(caps, {u.get()});
    } else if (auto it = unrolls->find(r.get()); it != unrolls->end()) {
      w = it->second;
    }
    if (!w) return nullptr;
    const UnrolledReduce lanes = unrolled_lanes(*u, w);
    std::map<const UOp*, bool> memo;
    if (!vectorizable(lanes.lanes, memo)) return nullptr;
    std::vector<UOpPtr> src{UOp::make(Op::VECTORIZE, u->dtype.vec(w), lanes.lanes)};
    src.insert(src.end(), u->src.begin() + 1, u->src.end());
    std::replace(src.begin() + 1, src.end(), r, lanes.outer);
    const UOpPtr all = UOp::make(Op::REDUCE, u->dtype.vec(w), std::move(src), u->arg);
    UOpPtr out = UOp::make(Op::GEP, u->dtype, {all}, int64_t{0});
    for (int l = 1; l < w; ++l)
      out = reduce_combine(static_cast<ReduceOp>(u->arg_int()), out, UOp::make(Op::GEP, u->dtype, {all}, int64_t{l}));
    return out;
  };
  const UPat scalar_reduce = pat::ops({Op::REDUCE}).where([](const UOp& u) { return u.dtype.count == 1; });
  return PatternMatcher(
      "unroll_reduces",
      {
          {scalar_reduce, written_out, "unrolled_ranges_written_out"},  // first: what remains may be unrolled by UNROLL
          {scalar_reduce, unrolled, "unrolled_loop_in_a_vector"},
      });
}

namespace {

// w for an END whose innermost loop is an UPCAST range over scalar stores: the widest vector the renderer has for
// every stored dtype that divides the range; 1 where this does not apply.
int store_vector_width(const tg_renderer_caps& caps, const std::vector<UOpPtr>& stmts, const UOpPtr& r) {
  if (r->range().type != AxisType::UPCAST || !is_const_end(r)) return 1;
  const int64_t n = r->src[0]->arg_int();
  for (int w : {16, 8, 4, 2}) {
    bool ok = n % w == 0;
    for (const auto& st : stmts)
      ok = ok && st->op == Op::STORE && st->src[2]->dtype.count == 1 && vector_ok(caps, st->src[2]->dtype, w) &&
           !st->src[2]->dtype.is_bool();
    if (ok) return w;
  }
  return 1;
}

}  // namespace

UOpPtr expand_upcast_stores(const UOpPtr& sink, const tg_renderer_caps& caps) {
  Vectorizer vectorize(caps);
  auto expand_end = [&](const Match&, const UOpPtr& u) -> UOpPtr {
    const size_t n = static_cast<size_t>(u->arg_int());
    const std::vector<UOpPtr> stmts(u->src.begin(), u->src.begin() + static_cast<std::ptrdiff_t>(n));
    std::vector<UOpPtr> ranges(u->src.begin() + static_cast<std::ptrdiff_t>(n), u->src.end());
    auto last = std::find_if(ranges.rbegin(), ranges.rend(), [](const UOpPtr& r) { return r->op == Op::RANGE; });
    if (last == ranges.rend()) return nullptr;
    const UOpPtr r = *last;
    const int w = store_vector_width(caps, stmts, r);
    if (w <= 1) return nullptr;
    ranges.erase(std::next(last).base());
    std::vector<UOpPtr> out;
    for (int64_t k0 = 0; k0 < r->src[0]->arg_int(); k0 += w)
      for (const auto& st : stmts) {
        std::vector<UOpPtr> lanes;
        for (int64_t k = k0; k < k0 + w; ++k)
          lanes.push_back(simplify_substituted(st, {{r.get(), const_int(r->dtype, k)}}));
        if (lanes[0]->src.size() > 3) {  // a gated store: per lane
          out.insert(out.end(), lanes.begin(), lanes.end());
          continue;
        }
        for (const auto& vst : vector_store(lanes, caps)) out.push_back(vectorize.statement(vst));
      }
    const int64_t count = static_cast<int64_t>(out.size());
    out.insert(out.end(), ranges.begin(), ranges.end());
    return UOp::make(Op::END, u->dtype, std::move(out), count);
  };
  return rewrite(sink, PatternMatcher("upcast_stores", {{pat::ops({Op::END}), expand_end, "upcast_stores_as_vectors"}}),
                 {.name = "upcast_stores"});
}

UOpPtr Vectorizer::operator()(const UOpPtr& u) {
  if (u->op != Op::VECTORIZE) return u;
  if (auto it = done_.find(u.get()); it != done_.end()) return it->second.second;
  UOpPtr out = u;
  if (UOpPtr r = pm_.rewrite(u)) {
    if (r->op == Op::VECTORIZE) {
      out = (*this)(r);  // other lanes (per lane, equal runs, bytes): the rules on them in turn
    } else {
      std::vector<UOpPtr> src;  // one vector op: the VECTORIZEs it made of its sources
      for (const auto& s : r->src) src.push_back((*this)(s));
      out = src == r->src ? r : r->replace_src(std::move(src));
    }
  }
  done_.emplace(u.get(), std::make_pair(u, out));
  return out;
}

UOpPtr Vectorizer::statement(const UOpPtr& st) {
  std::vector<UOpPtr> src;
  for (const auto& s : st->src)
    src.push_back(s->op == Op::GEP && s->src[0]->op == Op::VECTORIZE ? s->replace_src({(*this)(s->src[0])})
                                                                     : (*this)(s));
  return src == st->src ? st : st->replace_src(std::move(src));
}

void expand(Plan& p) {
  if (p.form != Plan::Form::planned) return p.rewrite_sink(expand_upcast_stores(p.sink, p.caps));
  if (p.lanes.size() <= 1) return;
  std::vector<UOpPtr> stmts;
  for (const auto& row : p.rows)
    for (size_t s = 0; s < p.sink->src.size(); ++s) {
      std::vector<UOpPtr> stores;
      for (const auto& lane : row) stores.push_back(lane->src[s]);
      for (UOpPtr& st : vector_store(stores, p.caps)) stmts.push_back(std::move(st));
    }
  Vectorizer vectorize(p.caps);
  for (UOpPtr& st : stmts) st = vectorize.statement(st);
  if (p.staged)
    for (auto& copy : p.staged->copies) {
      copy = vector_store(copy, p.caps);
      for (UOpPtr& st : copy) st = vectorize.statement(st);
    }
  p.rewrite_sink(UOp::make(Op::SINK, dtypes::bool_, std::move(stmts)));
}

// A written kernel's reductions unroll before its UPCAST stores become vector stores (which leave the reductions
// that read an UPCAST range to the lanes); a planned kernel's after its lanes are one graph (UNROLL's loop lanes
// then join the output vector's).
void unroll_written_reduces(Plan& p) {
  if (p.form == Plan::Form::planned) return;
  p.rewrite_sink(rewrite(p.sink, pm_unroll_reduces(p.caps, nullptr), {.name = "unroll_reduces"}));
}

void unroll_reduces(Plan& p) {
  // (a planned kernel's reduce ranges are never UNROLL/UPCAST ranges: without UNROLL actions no rule applies, and a
  // rewrite would still walk the whole graph)
  if (p.form != Plan::Form::planned || p.unrolls.empty()) return;
  p.rewrite_sink(rewrite(p.sink, pm_unroll_reduces(p.caps, &p.unrolls), {.name = "unroll_reduces"}));
}

}  // namespace tg::codegen
