// Index folding as a rule table: one rule per movement op, from the op's output index to its source's index.
// Every rule keeps the source index simplified, so equal positions are one node (the builder's memo and the
// schedule cache compare index nodes by identity).
#include "schedule/index_folding.hpp"

#include <array>

#include "ir/symbolic.hpp"

namespace tg::sched {

using namespace ir;

UOpPtr linear_index(const std::vector<UOpPtr>& idx, const Dims& dims) {
  // A stride is (product of symbolic dims) * constant, the constant outermost, so the symbolic rules see
  // idx*sym*c as a multiple of c.
  UOpPtr out = const_int(dtypes::int64, 0), sym;
  int64_t stride = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    if (!is_one(dims[i])) out = out + (sym ? idx[i] * sym : idx[i]) * stride;
    if (is_static(dims[i]))
      stride *= dims[i]->arg_int();
    else
      sym = sym ? sym * dims[i] : dims[i];
  }
  return out;
}

namespace {

// What a rule reads: the movement node, its output index and dims, and the kernel's view of a dim.
struct FoldArgs {
  const UOp& node;
  const std::vector<UOpPtr>& idx;
  const Dims& out;
  const KernelDim& kdim;

  // the source's dims, bound through kdim (only the rules that need them ask, so variables bind in order)
  Dims in() const {
    Dims ds = dims_of(*node.src[0]);
    for (auto& d : ds) d = kdim(d);
    return ds;
  }
};

using FoldRule = Folded (*)(const FoldArgs&);

// RESHAPE: flat = linear(idx, out); src[i] = flat / stride_i % in_i (a symbolic stride divides as IDIV; the
// outermost symbolic dim needs no wrap since flat < numel; a size-1 dim reads 0)
Folded fold_reshape(const FoldArgs& a) {
  Dims in = a.in();
  UOpPtr flat = simplify(linear_index(a.idx, a.out)), sym;
  std::vector<UOpPtr> nidx(in.size());
  int64_t stride = 1;
  for (size_t i = in.size(); i-- > 0;) {
    UOpPtr q = sym ? alu(Op::IDIV, flat / stride, sym) : flat / stride;
    if (is_one(in[i]))
      nidx[i] = const_int(dtypes::int64, 0);
    else if (is_static(in[i]))
      nidx[i] = simplify(q % in[i]->arg_int());
    else
      nidx[i] = simplify(i == 0 ? q : alu(Op::MOD, q, in[i]));
    if (is_static(in[i]))
      stride *= in[i]->arg_int();
    else
      sym = sym ? sym * in[i] : in[i];
  }
  return {std::move(nidx)};
}

// PERMUTE(order): src[order[i]] = idx[i]
Folded fold_permute(const FoldArgs& a) {
  const auto& perm = a.node.arg_ints();
  std::vector<UOpPtr> nidx(a.idx.size());
  for (size_t i = 0; i < perm.size(); ++i) nidx[perm[i]] = a.idx[i];
  return {std::move(nidx)};
}

// EXPAND: src[i] = 0 where a size-1 dim is broadcast (expanded), else idx[i]
Folded fold_expand(const FoldArgs& a) {
  Dims in = a.in();
  Folded f{a.idx};
  for (size_t i = 0; i < in.size(); ++i)
    if (is_one(in[i]) && !is_one(a.out[i])) f.idx[i] = const_int(dtypes::int64, 0), f.expanded = true;
  return f;
}

// PAD([before_i, after_i]): src[i] = idx[i] - before_i, cond = AND over padded dims of
// (before_i - 1 < idx[i]) & (idx[i] < in_i + before_i)
Folded fold_pad(const FoldArgs& a) {
  const auto& p = a.node.arg_ints();
  Dims in = a.in();
  Folded f{a.idx};
  UOpPtr cond = const_int(dtypes::bool_, 1);
  for (size_t i = 0; i < in.size(); ++i) {
    int64_t before = p[2 * i];
    if (before == 0 && p[2 * i + 1] == 0) continue;
    f.idx[i] = simplify(a.idx[i] + (-before));
    if (before > 0) cond = cond & alu(Op::CMPLT, const_int(dtypes::int64, before - 1), a.idx[i]);
    cond = cond & alu(Op::CMPLT, a.idx[i], simplify(in[i] + before));
  }
  f.cond = simplify(cond);
  return f;
}

// SHRINK([start_i, end_i]): src[i] = idx[i] + start_i
Folded fold_shrink(const FoldArgs& a) {
  const auto& p = a.node.arg_ints();
  Folded f{a.idx};
  for (size_t i = 0; i < a.idx.size(); ++i) f.idx[i] = simplify(a.idx[i] + p[2 * i]);
  return f;
}

// FLIP(flags): src[i] = out_i - 1 - idx[i] where flagged
Folded fold_flip(const FoldArgs& a) {
  const auto& flags = a.node.arg_ints();
  Folded f{a.idx};
  for (size_t i = 0; i < a.idx.size(); ++i)
    if (flags[i]) f.idx[i] = simplify(a.out[i] + (-1) + a.idx[i] * -1);
  return f;
}

// SHRINK_VAR(axis; start): src[axis] = idx[axis] + start
Folded fold_shrink_var(const FoldArgs& a) {
  int64_t axis = a.node.arg_ints()[0];
  Folded f{a.idx};
  f.idx[axis] = simplify(alu(Op::ADD, a.idx[axis], a.kdim(a.node.src[1])));
  return f;
}

// PAD_VAR(axis; before): src[axis] = idx[axis] - before,
// cond = (before - 1 < idx[axis]) & (idx[axis] < before + in_axis)
Folded fold_pad_var(const FoldArgs& a) {
  int64_t axis = a.node.arg_ints()[0];
  UOpPtr before = a.kdim(a.node.src[1]), len = a.in()[axis];
  const UOpPtr& i = a.idx[axis];
  Folded f{a.idx};
  f.idx[axis] = simplify(alu(Op::SUB, i, before));
  f.cond = simplify(alu(Op::AND, alu(Op::CMPLT, alu(Op::SUB, before, const_int(dtypes::int64, 1)), i),
                        alu(Op::CMPLT, i, alu(Op::ADD, before, len))));
  return f;
}

struct Rule {
  Op op;
  FoldRule fold;
};

// One rule per movement op, in the order of ir/ops.hpp, so an op finds its rule by position.
constexpr std::array kRules{
    Rule{Op::RESHAPE, fold_reshape},       Rule{Op::PERMUTE, fold_permute},
    Rule{Op::EXPAND, fold_expand},         Rule{Op::PAD, fold_pad},
    Rule{Op::SHRINK, fold_shrink},         Rule{Op::FLIP, fold_flip},
    Rule{Op::SHRINK_VAR, fold_shrink_var}, Rule{Op::PAD_VAR, fold_pad_var},
};

constexpr size_t rule_slot(Op op) { return static_cast<size_t>(op) - static_cast<size_t>(Op::RESHAPE); }

constexpr bool every_movement_op_has_its_rule() {
  for (size_t i = 0; i < static_cast<size_t>(Op::COUNT_); ++i) {
    Op op = static_cast<Op>(i);
    if (!is_movement(op)) continue;
    if (rule_slot(op) >= kRules.size() || kRules[rule_slot(op)].op != op) return false;
  }
  return kRules.size() == rule_slot(Op::PAD_VAR) + 1;
}
static_assert(every_movement_op_has_its_rule(), "index_folding: kRules needs one rule per movement op, in Op order");

}  // namespace

std::optional<Folded> fold_index(const UOp& node, const std::vector<UOpPtr>& idx, const Dims& out,
                                 const KernelDim& kdim) {
  if (!is_movement(node.op)) return std::nullopt;
  return kRules[rule_slot(node.op)].fold(FoldArgs{node, idx, out, kdim});
}

}  // namespace tg::sched
