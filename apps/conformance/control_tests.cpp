// The control-flow battery: work-item ids, gated loads and stores, RANGE loops (nested) over DEFINE_REG
// accumulators, IF/ENDIF, and local memory with BARRIER where the renderer claims it (caps.has_local).
#include "harness.hpp"

#include <algorithm>

namespace tg::conformance {
namespace {

constexpr tg_kir_op kAdd = TG_KIR_ADD, kMul = TG_KIR_MUL;
constexpr uint32_t kI32 = TG_DTYPE_INT32, kBool = TG_DTYPE_BOOL;

// The ops these kernels use; a renderer without them cannot run the battery's control-flow kernels.
void require_int32_ops(std::initializer_list<uint32_t> ops) {
  const Session& s = session();
  for (uint32_t op : ops)
    if (!s.claims_op(kI32, op)) throw Skip(cat("the renderer does not claim int32 ", sdk::op_name(op)));
}

std::string first_mismatch(const std::vector<int32_t>& got, const std::vector<int32_t>& want, const char* what) {
  for (size_t i = 0; i < want.size(); ++i)
    if (got[i] != want[i]) return cat(what, "[", i, "] is ", got[i], ", expected ", want[i]);
  return "";
}

// out[g] = in[g] * 3 + g over 1000 work-items: SPECIAL global ids cover the whole launch, once each.
void work_item_ids() {
  require_int32_ops({kAdd, kMul});
  constexpr uint32_t n = 1000;
  Kir k;
  const int out = k.buffer(kI32, true), in = k.buffer(kI32);
  const int g = k.global_id(n);
  k.store(out, g, k.alu(kAdd, kI32, {k.alu(kMul, kI32, {k.load(kI32, in, g), k.i32(3)}), g}));
  Kernel kernel(k, "conf_work_items");
  std::vector<int32_t> input(n), want(n);
  for (uint32_t i = 0; i < n; ++i) input[i] = static_cast<int32_t>(i * 7919 % 1009) - 500, want[i] = input[i] * 3 + static_cast<int32_t>(i);
  Buffer bout(std::vector<int32_t>(n, -1)), bin(input);
  kernel.launch({bout.addr(), bin.addr()}, {{n, 1, 1}, {1, 1, 1}});
  const std::string diff = first_mismatch(bout.read_as<int32_t>(), want, "out");
  if (!diff.empty()) kernel.fail("out[g] = in[g]*3 + g over global [1000,1,1]: " + diff);
}

// A gated LOAD reads 0 (and must not touch memory: `in` has 5 elements for 8 work-items); a gated STORE writes
// only where its gate is true.
void gated_load_store() {
  require_int32_ops({TG_KIR_CMPLT, TG_KIR_AND, TG_KIR_CMPNE});
  constexpr uint32_t n = 8;
  Kir k;
  const int out = k.buffer(kI32, true), in = k.buffer(kI32);
  const int g = k.global_id(n);
  const int v = k.load_gated(kI32, in, g, k.alu(TG_KIR_CMPLT, kBool, {g, k.i32(5)}));
  const int even = k.alu(TG_KIR_CMPNE, kBool, {k.alu(TG_KIR_AND, kI32, {g, k.i32(1)}), k.i32(1)});
  k.store_gated(out, g, v, even);
  Kernel kernel(k, "conf_gates");
  Buffer bout(std::vector<int32_t>(n, 7)), bin(std::vector<int32_t>{10, 11, 12, 13, 14});
  kernel.launch({bout.addr(), bin.addr()}, {{n, 1, 1}, {1, 1, 1}});
  const std::string diff = first_mismatch(bout.read_as<int32_t>(), {10, 7, 12, 7, 14, 7, 0, 7}, "out");
  if (!diff.empty())
    kernel.fail("LOAD gated by g<5, STORE gated by g even, over 8 work-items (untouched elements stay 7): " + diff);
}

// Per work-item: acc = 0; for i < 4: for j < 25: acc += in[g*100 + i*25 + j]; out[g] = acc. A DEFINE_REG
// accumulator carried through two nested RANGE loops.
void range_loops_with_accumulator() {
  require_int32_ops({kAdd, kMul});
  constexpr uint32_t rows = 6, outer = 4, inner = 25, row = outer * inner;
  Kir k;
  const int out = k.buffer(kI32, true), in = k.buffer(kI32);
  const int g = k.global_id(rows);
  const int acc = k.op(TG_KIR_DEFINE_REG, kI32, {}, 1, 1), zero = k.i32(0);
  k.store(acc, zero, k.i32(0));
  const int base = k.alu(kMul, kI32, {g, k.i32(row)});
  const int i = k.op(TG_KIR_RANGE, kI32, {k.i32(outer)}, 1, 0);
  const int j = k.op(TG_KIR_RANGE, kI32, {k.i32(inner)}, 1, 1);
  const int idx = k.alu(kAdd, kI32, {base, k.alu(kAdd, kI32, {k.alu(kMul, kI32, {i, k.i32(inner)}), j})});
  k.store(acc, zero, k.alu(kAdd, kI32, {k.load(kI32, acc, zero), k.load(kI32, in, idx)}));
  k.op(TG_KIR_ENDRANGE, kI32, {j});
  k.op(TG_KIR_ENDRANGE, kI32, {i});
  k.store(out, g, k.load(kI32, acc, zero));
  Kernel kernel(k, "conf_nested_ranges");
  std::vector<int32_t> input(rows * row), want(rows, 0);
  for (uint32_t x = 0; x < input.size(); ++x) {
    input[x] = static_cast<int32_t>((x * 2654435761u) % 2001) - 1000;
    want[x / row] += input[x];
  }
  Buffer bout(std::vector<int32_t>(rows, -1)), bin(input);
  kernel.launch({bout.addr(), bin.addr()}, {{rows, 1, 1}, {1, 1, 1}});
  const std::string diff = first_mismatch(bout.read_as<int32_t>(), want, "out");
  if (!diff.empty()) kernel.fail("sum of 100 elements per work-item through RANGE 4 x RANGE 25 into a register: " + diff);
}

// IF/ENDIF at the top level and inside a RANGE loop: out[g] = (g == 3 ? 42 : 7) + (number of j < 10 with j < g).
void if_endif() {
  require_int32_ops({kAdd, TG_KIR_CMPEQ, TG_KIR_CMPLT});
  constexpr uint32_t n = 8;
  Kir k;
  const int out = k.buffer(kI32, true);
  const int g = k.global_id(n);
  const int acc = k.op(TG_KIR_DEFINE_REG, kI32, {}, 1, 1), zero = k.i32(0);
  k.store(acc, zero, k.i32(7));
  const int branch = k.op(TG_KIR_IF, kBool, {k.alu(TG_KIR_CMPEQ, kBool, {g, k.i32(3)})});
  k.store(acc, zero, k.i32(42));
  k.op(TG_KIR_ENDIF, kBool, {branch});
  const int j = k.op(TG_KIR_RANGE, kI32, {k.i32(10)}, 1, 0);
  const int inner = k.op(TG_KIR_IF, kBool, {k.alu(TG_KIR_CMPLT, kBool, {j, g})});
  k.store(acc, zero, k.alu(kAdd, kI32, {k.load(kI32, acc, zero), k.i32(1)}));
  k.op(TG_KIR_ENDIF, kBool, {inner});
  k.op(TG_KIR_ENDRANGE, kI32, {j});
  k.store(out, g, k.load(kI32, acc, zero));
  Kernel kernel(k, "conf_if_endif");
  std::vector<int32_t> want(n);
  for (uint32_t x = 0; x < n; ++x) want[x] = (x == 3 ? 42 : 7) + static_cast<int32_t>(std::min(x, 10u));
  Buffer bout(std::vector<int32_t>(n, -1));
  kernel.launch({bout.addr()}, {{n, 1, 1}, {1, 1, 1}});
  const std::string diff = first_mismatch(bout.read_as<int32_t>(), want, "out");
  if (!diff.empty()) kernel.fail("IF (g == 3) at the top level and IF (j < g) inside RANGE 10: " + diff);
}

// Each work-group stages its slice in local memory, waits at a BARRIER, and writes it back reversed: every
// work-item reads what another one wrote, so a missing barrier or unshared memory shows.
void local_memory_and_barrier() {
  const Session& s = session();
  if (!s.caps.has_local) throw Skip("the renderer does not claim local memory (caps.has_local is 0)");
  require_int32_ops({kAdd, kMul, TG_KIR_SUB});
  const uint32_t local = std::min({64u, s.caps.max_local[0], s.caps.max_local_threads,
                                   static_cast<uint32_t>(s.caps.local_mem_bytes / 4)});
  constexpr uint32_t groups = 4;
  if (local < 2) throw Skip(cat("the renderer allows only ", local, " work-item per group"));
  Kir k;
  const int out = k.buffer(kI32, true), in = k.buffer(kI32);
  const int group = k.special(TG_SPECIAL_GROUP, groups), lid = k.special(TG_SPECIAL_LOCAL, local);
  const int temp = k.op(TG_KIR_DEFINE_LOCAL, kI32, {}, 1, local);
  const int base = k.alu(kMul, kI32, {group, k.i32(local)});
  k.store(temp, lid, k.load(kI32, in, k.alu(kAdd, kI32, {base, lid})));
  k.op(TG_KIR_BARRIER, kI32);
  const int mirror = k.alu(TG_KIR_SUB, kI32, {k.i32(local - 1), lid});
  k.store(out, k.alu(kAdd, kI32, {base, lid}), k.load(kI32, temp, mirror));
  Kernel kernel(k, "conf_local_barrier");
  std::vector<int32_t> input(groups * local), want(groups * local);
  for (uint32_t x = 0; x < input.size(); ++x) input[x] = static_cast<int32_t>(x * 31 + 5);
  for (uint32_t x = 0; x < input.size(); ++x) want[x] = input[x / local * local + (local - 1 - x % local)];
  Buffer bout(std::vector<int32_t>(input.size(), -1)), bin(input);
  kernel.launch({bout.addr(), bin.addr()}, {{groups, 1, 1}, {local, 1, 1}});
  const std::string diff = first_mismatch(bout.read_as<int32_t>(), want, "out");
  if (!diff.empty())
    kernel.fail(cat(groups, " groups of ", local, " work-items (launch global [", groups, ",1,1] = work-groups, local [",
                    local, ",1,1]) reversing their slice through local memory and a BARRIER: ", diff));
}

}  // namespace

// Inline code (ABI 1.1), where caps.language names one: a CUSTOMI expression and a CUSTOM statement written in
// the C subset every C-like language shares, so one kernel checks C, OpenCL C and CUDA renderers alike.
void inline_code() {
  const Session& s = session();
  if (!TG_ABI_HAS(&s.caps, tg_renderer_caps, language) || s.caps.language == nullptr)
    throw Skip("caps.language is NULL: the renderer takes no inline code");
  constexpr uint32_t n = 64;
  Kir k;
  const int out = k.buffer(kI32, true), in = k.buffer(kI32);
  const int g = k.global_id(n);
  const int v = k.custom(TG_KIR_CUSTOMI, kI32, "{0} * {1} + 7", {k.load(kI32, in, g), k.i32(3)});
  k.custom(TG_KIR_CUSTOM, kI32, "{0}[{1}] = {2} - {1};", {out, g, v});
  Kernel kernel(k, "conf_inline_code");
  std::vector<int32_t> input(n), want(n);
  for (uint32_t i = 0; i < n; ++i) input[i] = static_cast<int32_t>(i * 37 % 101) - 50, want[i] = input[i] * 3 + 7 - static_cast<int32_t>(i);
  Buffer bout(std::vector<int32_t>(n, -1)), bin(input);
  kernel.launch({bout.addr(), bin.addr()}, {{n, 1, 1}, {1, 1, 1}});
  const std::string diff = first_mismatch(bout.read_as<int32_t>(), want, "out");
  if (!diff.empty())
    kernel.fail(cat("CUSTOMI \"{0} * {1} + 7\" then CUSTOM \"{0}[{1}] = {2} - {1};\" (language ", s.caps.language,
                    "): ", diff));
}

void add_control_tests(Tests& tests) {
  tests.push_back({"control.work_item_ids", Tier::Core, work_item_ids});
  tests.push_back({"control.gated_load_store", Tier::Core, gated_load_store});
  tests.push_back({"control.range_loops_with_accumulator", Tier::Core, range_loops_with_accumulator});
  tests.push_back({"control.if_endif", Tier::Core, if_endif});
  tests.push_back({"control.local_memory_and_barrier", Tier::Core, local_memory_and_barrier});
  tests.push_back({"control.inline_code", Tier::Core, inline_code});
}

}  // namespace tg::conformance
