// Symbolic tensor dims: a dim is an int64 expression whose leaves are CONSTs and BINDs (a variable with its
// value for this call). Its value is that of the bindings, its bounds come from the variables' ranges, and two
// dims are the same when they agree for every binding.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ir/uop.hpp"

namespace tg::ir {

using Dims = std::vector<UOpPtr>;  // one dim expression per axis

UOpPtr dim_const(int64_t v);
UOpPtr dim_of(const UOpPtr& bind);  // a BIND as a dim (widened to int64)
bool is_static(const UOpPtr& d);    // a CONST
bool is_static(const Dims& ds);
bool is_one(const UOpPtr& d);        // the static dim 1 (broadcasts)
int64_t dim_value(const UOpPtr& d);  // under the bindings in d
inline int64_t dim_min(const UOpPtr& d) { return d->vmin(); }
inline int64_t dim_max(const UOpPtr& d) { return d->vmax(); }
std::string dim_str(const UOpPtr& d);  // "start_pos+1"
std::string dims_str(const Dims& ds);  // "(2, start_pos+1)"

// Arithmetic on dims, simplified so that equal expressions are one node.
UOpPtr dim_add(const UOpPtr& a, const UOpPtr& b);
UOpPtr dim_sub(const UOpPtr& a, const UOpPtr& b);
UOpPtr dim_mul(const UOpPtr& a, const UOpPtr& b);
UOpPtr dims_prod(const Dims& ds);

// Provably equal for every binding (v*4 and 4*v, 2*v+2 and (v+1)*2).
bool same_dim(const UOpPtr& a, const UOpPtr& b);
bool same_dims(const Dims& a, const Dims& b);
// total / part when the quotient is provably an integer dim for every binding; nullptr otherwise.
UOpPtr dim_div(const UOpPtr& total, const UOpPtr& part);

// A tensor node's dims: its sym_shape, or CONSTs of its static shape.
Dims dims_of(const UOp& node);
// (shape, sym_shape) for UOp::make: the values under the bindings, and the dims when any is symbolic.
std::pair<Shape, Dims> shape_args(const Dims& ds);

// d with every BIND replaced by f(BIND) (the scheduler turns them into DEFINE_VARs), simplified.
UOpPtr map_binds(const UOpPtr& d, const std::function<UOpPtr(const UOpPtr&)>& f);

}  // namespace tg::ir
