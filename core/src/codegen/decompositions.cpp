// Decompositions of unsupported ops, chosen per renderer from its capability table.
#include "codegen/decompositions.hpp"

#include "codegen/transcendental.hpp"

namespace tg::codegen {

using namespace ir;

namespace {

bool is_half(DType d) { return d.scalar == ScalarType::Float16 || d.scalar == ScalarType::BFloat16; }

}  // namespace

UOpPtr decompose(const UOpPtr& u, const SupportsFn& supports) {
  DType d = is_comparison(u->op) ? u->src[0]->dtype : u->dtype;
  if (is_half(d) && u->op != Op::CAST && u->op != Op::BITCAST) {
    // compute in float32, round once per op back to the 16-bit type: same result as native half math
    std::vector<UOpPtr> src;
    for (const auto& s : u->src) src.push_back(s->dtype == d ? cast(s, dtypes::float32) : s);
    DType out = is_comparison(u->op) ? u->dtype : dtypes::float32;
    UOpPtr r = UOp::make(u->op, out, std::move(src), u->arg);
    return is_comparison(u->op) ? r : cast(r, u->dtype);
  }
  const UOpPtr& a = u->src[0];
  switch (u->op) {
    case Op::SUB: return alu(Op::ADD, a, alu(Op::NEG, u->src[1]));
    case Op::NEG:
      return d.is_float() ? alu(Op::MUL, a, const_like(a, -1.0)) : alu(Op::MUL, a, const_int(a->dtype, -1));
    case Op::RECIP: return alu(Op::FDIV, const_like(a, 1.0), a);
    case Op::MULACC: return alu(Op::ADD, alu(Op::MUL, a, u->src[1]), u->src[2]);
    case Op::FMA: return alu(Op::ADD, alu(Op::MUL, a, u->src[1]), u->src[2]);  // a custom kernel's fma: two roundings
    case Op::MAX:
      if (d.is_float()) return nullptr;
      return alu(Op::WHERE, alu(Op::CMPLT, a, u->src[1]), u->src[1], a);
    case Op::EXP2: return d.is_float() ? xexp2(a) : nullptr;
    case Op::LOG2: return d.is_float() ? xlog2(a) : nullptr;
    case Op::SIN: return d.is_float() ? xsin(a) : nullptr;
    default: return nullptr;
  }
}

}  // namespace tg::codegen
