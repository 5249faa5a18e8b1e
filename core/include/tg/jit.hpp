// tg::Jit: capture the kernel launches of a function once, then replay them with new inputs and variable values.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "tg/tensor.hpp"
#include "tg/variable.hpp"

namespace tg {

// Call 1 runs the function normally. Call 2 runs it again and captures every launch it makes. Later calls
// replay the capture as one queue batch: no scheduling, codegen or allocation, new input buffers and variable
// values patched into the recorded arguments.
//
// Contract (checked where it can be):
// - inputs must have the shapes, dtypes and devices of the capture, and the same variables must be passed
//   (by name); anything else is a tg::Error naming the difference — call reset() to capture again;
// - call 2 must launch the same kernels as call 1 did (after any one-time work of call 1, such as realizing
//   weights); otherwise it is a tg::Error ("changed its graph between calls");
// - the function's outputs are the same buffers on every replay: a replay overwrites the previous results;
// - a sharded tensor (shard()) stands for its shards: inputs must come sharded as at the capture, and a sharded
//   output comes back sharded; copies and collectives between the devices are replayed in order;
// - host work inside the function (from_vector, to_vector) is not replayed. JIT=0 in the environment turns
//   capturing off: every call then runs the function.
class Jit {
 public:
  using Fn =
      std::function<std::vector<Tensor>(const std::vector<Tensor>& inputs, const std::vector<BoundVariable>& vars)>;
  explicit Jit(Fn fn);

  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs, const std::vector<BoundVariable>& vars = {});
  void reset();                      // forget the capture: the next two calls run and capture again
  size_t captured_launches() const;  // 0 until captured

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

}  // namespace tg
