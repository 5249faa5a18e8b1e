// FMA by caps (fma.hpp): ADD(acc, MUL(x, y)) -> FMA(x, y, acc) where acc is a register's value.
#include "codegen/fma.hpp"

#include "codegen/lanes.hpp"

namespace tg::codegen {

using namespace ir;

namespace {

// a register's value: a LOAD through AFTER of a DEFINE_REG (an accumulator, as lower_reduces spells it)
bool is_register_value(const UOp& u) {
  return u.op == Op::LOAD && u.src[0]->op == Op::AFTER && u.src[0]->src[0]->op == Op::DEFINE_REG;
}

}  // namespace

PatternMatcher pm_fma_for(const tg_renderer_caps& caps) {
  using namespace pat;
  auto fma = [caps](const Match& m, const UOpPtr& u) -> UOpPtr {
    const UOpPtr &acc = m["acc"], &prod = m["prod"];
    if (!is_register_value(*acc) || !e_supports(caps, Op::FMA, DType(u->dtype.scalar))) return nullptr;
    return UOp::make(Op::FMA, u->dtype, {prod->src[0], prod->src[1], acc});
  };
  return PatternMatcher("fma", {{op(Op::ADD, {any("acc"), ops({Op::MUL}, "prod")}), fma, "accumulate_product"}});
}

}  // namespace tg::codegen
