// Variables and their bindings as tensor-graph nodes (DEFINE_VAR, BIND).
#include "tg/variable.hpp"

#include <stdexcept>

#include "ir/uop.hpp"

namespace tg {

using namespace ir;

Variable::Variable(std::string name, int64_t min, int64_t max, DType dtype) {
  if (dtype != dtypes::int32 && dtype != dtypes::int64)
    throw std::invalid_argument("tg: variable " + name + " must be int32 or int64, got " + dtype.name());
  if (min > max) throw std::invalid_argument("tg: variable " + name + " has min " + std::to_string(min) + " > max " + std::to_string(max));
  if (dtype == dtypes::int32 && (min < INT32_MIN || max > INT32_MAX))
    throw std::invalid_argument("tg: variable " + name + " range [" + std::to_string(min) + ", " + std::to_string(max) +
                                "] does not fit int32; declare it int64");
  node_ = UOp::make(Op::DEFINE_VAR, dtype, {}, VarInfo{std::move(name), min, max});
}

const std::string& Variable::name() const { return node_->var().name; }
int64_t Variable::min() const { return node_->var().min; }
int64_t Variable::max() const { return node_->var().max; }
DType Variable::dtype() const { return node_->dtype; }

BoundVariable Variable::bind(int64_t value) const {
  if (value < min() || value > max())
    throw std::invalid_argument("tg: cannot bind " + name() + " = " + std::to_string(value) + " outside [" + std::to_string(min()) +
                                ", " + std::to_string(max()) + "]");
  return BoundVariable(*this, value);
}

BoundVariable::BoundVariable(Variable v, int64_t value)
    : var_(std::move(v)), value_(value), node_(UOp::make(Op::BIND, var_.dtype(), {var_.node()}, value, {})) {}

}  // namespace tg
