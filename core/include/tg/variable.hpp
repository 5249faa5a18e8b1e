// Symbolic integer variables: a kernel that uses one is compiled once and gets the value at launch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "tg/dtype.hpp"

namespace tg {

namespace ir {
class UOp;
}

class BoundVariable;

// A named integer in [min, max]; int32 or int64 (a 64-bit variable can exceed 2^31 in kernels and JIT replays).
class Variable {
 public:
  Variable(std::string name, int64_t min, int64_t max, DType dtype = dtypes::int32);
  BoundVariable bind(int64_t value) const;  // throws std::invalid_argument outside [min, max]

  const std::string& name() const;
  int64_t min() const;
  int64_t max() const;
  DType dtype() const;
  std::shared_ptr<const ir::UOp> node() const { return node_; }

 private:
  std::shared_ptr<const ir::UOp> node_;  // DEFINE_VAR
};

// A variable with its value for one call; what Tensor ops and Jit calls take.
class BoundVariable {
 public:
  const Variable& var() const { return var_; }
  int64_t value() const { return value_; }
  std::shared_ptr<const ir::UOp> node() const { return node_; }  // BIND(DEFINE_VAR)

 private:
  friend class Variable;
  BoundVariable(Variable v, int64_t value);
  Variable var_;
  int64_t value_;
  std::shared_ptr<const ir::UOp> node_;
};

}  // namespace tg
