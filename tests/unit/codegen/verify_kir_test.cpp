// sdk::verify_kir: one malformed kernel per rule of plugin_abi.h, each refused with its one message (the texts the
// C renderer base and INTERP report), well-formed kernels accepted, and the core's hook after lowering.
#include "tg/sdk/verify_kir.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <vector>

#include "codegen/verify.hpp"
#include "tg/error.hpp"
#include "tg/sdk/kir_builder.hpp"

namespace tg {
namespace {

using sdk::Kir;

// out[i] = in[i] + 1 for i in a RANGE of 4, the shape most cases break one piece of. Instructions:
// 0 PARAM out (rw), 1 PARAM in, 2 CONST 4, 3 CONST 1.0, 4 RANGE, 5 LOAD in[r], 6 ADD, 7 STORE, 8 ENDRANGE
struct Base {
  Kir k;
  int out, in, n, r, x, one, sum;
  Base() {
    out = k.buffer(TG_DTYPE_FLOAT32, true);
    in = k.buffer(TG_DTYPE_FLOAT32);
    n = k.i32(4);
    one = k.constant_f(TG_DTYPE_FLOAT32, 1.0);
    r = k.op(TG_KIR_RANGE, TG_DTYPE_INT32, {n});
    x = k.load(TG_DTYPE_FLOAT32, in, r);
    sum = k.alu(TG_KIR_ADD, TG_DTYPE_FLOAT32, {x, one});
    k.store(out, r, sum);
    k.op(TG_KIR_ENDRANGE, TG_DTYPE_INT32, {r});
  }
};

// The verifier's verdict on a kernel, "(valid)" when it passes.
std::string verdict(const tg_kir_kernel& kernel) { return sdk::verify_kir(&kernel).value_or("(valid)"); }

// Builds the base kernel, lets `edit` change the builder, then `patch` the finished struct (raw fields).
std::string verdict_of(const std::function<void(Base&)>& edit, const std::function<void(tg_kir_kernel&)>& patch = {}) {
  Base b;
  if (edit) edit(b);
  tg_kir_kernel k = b.k.kernel("kern");
  if (patch) patch(k);
  return verdict(k);
}

// A writable copy of instruction i's fields (the builder's storage is const through the kernel struct).
tg_kir_inst& at(Base& b, int i) { return const_cast<tg_kir_inst&>(b.k.insts()[static_cast<size_t>(i)]); }
int32_t& pool_at(Base& b, size_t j) { return const_cast<int32_t&>(b.k.pool()[j]); }

#define EXPECT_VERDICT(got, want) EXPECT_EQ(got, std::string(want))

TEST(VerifyKir, WellFormedKernelsPass) {
  EXPECT_VERDICT(verdict_of({}), "(valid)");
  // a packed load (ABI 1.3): int32 read from uint8 memory at a byte index; a gated 4-lane vector load; GEP; WHERE
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT32, true), bytes = k.buffer(TG_DTYPE_UINT8), f = k.buffer(TG_DTYPE_FLOAT32);
  const int zero = k.i32(0);
  const int packed = k.load(TG_DTYPE_INT32, bytes, zero);
  const int gate = k.alu(TG_KIR_CMPLT, TG_DTYPE_BOOL, {zero, k.i32(3)});
  const int v = k.op(TG_KIR_LOAD, TG_DTYPE_FLOAT32, {f, zero, gate}, 4);
  const int lane = k.op(TG_KIR_GEP, TG_DTYPE_FLOAT32, {v}, 1, 3);
  const int as_int = k.op(TG_KIR_CAST, TG_DTYPE_INT32, {lane});
  k.store(out, zero, k.alu(TG_KIR_WHERE, TG_DTYPE_INT32, {gate, packed, as_int}));
  EXPECT_VERDICT(verdict(k.kernel("ok2")), "(valid)");
}

TEST(VerifyKir, NullKernel) { EXPECT_VERDICT(sdk::verify_kir(nullptr).value_or(""), "no kernel (null pointer)"); }

TEST(VerifyKir, HeaderRules) {
  EXPECT_VERDICT(verdict_of({}, [](tg_kir_kernel& k) { k.struct_size = 8; }),
                 "kernel struct_size 8 is smaller than ABI 1.0's");
  EXPECT_VERDICT(verdict_of({}, [](tg_kir_kernel& k) { k.name = ""; }), "kernel has no name");
  EXPECT_VERDICT(verdict_of({}, [](tg_kir_kernel& k) { k.src_pool = nullptr; }),
                 "kernel kern: null insts, src_pool or params array");
  EXPECT_VERDICT(verdict_of({}, [](tg_kir_kernel& k) { k.global_dims = 4; }),
                 "kernel kern: global_dims is 4, at most 3");
  EXPECT_VERDICT(verdict_of({}, [](tg_kir_kernel& k) { const_cast<tg_kir_param*>(k.params)[1].kind = 7; }),
                 "kernel kern: parameter 1 has kind 7 and dtype 11");
  EXPECT_VERDICT(verdict_of({},
                            [](tg_kir_kernel& k) {
                              auto* p = const_cast<tg_kir_param*>(k.params);
                              p[1].kind = TG_PARAM_IMAGE;  // width (reserved) 0
                            }),
                 "kernel kern: image parameter 1 must be read-only float32 with a width (reserved) above 0");
}

TEST(VerifyKir, InstructionFields) {
  EXPECT_VERDICT(verdict_of([](Base& b) { at(b, 6).op = 99; }), "kernel kern: inst 6 has op 99");
  EXPECT_VERDICT(verdict_of([](Base& b) { at(b, 3).dtype = TG_DTYPE_COUNT; }),
                 "kernel kern: inst 3 (CONST): dtype 13 x 1");
  EXPECT_VERDICT(verdict_of([](Base& b) { at(b, 3).vcount = 0; }), "kernel kern: inst 3 (CONST): dtype 11 x 0");
  EXPECT_VERDICT(verdict_of([](Base& b) { at(b, 6).src_start = 1000; }),
                 "kernel kern: inst 6 (ADD): operands past the end of src_pool");
  EXPECT_VERDICT(verdict_of([](Base& b) { at(b, 6).nsrc = 1; }),
                 "kernel kern: inst 6 (ADD): 1 operands, expected 2..2");
  EXPECT_VERDICT(verdict_of([](Base& b) { pool_at(b, at(b, 6).src_start + 1) = 7; }),
                 "kernel kern: inst 6 (ADD): operand 1 is inst 7, not an earlier one");
  EXPECT_VERDICT(verdict_of([](Base& b) { pool_at(b, at(b, 6).src_start + 1) = -1; }),
                 "kernel kern: inst 6 (ADD): operand 1 is inst -1, not an earlier one");
}

TEST(VerifyKir, OperandKinds) {
  // a STORE has no value; a PARAM buffer is a pointer, not a value; a CONST is not a pointer
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.alu(TG_KIR_NEG, TG_DTYPE_FLOAT32, {7}); }, {}),
                 "kernel kern: inst 9 (NEG): operand 0 (inst 7) has no value");
  EXPECT_VERDICT(verdict_of([](Base& b) { pool_at(b, at(b, 6).src_start + 1) = b.in; }),
                 "kernel kern: inst 6 (ADD): operand 1 (inst 1) is a pointer");
  EXPECT_VERDICT(verdict_of([](Base& b) { pool_at(b, at(b, 5).src_start) = b.n; }),
                 "kernel kern: inst 5 (LOAD): operand 0 (inst 2) is not a pointer");
}

TEST(VerifyKir, BlocksAndScopes) {
  // the loop's sum used after ENDRANGE
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.store(b.out, b.n, b.sum); }),
                 "kernel kern: inst 9 (STORE): operand 2 (inst 6) is out of scope");
  // ... and the loop variable itself
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.alu(TG_KIR_ADD, TG_DTYPE_INT32, {b.r, b.n}); }),
                 "kernel kern: inst 9 (ADD): operand 0 (inst 4) is out of scope");
  // ENDRANGE closing a RANGE that is not the innermost block
  EXPECT_VERDICT(verdict_of([](Base& b) {
                   const int outer = b.k.op(TG_KIR_RANGE, TG_DTYPE_INT32, {b.n});
                   b.k.op(TG_KIR_RANGE, TG_DTYPE_INT32, {b.n});
                   b.k.op(TG_KIR_ENDRANGE, TG_DTYPE_INT32, {outer});
                 }),
                 "kernel kern: inst 11 (ENDRANGE): does not close the innermost RANGE");
  // ENDIF naming a RANGE
  EXPECT_VERDICT(verdict_of([](Base& b) {
                   const int r2 = b.k.op(TG_KIR_RANGE, TG_DTYPE_INT32, {b.n});
                   b.k.op(TG_KIR_ENDIF, TG_DTYPE_BOOL, {r2});
                 }),
                 "kernel kern: inst 10 (ENDIF): does not close the innermost IF");
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.op(TG_KIR_RANGE, TG_DTYPE_INT32, {b.n}); }),
                 "kernel kern: inst 9 (RANGE): RANGE is never closed");
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.op(TG_KIR_RANGE, TG_DTYPE_FLOAT32, {b.one}); }),
                 "kernel kern: inst 9 (RANGE): loop variable is not a scalar integer");
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.op(TG_KIR_IF, TG_DTYPE_BOOL, {b.n}); }),
                 "kernel kern: inst 9 (IF): condition is not a bool");
}

TEST(VerifyKir, DefinitionRules) {
  EXPECT_VERDICT(verdict_of([](Base& b) { at(b, 1).arg.i = 2; }), "kernel kern: inst 1 (PARAM): no parameter 2");
  EXPECT_VERDICT(verdict_of([](Base& b) { at(b, 1).dtype = TG_DTYPE_INT32; }),
                 "kernel kern: inst 1 (PARAM): dtype differs from the parameter's");
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.op(TG_KIR_SPECIAL, TG_DTYPE_INT32, {b.n}, 1, 12); }),
                 "kernel kern: inst 9 (SPECIAL): bad work-item id 12");
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.op(TG_KIR_DEFINE_REG, TG_DTYPE_FLOAT32, {}, 1, 0); }),
                 "kernel kern: inst 9 (DEFINE_REG): array of 0 elements");
}

TEST(VerifyKir, MemoryRules) {
  EXPECT_VERDICT(verdict_of([](Base& b) { at(b, 5).dtype = TG_DTYPE_INT32; }),
                 "kernel kern: inst 5 (LOAD): accesses float32 memory as int32");
  EXPECT_VERDICT(verdict_of([](Base& b) {
                   const int acc = b.k.op(TG_KIR_DEFINE_REG, TG_DTYPE_FLOAT32, {}, 2, 1);
                   b.k.op(TG_KIR_LOAD, TG_DTYPE_FLOAT32, {acc, b.n}, 4);
                 }),
                 "kernel kern: inst 10 (LOAD): 4 lanes of 2-lane elements");
  EXPECT_VERDICT(verdict_of([](Base& b) { pool_at(b, at(b, 5).src_start + 1) = b.one; }),
                 "kernel kern: inst 5 (LOAD): index is not a scalar integer");
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.op(TG_KIR_LOAD, TG_DTYPE_FLOAT32, {b.in, b.n, b.n}); }),
                 "kernel kern: inst 9 (LOAD): gate is not bool");
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.store(b.in, b.n, b.one); }),
                 "kernel kern: inst 9 (STORE): stores to read-only parameter 1");
  // a packed load reads from scalar uint8 memory only
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.load(TG_DTYPE_INT32, b.in, b.n); }),
                 "kernel kern: inst 9 (LOAD): accesses float32 memory as int32");
}

// TILE_MMA (ABI 1.6): a well-formed statement passes; each operand rule and the shape bits are refused by name.
TEST(VerifyKir, TileMmaRules) {
  struct Mma {
    Kir k;
    int c, a, b;
    std::vector<int> ops;
    Mma(uint32_t cd, uint32_t ab, bool writable = true) {
      c = k.buffer(cd, writable), a = k.buffer(ab), b = k.buffer(ab);
      const int z = k.op(TG_KIR_CONST, TG_DTYPE_INT64, {}, 1, 0), s = k.op(TG_KIR_CONST, TG_DTYPE_INT64, {}, 1, 32);
      ops = {c, z, s, a, z, s, b, z, s, s};
    }
    std::string verdict_with(int64_t bits, const std::function<void(std::vector<int>&)>& edit = {}) {
      if (edit) edit(ops);
      k.op(TG_KIR_TILE_MMA, TG_DTYPE_FLOAT32, ops, 1, bits);
      return verdict(k.kernel("mma"));
    }
  };
  EXPECT_VERDICT(Mma(TG_DTYPE_FLOAT32, TG_DTYPE_BFLOAT16).verdict_with(0x122), "(valid)");
  EXPECT_VERDICT(Mma(TG_DTYPE_FLOAT32, TG_DTYPE_BFLOAT16).verdict_with(0x13),
                 "kernel mma: inst 5 (TILE_MMA): shape bits 19: M and N are 16 or 32");
  EXPECT_VERDICT(Mma(TG_DTYPE_FLOAT32, TG_DTYPE_INT8).verdict_with(0x11),
                 "kernel mma: inst 5 (TILE_MMA): operand 3 points to int8, not bfloat16");
  EXPECT_VERDICT(Mma(TG_DTYPE_FLOAT32, TG_DTYPE_BFLOAT16).verdict_with(0x11, [](std::vector<int>& o) { o[9] = o[0]; }),
                 "kernel mma: inst 5 (TILE_MMA): operand 9 (inst 0) is a pointer");
  EXPECT_VERDICT(Mma(TG_DTYPE_FLOAT32, TG_DTYPE_BFLOAT16, false).verdict_with(0x11),
                 "kernel mma: inst 5 (TILE_MMA): C is read-only parameter 0");
  Mma bad(TG_DTYPE_FLOAT32, TG_DTYPE_BFLOAT16);
  bad.ops.pop_back();
  bad.k.op(TG_KIR_TILE_MMA, TG_DTYPE_FLOAT32, bad.ops, 1, 0x11);
  EXPECT_VERDICT(verdict(bad.k.kernel("mma")), "kernel mma: inst 5 (TILE_MMA): 9 operands, expected 10..10");
}

TEST(VerifyKir, VectorAndConversionRules) {
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.op(TG_KIR_VECTORIZE, TG_DTYPE_FLOAT32, {b.one, b.n}, 2); }),
                 "kernel kern: inst 9 (VECTORIZE): lane 1 is not a float32 scalar");
  EXPECT_VERDICT(verdict_of([](Base& b) {
                   const int v = b.k.op(TG_KIR_VECTORIZE, TG_DTYPE_FLOAT32, {b.one, b.one}, 2);
                   b.k.op(TG_KIR_GEP, TG_DTYPE_FLOAT32, {v}, 1, 2);
                 }),
                 "kernel kern: inst 10 (GEP): no lane 2");
  EXPECT_VERDICT(verdict_of([](Base& b) {
                   const int v = b.k.op(TG_KIR_VECTORIZE, TG_DTYPE_FLOAT32, {b.one, b.one}, 2);
                   b.k.op(TG_KIR_GEP, TG_DTYPE_INT32, {v}, 1, 1);
                 }),
                 "kernel kern: inst 10 (GEP): result is not one lane of the operand");
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.op(TG_KIR_CAST, TG_DTYPE_INT32, {b.one}, 2); }),
                 "kernel kern: inst 9 (CAST): a cast keeps the lane count");
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.op(TG_KIR_BITCAST, TG_DTYPE_INT64, {b.one}); }),
                 "kernel kern: inst 9 (BITCAST): sizes differ");
}

TEST(VerifyKir, AluRules) {
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.alu(TG_KIR_MUL, TG_DTYPE_FLOAT32, {b.one, b.n}); }),
                 "kernel kern: inst 9 (MUL): operand 1 is int32");
  EXPECT_VERDICT(verdict_of([](Base& b) {
                   const int v = b.k.op(TG_KIR_VECTORIZE, TG_DTYPE_FLOAT32, {b.one, b.one}, 2);
                   b.k.alu(TG_KIR_MUL, TG_DTYPE_FLOAT32, {b.one, v});
                 }),
                 "kernel kern: inst 10 (MUL): operand 1 has 2 lanes");
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.alu(TG_KIR_CMPLT, TG_DTYPE_FLOAT32, {b.one, b.one}); }),
                 "kernel kern: inst 9 (CMPLT): result dtype float32");
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.alu(TG_KIR_WHERE, TG_DTYPE_FLOAT32, {b.n, b.one, b.one}); }),
                 "kernel kern: inst 9 (WHERE): operand 0 is int32");
  EXPECT_VERDICT(verdict_of([](Base& b) { b.k.op(TG_KIR_CUSTOMI, TG_DTYPE_FLOAT32, {b.one}, 1, 3); }),
                 "kernel kern: inst 9 (CUSTOMI): no snippet 3 in the kernel's strings");
}

// The core's hook: a malformed lowered program is a tg::Error naming the kernel and the rule.
TEST(VerifyKir, CoreHookAfterLowering) {
  codegen::KirProgram p;
  p.name = "lowered";
  const int32_t c = p.add(TG_KIR_CONST, TG_DTYPE_INT32, 1, {});
  EXPECT_NO_THROW(codegen::verify_lowered(p));
  p.add(TG_KIR_ADD, TG_DTYPE_INT32, 1, {c, c + 1});
  try {
    codegen::verify_lowered(p);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(
        e.what(),
        "tg: lowering produced malformed KIR (a bug in tg): kernel lowered: inst 1 (ADD): operand 1 is inst 1, "
        "not an earlier one");
  }
}

}  // namespace
}  // namespace tg
