// UOp: the immutable, hash-consed node of every tg graph. Equal nodes are the same object.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "ir/ops.hpp"
#include "tg/dtype.hpp"

namespace tg::ir {

class UOp;
using UOpPtr = std::shared_ptr<const UOp>;

// The run-time object a BUFFER node carries: a realized device buffer (rt::Buffer), compared by identity. The layers
// below the runtime know it only by what a schedule needs of it.
struct Payload {
  virtual ~Payload() = default;
  virtual DType dtype() const = 0;
  virtual int64_t numel() const = 0;
  virtual const std::string& device_name() const = 0;  // canonical, as tg::canonical_device spells it
};

struct VarInfo {
  std::string name;
  int64_t min, max;
  bool operator==(const VarInfo&) const = default;
};

struct RangeInfo {
  int64_t id;
  AxisType type;
  bool operator==(const RangeInfo&) const = default;
};

using Arg = std::variant<std::monostate, int64_t, double, std::string, std::vector<int64_t>, VarInfo, RangeInfo,
                         std::shared_ptr<Payload>>;
using Shape = std::vector<int64_t>;

class UOp : public std::enable_shared_from_this<UOp> {
 public:
  const Op op;
  const DType dtype;
  const std::vector<UOpPtr> src;
  const Arg arg;
  const Shape shape;  // tensor-level nodes only; derived from op/src/arg by the tensor front end
  // Tensor-level nodes with a variable dim: one int64 expression per dim (CONST for static dims, BIND leaves
  // for variables; ir/sym_shape.hpp), and `shape` holds their values under those bindings. Empty when static.
  const std::vector<UOpPtr> sym_shape;
  const size_t hash;

  // The only way to make a node: returns the existing one when an equal node is alive.
  static UOpPtr make(Op op, DType dtype, std::vector<UOpPtr> src = {}, Arg arg = {}, Shape shape = {},
                     std::vector<UOpPtr> sym_shape = {});

  UOpPtr ptr() const { return shared_from_this(); }
  UOpPtr replace_src(std::vector<UOpPtr> new_src) const;

  // arg accessors (assert on the wrong alternative: that is a bug in tg, never user input)
  int64_t arg_int() const;
  double arg_float() const;
  const std::vector<int64_t>& arg_ints() const;
  const std::string& arg_str() const;
  const VarInfo& var() const;
  const RangeInfo& range() const;
  std::shared_ptr<Payload> payload() const;
  bool is_const() const { return op == Op::CONST; }
  // the value of a CONST as double (int consts converted)
  double const_value() const;

  // Value bounds of integer/bool nodes (vmin <= value <= vmax); floats get -inf..inf.
  int64_t vmin() const { return vmin_; }
  int64_t vmax() const { return vmax_; }

  std::string str(int depth = 6) const;  // short printable form for debugging and DEBUG output

  UOp(Op op, DType dtype, std::vector<UOpPtr> src, Arg arg, Shape shape, std::vector<UOpPtr> sym_shape, size_t hash);
  ~UOp();

 private:
  int64_t vmin_ = 0, vmax_ = 0;
  void compute_bounds();
};

// --- construction helpers -------------------------------------------------------------------------------------

UOpPtr const_int(DType dtype, int64_t v);
UOpPtr const_float(DType dtype, double v);  // int dtypes: truncated, NaN -> 0, saturating
int64_t saturating_int(double v);
UOpPtr const_like(const UOpPtr& like, double v);  // same dtype as `like`
UOpPtr alu(Op op, const UOpPtr& a);
UOpPtr alu(Op op, const UOpPtr& a, const UOpPtr& b);
UOpPtr alu(Op op, const UOpPtr& a, const UOpPtr& b, const UOpPtr& c);
UOpPtr cast(const UOpPtr& x, DType to);
// The identity of a reduction (0, or the dtype's lowest / highest value, exact for 64-bit integers).
UOpPtr reduce_identity(ReduceOp op, DType d);
// acc (op) v as ALU nodes, the one combine step of every reduction: MIN of floats as -max(-acc, -v) (NaN propagates
// as through MAX), of integers as a select.
UOpPtr reduce_combine(ReduceOp op, const UOpPtr& acc, const UOpPtr& v);
// `buffer` once `stmts` ran: what a load that must see their stores reads from.
UOpPtr after(const UOpPtr& buffer, std::vector<UOpPtr> stmts);

// Index arithmetic sugar (int nodes); folds constants on construction.
UOpPtr operator+(const UOpPtr& a, const UOpPtr& b);
UOpPtr operator+(const UOpPtr& a, int64_t b);
UOpPtr operator*(const UOpPtr& a, const UOpPtr& b);
UOpPtr operator*(const UOpPtr& a, int64_t b);
UOpPtr operator/(const UOpPtr& a, int64_t b);
UOpPtr operator%(const UOpPtr& a, int64_t b);
UOpPtr operator<(const UOpPtr& a, int64_t b);
UOpPtr operator&(const UOpPtr& a, const UOpPtr& b);

// Evaluate an integer graph of CONST/DEFINE_VAR/BIND/ALU at given variable values (by name; a BIND has its own
// value); nullopt if not closed.
std::optional<int64_t> eval_int(const UOpPtr& u, const std::vector<std::pair<std::string, int64_t>>& vars = {});

// Post-order list of all nodes reachable from roots (each once).
std::vector<const UOp*> toposort(std::span<const UOpPtr> roots);

// Whether `node` is reachable from `u` (an index that reads a range, a value computed from a load).
bool depends_on(const UOpPtr& u, const UOp* node);

}  // namespace tg::ir
