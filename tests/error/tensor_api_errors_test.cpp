// The error catalogue, Tensor API part 1: creation, elementwise ops, reductions, host I/O, variables.
// One test per message, made the way a user would, through tg/tensor.hpp and tg/variable.hpp.
//
// Messages (std::invalid_argument unless noted):
//   creation
//     core/src/tensor/tensor.cpp Tensor::empty            "tg: negative dimension in shape (2, -3)" (empty)
//     core/src/tensor/tensor.cpp Tensor::full             "tg: negative dimension in shape (-1,)" (full/zeros/ones)
//     core/src/tensor/tensor.cpp Tensor::arange           "tg: arange step must not be 0"
//     core/src/tensor/tensor.cpp Tensor::eye              "tg: eye size must be >= 0"
//     core/src/tensor/tensor.cpp Tensor::from_bytes       "tg: host data has N bytes, shape S of D needs M"
//     (from_bytes) core/src/tensor/tensor.cpp Tensor::from_host_memory "tg: host memory has N bytes, shape S of D needs
//     M"              (from_host_memory)
//   elementwise
//     core/src/tensor/tensor.cpp norm_axis                "tg: axis A is out of range for shape S" (every axis
//     argument) core/src/tensor/tensor.cpp broadcast_shape          "tg: shapes A and B cannot be broadcast[: dims v
//     and w are not provably equal]" core/src/tensor/tensor.cpp Tensor::binop            "tg: operands are on different
//     devices: CPU and INTERP" core/src/tensor/tensor.cpp Tensor::mod              "tg: mod is defined for integer
//     tensors, got float32" core/src/tensor/tensor.cpp Tensor::where            "tg: where() operands are on different
//     devices" core/src/tensor/tensor.cpp Tensor::bitcast          "tg: bitcast needs equal item sizes: float32 is 4
//     bytes, int16 is 2"
//   reductions
//     core/src/tensor/tensor.cpp Tensor::reduce           "tg: repeated axis in reduction over shape S"
//     core/src/tensor/tensor.cpp Tensor::argmax           "tg: argmax over the symbolic dim v is not supported"
//   execution and host I/O
//     core/src/tensor/tensor.cpp Tensor::realize_all      "tg: realize_all: tensors on CPU and INTERP"
//     core/src/tensor/tensor.cpp Tensor::check_host_type  "tg: reading a float32 tensor into host elements of 8 bytes"
//     (to_vector<T>/item<T>) core/src/tensor/tensor.cpp Tensor::copy_out         "tg: copy_out of N bytes from a tensor
//     of M bytes" core/include/tg/tensor.hpp Tensor::item             "tg: item() needs a tensor with one element, got
//     shape S"
//   variables
//     core/src/tensor/variable.cpp Variable::Variable     "tg: variable n must be int32 or int64, got float32"
//     core/src/tensor/variable.cpp Variable::Variable     "tg: variable n has min 5 > max 2"
//     core/src/tensor/variable.cpp Variable::Variable     "tg: variable n range [a, b] does not fit int32; declare it
//     int64" core/src/tensor/variable.cpp Variable::bind         "tg: cannot bind n = 9 outside [1, 8]"
// An unknown device name (Tensor::zeros(..., "NOSUCH")) is runtime_errors_test's DeviceUnknown.
#include <cstdint>
#include <memory>
#include <vector>

#include "../unit/tensor/tensor_test_util.hpp"
#include "error_test_util.hpp"
#include "tg/variable.hpp"

namespace {

using namespace tgtest;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using tg::Variable;
using tgerr::error_of;
using tgerr::f32;
using tgerr::i32;
using Invalid = std::invalid_argument;

// INTERP, the reference plugin, is the second device of the multi-device messages.
bool has_interp() {
  try {
    (void)f32({1}, "INTERP");
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

// ---- creation ---------------------------------------------------------------------------------------------------

TEST(TensorErrors, EmptyNegativeDimension) {
  EXPECT_MSG(error_of<Invalid>([] { (void)Tensor::empty({2, -3}); }), StartsWith("tg: "),
             HasSubstr("negative dimension in shape (2, -3)"));
}

TEST(TensorErrors, FullNegativeDimension) {
  EXPECT_MSG(error_of<Invalid>([] { (void)Tensor::ones({-1}); }), HasSubstr("negative dimension in shape (-1,)"));
}

TEST(TensorErrors, ArangeStepZero) {
  EXPECT_MSG(error_of<Invalid>([] { (void)Tensor::arange(0, 5, 0); }), HasSubstr("tg: arange step must not be 0"));
}

TEST(TensorErrors, EyeNegativeSize) {
  EXPECT_MSG(error_of<Invalid>([] { (void)Tensor::eye(-1); }), HasSubstr("tg: eye size must be >= 0"));
}

TEST(TensorErrors, FromBytesWrongSize) {
  EXPECT_MSG(error_of<Invalid>([] { (void)Tensor::from_vector(std::vector<float>(5), {2, 3}); }),
             HasSubstr("host data has 20 bytes, shape (2, 3) of float32 needs 24"));
}

TEST(TensorErrors, FromHostMemoryWrongSize) {
  auto mem = std::make_shared<std::vector<int32_t>>(7);
  EXPECT_MSG(error_of<Invalid>([&] { (void)Tensor::from_host_memory(mem->data(), 28, {2, 3}, dt::int32, mem, "CPU"); }),
             HasSubstr("host memory has 28 bytes, shape (2, 3) of int32 needs 24"));
}

// ---- elementwise --------------------------------------------------------------------------------------------------

TEST(TensorErrors, AxisOutOfRange) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).sum({-3}); }),
             HasSubstr("tg: axis -3 is out of range for shape (2, 3)"));
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({4}).softmax(1); }), HasSubstr("axis 1 is out of range for shape (4,)"));
}

TEST(TensorErrors, BroadcastMismatch) {
  EXPECT_MSG(error_of<Invalid>([] { (void)(f32({2, 3}) + f32({4})); }),
             HasSubstr("tg: shapes (2, 3) and (4,) cannot be broadcast"));
  // symbolic dims that may differ say why
  Variable v("v", 0, 8), w("w", 0, 8);
  Tensor x = f32({8, 2});
  EXPECT_MSG(error_of<Invalid>([&] { (void)(x.shrink(0, 0, v.bind(3)) + x.shrink(0, 0, w.bind(3))); }),
             HasSubstr("shapes (v, 2) and (w, 2) cannot be broadcast: dims v and w are not provably equal"));
}

TEST(TensorErrors, BinaryOperandsOnDifferentDevices) {
  if (!has_interp()) GTEST_SKIP() << "the INTERP plugin was not built";
  EXPECT_MSG(error_of<Invalid>([] { (void)(f32({2}, "CPU") * f32({2}, "INTERP")); }),
             HasSubstr("tg: operands are on different devices: CPU and INTERP"));
}

TEST(TensorErrors, ModOfFloats) {
  EXPECT_MSG(error_of<Invalid>([] { (void)Tensor::zeros({2}, dt::int32).mod(f32({2})); }),
             HasSubstr("tg: mod is defined for integer tensors, got float32"));
}

TEST(TensorErrors, WhereOperandsOnDifferentDevices) {
  if (!has_interp()) GTEST_SKIP() << "the INTERP plugin was not built";
  EXPECT_MSG(error_of<Invalid>([] {
               (void)Tensor::where(Tensor::zeros({2}, dt::bool_, "CPU"), f32({2}, "INTERP"), f32({2}, "CPU"));
             }),
             HasSubstr("tg: where() operands are on different devices"));
}

TEST(TensorErrors, BitcastItemSizes) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2}).bitcast(dt::int16); }),
             HasSubstr("tg: bitcast needs equal item sizes: float32 is 4 bytes, int16 is 2"));
}

// ---- reductions ---------------------------------------------------------------------------------------------------

TEST(TensorErrors, ReductionRepeatedAxis) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).max({1, -1}); }),
             HasSubstr("tg: repeated axis in reduction over shape (2, 3)"));
}

TEST(TensorErrors, ArgmaxOverSymbolicDim) {
  Variable v("v", 1, 8);
  Tensor t = f32({8, 4}).shrink(0, 0, v.bind(6));
  EXPECT_MSG(error_of<Invalid>([&] { (void)t.argmax(0); }),
             HasSubstr("tg: argmax over the symbolic dim v is not supported"));
}

// ---- execution and host I/O ---------------------------------------------------------------------------------------

TEST(TensorErrors, RealizeAllOnDifferentDevices) {
  if (!has_interp()) GTEST_SKIP() << "the INTERP plugin was not built";
  Tensor a = f32({2}, "CPU") + 1.0, b = f32({2}, "INTERP") + 1.0;
  EXPECT_MSG(error_of<Invalid>([&] { Tensor::realize_all({&a, &b}); }),
             HasSubstr("tg: realize_all: tensors on CPU and INTERP"));
}

TEST(TensorErrors, HostElementSizeMismatch) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).to_vector<double>(); }),
             HasSubstr("tg: reading a float32 tensor into host elements of 8 bytes"));
}

TEST(TensorErrors, CopyOutWrongSize) {
  std::vector<char> host(3);
  EXPECT_MSG(error_of<Invalid>([&] { f32({2}).copy_out(host.data(), host.size()); }),
             HasSubstr("tg: copy_out of 3 bytes from a tensor of 8 bytes"));
}

TEST(TensorErrors, ItemOfManyElements) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).item<float>(); }),
             HasSubstr("tg: item() needs a tensor with one element, got shape (2, 3)"));
}

// ---- variables ----------------------------------------------------------------------------------------------------

TEST(TensorErrors, VariableDtype) {
  EXPECT_MSG(error_of<Invalid>([] { Variable("n", 0, 4, dt::float32); }),
             HasSubstr("tg: variable n must be int32 or int64, got float32"));
}

TEST(TensorErrors, VariableMinAboveMax) {
  EXPECT_MSG(error_of<Invalid>([] { Variable("n", 5, 2); }), HasSubstr("tg: variable n has min 5 > max 2"));
}

TEST(TensorErrors, VariableRangePastInt32) {
  EXPECT_MSG(error_of<Invalid>([] { Variable("n", 0, int64_t{1} << 31); }),
             HasSubstr("tg: variable n range [0, 2147483648] does not fit int32; declare it int64"));
}

TEST(TensorErrors, BindOutsideRange) {
  Variable n("n", 1, 8);
  EXPECT_MSG(error_of<Invalid>([&] { (void)n.bind(9); }), HasSubstr("tg: cannot bind n = 9 outside [1, 8]"));
}

}  // namespace
