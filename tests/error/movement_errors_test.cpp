// The error catalogue, Tensor API part 2: movement ops, cat/stack/gather and matmul, static and symbolic dims.
// One test per message, made through tg/tensor.hpp and tg/variable.hpp as a user would.
//
// Messages (all std::invalid_argument, all from core/src/tensor/tensor.cpp):
//   reshape
//     :421  "tg: reshape to (v-1,): dim v-1 can be negative"
//     :423  "tg: reshape to (-1, -1): only one dimension can be -1"
//     :426  "tg: reshape to (-2, -3): negative dimension"
//     :435  "tg: cannot reshape (2, 3) to (4, -1)"                                    (-1 does not divide)
//     :440  "tg: cannot reshape (v,) to (2, -1): v elements are not provably a multiple of 2"
//     :448  "tg: cannot reshape (2, 3) to (4, 2)[: ... elements are not provably equal]"
//   permute / expand / pad / shrink / slice / flip / unsqueeze / squeeze
//     :456  "tg: permute order has 1 axes, shape (2, 3) has 2"
//     :461  "tg: permute order repeats axis 0 for shape (2, 3, 4)"
//     :483  "tg: cannot expand (2, 3) to fewer dims (3,)"
//     :493  "tg: cannot expand (2, 3) to (4, 3)[: dims ... are not provably equal]"
//     :495  "tg: cannot expand to negative size (-2,)"
//     :502  "tg: pad needs one (before, after) pair per dim of (2, 3)"
//     :507  "tg: negative padding for shape (2, 3) (use shrink)"
//     :517  "tg: shrink needs one [start, end) pair per dim of (2, 3)"
//     :523  "tg: shrink [1, 4) is out of range for dim 1 of shape (2, 3)"
//     :534  "tg: slice of the symbolic dim v (use shrink)"
//     :545  "tg: flip repeats axis -1"
//     :557  "tg: shrink of dim 0 of shape (8, 4) to [0, v+1) with start in [..] and length in [..] can leave the
//     tensor" :579  "tg: pad of dim 0 of shape (v, 4) by 1 in [1, 1] does not fit in 8" :592  "tg: unsqueeze axis 4 is
//     out of range for shape (2, 3)" :601  "tg: cannot squeeze dim 0 of shape (2, 3): size is not 1"
//   cat / stack / gather
//     :607  "tg: cat of no tensors"
//     :614  "tg: cat: shapes (2, 3) and (3,) differ in rank"
//     :618  "tg: cat along axis 0: shapes (2, 3) and (2, 4) differ"
//     :619  "tg: cat: tensors on CPU and INTERP"
//     :635  "tg: stack of no tensors"
//     :638  "tg: stack: shapes (2, 3) and (3, 2) differ"
//     :646  "tg: gather of symbolic shapes (v, 4) and (2, 4) is not supported"
//     :647  "tg: gather: index shape (2,) and source shape (2, 3) differ in rank"
//     :648  "tg: gather: index must be an integer tensor, got float32"
//     :652  "tg: gather: index shape (2, 4) exceeds source shape (2, 3) in dim 1"
//   matmul
//     :671  "tg: matmul of a scalar: shapes () and (3,)"
//     :678  "tg: matmul: shapes (3,) and (4,) do not align"
//     :685  "tg: matmul: shapes (2, 3) and (4, 5) do not align (3 != 4)"
//     :690  "tg: matmul: batch dims of (2, 3, 4) and (3, 4, 5) cannot be broadcast"
// Axis arguments out of range (transpose, slice, squeeze, cat, gather, ...) share norm_axis (tensor.cpp), tested in
// tensor_api_errors_test (AxisOutOfRange).
#include <cstdint>
#include <vector>

#include "../unit/tensor/tensor_test_util.hpp"
#include "error_test_util.hpp"
#include "tg/variable.hpp"

namespace {

using namespace tgtest;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using tg::Dim;
using tg::Variable;
using tgerr::error_of;
using tgerr::f32;
using tgerr::i32;
using Invalid = std::invalid_argument;

// ---- reshape ------------------------------------------------------------------------------------------------------

TEST(MovementErrors, ReshapeSymbolicDimCanBeNegative) {
  Variable v("v", 0, 8);
  Tensor t = f32({8}).shrink(0, 0, v.bind(2));
  EXPECT_MSG(error_of<Invalid>([&] { (void)t.reshape({Dim(v.bind(2)) - Dim(1)}); }),
             HasSubstr("tg: reshape to (v-1,): dim v-1 can be negative"));
}

TEST(MovementErrors, ReshapeTwoInferredDims) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).reshape({-1, -1}); }),
             HasSubstr("tg: reshape to (-1, -1): only one dimension can be -1"));
}

TEST(MovementErrors, ReshapeNegativeDim) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).reshape({-2, -3}); }),
             HasSubstr("tg: reshape to (-2, -3): negative dimension"));
}

TEST(MovementErrors, ReshapeInferredDimDoesNotDivide) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).reshape({4, -1}); }),
             HasSubstr("tg: cannot reshape (2, 3) to (4, -1)"));
}

TEST(MovementErrors, ReshapeSymbolicNotAMultiple) {
  Variable v("v", 0, 8);
  Tensor t = f32({16}).shrink(0, 0, v.bind(4));
  EXPECT_MSG(error_of<Invalid>([&] { (void)t.reshape({2, -1}); }),
             HasSubstr("tg: cannot reshape (v,) to (2, -1): v elements are not provably a multiple of 2"));
}

TEST(MovementErrors, ReshapeElementCount) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).reshape({4, 2}); }),
             HasSubstr("tg: cannot reshape (2, 3) to (4, 2)"));
  Variable v("v", 0, 8);
  Tensor t = f32({16}).shrink(0, 0, v.bind(4));
  EXPECT_MSG(error_of<Invalid>([&] { (void)t.reshape({4}); }),
             HasSubstr("cannot reshape (v,) to (4,): v and 4 elements are not provably equal"));
}

// ---- permute / expand / pad / shrink / slice / flip / unsqueeze / squeeze -------------------------------------------

TEST(MovementErrors, PermuteWrongLength) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).permute({0}); }),
             HasSubstr("tg: permute order has 1 axes, shape (2, 3) has 2"));
}

TEST(MovementErrors, PermuteRepeatedAxis) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3, 4}).permute({0, 0, 1}); }),
             HasSubstr("tg: permute order repeats axis 0 for shape (2, 3, 4)"));
}

TEST(MovementErrors, ExpandToFewerDims) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).expand({3}); }),
             HasSubstr("tg: cannot expand (2, 3) to fewer dims (3,)"));
}

TEST(MovementErrors, ExpandMismatch) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).expand({4, 3}); }),
             HasSubstr("tg: cannot expand (2, 3) to (4, 3)"));
  Variable v("v", 0, 8), w("w", 0, 8);
  Tensor x = f32({8, 2}).shrink(0, 0, v.bind(3));
  EXPECT_MSG(error_of<Invalid>([&] { (void)x.expand({w.bind(3), 2}); }),
             HasSubstr("cannot expand (v, 2) to (w, 2): dims v and w are not provably equal"));
}

TEST(MovementErrors, ExpandNegativeSize) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({1}).expand({-2}); }),
             HasSubstr("tg: cannot expand to negative size (-2,)"));
}

TEST(MovementErrors, PadWrongLength) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).pad({{1, 1}}); }),
             HasSubstr("tg: pad needs one (before, after) pair per dim of (2, 3)"));
}

TEST(MovementErrors, PadNegative) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).pad({{0, 0}, {-1, 0}}); }),
             HasSubstr("tg: negative padding for shape (2, 3) (use shrink)"));
}

TEST(MovementErrors, ShrinkWrongLength) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).shrink({{0, 1}}); }),
             HasSubstr("tg: shrink needs one [start, end) pair per dim of (2, 3)"));
}

TEST(MovementErrors, ShrinkOutOfRange) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).shrink({{0, 2}, {1, 4}}); }),
             HasSubstr("tg: shrink [1, 4) is out of range for dim 1 of shape (2, 3)"));
}

TEST(MovementErrors, SliceOfSymbolicDim) {
  Variable v("v", 0, 8);
  Tensor t = f32({8, 4}).shrink(0, 0, v.bind(6));
  EXPECT_MSG(error_of<Invalid>([&] { (void)t.slice(0, 0, 2); }),
             HasSubstr("tg: slice of the symbolic dim v (use shrink)"));
}

TEST(MovementErrors, FlipRepeatedAxis) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).flip({1, -1}); }), HasSubstr("tg: flip repeats axis -1"));
}

TEST(MovementErrors, SymbolicShrinkCanLeaveTheTensor) {
  Variable v("v", 0, 8);  // v+1 reaches 9 > 8, though v = 2 fits
  EXPECT_MSG(error_of<Invalid>([&] { (void)f32({8, 4}).shrink(0, 0, Dim(v.bind(2)) + Dim(1)); }),
             HasSubstr("tg: shrink of dim 0 of shape (8, 4) to [0, v+1)"),
             HasSubstr("length in [1, 9] can leave the tensor"));
}

TEST(MovementErrors, SymbolicPadDoesNotFit) {
  Variable v("v", 0, 8);
  Tensor t = f32({8, 4}).shrink(0, 0, v.bind(6));
  EXPECT_MSG(error_of<Invalid>([&] { (void)t.pad(0, 1, 8); }),
             HasSubstr("tg: pad of dim 0 of shape (v, 4) by 1 in [1, 1] does not fit in 8"));
}

TEST(MovementErrors, UnsqueezeAxisOutOfRange) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).unsqueeze(4); }),
             HasSubstr("tg: unsqueeze axis 4 is out of range for shape (2, 3)"));
}

TEST(MovementErrors, SqueezeNonUnitDim) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).squeeze(0); }),
             HasSubstr("tg: cannot squeeze dim 0 of shape (2, 3): size is not 1"));
}

// ---- cat / stack / gather -----------------------------------------------------------------------------------------

TEST(MovementErrors, CatOfNothing) {
  EXPECT_MSG(error_of<Invalid>([] { (void)Tensor::cat({}, 0); }), HasSubstr("tg: cat of no tensors"));
}

TEST(MovementErrors, CatRank) {
  EXPECT_MSG(error_of<Invalid>([] { (void)Tensor::cat({f32({2, 3}), f32({3})}, 0); }),
             HasSubstr("tg: cat: shapes (2, 3) and (3,) differ in rank"));
}

TEST(MovementErrors, CatShapes) {
  EXPECT_MSG(error_of<Invalid>([] { (void)Tensor::cat({f32({2, 3}), f32({2, 4})}, 0); }),
             HasSubstr("tg: cat along axis 0: shapes (2, 3) and (2, 4) differ"));
}

TEST(MovementErrors, CatDevices) {
  try {
    (void)f32({1}, "INTERP");
  } catch (const std::exception&) {
    GTEST_SKIP() << "the INTERP plugin was not built";
  }
  EXPECT_MSG(error_of<Invalid>([] { (void)Tensor::cat({f32({2}, "CPU"), f32({2}, "INTERP")}); }),
             HasSubstr("tg: cat: tensors on CPU and INTERP"));
}

TEST(MovementErrors, StackOfNothing) {
  EXPECT_MSG(error_of<Invalid>([] { (void)Tensor::stack({}); }), HasSubstr("tg: stack of no tensors"));
}

TEST(MovementErrors, StackShapes) {
  EXPECT_MSG(error_of<Invalid>([] { (void)Tensor::stack({f32({2, 3}), f32({3, 2})}); }),
             HasSubstr("tg: stack: shapes (2, 3) and (3, 2) differ"));
}

TEST(MovementErrors, GatherSymbolic) {
  Variable v("v", 1, 8);
  Tensor t = f32({8, 4}).shrink(0, 0, v.bind(6));
  EXPECT_MSG(error_of<Invalid>([&] { (void)t.gather(1, i32({2, 4})); }),
             HasSubstr("tg: gather of symbolic shapes (v, 4) and (2, 4) is not supported"));
}

TEST(MovementErrors, GatherRank) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).gather(0, i32({2})); }),
             HasSubstr("tg: gather: index shape (2,) and source shape (2, 3) differ in rank"));
}

TEST(MovementErrors, GatherFloatIndex) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).gather(0, f32({2, 3})); }),
             HasSubstr("tg: gather: index must be an integer tensor, got float32"));
}

TEST(MovementErrors, GatherIndexTooLarge) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).gather(0, i32({2, 4})); }),
             HasSubstr("tg: gather: index shape (2, 4) exceeds source shape (2, 3) in dim 1"));
}

// ---- matmul -------------------------------------------------------------------------------------------------------

TEST(MovementErrors, MatmulOfScalar) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({}).matmul(f32({3})); }),
             HasSubstr("tg: matmul of a scalar: shapes () and (3,)"));
}

TEST(MovementErrors, MatmulVectorsDoNotAlign) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({3}).matmul(f32({4})); }),
             HasSubstr("tg: matmul: shapes (3,) and (4,) do not align"));
}

TEST(MovementErrors, MatmulDoNotAlign) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3}).matmul(f32({4, 5})); }),
             HasSubstr("tg: matmul: shapes (2, 3) and (4, 5) do not align (3 != 4)"));
}

TEST(MovementErrors, MatmulBatchDims) {
  EXPECT_MSG(error_of<Invalid>([] { (void)f32({2, 3, 4}).matmul(f32({3, 4, 5})); }),
             HasSubstr("tg: matmul: batch dims of (2, 3, 4) and (3, 4, 5) cannot be broadcast"));
}

}  // namespace
