// Kernel graph -> KIR. The emitter walks the graph from the store, opening one scope per loop: a value
// computed inside a loop is only reused inside it (the C-like renderers scope locals the same way), and
// clang/NVRTC hoist loop-invariant code, so the emitter does not need a separate scheduling pass.
#include "codegen/lower.hpp"

#include <cassert>
#include <cmath>
#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "codegen/decompositions.hpp"
#include "ir/symbolic.hpp"
#include "tg/error.hpp"

namespace tg::codegen {

using namespace ir;

namespace {

tg_kir_op kir_op(Op op) {
  switch (op) {
    case Op::NEG: return TG_KIR_NEG;
    case Op::EXP2: return TG_KIR_EXP2;
    case Op::LOG2: return TG_KIR_LOG2;
    case Op::SIN: return TG_KIR_SIN;
    case Op::SQRT: return TG_KIR_SQRT;
    case Op::RECIP: return TG_KIR_RECIP;
    case Op::TRUNC: return TG_KIR_TRUNC;
    case Op::CAST: return TG_KIR_CAST;
    case Op::BITCAST: return TG_KIR_BITCAST;
    case Op::ADD: return TG_KIR_ADD;
    case Op::SUB: return TG_KIR_SUB;
    case Op::MUL: return TG_KIR_MUL;
    case Op::IDIV: return TG_KIR_IDIV;
    case Op::MOD: return TG_KIR_MOD;
    case Op::FDIV: return TG_KIR_FDIV;
    case Op::MAX: return TG_KIR_MAX;
    case Op::CMPLT: return TG_KIR_CMPLT;
    case Op::CMPNE: return TG_KIR_CMPNE;
    case Op::CMPEQ: return TG_KIR_CMPEQ;
    case Op::AND: return TG_KIR_AND;
    case Op::OR: return TG_KIR_OR;
    case Op::XOR: return TG_KIR_XOR;
    case Op::SHL: return TG_KIR_SHL;
    case Op::SHR: return TG_KIR_SHR;
    case Op::WHERE: return TG_KIR_WHERE;
    case Op::MULACC: return TG_KIR_MULACC;
    case Op::FMA: return TG_KIR_FMA;
    default: throw Error(std::string("tg: no KIR op for ") + op_name(op));
  }
}

uint8_t dt(DType d) { return static_cast<uint8_t>(d.scalar); }

// a loop of fixed length (a symbolic dim's loop ends at an expression of variables)
bool is_const_end(const UOpPtr& range) { return range->src[0]->op == Op::CONST; }

// The dtype whose op table decides whether the renderer takes an op (comparisons: the operands').
DType op_dtype(const UOp& u) {
  if (is_comparison(u.op) || u.op == Op::CAST || u.op == Op::BITCAST) return u.src[0]->dtype;
  return u.dtype;
}

bool e_vector_ok(const tg_renderer_caps& caps, DType d, int w) {
  return (caps.dtypes >> dt(d) & 1u) && (caps.vector_widths[dt(d)] >> w & 1u);
}

// idx[l] == idx[0] + l for every lane
bool consecutive_index(const std::vector<UOpPtr>& idx) {
  for (size_t l = 1; l < idx.size(); ++l) {
    UOpPtr diff = simplify(alu(Op::SUB, idx[l], idx[0]));
    if (diff->op != Op::CONST || diff->arg_int() != static_cast<int64_t>(l)) return false;
  }
  return true;
}

bool isomorphic(const std::vector<UOpPtr>& lanes) {
  const UOp& a = *lanes[0];
  for (const auto& l : lanes)
    if (l->op != a.op || l->dtype != a.dtype || l->src.size() != a.src.size() || !(l->arg == a.arg)) return false;
  return true;
}

std::vector<UOpPtr> src_lanes(const std::vector<UOpPtr>& lanes, size_t i) {
  std::vector<UOpPtr> out;
  for (const auto& l : lanes) out.push_back(l->src[i]);
  return out;
}

// Lanes that vectorize cleanly: isomorphic, every load the same in all lanes or contiguous, reductions over the
// same loops. Anything else would be gathered lane by lane, which costs more than the vector saves.
bool vectorizable(const std::vector<UOpPtr>& lanes, std::map<const UOp*, bool>& memo) {
  if (std::all_of(lanes.begin(), lanes.end(), [&](const UOpPtr& l) { return l.get() == lanes[0].get(); })) return true;
  if (auto it = memo.find(lanes[0].get()); it != memo.end()) return it->second;
  bool ok = isomorphic(lanes) && lanes[0]->op != Op::RANGE;
  if (ok && lanes[0]->op == Op::LOAD) {
    ok = consecutive_index(src_lanes(lanes, 1)) &&
         (lanes[0]->src.size() == 2 ||
          std::all_of(lanes.begin(), lanes.end(), [&](const UOpPtr& l) { return l->src[2].get() == lanes[0]->src[2].get(); }));
  } else if (ok && lanes[0]->op == Op::REDUCE) {
    for (size_t i = 1; ok && i < lanes[0]->src.size(); ++i)
      for (const auto& l : lanes) ok = ok && l->src[i].get() == lanes[0]->src[i].get();
    ok = ok && vectorizable(src_lanes(lanes, 0), memo);
  } else {
    for (size_t i = 0; ok && i < lanes[0]->src.size(); ++i) ok = vectorizable(src_lanes(lanes, i), memo);
  }
  return memo[lanes[0].get()] = ok;
}

// The lane groups of every REDUCE reachable from these lanes (walking isomorphic lanes in step).
void collect_reduce_lanes(const std::vector<UOpPtr>& lanes, std::set<const UOp*>& seen, std::vector<std::vector<UOpPtr>>& out) {
  if (!seen.insert(lanes[0].get()).second) return;
  if (lanes[0]->op == Op::REDUCE) {
    out.push_back(lanes);
    return;
  }
  if (!isomorphic(lanes)) return;
  for (size_t i = 0; i < lanes[0]->src.size(); ++i) collect_reduce_lanes(src_lanes(lanes, i), seen, out);
}

class Emitter {
 public:
  Emitter(KirProgram& k, const tg_renderer_caps& caps, std::map<std::string, int64_t> var_params)
      : k_(k), caps_(caps), var_params_(std::move(var_params)) {
    scopes_.emplace_back();
  }

  bool supports(Op op, DType d) const {
    tg_kir_op ko = kir_op(op);
    return (caps_.dtypes >> dt(d) & 1u) && (caps_.ops[dt(d)] >> ko & 1ull);
  }

  int32_t emit(const UOpPtr& u) {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it)
      if (auto f = it->find(u.get()); f != it->end()) return f->second;
    int32_t id = emit_uncached(u);
    scopes_.back().emplace(u.get(), id);
    keep_.push_back(u);
    return id;
  }

  void set(const UOpPtr& u, int32_t id) { scopes_.back()[u.get()] = id; keep_.push_back(u); }
  // Local arrays are declared at the top of the kernel: OpenCL allows them nowhere else.
  void declare_locals(const UOpPtr& sink) {
    for (const UOp* n : toposort(std::vector<UOpPtr>{sink}))
      if (n->op == Op::DEFINE_LOCAL) emit(n->ptr());
  }

  // cur + x*y as one FMA for a SUM whose value lanes are all products, where the renderer takes FMA for the
  // dtype (one rounding: a matmul's inner loop then issues one instruction per multiply-add). -1 otherwise.
  int32_t fused_sum(ReduceOp rop, const std::vector<UOpPtr>& values, int32_t cur, DType d, int w) {
    if (rop != ReduceOp::SUM || !supports(Op::FMA, d)) return -1;
    std::vector<UOpPtr> xs, ys;
    for (const auto& v : values) {
      if (v->op != Op::MUL || v->dtype != d) return -1;
      xs.push_back(v->src[0]), ys.push_back(v->src[1]);
    }
    const int32_t x = broadcast(emit_lanes(xs), d, w), y = broadcast(emit_lanes(ys), d, w);
    flops_ += 2 * mult_ * w;
    return k_.add(TG_KIR_FMA, dt(d), static_cast<uint8_t>(w), {x, y, cur});
  }
  int32_t fused_combine(const std::vector<UOpPtr>& reduce_lanes, int32_t cur, DType d, int w) {
    std::vector<UOpPtr> values;
    for (const auto& l : reduce_lanes) values.push_back(l->src[0]);
    return fused_sum(static_cast<ReduceOp>(reduce_lanes[0]->arg_int()), values, cur, d, w);
  }

  // Whether u already has a value in scope (a range bound to a work-item id, for one).
  bool bound(const UOpPtr& u) const {
    return std::any_of(scopes_.begin(), scopes_.end(), [&](const auto& scope) { return scope.count(u.get()) != 0; });
  }

  // A value computed for several lanes at once: one vector instruction, or a scalar shared by every lane.
  struct Lanes {
    int32_t id;
    int vcount;  // 1: the same scalar in every lane
  };

  // Emits the lane graphs of an upcast axis (lane l has the axis index replaced by base + l). Isomorphic lanes
  // become one vector instruction, contiguous loads and stores become vector accesses, and whatever the
  // renderer cannot take as a vector is computed per lane and gathered with VECTORIZE.
  Lanes emit_lanes(const std::vector<UOpPtr>& lanes) {
    if (std::all_of(lanes.begin(), lanes.end(), [&](const UOpPtr& l) { return l.get() == lanes[0].get(); }))
      return {emit(lanes[0]), 1};
    std::vector<const UOp*> key;
    for (const auto& l : lanes) key.push_back(l.get());
    for (auto it = vscopes_.rbegin(); it != vscopes_.rend(); ++it)
      if (auto f = it->find(key); f != it->end()) return f->second;
    Lanes out = emit_lanes_uncached(lanes);
    vscopes_.back().emplace(std::move(key), out);
    keep_.insert(keep_.end(), lanes.begin(), lanes.end());
    return out;
  }

  // STORE of lanes: one vector store when the lanes' indices are consecutive, else one store per lane.
  void store_lanes(const std::vector<UOpPtr>& stores) {
    int w = static_cast<int>(stores.size());
    std::vector<UOpPtr> idx, val;
    for (const auto& st : stores) idx.push_back(st->src[1]), val.push_back(st->src[2]);
    DType d = stores[0]->src[2]->dtype;
    int32_t p = emit(stores[0]->src[0]);
    if (consecutive_index(idx) && vector_ok(d, w)) {
      Lanes v = emit_lanes(val);
      k_.add(TG_KIR_STORE, dt(d), static_cast<uint8_t>(w), {p, emit(idx[0]), broadcast(v, d, w)});
      return;
    }
    Lanes vi = emit_lanes(idx), vv = emit_lanes(val);
    for (int l = 0; l < w; ++l)
      k_.add(TG_KIR_STORE, dt(d), 1, {p, lane(vi, idx[0]->dtype, l), lane(vv, d, l)});
  }

  bool vector_ok(DType d, int w) const;

  // Emits several lane-REDUCEs over the same loops as ONE loop nest with one vector accumulator each, so loads
  // they share (the B row of a matmul tile) are loaded once per iteration. Later emit_lanes() of any of these
  // groups finds the result. Groups that do not fit (other loops, scalar-only ops) are left to the normal path.
  void prefuse_reduces(const std::vector<std::vector<UOpPtr>>& all) {
    if (all.size() < 2) return;
    const UOpPtr& first = all[0][0];
    std::vector<std::vector<UOpPtr>> groups;
    for (const auto& g : all) {
      const UOpPtr& u = g[0];
      auto rop = static_cast<ReduceOp>(u->arg_int());
      int w = static_cast<int>(g.size());
      bool same_loops = u->src.size() == first->src.size();
      for (size_t i = 1; same_loops && i < u->src.size(); ++i) same_loops = u->src[i].get() == first->src[i].get();
      for (const auto& l : g)
        for (size_t i = 1; same_loops && i < l->src.size(); ++i) same_loops = l->src[i].get() == u->src[i].get();
      if (same_loops && rop != ReduceOp::MIN && vector_ok(u->dtype, w) && supports(rop == ReduceOp::SUM ? Op::ADD : Op::MAX, u->dtype))
        groups.push_back(g);
    }
    if (groups.size() < 2) return;
    const int32_t zero = k_.add(TG_KIR_CONST, TG_DTYPE_INT32, 1, {}, {.i = 0});
    std::vector<int32_t> accs;
    for (const auto& g : groups) {
      DType d = g[0]->dtype;
      uint8_t w = static_cast<uint8_t>(g.size());
      int32_t acc = k_.add(TG_KIR_DEFINE_REG, dt(d), w, {}, {.i = 1}, TG_ADDR_REG);
      k_.add(TG_KIR_STORE, dt(d), w, {acc, zero, broadcast({emit(reduce_identity(static_cast<ReduceOp>(g[0]->arg_int()), d)), 1}, d, w)});
      accs.push_back(acc);
    }
    std::vector<int32_t> loops;
    for (size_t i = 1; i < first->src.size(); ++i)
      if (first->src[i]->op == Op::RANGE) loops.push_back(open_loop(first->src[i]));
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const auto& g = groups[gi];
      DType d = g[0]->dtype;
      uint8_t w = static_cast<uint8_t>(g.size());
      int32_t cur = k_.add(TG_KIR_LOAD, dt(d), w, {accs[gi], zero});
      int32_t next = fused_combine(g, cur, d, w);
      if (next < 0) {
        int32_t v = broadcast(emit_lanes(src_lanes(g, 0)), d, w);
        Op comb = static_cast<ReduceOp>(g[0]->arg_int()) == ReduceOp::SUM ? Op::ADD : Op::MAX;
        flops_ += mult_ * w;
        next = k_.add(kir_op(comb), dt(d), w, {cur, v});
      }
      k_.add(TG_KIR_STORE, dt(d), w, {accs[gi], zero, next});
    }
    for (auto it = loops.rbegin(); it != loops.rend(); ++it) close_loop(*it);
    for (size_t gi = 0; gi < groups.size(); ++gi) {
      const auto& g = groups[gi];
      int w = static_cast<int>(g.size());
      std::vector<const UOp*> key;
      for (const auto& l : g) key.push_back(l.get());
      keep_.insert(keep_.end(), g.begin(), g.end());
      vscopes_.back()[key] = {k_.add(TG_KIR_LOAD, dt(g[0]->dtype), static_cast<uint8_t>(w), {accs[gi], zero}), w};
    }
  }

  // A loop to a constant, or to an expression of variables (a symbolic dim; flops counted at its max).
  int32_t open_loop(const UOpPtr& range) {
    const UOpPtr& end_node = range->src[0];
    bool fixed = end_node->op == Op::CONST;
    int64_t end = fixed ? end_node->arg_int() : end_node->vmax();
    int32_t e = fixed ? k_.add(TG_KIR_CONST, dt(range->dtype), 1, {}, {.i = end}) : emit(end_node);
    int32_t r = k_.add(TG_KIR_RANGE, dt(range->dtype), 1, {e}, {.i = range->range().id});
    scopes_.emplace_back();
    vscopes_.emplace_back();
    set(range, r);
    mult_ *= static_cast<double>(end);
    ends_.push_back(end);
    return r;
  }

  void close_loop(int32_t r) {
    k_.add(TG_KIR_ENDRANGE, 0, 1, {r});
    scopes_.pop_back();
    vscopes_.pop_back();
    mult_ /= static_cast<double>(ends_.back());
    ends_.pop_back();
  }

  // Binds `range` to a work-item id of `kind` along `dim` and sizes the launch for it: GROUP ranges count
  // work-groups (launch global), LOCAL ranges work-items per group (launch local), and a GLOBAL range of n is n /
  // `local` groups of `local` work-items (local divides n).
  void special(const UOpPtr& range, uint32_t kind = TG_SPECIAL_GLOBAL, uint32_t dim = 0, uint32_t local = 1) {
    int64_t end = range->src[0]->arg_int();
    int32_t e = k_.add(TG_KIR_CONST, dt(range->dtype), 1, {}, {.i = end});
    int32_t s = k_.add(TG_KIR_SPECIAL, dt(range->dtype), 1, {e}, {.i = static_cast<int64_t>(kind) * 4 + dim});
    set(range, s);
    if (kind == TG_SPECIAL_LOCAL) {
      k_.dims.local[dim] = static_cast<uint32_t>(end);
    } else {
      k_.global_dims = std::max(k_.global_dims, dim + 1);
      k_.dims.global[dim] = static_cast<uint32_t>(end / local);
      if (kind == TG_SPECIAL_GLOBAL) k_.dims.local[dim] = local;
    }
    mult_ *= static_cast<double>(end);
  }

  // Local memory the kernel declared so far, in bytes.
  uint64_t local_bytes() const { return local_bytes_; }

  double flops() const { return flops_; }

 private:
  KirProgram& k_;
  const tg_renderer_caps& caps_;
  std::map<std::string, int64_t> var_params_;  // variable name -> KIR parameter index
  std::vector<std::unordered_map<const UOp*, int32_t>> scopes_;
  std::vector<std::map<std::vector<const UOp*>, Lanes>> vscopes_{1};
  std::vector<UOpPtr> keep_;
  std::vector<int64_t> ends_;
  std::vector<std::vector<int32_t>> bool_lanes_;  // Lanes with id -k-1: per-lane scalars, not one vector
  double mult_ = 1, flops_ = 0;
  uint64_t local_bytes_ = 0;


  int32_t broadcast(Lanes v, DType d, int w) {
    if (v.id < 0) return k_.add(TG_KIR_VECTORIZE, dt(d), static_cast<uint8_t>(w), bool_lanes_[-v.id - 1]);
    if (v.vcount == w) return v.id;
    return k_.add(TG_KIR_VECTORIZE, dt(d), static_cast<uint8_t>(w), std::vector<int32_t>(w, v.id));
  }

  int32_t lane(Lanes v, DType d, int l) {
    if (v.vcount == 1) return v.id;
    if (v.id < 0) return bool_lanes_[-v.id - 1][l];  // lanes kept as scalars
    return k_.add(TG_KIR_GEP, dt(d), 1, {v.id}, {.i = l});
  }


  Lanes emit_lanes_uncached(const std::vector<UOpPtr>& lanes) {
    int w = static_cast<int>(lanes.size());
    const UOpPtr& u0 = lanes[0];
    DType d = u0->dtype;
    if (!isomorphic(lanes) || u0->op == Op::RANGE) return gather_lanes(lanes);
    if (u0->op == Op::LOAD) {
      auto idx = src_lanes(lanes, 1);
      bool same_gate = u0->src.size() == 2 || std::all_of(lanes.begin(), lanes.end(), [&](const UOpPtr& l) { return l->src[2].get() == u0->src[2].get(); });
      if (!consecutive_index(idx) || !same_gate || !vector_ok(d, w)) return gather_lanes(lanes);
      std::vector<int32_t> src{emit(u0->src[0]), emit(idx[0])};
      if (u0->src.size() > 2) src.push_back(emit(u0->src[2]));
      return {k_.add(TG_KIR_LOAD, dt(d), static_cast<uint8_t>(w), std::move(src)), w};
    }
    if (u0->op == Op::REDUCE) return emit_reduce_lanes(lanes);
    if (!is_alu(u0->op)) return gather_lanes(lanes);
    DType od = op_dtype(*u0);
    if (!supports(u0->op, od)) {
      std::vector<UOpPtr> alt;
      for (const auto& l : lanes) alt.push_back(decompose(l, [this](Op op, DType t) { return supports(op, t); }));
      if (!alt[0]) return gather_lanes(lanes);
      return emit_lanes(alt);
    }
    // bool vectors are not a thing renderers share: comparisons and selects go per lane
    bool vec = vector_ok(d, w) && vector_ok(od, w) && !d.is_bool() && u0->op != Op::WHERE;
    for (const auto& s : u0->src) vec &= vector_ok(s->dtype, w) && !s->dtype.is_bool();
    std::vector<Lanes> srcs;
    for (size_t i = 0; i < u0->src.size(); ++i) srcs.push_back(emit_lanes(src_lanes(lanes, i)));
    if (!vec) return per_lane(lanes, srcs);
    std::vector<int32_t> ids;
    for (size_t i = 0; i < srcs.size(); ++i) ids.push_back(broadcast(srcs[i], u0->src[i]->dtype, w));
    flops_ += mult_ * w;
    return {k_.add(kir_op(u0->op), dt(d), static_cast<uint8_t>(w), std::move(ids)), w};
  }

  // REDUCE over lanes that share their loops: one vector accumulator.
  Lanes emit_reduce_lanes(const std::vector<UOpPtr>& lanes) {
    const UOpPtr& u0 = lanes[0];
    int w = static_cast<int>(lanes.size());
    auto rop = static_cast<ReduceOp>(u0->arg_int());
    DType d = u0->dtype;
    for (const auto& l : lanes)
      for (size_t i = 1; i < l->src.size(); ++i)
        if (l->src[i].get() != u0->src[i].get()) return gather_lanes(lanes);
    Op combine_op = rop == ReduceOp::SUM ? Op::ADD : Op::MAX;
    if (!vector_ok(d, w) || (rop == ReduceOp::MIN && !d.is_float()) || !supports(combine_op, d) ||
        (rop == ReduceOp::MIN && !supports(Op::NEG, d)))
      return gather_lanes(lanes);
    uint8_t vw = static_cast<uint8_t>(w);
    int32_t acc = k_.add(TG_KIR_DEFINE_REG, dt(d), vw, {}, {.i = 1}, TG_ADDR_REG);
    int32_t zero = k_.add(TG_KIR_CONST, TG_DTYPE_INT32, 1, {}, {.i = 0});
    k_.add(TG_KIR_STORE, dt(d), vw, {acc, zero, broadcast({emit(reduce_identity(rop, d)), 1}, d, w)});
    std::vector<int32_t> loops;
    for (size_t i = 1; i < u0->src.size(); ++i)
      if (u0->src[i]->op == Op::RANGE) loops.push_back(open_loop(u0->src[i]));
    int32_t cur = k_.add(TG_KIR_LOAD, dt(d), vw, {acc, zero});
    int32_t next = fused_combine(lanes, cur, d, w);
    if (next < 0) {
      int32_t v = broadcast(emit_lanes(src_lanes(lanes, 0)), d, w);
      if (rop == ReduceOp::MIN) {  // -max(-acc, -v) keeps NaN propagation
        int32_t m = k_.add(TG_KIR_MAX, dt(d), vw, {k_.add(TG_KIR_NEG, dt(d), vw, {cur}), k_.add(TG_KIR_NEG, dt(d), vw, {v})});
        next = k_.add(TG_KIR_NEG, dt(d), vw, {m});
      } else {
        next = k_.add(kir_op(combine_op), dt(d), vw, {cur, v});
      }
      flops_ += mult_ * w;
    }
    k_.add(TG_KIR_STORE, dt(d), vw, {acc, zero, next});
    for (auto it = loops.rbegin(); it != loops.rend(); ++it) close_loop(*it);
    return {k_.add(TG_KIR_LOAD, dt(d), vw, {acc, zero}), w};
  }

  // One scalar instruction per lane on the lanes of already-emitted sources, gathered into a vector.
  Lanes per_lane(const std::vector<UOpPtr>& lanes, const std::vector<Lanes>& srcs) {
    const UOpPtr& u0 = lanes[0];
    std::vector<int32_t> out;
    for (int l = 0; l < static_cast<int>(lanes.size()); ++l) {
      std::vector<int32_t> ids;
      for (size_t i = 0; i < srcs.size(); ++i) ids.push_back(lane(srcs[i], u0->src[i]->dtype, l));
      flops_ += mult_;
      out.push_back(k_.add(kir_op(u0->op), dt(u0->dtype), 1, std::move(ids)));
    }
    return pack(out, u0->dtype);
  }

  // Each lane through the scalar path.
  Lanes gather_lanes(const std::vector<UOpPtr>& lanes) {
    std::vector<int32_t> out;
    for (const auto& l : lanes) out.push_back(emit(l));
    return pack(out, lanes[0]->dtype);
  }

  Lanes pack(const std::vector<int32_t>& scalars, DType d) {
    int w = static_cast<int>(scalars.size());
    if (d.is_bool() || !vector_ok(d, w)) {
      // keep bools as separate scalars: a later per-lane consumer takes them by lane
      bool_lanes_.push_back(scalars);
      return {-static_cast<int32_t>(bool_lanes_.size()), w};
    }
    return {k_.add(TG_KIR_VECTORIZE, dt(d), static_cast<uint8_t>(w), scalars), w};
  }

  int32_t emit_uncached(const UOpPtr& u) {
    switch (u->op) {
      case Op::CONST: {
        tg_kir_arg a{};
        if (u->dtype.is_float()) a.f = u->const_value();
        else a.i = std::holds_alternative<int64_t>(u->arg) ? u->arg_int() : static_cast<int64_t>(u->const_value());
        return k_.add(TG_KIR_CONST, dt(u->dtype), 1, {}, a);
      }
      case Op::PARAM: return k_.add(TG_KIR_PARAM, dt(u->dtype), 1, {}, {.i = u->arg_int()});
      case Op::DEFINE_VAR: {
        auto it = var_params_.find(u->var().name);
        if (it == var_params_.end()) throw Error("tg: internal: variable " + u->var().name + " is not a kernel parameter");
        return k_.add(TG_KIR_PARAM, dt(u->dtype), 1, {}, {.i = it->second});
      }
      case Op::RANGE: throw Error("tg: internal: range r" + std::to_string(u->range().id) + " used outside its loop");
      case Op::LOAD: {
        std::vector<int32_t> src{emit(u->src[0]), emit(u->src[1])};
        if (u->src.size() > 2) src.push_back(emit(u->src[2]));
        return k_.add(TG_KIR_LOAD, dt(u->dtype), 1, std::move(src));
      }
      case Op::REDUCE: {
        if (UOpPtr unrolled = unroll_reduce(u)) return emit(unrolled);
        return emit_reduce(u);
      }
      case Op::STORE: {
        std::vector<int32_t> src{emit(u->src[0]), emit(u->src[1]), emit(u->src[2])};
        if (u->src.size() > 3) src.push_back(emit(u->src[3]));
        return k_.add(TG_KIR_STORE, dt(u->src[2]->dtype), 1, std::move(src));
      }
      case Op::END: {
        int64_t n = u->arg_int();
        emit_end(std::vector<UOpPtr>(u->src.begin(), u->src.begin() + n), std::vector<UOpPtr>(u->src.begin() + n, u->src.end()), 0);
        return -1;
      }
      case Op::AFTER:  // the statements first, then the buffer itself
        for (size_t i = 1; i < u->src.size(); ++i) emit(u->src[i]);
        return emit(u->src[0]);
      case Op::BARRIER:
        require_local("a barrier");
        for (const auto& st : u->src) emit(st);
        return k_.add(TG_KIR_BARRIER, 0, 1, {});
      case Op::CUSTOM:
      case Op::CUSTOMI: {
        std::vector<int32_t> src;
        for (const auto& s : u->src) src.push_back(emit(s));
        const int64_t code = k_.add_string(custom_code_for(u->arg_str()));
        return k_.add(u->op == Op::CUSTOM ? TG_KIR_CUSTOM : TG_KIR_CUSTOMI, dt(u->dtype), 1, std::move(src), {.i = code});
      }
      case Op::DEFINE_REG: return k_.add(TG_KIR_DEFINE_REG, dt(u->dtype), 1, {}, {.i = u->arg_ints()[0]}, TG_ADDR_REG);
      case Op::DEFINE_LOCAL:
        require_local("a local array");
        local_bytes_ += static_cast<uint64_t>(u->arg_ints()[0]) * u->dtype.itemsize();
        return k_.add(TG_KIR_DEFINE_LOCAL, dt(u->dtype), 1, {}, {.i = u->arg_ints()[0]}, TG_ADDR_LOCAL);
      default: break;
    }
    if (!is_alu(u->op)) throw Error(std::string("tg: cannot lower ") + op_name(u->op));
    DType d = op_dtype(*u);
    if (!supports(u->op, d)) {
      if (UOpPtr alt = decompose(u, [this](Op op, DType t) { return supports(op, t); })) return emit(alt);
      throw Error(std::string("tg: renderer cannot compute ") + op_name(u->op) + " on " + d.name());
    }
    std::vector<int32_t> src;
    for (const auto& s : u->src) src.push_back(emit(s));
    flops_ += mult_;
    return k_.add(kir_op(u->op), dt(u->dtype), 1, std::move(src));
  }

  void require_local(const char* what) const {
    if (!caps_.has_local) throw Error(std::string("tg: ") + what + " needs local memory, which this renderer does not have");
  }

  // The variant of an inline snippet ("lang\0code\0lang\0code...") written in the renderer's language.
  std::string custom_code_for(const std::string& variants) const {
    const char* language = caps_.language;  // NULL from a renderer without inline code (or an ABI 1.0 plugin)
    std::string offered;
    for (size_t pos = 0; pos < variants.size();) {
      std::string lang = variants.c_str() + pos;
      pos += lang.size() + 1;
      std::string code = pos < variants.size() ? std::string(variants.c_str() + pos) : "";
      pos += code.size() + 1;
      if (language && lang == language) return code;
      offered += (offered.empty() ? "" : ", ") + lang;
    }
    throw Error("tg: inline code is written for " + (offered.empty() ? std::string("no language") : offered) +
                ", but this renderer " + (language ? "speaks " + std::string(language) : "takes no inline code"));
  }

  static bool is_unrolled(const UOpPtr& r) {
    return r->op == Op::RANGE && (r->range().type == AxisType::UPCAST || r->range().type == AxisType::UNROLL);
  }

  // Statements for each iteration of ranges[i..]: loops for LOOP ranges, one copy per index for unrolled ones.
  void emit_end(const std::vector<UOpPtr>& stmts, const std::vector<UOpPtr>& ranges, size_t i) {
    if (i == ranges.size()) {
      for (const auto& st : stmts) emit(st);
      return;
    }
    const UOpPtr& r = ranges[i];
    if (r->op != Op::RANGE) return emit_end(stmts, ranges, i + 1);  // a size-1 range, folded to 0
    // a work-group kernel's GLOBAL and LOCAL ranges are work-item ids, bound for the whole kernel: each work-item
    // runs the statements for its own index
    if (r->range().type == AxisType::LOCAL || (r->range().type == AxisType::GLOBAL && bound(r)))
      return emit_end(stmts, ranges, i + 1);
    if (is_unrolled(r)) {
      for (int64_t k = 0; k < r->src[0]->arg_int(); ++k) {
        std::vector<UOpPtr> copy;
        for (const auto& st : stmts) copy.push_back(simplify(substitute(st, {{r.get(), const_int(r->dtype, k)}})));
        emit_end(copy, ranges, i + 1);
      }
      return;
    }
    int32_t loop = open_loop(r);
    emit_end(stmts, ranges, i + 1);
    close_loop(loop);
  }

  // A REDUCE over UNROLL/UPCAST ranges: the value for each index combined in straight-line code (the remaining
  // ranges, if any, stay a loop). nullptr when nothing is unrolled.
  UOpPtr unroll_reduce(const UOpPtr& u) {
    std::vector<UOpPtr> loops, unrolled;
    for (size_t i = 1; i < u->src.size(); ++i) (is_unrolled(u->src[i]) ? unrolled : loops).push_back(u->src[i]);
    if (unrolled.empty()) return nullptr;
    auto rop = static_cast<ReduceOp>(u->arg_int());
    auto combine = [&](const UOpPtr& a, const UOpPtr& b) -> UOpPtr {
      if (rop == ReduceOp::SUM) return alu(Op::ADD, a, b);
      if (rop == ReduceOp::MAX) return alu(Op::MAX, a, b);
      if (a->dtype.is_float()) return alu(Op::NEG, alu(Op::MAX, alu(Op::NEG, a), alu(Op::NEG, b)));
      return alu(Op::WHERE, alu(Op::CMPLT, b, a), b, a);
    };
    UOpPtr value = u->src[0];
    for (const auto& r : unrolled) {
      UOpPtr acc;
      for (int64_t k = 0; k < r->src[0]->arg_int(); ++k) {
        UOpPtr term = simplify(substitute(value, {{r.get(), const_int(r->dtype, k)}}));
        acc = acc ? combine(acc, term) : term;
      }
      value = acc;
    }
    if (loops.empty()) return value;
    std::vector<UOpPtr> src{value};
    src.insert(src.end(), loops.begin(), loops.end());
    return UOp::make(Op::REDUCE, u->dtype, std::move(src), u->arg);
  }

  // REDUCE(value, ranges...) -> acc = identity; for ranges: acc = acc (op) value; result = acc
  // REDUCE whose innermost loop reads contiguous memory: w accumulators in one vector (w lanes of the loop per
  // iteration), combined across lanes after the loop. -1 when the reduction does not have that shape.
  int32_t emit_vector_reduce(const UOpPtr& u) {
    auto rop = static_cast<ReduceOp>(u->arg_int());
    DType d = u->dtype;
    if (rop == ReduceOp::MIN && !d.is_float()) return -1;
    Op comb = rop == ReduceOp::SUM ? Op::ADD : Op::MAX;
    if (!supports(comb, d) || (rop == ReduceOp::MIN && !supports(Op::NEG, d))) return -1;
    size_t ri = 0;
    for (size_t i = 1; i < u->src.size(); ++i)
      if (u->src[i]->op == Op::RANGE) ri = i;
    if (ri == 0) return -1;
    const UOpPtr& r = u->src[ri];
    if (!is_const_end(r)) return -1;  // a symbolic length has no lane count that divides it
    int64_t end = r->src[0]->arg_int();
    for (int w : {16, 8, 4}) {
      if (end % w || w * d.itemsize() > 64 || !vector_ok(d, w)) continue;
      UOpPtr outer = UOp::make(Op::RANGE, r->dtype, {const_int(r->dtype, end / w)}, RangeInfo{r->range().id, AxisType::UNROLL});
      std::vector<UOpPtr> lanes;
      for (int l = 0; l < w; ++l)
        lanes.push_back(simplify(substitute(u->src[0], {{r.get(), alu(Op::ADD, alu(Op::MUL, outer, const_int(r->dtype, w)), const_int(r->dtype, l))}})));
      std::map<const UOp*, bool> memo;
      if (!vectorizable(lanes, memo)) return -1;
      uint8_t vw = static_cast<uint8_t>(w);
      auto combine = [&](int32_t a, int32_t b, uint8_t n) {
        if (rop != ReduceOp::MIN) return k_.add(kir_op(comb), dt(d), n, {a, b});
        int32_t m = k_.add(TG_KIR_MAX, dt(d), n, {k_.add(TG_KIR_NEG, dt(d), n, {a}), k_.add(TG_KIR_NEG, dt(d), n, {b})});
        return k_.add(TG_KIR_NEG, dt(d), n, {m});
      };
      int32_t acc = k_.add(TG_KIR_DEFINE_REG, dt(d), vw, {}, {.i = 1}, TG_ADDR_REG);
      int32_t zero = k_.add(TG_KIR_CONST, TG_DTYPE_INT32, 1, {}, {.i = 0});
      k_.add(TG_KIR_STORE, dt(d), vw, {acc, zero, broadcast({emit(reduce_identity(rop, d)), 1}, d, w)});
      hoist_statements(u);
      std::vector<int32_t> loops;
      for (size_t i = 1; i < u->src.size(); ++i)
        if (u->src[i]->op == Op::RANGE) loops.push_back(open_loop(i == ri ? outer : u->src[i]));
      int32_t cur = k_.add(TG_KIR_LOAD, dt(d), vw, {acc, zero});
      int32_t next = fused_sum(rop, lanes, cur, d, w);
      if (next < 0) {
        flops_ += mult_ * w;
        next = combine(cur, broadcast(emit_lanes(lanes), d, w), vw);
      }
      k_.add(TG_KIR_STORE, dt(d), vw, {acc, zero, next});
      for (auto it = loops.rbegin(); it != loops.rend(); ++it) close_loop(*it);
      int32_t all = k_.add(TG_KIR_LOAD, dt(d), vw, {acc, zero});
      int32_t out = k_.add(TG_KIR_GEP, dt(d), 1, {all}, {.i = 0});
      for (int l = 1; l < w; ++l) out = combine(out, k_.add(TG_KIR_GEP, dt(d), 1, {all}, {.i = l}), 1);
      return out;
    }
    return -1;
  }

  // Statements a REDUCE's value waits for (AFTER: a tile staged in local memory, a barrier) run once before its
  // loop when they do not depend on the ranges it reduces over, not once per iteration.
  void hoist_statements(const UOpPtr& reduce) {
    std::unordered_map<const UOp*, bool> varies;
    for (size_t i = 1; i < reduce->src.size(); ++i) varies[reduce->src[i].get()] = true;
    for (const UOp* n : toposort(std::vector<UOpPtr>{reduce->src[0]})) {
      bool v = varies.count(n) && varies[n];
      for (const auto& s : n->src) v = v || varies[s.get()];
      varies[n] = v;
      if (n->op == Op::AFTER && !v) emit(n->ptr());
    }
  }

  int32_t emit_reduce(const UOpPtr& u) {
    if (int32_t v = emit_vector_reduce(u); v >= 0) return v;
    auto rop = static_cast<ReduceOp>(u->arg_int());
    DType d = u->dtype;
    int32_t acc = k_.add(TG_KIR_DEFINE_REG, dt(d), 1, {}, {.i = 1}, TG_ADDR_REG);
    int32_t zero = k_.add(TG_KIR_CONST, TG_DTYPE_INT32, 1, {}, {.i = 0});
    k_.add(TG_KIR_STORE, dt(d), 1, {acc, zero, emit(reduce_identity(rop, d))});
    hoist_statements(u);
    std::vector<int32_t> loops;
    for (size_t i = 1; i < u->src.size(); ++i)
      if (u->src[i]->op == Op::RANGE) loops.push_back(open_loop(u->src[i]));
    int32_t cur = k_.add(TG_KIR_LOAD, dt(d), 1, {acc, zero});
    if (int32_t fused = fused_sum(rop, {u->src[0]}, cur, d, 1); fused >= 0) {
      k_.add(TG_KIR_STORE, dt(d), 1, {acc, zero, fused});
      for (auto it = loops.rbegin(); it != loops.rend(); ++it) close_loop(*it);
      return k_.add(TG_KIR_LOAD, dt(d), 1, {acc, zero});
    }
    int32_t v = emit(u->src[0]);
    // placeholders (PARAMs with negative indices never name a real parameter) so the combine step goes
    // through the ordinary ALU lowering, decompositions included
    UOpPtr a = UOp::make(Op::PARAM, d, {}, int64_t{-1});
    UOpPtr b = UOp::make(Op::PARAM, d, {}, int64_t{-2});
    set(a, cur);
    set(b, v);
    UOpPtr combined = rop == ReduceOp::SUM   ? alu(Op::ADD, a, b)
                      : rop == ReduceOp::MAX ? alu(Op::MAX, a, b)
                      : d.is_float()         ? alu(Op::NEG, alu(Op::MAX, alu(Op::NEG, a), alu(Op::NEG, b)))
                                             : alu(Op::WHERE, alu(Op::CMPLT, b, a), b, a);
    k_.add(TG_KIR_STORE, dt(d), 1, {acc, zero, emit(combined)});
    for (auto it = loops.rbegin(); it != loops.rend(); ++it) close_loop(*it);
    return k_.add(TG_KIR_LOAD, dt(d), 1, {acc, zero});
  }
};

bool Emitter::vector_ok(DType d, int w) const { return w <= 16 && e_vector_ok(caps_, d, w); }

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
  for (const auto& st : sink->src) e.emit(st);
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) e.close_loop(*it);
  k.flops = e.flops();
  return std::move(k);
}

}  // namespace

// ---- GPU-model devices: work-groups, local memory, no host threads --------------------------------------------

bool is_gpu(const tg_renderer_caps& caps) {
  return caps.has_local && !caps.has_threads && caps.max_local_threads > 1 && caps.max_global_dims >= 1;
}

// The largest power of two <= limit that divides n (1 when n is odd): work-groups then tile a loop exactly, so no
// work-item needs a bounds check (a guard before a barrier would deadlock the group).
uint32_t local_size_for(int64_t n, uint64_t limit) {
  uint32_t l = 1;
  while (static_cast<uint64_t>(l) * 2 <= limit && n % (static_cast<int64_t>(l) * 2) == 0) l *= 2;
  return l;
}

// The top-level REDUCEs of a kernel (those not inside another reduce's value).
std::vector<UOpPtr> top_reduces(const UOpPtr& sink) {
  std::vector<UOpPtr> out;
  std::set<const UOp*> seen;
  std::function<void(const UOpPtr&)> walk = [&](const UOpPtr& u) {
    if (!seen.insert(u.get()).second) return;
    if (u->op == Op::REDUCE) return out.push_back(u);
    for (const auto& s : u->src) walk(s);
  };
  walk(sink);
  return out;
}

// GROUPTOP: each reduce is shared by the L work-items of a group. Work-item `lid` folds the elements lid, lid+L,
// lid+2L, ... of the reduce's innermost range into a partial and writes it to a local array of its own reduce (two
// grouped reduces in one kernel never share an array or a barrier); after that array's barrier every work-item
// folds the L partials. Returns the sink with the reduces replaced.
UOpPtr group_reduces(const UOpPtr& sink, const UOpPtr& lid, int64_t L, int64_t& next_id) {
  std::vector<std::pair<const UOp*, UOpPtr>> map;
  for (const UOpPtr& u : top_reduces(sink)) {
    const UOpPtr& r = u->src.back();
    if (r->op != Op::RANGE || !is_const_end(r)) continue;
    const int64_t R = r->src[0]->arg_int();
    auto rop = static_cast<ReduceOp>(u->arg_int());
    UOpPtr outer = UOp::make(Op::RANGE, r->dtype, {const_int(r->dtype, (R + L - 1) / L)}, RangeInfo{next_id++, AxisType::REDUCE});
    UOpPtr idx = alu(Op::ADD, alu(Op::MUL, outer, const_int(r->dtype, L)), cast(lid, r->dtype));
    UOpPtr value = simplify(substitute(u->src[0], {{r.get(), idx}}));
    if (R % L) {  // the last pass is partial: past R the index is clamped (every load stays inside) and folds nothing
      UOpPtr inside = alu(Op::CMPLT, idx, const_int(r->dtype, R));
      UOpPtr clamped = alu(Op::WHERE, inside, idx, const_int(r->dtype, R - 1));
      value = alu(Op::WHERE, inside, simplify(substitute(u->src[0], {{r.get(), clamped}})), reduce_identity(rop, u->dtype));
    }
    std::vector<UOpPtr> psrc{value};
    psrc.insert(psrc.end(), u->src.begin() + 1, u->src.end() - 1);
    psrc.push_back(outer);
    UOpPtr partial = UOp::make(Op::REDUCE, u->dtype, std::move(psrc), u->arg);
    UOpPtr temp = UOp::make(Op::DEFINE_LOCAL, u->dtype, {}, std::vector<int64_t>{L, next_id++});
    UOpPtr staged = UOp::make(Op::BARRIER, dtypes::bool_, {UOp::make(Op::STORE, u->dtype, {temp, cast(lid, dtypes::int64), partial})});
    UOpPtr j = UOp::make(Op::RANGE, dtypes::int64, {const_int(dtypes::int64, L)}, RangeInfo{next_id++, AxisType::REDUCE});
    UOpPtr ready = UOp::make(Op::AFTER, u->dtype, {temp, staged}, temp->arg);
    map.emplace_back(u.get(), UOp::make(Op::REDUCE, u->dtype, {UOp::make(Op::LOAD, u->dtype, {ready, j}), j}, u->arg));
  }
  return map.empty() ? sink : substitute(sink, map);
}

// One output per work-item: the innermost constant output loops go on the grid's dims (dim 0 innermost, for
// coalesced access), each split into work-groups of a power of two that divides it, up to 256 work-items per
// group; a loop whose groups would exceed the dim's limit stays a loop.
void bind_gpu_grid(Emitter& e, const std::vector<UOpPtr>& ranges, const tg_renderer_caps& caps) {
  constexpr uint64_t kGroupThreads = 256;
  uint64_t threads = 1;
  uint32_t dim = 0;
  for (size_t i = ranges.size(); i-- > 0 && dim < std::min(caps.max_global_dims, 3u);) {
    if (!is_const_end(ranges[i])) continue;
    const int64_t n = ranges[i]->src[0]->arg_int();
    const uint32_t l = local_size_for(n, std::min<uint64_t>({kGroupThreads / threads, caps.max_local[dim],
                                                             caps.max_local_threads / threads}));
    if (n / l > caps.max_global[dim]) continue;
    e.special(ranges[i], TG_SPECIAL_GLOBAL, dim++, l);
    threads *= l;
  }
}

// A reduction with few outputs and a long reduce axis on a GPU: one work-group per output (the output loops are
// group ids, as many as the grid has dims; the rest stay loops), each reduce spread over the group
// (group_reduces), the store made by work-item 0. nullopt when one output per work-item serves better.
std::optional<KirProgram> lower_grouped(KirProgram& k, const UOpPtr& sink, const std::vector<UOpPtr>& ranges,
                                        const tg_renderer_caps& caps, const std::map<std::string, int64_t>& var_params) {
  const std::vector<UOpPtr> reduces = top_reduces(sink);
  if (reduces.empty()) return std::nullopt;
  int64_t outputs = 1, longest = 0, local_bytes = 0;
  for (const auto& r : ranges) {
    if (!is_const_end(r)) return std::nullopt;
    outputs *= r->src[0]->arg_int();
  }
  for (const auto& u : reduces) {
    const UOpPtr& r = u->src.back();
    if (r->op == Op::RANGE && is_const_end(r)) longest = std::max(longest, r->src[0]->arg_int());
    local_bytes += u->dtype.itemsize();
  }
  // enough outputs to fill the device one per work-item, or too short a reduce to share: the plain path
  constexpr int64_t kMaxOutputs = 4096, kMinReduce = 256;
  if (outputs > kMaxOutputs || longest < kMinReduce) return std::nullopt;
  const uint64_t limit = std::min<uint64_t>({256, caps.max_local_threads, caps.max_local[0],
                                             caps.local_mem_bytes / static_cast<uint64_t>(std::max<int64_t>(local_bytes, 1))});
  int64_t L = 1;
  while (static_cast<uint64_t>(L) * 2 <= limit) L *= 2;
  if (L < 16) return std::nullopt;

  int64_t next_id = 0;
  for (const UOp* n : toposort(std::vector<UOpPtr>{sink}))
    if (n->op == Op::RANGE) next_id = std::max(next_id, n->range().id + 1);
  UOpPtr lid = UOp::make(Op::RANGE, dtypes::int32, {const_int(dtypes::int32, L)}, RangeInfo{next_id++, AxisType::LOCAL});
  UOpPtr grouped = group_reduces(sink, lid, L, next_id);

  Emitter e(k, caps, var_params);
  e.special(lid, TG_SPECIAL_LOCAL, 0);
  uint32_t dim = 0;
  for (auto it = ranges.rbegin(); it != ranges.rend(); ++it)  // the innermost output loop on dim 0
    if (dim < caps.max_global_dims && (*it)->src[0]->arg_int() <= caps.max_global[dim])
      e.special(*it, TG_SPECIAL_GROUP, dim++);
  e.declare_locals(grouped);
  std::vector<int32_t> loops;
  for (const auto& r : ranges)
    if (!e.bound(r)) loops.push_back(e.open_loop(r));
  const int32_t first = e.emit(alu(Op::CMPEQ, lid, const_int(dtypes::int32, 0)));
  for (const auto& st : grouped->src) {
    const int32_t p = e.emit(st->src[0]), idx = e.emit(st->src[1]), v = e.emit(st->src[2]);
    k.add(TG_KIR_STORE, dt(st->src[2]->dtype), 1, {p, idx, v, first});
  }
  // output loops around the reduce: every work-item must be done folding the local arrays before the next
  // iteration writes them again
  if (!loops.empty()) k.add(TG_KIR_BARRIER, 0, 1, {});
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) e.close_loop(*it);
  k.flops = e.flops();
  return std::move(k);
}

KirProgram lower_kernel(const sched::Kernel& kernel, const std::vector<std::shared_ptr<rt::Buffer>>& bufs,
                        const tg_renderer_caps& caps, const LowerOpts& opts) {
  KirProgram k;
  k.name = kernel.name;
  // parameters: buffers in order; PARAM 0 is the output
  for (size_t i = 0; i < bufs.size(); ++i) {
    k.param_names.push_back("data" + std::to_string(i));
    k.params.push_back({TG_PARAM_BUFFER, dt(bufs[i]->dtype()), i < static_cast<size_t>(kernel.n_outputs) ? 1u : 0u, 0, nullptr});
    k.bytes += static_cast<double>(bufs[i]->nbytes());
  }
  std::map<std::string, int64_t> var_params;
  for (const auto& v : kernel.vars) {
    var_params[v->var().name] = static_cast<int64_t>(k.params.size());
    k.param_names.push_back(v->var().name);
    k.params.push_back({TG_PARAM_VAR, dt(v->dtype), 0, 0, nullptr});
  }
  for (size_t i = 0; i < k.params.size(); ++i) k.params[i].name = k.param_names[i].c_str();
  if (k.params.size() > caps.max_params && caps.max_params)
    throw Error("tg: kernel " + k.name + " needs " + std::to_string(k.params.size()) + " buffers, renderer allows " +
                std::to_string(caps.max_params));

  UOpPtr sink = graph_rewrite(kernel.sink, pm_symbolic(), "lower");
  if (kernel.custom) return lower_custom(k, kernel, sink, caps, std::move(var_params));
  std::vector<UOpPtr> ranges;  // output loops still present after simplification, outermost first
  for (const auto& r : kernel.out_ranges)
    if (!is_const_end(r) || r->src[0]->arg_int() > 1) ranges.push_back(r);
  if (is_gpu(caps))
    if (std::optional<KirProgram> grouped = lower_grouped(k, sink, ranges, caps, var_params)) return std::move(*grouped);

  // upcast: split the innermost output loop into (loop, lanes) when the store is contiguous in it
  std::vector<UOpPtr> lane_sinks{sink};
  size_t tile_axis = 0;  // 1 when the upcast loop is still in `ranges` (the tile then uses the one before it)
  if (!ranges.empty() && is_const_end(ranges.back())) {
    const UOpPtr& r = ranges.back();
    int64_t end = r->src[0]->arg_int();
    DType out = sink->src[0]->src[2]->dtype;
    // a GPU work-item keeps its tile in its own registers, of which it has far fewer than a CPU core: float4-sized
    // vectors and up to 4 of them there
    const int widest = is_gpu(caps) ? 4 : 16;
    for (int w : {16, 8, 4, 2}) {
      if (opts.upcast ? w != opts.upcast : w > widest) continue;
      if (end % w || w * out.itemsize() > 64 || !e_vector_ok(caps, out, w)) continue;
      UOpPtr outer = end == w ? const_int(r->dtype, 0)
                              : UOp::make(Op::RANGE, r->dtype, {const_int(r->dtype, end / w)}, RangeInfo{r->range().id, AxisType::UPCAST});
      std::vector<UOpPtr> lanes;
      for (int l = 0; l < w; ++l)
        lanes.push_back(simplify(substitute(sink, {{r.get(), alu(Op::ADD, alu(Op::MUL, outer, const_int(r->dtype, w)), const_int(r->dtype, l))}})));
      std::vector<UOpPtr> idx, vals;
      for (const auto& ls : lanes) idx.push_back(ls->src[0]->src[1]), vals.push_back(ls->src[0]->src[2]);
      std::map<const UOp*, bool> memo;
      if (!consecutive_index(idx) || !vectorizable(vals, memo)) break;  // lanes would be gathered: stay scalar
      if (end == w) ranges.pop_back();  // the lanes cover the whole loop
      else ranges.back() = outer, ++tile_axis;
      lane_sinks = std::move(lanes);
      break;
    }
  }

  // register tile: repeat the lanes for u consecutive indices of the next output loop and c consecutive vectors of
  // the vector loop; their reductions then share one loop (prefuse_reduces), and each load is shared by the tile
  // entries that do not depend on its index (a matmul's A element by a row's c vectors, its B vector by the u rows)
  std::vector<std::vector<UOpPtr>> rows{lane_sinks};
  bool has_reduce = false;
  for (const UOp* n : toposort(std::vector<UOpPtr>{sink})) has_reduce |= n->op == Op::REDUCE;
  // (with no other output loop, the vector loop itself is tiled: u adjacent vectors per iteration)
  if (lane_sinks.size() > 1 && has_reduce && !ranges.empty()) {
    size_t ri = ranges.size() >= tile_axis + 1 ? ranges.size() - 1 - tile_axis : ranges.size() - 1;
    const UOpPtr r = ranges[ri];
    int64_t end = is_const_end(r) ? r->src[0]->arg_int() : 1;  // a symbolic loop is not tiled (u = 1 leaves it be)
    const bool has_vector_loop = tile_axis == 1 && ri + 1 < ranges.size() && is_const_end(ranges.back());
    const UOpPtr v = has_vector_loop ? ranges.back() : nullptr;
    const int64_t vend = v ? v->src[0]->arg_int() : 1;
    // u x c accumulators: 16 of the widest vectors leave registers for the loads (32 on AVX-512)
    static constexpr std::pair<int, int> kTiles[] = {{4, 4}, {8, 2}, {2, 4}, {4, 2}, {8, 1}, {4, 1}, {2, 1}, {1, 4}, {1, 2}};
    auto split = [](const UOpPtr& range, int64_t n, int f) {
      return n == f ? const_int(range->dtype, 0)
                    : UOp::make(Op::RANGE, range->dtype, {const_int(range->dtype, n / f)}, RangeInfo{range->range().id, AxisType::UPCAST});
    };
    std::vector<std::pair<int, int>> tiles(std::begin(kTiles), std::end(kTiles));
    if (is_gpu(caps)) tiles = {{4, 1}, {2, 1}};
    if (opts.tile_rows) tiles = {{opts.tile_rows, std::max(opts.tile_vecs, 1)}};
    for (auto [u, c] : tiles) {
      if (end % u || vend % c || (u == 1 && c == 1)) continue;
      UOpPtr ro = u > 1 ? split(r, end, u) : r, vo = c > 1 ? split(v, vend, c) : v;
      rows.clear();
      for (int q = 0; q < u; ++q)
        for (int p = 0; p < c; ++p) {
          std::vector<std::pair<const UOp*, UOpPtr>> at;
          if (u > 1) at.emplace_back(r.get(), alu(Op::ADD, alu(Op::MUL, ro, const_int(r->dtype, u)), const_int(r->dtype, q)));
          if (c > 1) at.emplace_back(v.get(), alu(Op::ADD, alu(Op::MUL, vo, const_int(v->dtype, c)), const_int(v->dtype, p)));
          std::vector<UOpPtr> row;
          for (const auto& ls : lane_sinks) row.push_back(simplify(substitute(ls, at)));
          rows.push_back(std::move(row));
        }
      if (c > 1 && vend == c) ranges.pop_back();
      else if (c > 1) ranges.back() = vo;
      if (u > 1 && end == u) ranges.erase(ranges.begin() + static_cast<long>(ri));
      else if (u > 1) ranges[ri] = ro;
      // the vector loop outermost: one column panel of B stays in cache while every row tile passes over it
      if (u > 1 && has_vector_loop && vend > c && ranges.size() > 1) std::rotate(ranges.begin(), ranges.end() - 1, ranges.end());
      break;
    }
  }

  Emitter e(k, caps, std::move(var_params));
  std::vector<int32_t> loops;
  // the grid takes the first loop of constant length (launch dims do not depend on variables); output loops are
  // independent, so a symbolic loop before it can run inside it
  size_t grid = ranges.size();
  for (size_t i = 0; i < ranges.size() && grid == ranges.size(); ++i)
    if (is_const_end(ranges[i])) grid = i;
  if (caps.max_global_dims < 1 || is_gpu(caps)) grid = ranges.size();
  if (grid < ranges.size()) e.special(ranges[grid]);
  if (is_gpu(caps)) bind_gpu_grid(e, ranges, caps);
  for (size_t i = 0; i < ranges.size(); ++i)
    if (i != grid && !e.bound(ranges[i])) loops.push_back(e.open_loop(ranges[i]));
  if (lane_sinks.size() == 1) {
    for (const auto& st : sink->src) {
      int32_t p = e.emit(st->src[0]), idx = e.emit(st->src[1]), v = e.emit(st->src[2]);
      k.add(TG_KIR_STORE, dt(st->dtype), 1, {p, idx, v});
    }
  } else {
    std::vector<std::vector<UOpPtr>> reduces;
    std::set<const UOp*> seen;
    for (const auto& row : rows)
      for (size_t s = 0; s < sink->src.size(); ++s) {
        std::vector<UOpPtr> vals;
        for (const auto& ls : row) vals.push_back(ls->src[s]->src[2]);
        collect_reduce_lanes(vals, seen, reduces);
      }
    e.prefuse_reduces(reduces);
    for (const auto& row : rows)
      for (size_t s = 0; s < sink->src.size(); ++s) {
        std::vector<UOpPtr> stores;
        for (const auto& ls : row) stores.push_back(ls->src[s]);
        e.store_lanes(stores);
      }
  }
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) e.close_loop(*it);
  k.flops = e.flops();
  return k;
}

}  // namespace tg::codegen
