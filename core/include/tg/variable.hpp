// Symbolic integer variables and dims: a kernel that uses one is compiled once and gets the value at launch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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

// A tensor dim: a static size, or an integer expression of bound variables (`pos + 1`, `pos * 4`). A kernel over
// a symbolic dim loops to the variable's value at launch; buffers that hold one are sized for its max.
class Dim {
 public:
  Dim(int64_t size);                                  // NOLINT: a static size converts implicitly
  Dim(const BoundVariable& v);                        // NOLINT: so does a bound variable
  explicit Dim(std::shared_ptr<const ir::UOp> node);  // an int64 dim expression (tg internals)

  bool is_static() const;
  int64_t value() const;  // under the current bindings
  int64_t min() const;    // over every value the variables may take
  int64_t max() const;
  std::string str() const;           // "start_pos+1"
  bool same_as(const Dim& o) const;  // provably equal for every binding
  std::shared_ptr<const ir::UOp> node() const { return node_; }

 private:
  std::shared_ptr<const ir::UOp> node_;
};

Dim operator+(const Dim& a, const Dim& b);
Dim operator-(const Dim& a, const Dim& b);
Dim operator*(const Dim& a, const Dim& b);

}  // namespace tg
