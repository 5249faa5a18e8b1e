// Variables and their bindings as tensor-graph nodes (DEFINE_VAR, BIND), and dims built from them.
#include "tg/variable.hpp"

#include <stdexcept>

#include "ir/sym_shape.hpp"
#include "ir/uop.hpp"

namespace tg {

using namespace ir;

Variable::Variable(std::string name, int64_t min, int64_t max, DType dtype) {
  if (dtype != dtypes::int32 && dtype != dtypes::int64)
    throw std::invalid_argument("tg: variable " + name + " must be int32 or int64, got " + dtype.name());
  if (min > max)
    throw std::invalid_argument("tg: variable " + name + " has min " + std::to_string(min) + " > max " +
                                std::to_string(max));
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
    throw std::invalid_argument("tg: cannot bind " + name() + " = " + std::to_string(value) + " outside [" +
                                std::to_string(min()) + ", " + std::to_string(max()) + "]");
  return BoundVariable(*this, value);
}

BoundVariable::BoundVariable(Variable v, int64_t value)
    : var_(std::move(v)), value_(value), node_(UOp::make(Op::BIND, var_.dtype(), {var_.node()}, value, {})) {}

}  // namespace tg

namespace tg {

using namespace ir;

Dim::Dim(int64_t size) : node_(dim_const(size)) {}
Dim::Dim(const BoundVariable& v) : node_(dim_of(v.node())) {}
Dim::Dim(std::shared_ptr<const ir::UOp> node) : node_(std::move(node)) {}

bool Dim::is_static() const { return ir::is_static(node_); }
int64_t Dim::value() const { return dim_value(node_); }
int64_t Dim::min() const { return dim_min(node_); }
int64_t Dim::max() const { return dim_max(node_); }
std::string Dim::str() const { return dim_str(node_); }
bool Dim::same_as(const Dim& o) const { return same_dim(node_, o.node_); }

Dim operator+(const Dim& a, const Dim& b) { return Dim(dim_add(a.node(), b.node())); }
Dim operator-(const Dim& a, const Dim& b) { return Dim(dim_sub(a.node(), b.node())); }
Dim operator*(const Dim& a, const Dim& b) { return Dim(dim_mul(a.node(), b.node())); }

}  // namespace tg
