// The error catalogue, hand-written kernels (tg/custom_kernel.hpp): building a kernel and calling it.
// One test per message, made the way a kernel author would.
//
// Messages (all std::invalid_argument "tg: custom kernel: ...", from core/src/tensor/custom_kernel.cpp):
//   building expressions
//     :22   "empty expression used as operand"                         (a default-constructed KExpr)
//     :28   "ADD of float32 and int32; cast() one side"
//     :33   "AND of float32: integers only"                            (&, |, ^, <<, >>)
//     :62   "bitcast of float32 to int16 changes the size"
//     :70   "where of float32 and int32"
//     :76   "fma needs three operands of one float dtype, got ..."
//     :82   "dot4 needs three int32 operands, got ..."
//     :87   "lut16 indexes with an int32 word, got int64"
//   declaring
//     :107, :109  "name '9lives' is not an identifier"                 (first character / any other character)
//     :114  "buffer index -1"
//     :116  "buffer 0 declared as float32 and int32"
//     :122  "range of size 0"
//     :134  "two different variables named 'n'"
//     :151  "load_packed reads a uint8 buffer, not int32"
//     :153  "load_packed of int8: only 2-, 4- and 8-byte scalars are packed"
//     :161  "reduce over something that is not a range"
//     :169  "register array of size 0"
//     :174  "local array of size 0"
//     :181  "storing int32 into a float32 buffer"
//     :184  "store into something that is not a buffer"
//     :198  "loop over something that is not a range"
//     :220  "inline code without any language variant"
//     :221  "inline code takes at most 10 operands ({0}..{9}), got 11"
//     :225  "inline code: a language name is empty, or a name or snippet holds a NUL byte"
//   calling
//     :252  "K has no statements (add them with run())"
//     :273  "K stores into input 1, which is not a realized buffer (realize() it first: the store would be lost)"
//     :283  "K inputs are on CPU and INTERP"
//     :287  "K has neither outputs nor inputs"
//     :290  "K stores into input 1, which is read-only host memory (Tensor::from_host_memory)"
//     :293  "K uses buffer 1 but was called with 1 tensors"
//     :294  "K declares buffer 1 as int32, got float32"
//     :303  "K reads variable 'n' but no value was bound for it"
//     :309  "K was given variable 'm', which it does not read"
// What a renderer refuses in a custom kernel (local memory, work-group limits, inline code) is codegen_errors_test's.
#include "tg/custom_kernel.hpp"

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "error_test_util.hpp"
#include "tg/variable.hpp"

namespace tg {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using tgerr::error_of;
using Invalid = std::invalid_argument;
namespace dt = dtypes;

// k: a kernel with a GLOBAL range i of 4 and float32 buffers 0 (output) and 1 (input).
struct Fixture {
  CustomKernel k{"k"};
  KExpr i = k.range(4, Axis::GLOBAL);
  KExpr out = k.buffer(0, dt::float32), in = k.buffer(1, dt::float32);
  KExpr f(double v) { return k.constant(v, dt::float32); }
  KExpr n(int64_t v) { return k.constant(static_cast<double>(v), dt::int32); }
};

// ---- building expressions ---------------------------------------------------------------------------------------

TEST(CustomKernelErrors, EmptyExpression) {
  Fixture x;
  EXPECT_MSG(error_of<Invalid>([&] { (void)(KExpr() + x.f(1)); }), StartsWith("tg: custom kernel: "),
             HasSubstr("empty expression used as operand"));
}

TEST(CustomKernelErrors, BinaryDtypeMismatch) {
  Fixture x;
  EXPECT_MSG(error_of<Invalid>([&] { (void)(x.f(1) + x.n(1)); }),
             HasSubstr("ADD of float32 and int32; cast() one side"));
}

TEST(CustomKernelErrors, BitwiseOfFloats) {
  Fixture x;
  EXPECT_MSG(error_of<Invalid>([&] { (void)(x.f(1) & x.f(2)); }), HasSubstr("AND of float32: integers only"));
}

TEST(CustomKernelErrors, BitcastChangesSize) {
  Fixture x;
  EXPECT_MSG(error_of<Invalid>([&] { (void)x.f(1).bitcast(dt::int16); }),
             HasSubstr("bitcast of float32 to int16 changes the size"));
}

TEST(CustomKernelErrors, WhereDtypes) {
  Fixture x;
  EXPECT_MSG(error_of<Invalid>([&] { (void)KExpr::where(x.i < 2, x.f(1), x.n(1)); }),
             HasSubstr("where of float32 and int32"));
}

TEST(CustomKernelErrors, FmaDtypes) {
  Fixture x;
  EXPECT_MSG(error_of<Invalid>([&] { (void)KExpr::fma(x.f(1), x.f(2), x.i); }),
             HasSubstr("fma needs three operands of one float dtype, got float32, float32 and int64"));
}

TEST(CustomKernelErrors, Dot4Dtypes) {
  Fixture x;
  EXPECT_MSG(error_of<Invalid>([&] { (void)KExpr::dot4(x.n(0), x.n(1), x.i); }),
             HasSubstr("dot4 needs three int32 operands, got int32, int32 and int64"));
}

TEST(CustomKernelErrors, Lut16Index) {
  Fixture x;
  EXPECT_MSG(error_of<Invalid>([&] { (void)KExpr::lut16(x.i, std::array<uint8_t, 16>{}); }),
             HasSubstr("lut16 indexes with an int32 word, got int64"));
}

// ---- declaring ----------------------------------------------------------------------------------------------------

TEST(CustomKernelErrors, NameNotAnIdentifier) {
  EXPECT_MSG(error_of<Invalid>([] { CustomKernel("9lives"); }), HasSubstr("name '9lives' is not an identifier"));
  EXPECT_MSG(error_of<Invalid>([] { CustomKernel("top-k"); }), HasSubstr("name 'top-k' is not an identifier"));
}

TEST(CustomKernelErrors, NegativeBufferIndex) {
  CustomKernel k("k");
  EXPECT_MSG(error_of<Invalid>([&] { (void)k.buffer(-1, dt::float32); }),
             HasSubstr("tg: custom kernel: buffer index -1"));
}

TEST(CustomKernelErrors, BufferDeclaredTwice) {
  Fixture x;
  EXPECT_MSG(error_of<Invalid>([&] { (void)x.k.buffer(0, dt::int32); }),
             HasSubstr("buffer 0 declared as float32 and int32"));
}

TEST(CustomKernelErrors, EmptyRange) {
  CustomKernel k("k");
  EXPECT_MSG(error_of<Invalid>([&] { (void)k.range(0, Axis::LOOP); }), HasSubstr("range of size 0"));
}

TEST(CustomKernelErrors, TwoVariablesOfOneName) {
  Fixture x;
  Variable a("n", 1, 8), b("n", 1, 16);
  (void)x.k.variable(a);
  EXPECT_MSG(error_of<Invalid>([&] { (void)x.k.variable(b); }), HasSubstr("two different variables named 'n'"));
}

TEST(CustomKernelErrors, LoadPackedFromNonBytes) {
  Fixture x;
  EXPECT_MSG(error_of<Invalid>([&] { (void)x.k.load_packed(x.k.buffer(2, dt::int32), x.i, dt::int32); }),
             HasSubstr("load_packed reads a uint8 buffer, not int32"));
}

TEST(CustomKernelErrors, LoadPackedOfOneByte) {
  Fixture x;
  EXPECT_MSG(error_of<Invalid>([&] { (void)x.k.load_packed(x.k.buffer(2, dt::uint8), x.i, dt::int8); }),
             HasSubstr("load_packed of int8: only 2-, 4- and 8-byte scalars are packed"));
}

TEST(CustomKernelErrors, ReduceOverNonRange) {
  Fixture x;
  EXPECT_MSG(error_of<Invalid>([&] { (void)x.k.reduce(x.f(1), Reduce::SUM, {x.i + 1}); }),
             HasSubstr("reduce over something that is not a range"));
}

TEST(CustomKernelErrors, EmptyRegisterArray) {
  CustomKernel k("k");
  EXPECT_MSG(error_of<Invalid>([&] { (void)k.reg(dt::float32, 0); }), HasSubstr("register array of size 0"));
}

TEST(CustomKernelErrors, EmptyLocalArray) {
  CustomKernel k("k");
  EXPECT_MSG(error_of<Invalid>([&] { (void)k.local(dt::float32, 0); }), HasSubstr("local array of size 0"));
}

TEST(CustomKernelErrors, StoreDtypeMismatch) {
  Fixture x;
  EXPECT_MSG(error_of<Invalid>([&] { (void)x.k.store(x.out, x.i, x.n(1)); }),
             HasSubstr("storing int32 into a float32 buffer"));
}

TEST(CustomKernelErrors, StoreIntoNonBuffer) {
  Fixture x;
  EXPECT_MSG(error_of<Invalid>([&] { (void)x.k.store(x.f(0), x.i, x.f(1)); }),
             HasSubstr("store into something that is not a buffer"));
}

TEST(CustomKernelErrors, LoopOverNonRange) {
  Fixture x;
  KExpr st = x.k.store(x.out, x.i, x.f(1));
  EXPECT_MSG(error_of<Invalid>([&] { (void)x.k.loop({st}, {x.i * 2}); }),
             HasSubstr("loop over something that is not a range"));
}

TEST(CustomKernelErrors, InlineCodeWithoutVariants) {
  Fixture x;
  EXPECT_MSG(error_of<Invalid>([&] { (void)x.k.inline_expr(dt::int32, {}, {x.i}); }),
             HasSubstr("inline code without any language variant"));
}

TEST(CustomKernelErrors, InlineCodeTooManyOperands) {
  Fixture x;
  EXPECT_MSG(error_of<Invalid>([&] { (void)x.k.inline_expr(dt::int32, {{"c", "{0}"}}, std::vector<KExpr>(11, x.i)); }),
             HasSubstr("inline code takes at most 10 operands ({0}..{9}), got 11"));
}

TEST(CustomKernelErrors, InlineCodeEmptyLanguage) {
  Fixture x;
  EXPECT_MSG(error_of<Invalid>([&] { (void)x.k.inline_stmt({{"", "x;"}}, {x.i}); }),
             HasSubstr("inline code: a language name is empty, or a name or snippet holds a NUL byte"));
}

// ---- calling ------------------------------------------------------------------------------------------------------

TEST(CustomKernelErrors, NoStatements) {
  CustomKernel k("k");
  EXPECT_MSG(error_of<Invalid>([&] { (void)k({{{4}, dt::float32}}, {}); }),
             HasSubstr("tg: custom kernel: k has no statements (add them with run())"));
}

TEST(CustomKernelErrors, StoreIntoLazyInput) {
  Fixture x;
  x.k.run(x.k.store(x.in, x.i, x.f(1)));
  EXPECT_MSG(
      error_of<Invalid>([&] { (void)x.k({{{4}, dt::float32}}, {Tensor::zeros({4}) + 1.0}); }),
      HasSubstr("k stores into input 1, which is not a realized buffer (realize() it first: the store would be lost)"));
}

TEST(CustomKernelErrors, InputsOnTwoDevices) {
  try {
    (void)Tensor::zeros({1}, dt::float32, "INTERP");
  } catch (const std::exception&) {
    GTEST_SKIP() << "the INTERP plugin was not built";
  }
  Fixture x;
  x.k.run(x.k.store(x.out, x.i, x.k.load(x.in, x.i) + x.k.load(x.k.buffer(2, dt::float32), x.i)));
  EXPECT_MSG(error_of<Invalid>([&] {
               (void)x.k({{{4}, dt::float32}},
                         {Tensor::zeros({4}, dt::float32, "CPU"), Tensor::zeros({4}, dt::float32, "INTERP")});
             }),
             HasSubstr("k inputs are on CPU and INTERP"));
}

TEST(CustomKernelErrors, NeitherOutputsNorInputs) {
  CustomKernel k("k");
  KExpr i = k.range(4, Axis::GLOBAL);
  k.run(k.inline_stmt({{"*", ""}}, {i}));
  EXPECT_MSG(error_of<Invalid>([&] { (void)k({}, {}); }), HasSubstr("k has neither outputs nor inputs"));
}

TEST(CustomKernelErrors, StoreIntoHostMemory) {
  Fixture x;
  x.k.run(x.k.store(x.in, x.i, x.f(1)));
  auto mem = std::make_shared<std::vector<float>>(4);
  Tensor ro = Tensor::from_host_memory(mem->data(), 16, {4}, dt::float32, mem, "CPU");
  EXPECT_MSG(error_of<Invalid>([&] { (void)x.k({{{4}, dt::float32}}, {ro}); }),
             HasSubstr("k stores into input 1, which is read-only host memory (Tensor::from_host_memory)"));
}

TEST(CustomKernelErrors, BufferWithoutTensor) {
  Fixture x;
  x.k.run(x.k.store(x.out, x.i, x.k.load(x.in, x.i)));
  EXPECT_MSG(error_of<Invalid>([&] { (void)x.k({{{4}, dt::float32}}, {}); }),
             HasSubstr("k uses buffer 1 but was called with 1 tensors"));
}

TEST(CustomKernelErrors, BufferDtypeMismatch) {
  CustomKernel k("k");
  KExpr i = k.range(4, Axis::GLOBAL);
  k.run(k.store(k.buffer(0, dt::int32), i, k.load(k.buffer(1, dt::int32), i)));
  EXPECT_MSG(error_of<Invalid>([&] { (void)k({{{4}, dt::int32}}, {Tensor::zeros({4})}); }),
             HasSubstr("k declares buffer 1 as int32, got float32"));
}

TEST(CustomKernelErrors, VariableNotBound) {
  Fixture x;
  Variable n("n", 1, 8);
  x.k.run(x.k.store(x.out, x.i, x.k.variable(n).cast(dt::float32)));
  EXPECT_MSG(error_of<Invalid>([&] { (void)x.k({{{4}, dt::float32}}, {Tensor::zeros({4})}); }),
             HasSubstr("k reads variable 'n' but no value was bound for it"));
}

TEST(CustomKernelErrors, VariableNotRead) {
  Fixture x;
  Variable m("m", 1, 8);
  x.k.run(x.k.store(x.out, x.i, x.f(1)));
  EXPECT_MSG(error_of<Invalid>([&] { (void)x.k({{{4}, dt::float32}}, {Tensor::zeros({4})}, {m.bind(2)}); }),
             HasSubstr("k was given variable 'm', which it does not read"));
}

}  // namespace
}  // namespace tg
