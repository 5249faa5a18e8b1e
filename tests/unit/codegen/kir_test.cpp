// Mirrors core/src/codegen/kir.cpp: building a KirProgram, its ABI view, the content hash, and dump().
#include "codegen/kir.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace tg::codegen {
namespace {

// out[0] = 2.5 * in[0]: PARAM, PARAM, CONST, CONST(index), LOAD, MUL, STORE.
KirProgram small_kernel() {
  KirProgram k;
  k.name = "E_scale";
  k.params = {{TG_PARAM_BUFFER, TG_DTYPE_FLOAT32, 1, 0, "data0"}, {TG_PARAM_BUFFER, TG_DTYPE_FLOAT32, 0, 0, "data1"}};
  k.param_names = {"data0", "data1"};
  int32_t out = k.add(TG_KIR_PARAM, TG_DTYPE_FLOAT32, 1, {}, {.i = 0});
  int32_t in = k.add(TG_KIR_PARAM, TG_DTYPE_FLOAT32, 1, {}, {.i = 1});
  int32_t idx = k.add(TG_KIR_CONST, TG_DTYPE_INT32, 1, {}, {.i = 0});
  int32_t scale = k.add(TG_KIR_CONST, TG_DTYPE_FLOAT32, 1, {}, {.f = 2.5});
  int32_t x = k.add(TG_KIR_LOAD, TG_DTYPE_FLOAT32, 1, {in, idx});
  int32_t y = k.add(TG_KIR_MUL, TG_DTYPE_FLOAT32, 1, {x, scale});
  k.add(TG_KIR_STORE, TG_DTYPE_FLOAT32, 1, {out, idx, y});
  return k;
}

TEST(Kir, AddAppendsAndReturnsTheIndex) {
  KirProgram k;
  EXPECT_EQ(k.add(TG_KIR_CONST, TG_DTYPE_INT32, 1, {}, {.i = 7}), 0);
  EXPECT_EQ(k.add(TG_KIR_CONST, TG_DTYPE_INT32, 1, {}, {.i = 8}), 1);
  EXPECT_EQ(k.add(TG_KIR_ADD, TG_DTYPE_INT32, 4, {0, 1}, {.i = 0}, TG_ADDR_LOCAL), 2);
  ASSERT_EQ(k.insts.size(), 3u);
  const tg_kir_inst& add = k.insts[2];
  EXPECT_EQ(add.op, TG_KIR_ADD);
  EXPECT_EQ(add.dtype, TG_DTYPE_INT32);
  EXPECT_EQ(add.vcount, 4);
  EXPECT_EQ(add.addrspace, TG_ADDR_LOCAL);
  EXPECT_EQ(add.nsrc, 2);
  EXPECT_EQ(add.src_start, 0u) << "the constants took no pool entries";
  EXPECT_EQ(k.src_pool, (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(k.insts[1].arg.i, 8);
  EXPECT_EQ(k.add_string("a"), 0);
  EXPECT_EQ(k.add_string("b"), 1);
}

TEST(Kir, ViewSeesTheSameProgram) {
  KirProgram k = small_kernel();
  k.global_dims = 2;
  k.add_string("int y = 3;");
  tg_kir_kernel v = k.view();
  EXPECT_EQ(v.struct_size, sizeof(tg_kir_kernel));
  EXPECT_STREQ(v.name, "E_scale");
  ASSERT_EQ(v.ninsts, 7u);
  ASSERT_EQ(v.nsrc_pool, 7u);  // LOAD 2 + MUL 2 + STORE 3
  ASSERT_EQ(v.nparams, 2u);
  EXPECT_EQ(v.global_dims, 2u);
  for (uint32_t i = 0; i < v.ninsts; ++i) EXPECT_EQ(std::memcmp(&v.insts[i], &k.insts[i], sizeof(tg_kir_inst)), 0) << i;
  const tg_kir_inst& store = v.insts[6];
  ASSERT_EQ(store.nsrc, 3);
  EXPECT_EQ(v.src_pool[store.src_start + 0], 0);
  EXPECT_EQ(v.src_pool[store.src_start + 1], 2);
  EXPECT_EQ(v.src_pool[store.src_start + 2], 5);
  EXPECT_EQ(v.params[0].writable, 1u);
  EXPECT_EQ(v.params[1].writable, 0u);
  ASSERT_EQ(v.nstrings, 1u);
  EXPECT_STREQ(v.strings[0], "int y = 3;");
  // a second view is as good as the first (the strings array is rebuilt, not appended to)
  tg_kir_kernel v2 = k.view();
  ASSERT_EQ(v2.nstrings, 1u);
  EXPECT_STREQ(v2.strings[0], "int y = 3;");
  EXPECT_EQ(v2.insts[3].arg.f, 2.5);
}

TEST(Kir, HashIsContentOnly) {
  KirProgram a = small_kernel(), b = small_kernel();
  EXPECT_EQ(a.hash(), b.hash()) << "two equal programs built separately";
  // what the hash leaves out: bookkeeping that does not change the code
  b.opts = {{OptOp::UPCAST, 0, 4}};
  b.flops = 123, b.bytes = 456;
  b.param_names = {"x", "y"};
  EXPECT_EQ(a.hash(), b.hash()) << "opts, flops, bytes and param_names are not content";
  // what it holds
  auto changed = [&](const char* what, auto edit) {
    KirProgram c = small_kernel();
    edit(c);
    EXPECT_NE(c.hash(), a.hash()) << what << " did not change the hash";
  };
  changed("an instruction's arg", [](KirProgram& c) { c.insts[3].arg.f = 2.0; });
  changed("an instruction's dtype", [](KirProgram& c) { c.insts[2].dtype = TG_DTYPE_INT64; });
  changed("an instruction's lanes", [](KirProgram& c) { c.insts[5].vcount = 2; });
  changed("an instruction's op", [](KirProgram& c) { c.insts[5].op = TG_KIR_ADD; });
  changed("an operand", [](KirProgram& c) { c.src_pool[3] = 4; });
  changed("the name", [](KirProgram& c) { c.name = "E_scale2"; });
  changed("a parameter's dtype", [](KirProgram& c) { c.params[1].dtype = TG_DTYPE_FLOAT16; });
  changed("a parameter's writability", [](KirProgram& c) { c.params[1].writable = 1; });
  changed("a string", [](KirProgram& c) { c.add_string("x"); });
  changed("one more instruction", [](KirProgram& c) { c.add(TG_KIR_BARRIER, TG_DTYPE_BOOL, 1, {}); });
  // strings are delimited: {"ab","c"} and {"a","bc"} differ
  KirProgram s1 = small_kernel(), s2 = small_kernel();
  s1.add_string("ab"), s1.add_string("c");
  s2.add_string("a"), s2.add_string("bc");
  EXPECT_NE(s1.hash(), s2.hash());
}

TEST(Kir, HashIsStableAcrossRuns) {
  // FNV-1a over the fields: no pointers, no std::hash; the same program hashes the same in every process. The
  // value is computed here from the definition (64-bit FNV-1a over the name, then per instruction the seven
  // fields as uint64, the operand pool as int32, params as four uint32, strings with their NUL).
  KirProgram k;
  k.name = "k";
  k.add(TG_KIR_CONST, TG_DTYPE_INT32, 1, {}, {.i = 5});
  uint64_t h = 0xcbf29ce484222325ull;
  auto bytes = [&](const void* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 0x100000001b3ull;
  };
  bytes("k", 1);
  uint64_t fields[] = {TG_KIR_CONST, TG_DTYPE_INT32, 1, TG_ADDR_GLOBAL, 0, 0, 5};
  bytes(fields, sizeof(fields));
  EXPECT_EQ(k.hash(), h);
}

TEST(Kir, DumpFormat) {
  KirProgram k;
  k.name = "tiny";
  int32_t c = k.add(TG_KIR_CONST, TG_DTYPE_FLOAT32, 1, {}, {.f = 1.5});
  int32_t v = k.add(TG_KIR_VECTORIZE, TG_DTYPE_FLOAT32, 2, {c, c});
  k.add(TG_KIR_CUSTOM, TG_DTYPE_BOOL, 1, {v}, {.i = k.add_string("f({0});")});
  EXPECT_EQ(k.dump(),
            "kernel tiny\n"
            "  %0 = CONST dt=11 [] arg=1.5\n"
            "  %1 = VECTORIZE dt=11x2 [%0 %0] arg=0\n"
            "  %2 = CUSTOM dt=0 [%1] arg=0 \"f({0});\"\n");
}

TEST(Kir, DumpOfTheSmallKernel) {
  EXPECT_EQ(small_kernel().dump(),
            "kernel E_scale\n"
            "  %0 = PARAM dt=11 [] arg=0\n"
            "  %1 = PARAM dt=11 [] arg=1\n"
            "  %2 = CONST dt=3 [] arg=0\n"
            "  %3 = CONST dt=11 [] arg=2.5\n"
            "  %4 = LOAD dt=11 [%1 %2] arg=0\n"
            "  %5 = MUL dt=11 [%4 %3] arg=0\n"
            "  %6 = STORE dt=11 [%0 %2 %5] arg=0\n");
}

TEST(Kir, OpNames) {
  EXPECT_STREQ(kir_op_name(TG_KIR_PARAM), "PARAM");
  EXPECT_STREQ(kir_op_name(TG_KIR_MULACC), "MULACC");
  EXPECT_STREQ(kir_op_name(TG_KIR_LUT16), "LUT16");
  EXPECT_STREQ(kir_op_name(TG_KIR_OP_COUNT), "<bad op>");
}

}  // namespace
}  // namespace tg::codegen
