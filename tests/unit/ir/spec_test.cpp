// The kernel spec (ir/spec.hpp): kernels the scheduler makes pass it; hand-built bad sinks are refused with the
// rule and the node named. Expected verdicts are written out, not taken from the spec itself.
#include "ir/spec.hpp"

#include <gtest/gtest.h>

#include "schedule/schedule.hpp"
#include "tg/error.hpp"
#include "tg/tensor.hpp"

namespace tg::ir {
namespace {

UOpPtr param(DType d, int64_t i) { return UOp::make(Op::PARAM, d, {}, i); }
UOpPtr c64(int64_t v) { return const_int(dtypes::int64, v); }
UOpPtr range(const UOpPtr& end, int64_t id = 0) {
  return UOp::make(Op::RANGE, dtypes::int64, {end}, RangeInfo{id, AxisType::LOOP});
}
UOpPtr load(const UOpPtr& p, const UOpPtr& i) { return UOp::make(Op::LOAD, p->dtype, {p, i}); }
UOpPtr store(const UOpPtr& p, const UOpPtr& i, const UOpPtr& v) { return UOp::make(Op::STORE, v->dtype, {p, i, v}); }
UOpPtr sink(std::vector<UOpPtr> s) { return UOp::make(Op::SINK, dtypes::bool_, std::move(s)); }

std::string verdict(const UOpPtr& root) { return check_spec(root, pm_spec_kernel()).value_or("(valid)"); }

// out[r] = in[r] * 2 over r < 8
UOpPtr good_kernel() {
  UOpPtr r = range(c64(8));
  UOpPtr x = load(param(dtypes::float32, 1), r);
  return sink({store(param(dtypes::float32, 0), r, alu(Op::MUL, x, const_float(dtypes::float32, 2.0)))});
}

TEST(Spec, HandBuiltKernelPasses) { EXPECT_EQ(verdict(good_kernel()), "(valid)"); }

TEST(Spec, ScheduledKernelsPass) {
  // what the scheduler makes for elementwise, movement, reduction, matmul and softmax graphs
  Tensor a = Tensor::rand({16, 12}, 1).realize(), b = Tensor::rand({12, 5}, 2).realize();
  std::vector<Tensor> graphs = {((a + 1.0) * a).relu(),
                                a.transpose().flip({0}).pad({{1, 1}, {0, 2}}) * 2.0,
                                a.sum({1}),
                                a.matmul(b),
                                a.softmax(-1),
                                a.cast(DType(ScalarType::Int32)) + 3};
  size_t kernels = 0;
  for (const Tensor& t : graphs) {
    const auto schedule = sched::create_schedule({t.node()}, t.device());
    for (const auto& it : schedule.items) {
      if (it.kind != sched::ScheduleItem::Kind::KERNEL) continue;
      ++kernels;
      EXPECT_EQ(verdict(it.kernel.sink), "(valid)") << it.kernel.name << ": " << it.kernel.sink->str(10);
    }
  }
  EXPECT_GE(kernels, graphs.size());
}

TEST(Spec, SinkHoldsStatements) {
  UOpPtr x = load(param(dtypes::float32, 1), c64(0));
  EXPECT_EQ(verdict(sink({x})), "spec 'spec_kernel': rule 'sink_of_statements' refuses " + sink({x})->str(2) +
                                    ": SINK source 0 is a LOAD, not a statement");
  EXPECT_EQ(verdict(sink({})), "spec 'spec_kernel': rule 'sink_of_statements' refuses " + sink({})->str(2) +
                                   ": a SINK with no statements");
}

TEST(Spec, MemoryAccesses) {
  UOpPtr p = param(dtypes::float32, 0), f = const_float(dtypes::float32, 1.0);
  UOpPtr bad_index = store(p, f, f);
  EXPECT_EQ(verdict(sink({bad_index})), "spec 'spec_kernel': rule 'memory_access' refuses " + bad_index->str(2) +
                                            ": the index is not an int scalar");
  UOpPtr through_const = store(f, c64(0), f);
  EXPECT_EQ(verdict(sink({through_const})),
            "spec 'spec_kernel': rule 'memory_access' refuses " + through_const->str(2) + ": the buffer is a CONST");
  UOpPtr gated = UOp::make(Op::LOAD, dtypes::float32, {p, c64(0), c64(1)});
  EXPECT_EQ(verdict(sink({store(p, c64(0), gated)})),
            "spec 'spec_kernel': rule 'memory_access' refuses " + gated->str(2) + ": the gate is not bool");
}

TEST(Spec, RangesAndReduces) {
  UOpPtr p = param(dtypes::float32, 0);
  UOpPtr float_end =
      UOp::make(Op::RANGE, dtypes::int64, {const_float(dtypes::float32, 4.0)}, RangeInfo{0, AxisType::LOOP});
  EXPECT_EQ(verdict(sink({store(p, float_end, const_float(dtypes::float32, 0))})),
            "spec 'spec_kernel': rule 'range_int_end' refuses " + float_end->str(2) +
                ": a RANGE runs over an int scalar to one int end");
  UOpPtr x = load(p, c64(0));
  UOpPtr red = UOp::make(Op::REDUCE, dtypes::float32, {x, c64(3)}, int64_t{0});
  EXPECT_EQ(verdict(sink({store(p, c64(0), red)})), "spec 'spec_kernel': rule 'reduce_over_ranges' refuses " +
                                                        red->str(2) + ": REDUCE source 1 is not a RANGE");
}

TEST(Spec, AluDtypesAgree) {
  UOpPtr p = param(dtypes::int32, 0);
  UOpPtr mixed = UOp::make(Op::ADD, dtypes::int32, {const_int(dtypes::int32, 1), c64(2)});
  EXPECT_EQ(verdict(sink({store(p, c64(0), mixed)})),
            "spec 'spec_kernel': rule 'alu_dtypes' refuses " + mixed->str(2) + ": source 1 has another dtype");
  UOpPtr cmp = UOp::make(Op::CMPLT, dtypes::int32, {c64(1), c64(2)});
  EXPECT_EQ(verdict(sink({store(p, c64(0), cmp)})),
            "spec 'spec_kernel': rule 'alu_dtypes' refuses " + cmp->str(2) + ": a comparison is bool");
}

TEST(Spec, TensorOpsAreNotKernelOps) {
  UOpPtr p = param(dtypes::float32, 0);
  UOpPtr reshape =
      UOp::make(Op::RESHAPE, dtypes::float32, {const_float(dtypes::float32, 1.0)}, std::vector<int64_t>{1});
  EXPECT_EQ(verdict(sink({store(p, c64(0), reshape)})), "spec 'spec_kernel': rule 'no_tensor_ops' refuses " +
                                                            reshape->str(2) + ": tensor-graph op RESHAPE in a kernel");
}

TEST(Spec, NodeNoRuleCoversIsRefused) {
  PatternMatcher only_sinks("tiny", {{pat::ops({Op::SINK}), [](const Match&, const UOpPtr&) { return spec_ok(); }}});
  UOpPtr k = good_kernel();
  std::optional<std::string> why = check_spec(k, only_sinks);
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "spec 'tiny' has no rule for " + param(dtypes::float32, 0)->str(2));  // first in post-order
}

TEST(Spec, VerifyThrowsNamingTheKernel) {
  UOpPtr bad = sink({load(param(dtypes::float32, 1), c64(0))});
  try {
    verify(bad, pm_spec_kernel(), "E_4");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("tg: kernel E_4 breaks the IR spec 'spec_kernel': rule 'sink_of_statements'", 0),
        0u)
        << e.what();
  }
  EXPECT_NO_THROW(verify(good_kernel(), pm_spec_kernel(), "E_8"));
}

}  // namespace
}  // namespace tg::ir
