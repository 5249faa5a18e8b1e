// The Emitter: a kernel's UOp graph -> KIR instructions for one renderer. It walks the graph from the stores,
// opening one scope per loop: a value computed inside a loop is only reused inside it (the C-like renderers scope
// locals the same way), and clang/NVRTC hoist loop-invariant code, so it needs no separate scheduling pass. The
// planners (lower.cpp for every device, lower_gpu.cpp for work-group devices) decide loops, lanes and the grid and
// drive it.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/decompositions.hpp"
#include "codegen/kir.hpp"
#include "codegen/lanes.hpp"
#include "ir/symbolic.hpp"
#include "ir/uop.hpp"
#include "tg/error.hpp"

namespace tg::codegen {

using namespace ir;

class Emitter {
 public:
  Emitter(KirProgram& k, const tg_renderer_caps& caps, std::map<std::string, int64_t> var_params)
      : k_(k), caps_(caps), var_params_(std::move(var_params)) {
    scopes_.emplace_back();
  }

  bool supports(Op op, DType d) const { return e_supports(caps_, op, d); }

  // The UNROLL actions of a planned kernel (its reduce loops -> lanes): a reduction whose loop is not there stays
  // scalar. Without them (hand-written kernels, GPU plans) the Emitter unrolls each reduction as the heuristic
  // would: the widest lanes that fit.
  void unroll_by(const std::map<const UOp*, int>* unrolls) { unrolls_ = unrolls; }

  // Packed loads of d (ABI 1.3: an older plugin's caps end before packed_loads, which then stays 0).
  bool takes_packed(DType d) const {
    return TG_ABI_HAS(&caps_, tg_renderer_caps, packed_loads) && (caps_.packed_loads >> dt(d) & 1u);
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
  void declare_locals(const UOpPtr& sink) { declare(sink, Op::DEFINE_LOCAL); }
  // A register array lives for the whole work-item: declared before the kernel's own loops, not inside the first
  // loop that happens to use it (a later loop would then see another, uninitialized array).
  void declare_registers(const UOpPtr& sink) { declare(sink, Op::DEFINE_REG); }
  void declare(const UOpPtr& sink, Op op) {
    for (const UOp* n : toposort(std::vector<UOpPtr>{sink}))
      if (n->op == op) emit(n->ptr());
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
  static std::vector<const UOp*> key_of(const std::vector<UOpPtr>& lanes) {
    std::vector<const UOp*> key;
    for (const auto& l : lanes) key.push_back(l.get());
    return key;
  }
  Lanes emit_lanes(const std::vector<UOpPtr>& lanes) {
    if (std::all_of(lanes.begin(), lanes.end(), [&](const UOpPtr& l) { return l.get() == lanes[0].get(); }))
      return {emit(lanes[0]), 1};
    std::vector<const UOp*> key = key_of(lanes);
    for (auto it = vscopes_.rbegin(); it != vscopes_.rend(); ++it)
      if (auto f = it->find(key); f != it->end()) return f->second;
    Lanes out = emit_lanes_uncached(lanes);
    vscopes_.back().emplace(std::move(key), out);
    keep_.insert(keep_.end(), lanes.begin(), lanes.end());
    return out;
  }

  // STORE of lanes: one vector store when the lanes' indices are consecutive (and any gate the same), else one
  // store per lane.
  void store_lanes(const std::vector<UOpPtr>& stores) {
    int w = static_cast<int>(stores.size());
    std::vector<UOpPtr> idx, val;
    for (const auto& st : stores) idx.push_back(st->src[1]), val.push_back(st->src[2]);
    DType d = stores[0]->src[2]->dtype;
    int32_t p = emit(stores[0]->src[0]);
    auto gate_of = [](const UOpPtr& st) { return st->src.size() > 3 ? st->src[3].get() : nullptr; };
    const bool same_gate = std::all_of(stores.begin(), stores.end(), [&](const UOpPtr& st) { return gate_of(st) == gate_of(stores[0]); });
    if (same_gate && consecutive_index(idx) && vector_ok(d, w)) {
      Lanes v = emit_lanes(val);
      std::vector<int32_t> src{p, emit(idx[0]), broadcast(v, d, w)};
      if (gate_of(stores[0])) src.push_back(emit(stores[0]->src[3]));
      k_.add(TG_KIR_STORE, dt(d), static_cast<uint8_t>(w), std::move(src));
      return;
    }
    Lanes vi = emit_lanes(idx), vv = emit_lanes(val);
    for (int l = 0; l < w; ++l) {
      std::vector<int32_t> src{p, lane(vi, idx[0]->dtype, l), lane(vv, d, l)};
      if (gate_of(stores[l])) src.push_back(emit(stores[l]->src[3]));
      k_.add(TG_KIR_STORE, dt(d), 1, std::move(src));
    }
  }

  bool vector_ok(DType d, int w) const { return w <= 16 && e_vector_ok(caps_, d, w); }

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
      if (same_loops && rop != ReduceOp::MIN && vector_combines(rop, u->dtype, w))
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
        flops_ += mult_ * w;
        next = combine(static_cast<ReduceOp>(g[0]->arg_int()), d, w, cur, v);
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
  const std::map<const UOp*, int>* unrolls_ = nullptr;  // see unroll_by
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
    if (u0->op == Op::RANGE) return gather_lanes(lanes);
    // Lanes of few distinct values (a sub-block's scale, repeated over its half of the lanes) are each computed
    // once, as scalars: a vector over the repeats would do the same work w times (int64 index math included).
    const std::vector<const UOp*> key = key_of(lanes);
    if (std::set<const UOp*>(key.begin(), key.end()).size() * 4 <= lanes.size()) return gather_lanes(lanes);
    if (!isomorphic(lanes)) {
      if (std::optional<Lanes> joined = emit_halves(lanes)) return *joined;
      return gather_lanes(lanes);
    }
    if (u0->op == Op::LOAD) {
      if (is_packed_load(*u0) && !takes_packed(d)) {
        std::vector<UOpPtr> alt;
        for (const auto& l : lanes) alt.push_back(packed_load_from_bytes(l));
        return emit_lanes(alt);
      }
      auto idx = src_lanes(lanes, 1);
      bool same_gate = u0->src.size() == 2 || std::all_of(lanes.begin(), lanes.end(), [&](const UOpPtr& l) { return l->src[2].get() == u0->src[2].get(); });
      if (!consecutive_index(idx, lane_stride(*u0)) || !same_gate || !vector_ok(d, w)) {
        if (std::optional<Lanes> joined = emit_halves(lanes)) return *joined;  // halves that are each one load
        return gather_lanes(lanes);
      }
      std::vector<int32_t> src{emit(u0->src[0]), emit(idx[0])};
      if (u0->src.size() > 2) src.push_back(emit(u0->src[2]));
      return {k_.add(TG_KIR_LOAD, dt(d), static_cast<uint8_t>(w), std::move(src)), w};
    }
    if (u0->op == Op::REDUCE) return emit_reduce_lanes(lanes);
    if (!is_alu(u0->op)) return gather_lanes(lanes);
    DType od = op_dtype(*u0);
    if (!supports(u0->op, od)) {
      std::vector<UOpPtr> alt;
      for (const auto& l : lanes) alt.push_back(decompose(l));
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
    if (!vector_combines(rop, d, w)) return gather_lanes(lanes);
    std::vector<UOpPtr> loops(u0->src.begin() + 1, u0->src.end());
    return {accumulate(rop, d, w, nullptr, loops, [&](int32_t cur) {
              int32_t next = fused_combine(lanes, cur, d, w);
              if (next >= 0) return next;
              flops_ += mult_ * w;
              return combine(rop, d, w, cur, broadcast(emit_lanes(src_lanes(lanes, 0)), d, w));
            }),
            w};
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

  // Lanes whose two halves are each isomorphic (an int8 weight word: lanes 0-3 a load's low nibbles, lanes 4-7
  // the same load's high ones): one vector per half, joined with VECTORIZE. nullopt otherwise.
  std::optional<Lanes> emit_halves(const std::vector<UOpPtr>& lanes) {
    const int w = static_cast<int>(lanes.size());
    const DType d = lanes[0]->dtype;
    if (w < 4 || w % 2 || d.is_bool() || !vector_ok(d, w) || !vector_ok(d, w / 2)) return std::nullopt;
    const std::vector<UOpPtr> lo(lanes.begin(), lanes.begin() + w / 2), hi(lanes.begin() + w / 2, lanes.end());
    if (!isomorphic(lo) || !isomorphic(hi) || lo[0]->op == Op::RANGE || hi[0]->op == Op::RANGE) return std::nullopt;
    // a load's halves must each be one vector access (or the same address in every lane)
    for (const auto* half : {&lo, &hi})
      if ((*half)[0]->op == Op::LOAD && (*half)[0].get() != half->back().get() &&
          !consecutive_index(src_lanes(*half, 1), lane_stride(*(*half)[0])))
        return std::nullopt;
    const Lanes a = emit_lanes(lo), b = emit_lanes(hi);
    std::vector<int32_t> parts;
    for (int l = 0; l < w; ++l) parts.push_back(l < w / 2 ? lane(a, d, l) : lane(b, d, l - w / 2));
    return Lanes{k_.add(TG_KIR_VECTORIZE, dt(d), static_cast<uint8_t>(w), parts), w};
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
        if (is_packed_load(*u) && !takes_packed(u->dtype)) return emit(packed_load_from_bytes(u));
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
        std::optional<std::string> text = custom_code_in(u->arg_str());
        if (u->op == Op::CUSTOM && text && text->empty()) return -1;  // an empty statement: a hint this language skips
        std::vector<int32_t> src;
        for (const auto& s : u->src) src.push_back(emit(s));  // (their errors first: they are inside)
        const int64_t code = k_.add_string(text ? *text : custom_code_for(u->arg_str()));
        return k_.add(u->op == Op::CUSTOM ? TG_KIR_CUSTOM : TG_KIR_CUSTOMI, dt(u->dtype), 1, std::move(src), {.i = code});
      }
      case Op::TILE_MMA: {  // the matrix unit where the renderer has one, else the loops it means
        if (!supports(u->op, u->dtype)) return emit(decompose(u));
        std::vector<int32_t> src;
        for (const auto& s : u->src) src.push_back(emit(s));
        const UOpPtr& steps = u->src[9];
        if (steps->op == Op::CONST)
          flops_ += mult_ * 2 * 256 * (u->arg_int() & 15) * ((u->arg_int() >> 4) & 15) * steps->arg_int() * 64 / u->src[3]->dtype.itemsize();
        return k_.add(TG_KIR_TILE_MMA, dt(u->dtype), 1, std::move(src), {.i = u->arg_int()});
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
      if (UOpPtr alt = decompose(u)) return emit(alt);
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

  // The variant of an inline snippet ("lang\0code\0lang\0code...") written in the renderer's language, else
  // the one for any language ("*"); nullopt when there is neither.
  std::optional<std::string> custom_code_in(const std::string& variants) const {
    const char* language = caps_.language;  // NULL from a renderer without inline code (or an ABI 1.0 plugin)
    std::optional<std::string> any;
    for (const auto& [lang, code] : custom_variants(variants)) {
      if (language && lang == language) return code;
      if (lang == "*") any = code;
    }
    return any;
  }
  std::string custom_code_for(const std::string& variants) const {
    if (std::optional<std::string> code = custom_code_in(variants)) return *code;
    std::string offered;
    for (const auto& v : custom_variants(variants)) offered += (offered.empty() ? "" : ", ") + v.first;
    const char* language = caps_.language;
    throw Error("tg: inline code is written for " + (offered.empty() ? std::string("no language") : offered) +
                ", but this renderer " + (language ? "speaks " + std::string(language) : "takes no inline code"));
  }
  static std::vector<std::pair<std::string, std::string>> custom_variants(const std::string& variants) {
    std::vector<std::pair<std::string, std::string>> out;
    for (size_t pos = 0; pos < variants.size();) {
      std::string lang = variants.c_str() + pos;
      pos += lang.size() + 1;
      std::string code = pos < variants.size() ? std::string(variants.c_str() + pos) : "";
      pos += code.size() + 1;
      out.emplace_back(std::move(lang), std::move(code));
    }
    return out;
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
      if (int w = store_vector_width(stmts, ranges, i); w > 1) return emit_store_vectors(stmts, r, w);
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

  // Stores inside an innermost UPCAST range are written for w lanes at once (w the widest vector the renderer
  // has for every stored dtype that divides the range): store_lanes makes each group one vector statement where
  // its indices are consecutive and its values vectorize, so a custom kernel's lanes reach the renderer as
  // vectors instead of as 32 scalar statements that clang's SLP vectorizer may or may not regroup (measured on
  // the LLM's Q5_0 matrix-vector kernel: it regrouped them with a shuffle per lane). Lanes are independent
  // (UPCAST's contract), so each statement runs for a whole group before the next. 1 where this does not apply.
  int store_vector_width(const std::vector<UOpPtr>& stmts, const std::vector<UOpPtr>& ranges, size_t i) const {
    if (ranges[i]->range().type != AxisType::UPCAST || !is_const_end(ranges[i])) return 1;
    for (size_t j = i + 1; j < ranges.size(); ++j)
      if (ranges[j]->op == Op::RANGE) return 1;
    const int64_t n = ranges[i]->src[0]->arg_int();
    for (int w : {16, 8, 4, 2}) {
      bool ok = n % w == 0;
      for (const auto& st : stmts) ok = ok && st->op == Op::STORE && vector_ok(st->src[2]->dtype, w) && !st->src[2]->dtype.is_bool();
      if (ok) return w;
    }
    return 1;
  }
  void emit_store_vectors(const std::vector<UOpPtr>& stmts, const UOpPtr& r, int w) {
    for (int64_t k0 = 0; k0 < r->src[0]->arg_int(); k0 += w)
      for (const auto& st : stmts) {
        std::vector<UOpPtr> lanes;
        for (int64_t k = k0; k < k0 + w; ++k) lanes.push_back(simplify(substitute(st, {{r.get(), const_int(r->dtype, k)}})));
        if (lanes[0]->src.size() > 3) {  // a gated store: per lane, as before
          for (const auto& l : lanes) emit(l);
          continue;
        }
        store_lanes(lanes);
      }
  }

  // A REDUCE over UNROLL/UPCAST ranges: the value for each index combined in straight-line code (the remaining
  // ranges, if any, stay a loop). nullptr when nothing is unrolled.
  UOpPtr unroll_reduce(const UOpPtr& u) {
    std::vector<UOpPtr> loops, unrolled;
    for (size_t i = 1; i < u->src.size(); ++i) (is_unrolled(u->src[i]) ? unrolled : loops).push_back(u->src[i]);
    if (unrolled.empty()) return nullptr;
    auto rop = static_cast<ReduceOp>(u->arg_int());
    UOpPtr value = u->src[0];
    for (const auto& r : unrolled) {
      UOpPtr acc;
      for (int64_t k = 0; k < r->src[0]->arg_int(); ++k) {
        UOpPtr term = simplify(substitute(value, {{r.get(), const_int(r->dtype, k)}}));
        acc = acc ? reduce_combine(rop, acc, term) : term;
      }
      value = acc;
    }
    if (loops.empty()) return value;
    std::vector<UOpPtr> src{value};
    src.insert(src.end(), loops.begin(), loops.end());
    return UOp::make(Op::REDUCE, u->dtype, std::move(src), u->arg);
  }

  // REDUCE whose innermost loop reads contiguous memory: w accumulators in one vector (w lanes of the loop per
  // iteration, the UNROLL of its loop), combined across lanes after the loop. -1 when the reduction does not have
  // that shape or is not unrolled.
  int32_t emit_vector_reduce(const UOpPtr& u) {
    const UOpPtr r = reduce_loop(*u);
    if (!r) return -1;
    int w = 0;
    if (unrolls_) {
      auto it = unrolls_->find(r.get());
      w = it == unrolls_->end() ? 0 : it->second;
    } else {
      w = widest_unroll(caps_, {u.get()});
    }
    if (!w) return -1;
    auto rop = static_cast<ReduceOp>(u->arg_int());
    DType d = u->dtype;
    const UnrolledReduce unrolled = unrolled_lanes(*u, w);
    std::map<const UOp*, bool> memo;
    if (!vectorizable(unrolled.lanes, memo)) return -1;
    std::vector<UOpPtr> loops(u->src.begin() + 1, u->src.end());
    std::replace(loops.begin(), loops.end(), r, unrolled.outer);
    const int32_t all = accumulate(rop, d, w, u, loops, [&](int32_t cur) {
      int32_t next = fused_sum(rop, unrolled.lanes, cur, d, w);
      if (next >= 0) return next;
      flops_ += mult_ * w;
      return combine(rop, d, w, cur, broadcast(emit_lanes(unrolled.lanes), d, w));
    });
    int32_t out = k_.add(TG_KIR_GEP, dt(d), 1, {all}, {.i = 0});
    for (int l = 1; l < w; ++l) out = combine(rop, d, 1, out, k_.add(TG_KIR_GEP, dt(d), 1, {all}, {.i = l}));
    return out;
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

  // REDUCE(value, ranges...) -> acc = identity; for ranges: acc = acc (op) value; result = acc. The combine step
  // goes through the ordinary ALU lowering (decompositions included) on placeholders for acc and value (PARAMs
  // with negative indices never name a real parameter).
  int32_t emit_reduce(const UOpPtr& u) {
    if (int32_t v = emit_vector_reduce(u); v >= 0) return v;
    auto rop = static_cast<ReduceOp>(u->arg_int());
    DType d = u->dtype;
    std::vector<UOpPtr> loops(u->src.begin() + 1, u->src.end());
    return accumulate(rop, d, 1, u, loops, [&](int32_t cur) {
      if (int32_t fused = fused_sum(rop, {u->src[0]}, cur, d, 1); fused >= 0) return fused;
      const int32_t v = emit(u->src[0]);
      UOpPtr a = UOp::make(Op::PARAM, d, {}, int64_t{-1});
      UOpPtr b = UOp::make(Op::PARAM, d, {}, int64_t{-2});
      set(a, cur);
      set(b, v);
      return emit(reduce_combine(rop, a, b));
    });
  }

  // The accumulator every reduction lowers to: a register of w lanes holding the identity, `step` run once per
  // iteration of `loops` (it gets the accumulator's value and returns the next one), the result read after them.
  // Statements the value waits for run once before the loops (hoist_statements, where `reduce` is given).
  template <typename Step>
  int32_t accumulate(ReduceOp rop, DType d, int w, const UOpPtr& reduce, const std::vector<UOpPtr>& loops, Step step) {
    const uint8_t vw = static_cast<uint8_t>(w);
    const int32_t acc = k_.add(TG_KIR_DEFINE_REG, dt(d), vw, {}, {.i = 1}, TG_ADDR_REG);
    const int32_t zero = k_.add(TG_KIR_CONST, TG_DTYPE_INT32, 1, {}, {.i = 0});
    k_.add(TG_KIR_STORE, dt(d), vw, {acc, zero, broadcast({emit(reduce_identity(rop, d)), 1}, d, w)});
    if (reduce) hoist_statements(reduce);
    std::vector<int32_t> open;
    for (const auto& r : loops)
      if (r->op == Op::RANGE) open.push_back(open_loop(r));
    const int32_t cur = k_.add(TG_KIR_LOAD, dt(d), vw, {acc, zero});
    const int32_t next = step(cur);
    k_.add(TG_KIR_STORE, dt(d), vw, {acc, zero, next});
    for (auto it = open.rbegin(); it != open.rend(); ++it) close_loop(*it);
    return k_.add(TG_KIR_LOAD, dt(d), vw, {acc, zero});
  }

  // Whether acc (op) v runs on w lanes of d as vector instructions (combine's ops; MIN of integers has none).
  bool vector_combines(ReduceOp rop, DType d, int w) const { return reduce_vector_ok(caps_, rop, d, w); }
  // acc (op) v on w lanes, where vector_combines: MIN as -max(-acc, -v), which keeps NaN propagation.
  int32_t combine(ReduceOp rop, DType d, int w, int32_t a, int32_t b) {
    const uint8_t n = static_cast<uint8_t>(w);
    if (rop != ReduceOp::MIN) return k_.add(kir_op(rop == ReduceOp::SUM ? Op::ADD : Op::MAX), dt(d), n, {a, b});
    const int32_t m = k_.add(TG_KIR_MAX, dt(d), n, {k_.add(TG_KIR_NEG, dt(d), n, {a}), k_.add(TG_KIR_NEG, dt(d), n, {b})});
    return k_.add(TG_KIR_NEG, dt(d), n, {m});
  }
};


}  // namespace tg::codegen
