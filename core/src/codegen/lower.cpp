// Kernel graph -> KIR. The emitter walks the graph from the store, opening one scope per loop: a value
// computed inside a loop is only reused inside it (the C-like renderers scope locals the same way), and
// clang/NVRTC hoist loop-invariant code, so the emitter does not need a separate scheduling pass.
#include "codegen/lower.hpp"

#include <cassert>
#include <cmath>
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
    default: throw Error(std::string("tg: no KIR op for ") + op_name(op));
  }
}

uint8_t dt(DType d) { return static_cast<uint8_t>(d.scalar); }

// The dtype whose op table decides whether the renderer takes an op (comparisons: the operands').
DType op_dtype(const UOp& u) {
  if (is_comparison(u.op) || u.op == Op::CAST || u.op == Op::BITCAST) return u.src[0]->dtype;
  return u.dtype;
}

class Emitter {
 public:
  Emitter(KirProgram& k, const tg_renderer_caps& caps) : k_(k), caps_(caps) { scopes_.emplace_back(); }

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

  int32_t open_loop(const UOpPtr& range) {
    int64_t end = range->src[0]->arg_int();
    int32_t e = k_.add(TG_KIR_CONST, dt(range->dtype), 1, {}, {.i = end});
    int32_t r = k_.add(TG_KIR_RANGE, dt(range->dtype), 1, {e}, {.i = range->range().id});
    scopes_.emplace_back();
    set(range, r);
    mult_ *= static_cast<double>(end);
    ends_.push_back(end);
    return r;
  }

  void close_loop(int32_t r) {
    k_.add(TG_KIR_ENDRANGE, 0, 1, {r});
    scopes_.pop_back();
    mult_ /= static_cast<double>(ends_.back());
    ends_.pop_back();
  }

  void special(const UOpPtr& range) {
    int64_t end = range->src[0]->arg_int();
    int32_t e = k_.add(TG_KIR_CONST, dt(range->dtype), 1, {}, {.i = end});
    int32_t s = k_.add(TG_KIR_SPECIAL, dt(range->dtype), 1, {e}, {.i = TG_SPECIAL_GLOBAL * 4 + 0});
    set(range, s);
    k_.global_dims = 1;
    k_.dims.global[0] = static_cast<uint32_t>(end);
    mult_ *= static_cast<double>(end);
  }

  double flops() const { return flops_; }

 private:
  KirProgram& k_;
  const tg_renderer_caps& caps_;
  std::vector<std::unordered_map<const UOp*, int32_t>> scopes_;
  std::vector<UOpPtr> keep_;
  std::vector<int64_t> ends_;
  double mult_ = 1, flops_ = 0;
  int64_t next_acc_ = 0;

  int32_t emit_uncached(const UOpPtr& u) {
    switch (u->op) {
      case Op::CONST: {
        tg_kir_arg a{};
        if (u->dtype.is_float()) a.f = u->const_value();
        else a.i = std::holds_alternative<int64_t>(u->arg) ? u->arg_int() : static_cast<int64_t>(u->const_value());
        return k_.add(TG_KIR_CONST, dt(u->dtype), 1, {}, a);
      }
      case Op::PARAM: return k_.add(TG_KIR_PARAM, dt(u->dtype), 1, {}, {.i = u->arg_int()});
      case Op::RANGE: throw Error("tg: internal: range r" + std::to_string(u->range().id) + " used outside its loop");
      case Op::LOAD: {
        std::vector<int32_t> src{emit(u->src[0]), emit(u->src[1])};
        if (u->src.size() > 2) src.push_back(emit(u->src[2]));
        return k_.add(TG_KIR_LOAD, dt(u->dtype), 1, std::move(src));
      }
      case Op::REDUCE: return emit_reduce(u);
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

  // REDUCE(value, ranges...) -> acc = identity; for ranges: acc = acc (op) value; result = acc
  int32_t emit_reduce(const UOpPtr& u) {
    auto rop = static_cast<ReduceOp>(u->arg_int());
    DType d = u->dtype;
    int32_t acc = k_.add(TG_KIR_DEFINE_REG, dt(d), 1, {}, {.i = 1}, TG_ADDR_REG);
    int32_t zero = k_.add(TG_KIR_CONST, TG_DTYPE_INT32, 1, {}, {.i = 0});
    ++next_acc_;
    k_.add(TG_KIR_STORE, dt(d), 1, {acc, zero, emit(reduce_identity(rop, d))});
    std::vector<int32_t> loops;
    for (size_t i = 1; i < u->src.size(); ++i)
      if (u->src[i]->op == Op::RANGE) loops.push_back(open_loop(u->src[i]));
    int32_t v = emit(u->src[0]);
    int32_t cur = k_.add(TG_KIR_LOAD, dt(d), 1, {acc, zero});
    UOpPtr a = UOp::make(Op::DEFINE_VAR, d, {}, VarInfo{"acc", 0, 0});  // placeholders to reuse ALU lowering
    UOpPtr b = UOp::make(Op::DEFINE_VAR, d, {}, VarInfo{"val", 1, 1});
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

}  // namespace

KirProgram lower_kernel(const sched::Kernel& kernel, const std::vector<std::shared_ptr<rt::Buffer>>& bufs,
                        const tg_renderer_caps& caps) {
  KirProgram k;
  k.name = kernel.name;
  // parameters: buffers in order; PARAM 0 is the output
  for (size_t i = 0; i < bufs.size(); ++i) {
    k.param_names.push_back("data" + std::to_string(i));
    k.params.push_back({TG_PARAM_BUFFER, dt(bufs[i]->dtype()), i == 0 ? 1u : 0u, 0, nullptr});
    k.bytes += static_cast<double>(bufs[i]->nbytes());
  }
  for (size_t i = 0; i < k.params.size(); ++i) k.params[i].name = k.param_names[i].c_str();
  if (k.params.size() > caps.max_params && caps.max_params)
    throw Error("tg: kernel " + k.name + " needs " + std::to_string(k.params.size()) + " buffers, renderer allows " +
                std::to_string(caps.max_params));

  UOpPtr sink = graph_rewrite(kernel.sink, pm_symbolic() + pm_lowering_rules(), "lower");
  Emitter e(k, caps);
  std::vector<int32_t> loops;
  bool first = true;
  for (const auto& r : kernel.out_ranges) {
    if (r->src[0]->arg_int() <= 1) continue;
    if (first && caps.max_global_dims >= 1) e.special(r);
    else loops.push_back(e.open_loop(r));
    first = false;
  }
  for (const auto& st : sink->src) {
    int32_t p = e.emit(st->src[0]), idx = e.emit(st->src[1]), v = e.emit(st->src[2]);
    k.add(TG_KIR_STORE, dt(st->dtype), 1, {p, idx, v});
  }
  for (auto it = loops.rbegin(); it != loops.rend(); ++it) e.close_loop(*it);
  k.flops = e.flops();
  return k;
}

}  // namespace tg::codegen
