// The error catalogue, scheduling and the IR: what the scheduler and the rewrite engine say about a tensor graph.
//
// Messages (tg::Error), by the function that raises them:
//   core/src/schedule/schedule.cpp KernelBuilder::bind   "tg: variable v is bound to two values (2 and 3) in one
//   kernel"
// Unreachable from user input (internal invariants; a message here is a bug in tg):
//   schedule.cpp KernelBuilder::load ("kernel on X reads a tensor on Y; copy it first with .to(...)": every Tensor
//     operation and the custom-kernel call check their operands' devices first), KernelBuilder::build_uncached
//     ("scheduler cannot handle OP"),
//   runtime/schedule_cache.cpp: Corrupt from its Reader (caught, the entry is dropped and the graph scheduled afresh),
//     graph_key (std::logic_error "tg: internal: a payload ..."),
//   ir/spec.cpp verify ("kernel K breaks the IR spec ...", TG_CHECK_IR=1 and debug builds),
//   ir/pattern_matcher.cpp Driver::rw ("graph_rewrite 'NAME': the graph is deeper than 20000 nodes": the scheduler
//     cuts a fused chain into kernels of at most 1000 ops, tests/unit/schedule/schedule_test.cpp
//     DeepChainIsCutIntoKernelsAndStaysRight; and a rule's result that contains its own input),
//   ir/pattern_matcher.cpp Driver::check_fixpoint, Driver::step, Driver::cycle (a rule set that does not converge,
//     undoes itself, or loops: bugs in tg's own rules; tests/unit/ir/pattern_matcher_test.cpp makes each with a rule
//     set of its own).
#include <vector>

#include "error_test_util.hpp"
#include "tg/error.hpp"
#include "tg/tensor.hpp"
#include "tg/variable.hpp"

namespace tg {
namespace {

using ::testing::HasSubstr;
using tgerr::error_of;

TEST(ScheduleErrors, VariableBoundToTwoValuesInOneKernel) {
  Variable v("v", 0, 8);
  Tensor t = Tensor::from_variable(v.bind(2)) + Tensor::from_variable(v.bind(3));
  EXPECT_MSG(error_of<Error>([&] { t.realize(); }),
             HasSubstr("tg: variable v is bound to two values (2 and 3) in one kernel"));
}

}  // namespace
}  // namespace tg
