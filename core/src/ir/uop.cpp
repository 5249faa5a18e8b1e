// UOp interning, value bounds, construction helpers and integer evaluation.
#include "ir/uop.hpp"

#include <bit>
#include <cassert>
#include <cmath>
#include <functional>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace tg::ir {

const char* op_name(Op op) {
  static const char* names[] = {
      "BUFFER",   "CONST",      "COPY",         "CONTIGUOUS", "MULTI",  "COLLECTIVE", "BIND",    "RESHAPE",
      "PERMUTE",  "EXPAND",     "PAD",          "SHRINK",     "FLIP",   "SHRINK_VAR", "PAD_VAR", "REDUCE_AXIS",
      "SINK",     "PARAM",      "DEFINE_VAR",   "RANGE",      "REDUCE", "LOAD",       "STORE",   "VECTORIZE",
      "GEP",      "DEFINE_REG", "DEFINE_LOCAL", "END",        "AFTER",  "BARRIER",    "CUSTOM",  "CUSTOMI",
      "TILE_MMA", "WMMA",       "NEG",          "EXP2",       "LOG2",   "SIN",        "SQRT",    "RECIP",
      "TRUNC",    "CAST",       "BITCAST",      "ADD",        "SUB",    "MUL",        "IDIV",    "MOD",
      "FDIV",     "MAX",        "CMPLT",        "CMPNE",      "CMPEQ",  "AND",        "OR",      "XOR",
      "SHL",      "SHR",        "WHERE",        "MULACC",     "FMA",    "DOT4",       "LUT16"};
  static_assert(sizeof(names) / sizeof(names[0]) == static_cast<size_t>(Op::COUNT_));
  return names[static_cast<int>(op)];
}

namespace {

size_t hash_combine(size_t seed, size_t v) { return seed ^ (v + 0x9e3779b97f4a7c15ull + (seed << 6) + (seed >> 2)); }

struct ArgHash {
  size_t operator()(const Arg& a) const {
    return std::visit(
        [](const auto& v) -> size_t {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::monostate>)
            return 0;
          else if constexpr (std::is_same_v<T, int64_t>)
            return std::hash<int64_t>()(v);
          else if constexpr (std::is_same_v<T, double>)
            return std::hash<uint64_t>()(std::bit_cast<uint64_t>(v));
          else if constexpr (std::is_same_v<T, std::string>)
            return std::hash<std::string>()(v);
          else if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            size_t h = v.size();
            for (int64_t x : v) h = hash_combine(h, std::hash<int64_t>()(x));
            return h;
          } else if constexpr (std::is_same_v<T, VarInfo>) {
            return hash_combine(std::hash<std::string>()(v.name), hash_combine(v.min, v.max));
          } else if constexpr (std::is_same_v<T, RangeInfo>) {
            return hash_combine(v.id, static_cast<size_t>(v.type));
          } else {
            return std::hash<const void*>()(v.get());
          }
        },
        a);
  }
};

// Doubles are compared by bits so -0.0 and NaN consts stay distinct and interning stays exact.
bool arg_equal(const Arg& a, const Arg& b) {
  if (a.index() != b.index()) return false;
  if (auto* da = std::get_if<double>(&a))
    return std::bit_cast<uint64_t>(*da) == std::bit_cast<uint64_t>(std::get<double>(b));
  return a == b;
}

struct InternTable {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<std::weak_ptr<const UOp>>> buckets;
};

InternTable& table() {
  static auto* t = new InternTable();  // never destroyed: nodes may die during static destruction
  return *t;
}

}  // namespace

UOp::UOp(Op op_, DType dtype_, std::vector<UOpPtr> src_, Arg arg_, Shape shape_, std::vector<UOpPtr> sym_shape_,
         size_t hash_)
    : op(op_),
      dtype(dtype_),
      src(std::move(src_)),
      arg(std::move(arg_)),
      shape(std::move(shape_)),
      sym_shape(std::move(sym_shape_)),
      hash(hash_) {
  compute_bounds();
}

// Dropping the last reference to a long chain would destroy it recursively, a few frames per node (25000 chained adds
// overflowed the stack under ASan). Sources about to die go to a per-thread list instead, which the outermost ~UOp
// empties in a loop: the depth of destruction stays one node.
UOp::~UOp() {
  {
    InternTable& t = table();
    std::lock_guard lock(t.mu);
    if (auto it = t.buckets.find(hash); it != t.buckets.end()) {
      std::erase_if(it->second, [](const std::weak_ptr<const UOp>& w) { return w.expired(); });
      if (it->second.empty()) t.buckets.erase(it);
    }
  }
  // A pointer, made by the outermost destruction that defers something and freed when it is done: a thread_local
  // with a destructor would be gone when static UOps die at exit, after the main thread's thread_locals.
  thread_local std::vector<UOpPtr>* dying = nullptr;
  const bool outermost = dying == nullptr;
  // const stops applying when an object's destruction begins ([class.dtor]), so its sources may be moved out
  for (auto* list : {const_cast<std::vector<UOpPtr>*>(&src), const_cast<std::vector<UOpPtr>*>(&sym_shape)})
    for (UOpPtr& s : *list)
      if (s.use_count() == 1) {
        if (dying == nullptr) dying = new std::vector<UOpPtr>();
        dying->push_back(std::move(s));
      }
  if (!outermost || dying == nullptr) return;
  while (!dying->empty()) {
    UOpPtr last = std::move(dying->back());
    dying->pop_back();
    last.reset();  // may add its own sources to `dying`
  }
  delete dying;
  dying = nullptr;
}

UOpPtr UOp::make(Op op, DType dtype, std::vector<UOpPtr> src, Arg arg, Shape shape, std::vector<UOpPtr> sym_shape) {
  size_t h = hash_combine(static_cast<size_t>(op), static_cast<size_t>(dtype.scalar) * 131 + dtype.count);
  for (const auto& s : src) h = hash_combine(h, std::hash<const void*>()(s.get()));
  h = hash_combine(h, ArgHash()(arg));
  for (int64_t d : shape) h = hash_combine(h, std::hash<int64_t>()(d));
  for (const auto& d : sym_shape) h = hash_combine(h, std::hash<const void*>()(d.get()));

  std::vector<UOpPtr> keep_alive;  // released after the lock: dropping a node may run ~UOp, which locks
  InternTable& t = table();
  std::lock_guard lock(t.mu);
  auto& bucket = t.buckets[h];
  for (const auto& w : bucket) {
    UOpPtr cand = w.lock();
    if (!cand) continue;
    keep_alive.push_back(cand);
    if (cand->op != op || cand->dtype != dtype || cand->src.size() != src.size() || cand->shape != shape ||
        cand->sym_shape.size() != sym_shape.size())
      continue;
    bool same = true;
    for (size_t i = 0; i < src.size() && same; ++i) same = cand->src[i].get() == src[i].get();
    for (size_t i = 0; i < sym_shape.size() && same; ++i) same = cand->sym_shape[i].get() == sym_shape[i].get();
    if (same && arg_equal(cand->arg, arg)) return cand;
  }
  auto node =
      std::make_shared<UOp>(op, dtype, std::move(src), std::move(arg), std::move(shape), std::move(sym_shape), h);
  bucket.push_back(node);
  return node;
}

UOpPtr UOp::replace_src(std::vector<UOpPtr> new_src) const {
  return make(op, dtype, std::move(new_src), arg, shape, sym_shape);
}

int64_t UOp::arg_int() const { return std::get<int64_t>(arg); }
double UOp::arg_float() const { return std::get<double>(arg); }
const std::vector<int64_t>& UOp::arg_ints() const { return std::get<std::vector<int64_t>>(arg); }
const std::string& UOp::arg_str() const { return std::get<std::string>(arg); }
const VarInfo& UOp::var() const { return std::get<VarInfo>(arg); }
const RangeInfo& UOp::range() const { return std::get<RangeInfo>(arg); }
std::shared_ptr<Payload> UOp::payload() const { return std::get<std::shared_ptr<Payload>>(arg); }
double UOp::const_value() const {
  if (auto* i = std::get_if<int64_t>(&arg)) return static_cast<double>(*i);
  return std::get<double>(arg);
}

// --- bounds ---------------------------------------------------------------------------------------------------

namespace {

std::pair<int64_t, int64_t> dtype_range(DType d) {
  if (d.is_bool()) return {0, 1};
  if (d.is_float()) return {INT64_MIN, INT64_MAX};
  switch (d.itemsize()) {
    case 1:
      return d.is_unsigned() ? std::pair<int64_t, int64_t>{0, UINT8_MAX}
                             : std::pair<int64_t, int64_t>{INT8_MIN, INT8_MAX};
    case 2:
      return d.is_unsigned() ? std::pair<int64_t, int64_t>{0, UINT16_MAX}
                             : std::pair<int64_t, int64_t>{INT16_MIN, INT16_MAX};
    case 4:
      return d.is_unsigned() ? std::pair<int64_t, int64_t>{0, UINT32_MAX}
                             : std::pair<int64_t, int64_t>{INT32_MIN, INT32_MAX};
    default:
      return d.is_unsigned() ? std::pair<int64_t, int64_t>{0, INT64_MAX}
                             : std::pair<int64_t, int64_t>{INT64_MIN, INT64_MAX};
  }
}

// Bounds from candidate extremes; anything that overflowed or left the dtype falls back to the dtype's range.
std::pair<int64_t, int64_t> clamp_bounds(DType d, __int128 lo, __int128 hi) {
  auto [dlo, dhi] = dtype_range(d);
  if (lo < dlo || hi > dhi) return {dlo, dhi};
  return {static_cast<int64_t>(lo), static_cast<int64_t>(hi)};
}

}  // namespace

void UOp::compute_bounds() {
  auto [dlo, dhi] = dtype_range(dtype);
  vmin_ = dlo, vmax_ = dhi;
  if (dtype.is_float() || dtype.count != 1) return;
  // a uint64 source at its whole range may hold values past INT64_MAX, which int64 bounds cannot express (a
  // constant past it is stored negative): nothing derived from it is known
  for (const auto& x : src)
    if (x->dtype.scalar == ScalarType::UInt64 && x->dtype.count == 1 && (x->vmax() == INT64_MAX || x->vmin() < 0))
      return;
  auto set = [&](__int128 lo, __int128 hi) { std::tie(vmin_, vmax_) = clamp_bounds(dtype, lo, hi); };
  auto s = [&](int i) -> const UOp& { return *src[i]; };
  switch (op) {
    case Op::CONST:
      if (auto* i = std::get_if<int64_t>(&arg)) vmin_ = vmax_ = *i;
      return;
    case Op::DEFINE_VAR: vmin_ = var().min, vmax_ = var().max; return;
    case Op::BIND: vmin_ = s(0).vmin(), vmax_ = s(0).vmax(); return;  // every value it may be bound to
    case Op::RANGE:
      set(0, static_cast<__int128>(s(0).vmax()) - 1 < 0 ? 0 : static_cast<__int128>(s(0).vmax()) - 1);
      return;
    case Op::ADD:
      set(static_cast<__int128>(s(0).vmin()) + s(1).vmin(), static_cast<__int128>(s(0).vmax()) + s(1).vmax());
      return;
    case Op::SUB:
      set(static_cast<__int128>(s(0).vmin()) - s(1).vmax(), static_cast<__int128>(s(0).vmax()) - s(1).vmin());
      return;
    case Op::MUL: {
      __int128 c[4] = {
          static_cast<__int128>(s(0).vmin()) * s(1).vmin(), static_cast<__int128>(s(0).vmin()) * s(1).vmax(),
          static_cast<__int128>(s(0).vmax()) * s(1).vmin(), static_cast<__int128>(s(0).vmax()) * s(1).vmax()};
      set(std::min({c[0], c[1], c[2], c[3]}), std::max({c[0], c[1], c[2], c[3]}));
      return;
    }
    case Op::IDIV:
      if (s(1).vmin() > 0) {  // truncating division by a positive divisor is monotonic in the dividend
        __int128 a = s(0).vmin() / (s(0).vmin() < 0 ? s(1).vmin() : s(1).vmax());
        __int128 b = s(0).vmax() / (s(0).vmax() < 0 ? s(1).vmax() : s(1).vmin());
        set(a, b);
      }
      return;
    case Op::MOD:
      if (s(1).vmin() > 0) {
        int64_t m = s(1).vmax() - 1;
        if (s(0).vmin() >= 0)
          set(0, std::min<int64_t>(m, s(0).vmax()));
        else if (s(0).vmax() <= 0)
          set(-std::min<int64_t>(m, -s(0).vmin()), 0);
        else
          set(-m, m);
      }
      return;
    case Op::MAX: set(std::max(s(0).vmin(), s(1).vmin()), std::max(s(0).vmax(), s(1).vmax())); return;
    case Op::NEG: set(-static_cast<__int128>(s(0).vmax()), -static_cast<__int128>(s(0).vmin())); return;
    case Op::CMPLT:
      if (s(0).vmax() < s(1).vmin())
        vmin_ = vmax_ = 1;
      else if (s(0).vmin() >= s(1).vmax())
        vmin_ = vmax_ = 0;
      return;
    case Op::CMPNE:
    case Op::CMPEQ: {
      bool disjoint = s(0).vmax() < s(1).vmin() || s(0).vmin() > s(1).vmax();
      bool same_const = s(0).vmin() == s(0).vmax() && s(1).vmin() == s(1).vmax() && s(0).vmin() == s(1).vmin();
      if (disjoint)
        vmin_ = vmax_ = (op == Op::CMPNE);
      else if (same_const && !src[0]->dtype.is_float())
        vmin_ = vmax_ = (op == Op::CMPEQ);
      return;
    }
    case Op::AND:
      if (dtype.is_bool() || (s(0).vmin() >= 0 && s(1).vmin() >= 0)) set(0, std::min(s(0).vmax(), s(1).vmax()));
      if (dtype.is_bool()) set(s(0).vmin() & s(1).vmin(), s(0).vmax() & s(1).vmax());
      return;
    case Op::OR:
      if (dtype.is_bool()) set(s(0).vmin() | s(1).vmin(), s(0).vmax() | s(1).vmax());
      return;
    case Op::WHERE: set(std::min(s(1).vmin(), s(2).vmin()), std::max(s(1).vmax(), s(2).vmax())); return;
    case Op::CAST:
      if (!src[0]->dtype.is_float() && src[0]->dtype.count == 1) set(s(0).vmin(), s(0).vmax());
      return;
    default: return;
  }
}

// --- construction helpers -------------------------------------------------------------------------------------

UOpPtr const_int(DType dtype, int64_t v) {
  if (dtype.is_float()) return UOp::make(Op::CONST, dtype, {}, static_cast<double>(v));
  return UOp::make(Op::CONST, dtype, {}, v);
}
int64_t saturating_int(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v);
}

UOpPtr const_float(DType dtype, double v) {
  if (!dtype.is_float()) return UOp::make(Op::CONST, dtype, {}, saturating_int(v));
  return UOp::make(Op::CONST, dtype, {}, v);
}
UOpPtr const_like(const UOpPtr& like, double v) { return const_float(like->dtype.base(), v); }

UOpPtr alu(Op op, const UOpPtr& a) { return UOp::make(op, a->dtype, {a}); }
UOpPtr alu(Op op, const UOpPtr& a, const UOpPtr& b) {
  return UOp::make(op, is_comparison(op) ? dtypes::bool_.vec(a->dtype.count) : a->dtype, {a, b});
}
UOpPtr alu(Op op, const UOpPtr& a, const UOpPtr& b, const UOpPtr& c) {
  return UOp::make(op, op == Op::WHERE ? b->dtype : a->dtype, {a, b, c});
}
UOpPtr cast(const UOpPtr& x, DType to) {
  if (x->dtype == to) return x;
  return UOp::make(Op::CAST, to, {x});
}

UOpPtr reduce_identity(ReduceOp op, DType d) {
  if (op == ReduceOp::SUM) return const_int(d, 0);
  bool want_max = op == ReduceOp::MIN;  // MIN starts from the highest value
  if (d.is_float()) return const_float(d, want_max ? INFINITY : -INFINITY);
  if (d.is_bool()) return const_int(d, want_max ? 1 : 0);
  int bits = d.itemsize() * 8;
  uint64_t umax = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
  int64_t smax = static_cast<int64_t>(umax >> 1);
  if (d.is_unsigned()) return const_int(d, want_max ? static_cast<int64_t>(umax) : 0);
  return const_int(d, want_max ? smax : -smax - 1);
}

UOpPtr reduce_combine(ReduceOp op, const UOpPtr& acc, const UOpPtr& v) {
  if (op == ReduceOp::SUM) return alu(Op::ADD, acc, v);
  if (op == ReduceOp::MAX) return alu(Op::MAX, acc, v);
  if (acc->dtype.is_float()) return alu(Op::NEG, alu(Op::MAX, alu(Op::NEG, acc), alu(Op::NEG, v)));
  return alu(Op::WHERE, alu(Op::CMPLT, v, acc), v, acc);
}

UOpPtr after(const UOpPtr& buffer, std::vector<UOpPtr> stmts) {
  stmts.insert(stmts.begin(), buffer);
  return UOp::make(Op::AFTER, buffer->dtype, std::move(stmts), buffer->arg);
}

namespace {
bool is_int_const(const UOpPtr& u) { return u->is_const() && std::holds_alternative<int64_t>(u->arg); }
bool is_int_const(const UOpPtr& u, int64_t v) { return is_int_const(u) && u->arg_int() == v; }
}  // namespace

// Index sugar folds only what it can fold exactly: integer constants without overflow.
UOpPtr operator+(const UOpPtr& a, const UOpPtr& b) {
  if (is_int_const(a, 0)) return b;
  if (is_int_const(b, 0)) return a;
  int64_t r;
  if (is_int_const(a) && is_int_const(b) && !__builtin_add_overflow(a->arg_int(), b->arg_int(), &r))
    return const_int(a->dtype, r);
  return alu(Op::ADD, a, b);
}
UOpPtr operator+(const UOpPtr& a, int64_t b) { return a + const_int(a->dtype, b); }
UOpPtr operator*(const UOpPtr& a, const UOpPtr& b) {
  int64_t r;
  if (is_int_const(a) && is_int_const(b) && !__builtin_mul_overflow(a->arg_int(), b->arg_int(), &r))
    return const_int(a->dtype, r);
  if (is_int_const(b, 1)) return a;
  if (is_int_const(a, 1)) return b;
  if (is_int_const(a, 0) || is_int_const(b, 0)) return const_int(a->dtype, 0);
  return alu(Op::MUL, a, b);
}
UOpPtr operator*(const UOpPtr& a, int64_t b) { return a * const_int(a->dtype, b); }
UOpPtr operator/(const UOpPtr& a, int64_t b) { return b == 1 ? a : alu(Op::IDIV, a, const_int(a->dtype, b)); }
UOpPtr operator%(const UOpPtr& a, int64_t b) { return alu(Op::MOD, a, const_int(a->dtype, b)); }
UOpPtr operator<(const UOpPtr& a, int64_t b) { return alu(Op::CMPLT, a, const_int(a->dtype, b)); }
UOpPtr operator&(const UOpPtr& a, const UOpPtr& b) {
  if (is_int_const(a, 1)) return b;
  if (is_int_const(b, 1)) return a;
  return alu(Op::AND, a, b);
}

// --- evaluation -----------------------------------------------------------------------------------------------

std::optional<int64_t> eval_int(const UOpPtr& u, const std::vector<std::pair<std::string, int64_t>>& vars) {
  auto ev = [&](int i) { return eval_int(u->src[i], vars); };
  switch (u->op) {
    case Op::CONST: return std::holds_alternative<int64_t>(u->arg) ? std::optional(u->arg_int()) : std::nullopt;
    case Op::DEFINE_VAR:
      for (auto& [n, v] : vars)
        if (n == u->var().name) return v;
      return std::nullopt;
    case Op::BIND: return u->arg_int();
    default: break;
  }
  if (!is_alu(u->op)) return std::nullopt;
  std::vector<int64_t> s;
  for (size_t i = 0; i < u->src.size(); ++i) {
    auto v = ev(static_cast<int>(i));
    if (!v) return std::nullopt;
    s.push_back(*v);
  }
  auto wrap = [](__int128 v) { return static_cast<int64_t>(static_cast<uint64_t>(v)); };
  switch (u->op) {
    case Op::NEG: return wrap(-static_cast<__int128>(s[0]));
    case Op::ADD: return wrap(static_cast<__int128>(s[0]) + s[1]);
    case Op::SUB: return wrap(static_cast<__int128>(s[0]) - s[1]);
    case Op::MUL: return wrap(static_cast<__int128>(s[0]) * s[1]);
    case Op::IDIV:  // x / 0 and INT64_MIN / -1 have no value here; the device result is not ours to guess
      return s[1] == 0 || (s[1] == -1 && s[0] == INT64_MIN) ? std::nullopt : std::optional(s[0] / s[1]);
    case Op::MOD:
      if (s[1] == 0) return std::nullopt;
      return s[1] == -1 ? 0 : s[0] % s[1];
    case Op::MAX: return std::max(s[0], s[1]);
    case Op::CMPLT: return s[0] < s[1];
    case Op::CMPNE: return s[0] != s[1];
    case Op::CMPEQ: return s[0] == s[1];
    case Op::AND: return s[0] & s[1];
    case Op::OR: return s[0] | s[1];
    case Op::XOR: return s[0] ^ s[1];
    case Op::WHERE: return s[0] ? s[1] : s[2];
    case Op::CAST: {  // exact when widening a signed integer to int64 (a variable in a symbolic dim); other casts
                      // are width-dependent: folded by the symbolic rules, which know the dtypes
      DType from = u->src[0]->dtype;
      bool widen = u->dtype == dtypes::int64 && from.count == 1 && (from.is_signed_int() || from.is_bool());
      return widen ? std::optional(s[0]) : std::nullopt;
    }
    default: return std::nullopt;
  }
}

std::vector<const UOp*> toposort(std::span<const UOpPtr> roots) {
  std::vector<const UOp*> out;
  std::unordered_set<const UOp*> seen;
  std::vector<std::pair<const UOp*, size_t>> stack;
  for (const auto& r : roots) {
    if (!seen.insert(r.get()).second) continue;
    stack.push_back({r.get(), 0});
    while (!stack.empty()) {
      auto& [node, i] = stack.back();
      if (i < node->src.size()) {
        const UOp* child = node->src[i++].get();
        if (seen.insert(child).second) stack.push_back({child, 0});
        continue;
      }
      out.push_back(node);
      stack.pop_back();
    }
  }
  return out;
}

bool depends_on(const UOpPtr& u, const UOp* node) {
  for (const UOp* n : toposort(std::vector<UOpPtr>{u}))
    if (n == node) return true;
  return false;
}

std::string UOp::str(int depth) const {
  std::ostringstream os;
  os << op_name(op);
  if (op == Op::CONST)
    return os.str() + "(" + (dtype.is_float() ? std::to_string(const_value()) : std::to_string(arg_int())) + ")";
  if (op == Op::RANGE) return "r" + std::to_string(range().id);
  if (op == Op::DEFINE_VAR) return var().name;
  if (op == Op::PARAM) return "data" + std::to_string(arg_int());
  os << "." << dtype.name();
  if (depth <= 0) return os.str() + "(...)";
  os << "(";
  for (size_t i = 0; i < src.size(); ++i) os << (i ? ", " : "") << src[i]->str(depth - 1);
  return os.str() + ")";
}

}  // namespace tg::ir
