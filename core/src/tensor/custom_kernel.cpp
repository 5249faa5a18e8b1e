// CustomKernel: a thin builder over kernel-graph UOps, and its launch as a one-item schedule.
#include "tg/custom_kernel.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

#include "ir/uop.hpp"
#include "runtime/device.hpp"
#include "runtime/executor.hpp"
#include "schedule/schedule.hpp"

namespace tg {

using namespace ir;

namespace {

[[noreturn]] void bad(const std::string& msg) { throw std::invalid_argument("tg: custom kernel: " + msg); }

const UOpPtr& need(const KExpr& e, const char* what) {
  if (!e.node) bad(std::string("empty expression used as ") + what);
  return e.node;
}

KExpr binary(Op op, const KExpr& a, const KExpr& b) {
  const UOpPtr &x = need(a, "operand"), &y = need(b, "operand");
  if (x->dtype != y->dtype)
    bad(std::string(op_name(op)) + " of " + x->dtype.name() + " and " + y->dtype.name() + "; cast() one side");
  return KExpr(alu(op, x, y));
}

KExpr int_binary(Op op, const KExpr& a, const KExpr& b) {
  if (!need(a, "operand")->dtype.is_int())
    bad(std::string(op_name(op)) + " of " + a.node->dtype.name() + ": integers only");
  return binary(op, a, b);
}

}  // namespace

DType KExpr::dtype() const { return need(*this, "value")->dtype; }
KExpr KExpr::cast(DType d) const { return KExpr(ir::cast(need(*this, "value"), d)); }
KExpr KExpr::operator+(const KExpr& o) const { return binary(Op::ADD, *this, o); }
KExpr KExpr::operator-(const KExpr& o) const { return binary(Op::SUB, *this, o); }
KExpr KExpr::operator*(const KExpr& o) const { return binary(Op::MUL, *this, o); }
KExpr KExpr::operator/(const KExpr& o) const { return binary(dtype().is_float() ? Op::FDIV : Op::IDIV, *this, o); }
KExpr KExpr::operator%(const KExpr& o) const { return binary(Op::MOD, *this, o); }
KExpr KExpr::operator<(const KExpr& o) const { return binary(Op::CMPLT, *this, o); }
KExpr KExpr::operator==(const KExpr& o) const { return binary(Op::CMPEQ, *this, o); }
KExpr KExpr::operator!=(const KExpr& o) const { return binary(Op::CMPNE, *this, o); }
KExpr KExpr::operator&&(const KExpr& o) const { return binary(Op::AND, cast(dtypes::bool_), o.cast(dtypes::bool_)); }
KExpr KExpr::operator||(const KExpr& o) const { return binary(Op::OR, cast(dtypes::bool_), o.cast(dtypes::bool_)); }
KExpr KExpr::operator&(const KExpr& o) const { return int_binary(Op::AND, *this, o); }
KExpr KExpr::operator|(const KExpr& o) const { return int_binary(Op::OR, *this, o); }
KExpr KExpr::operator^(const KExpr& o) const { return int_binary(Op::XOR, *this, o); }
KExpr KExpr::operator<<(const KExpr& o) const { return int_binary(Op::SHL, *this, o); }
KExpr KExpr::operator>>(const KExpr& o) const { return int_binary(Op::SHR, *this, o); }
KExpr KExpr::operator&(int64_t o) const { return *this & KExpr(const_int(dtype(), o)); }
KExpr KExpr::operator<<(int64_t o) const { return *this << KExpr(const_int(dtype(), o)); }
KExpr KExpr::operator>>(int64_t o) const { return *this >> KExpr(const_int(dtype(), o)); }
KExpr KExpr::operator-(int64_t o) const { return *this - KExpr(const_int(dtype(), o)); }
KExpr KExpr::bitcast(DType d) const {
  DType from = need(*this, "value")->dtype;
  if (from.itemsize() != d.itemsize() || from.count != d.count)
    bad("bitcast of " + from.name() + " to " + d.name() + " changes the size");
  return KExpr(UOp::make(Op::BITCAST, d, {node}));
}
KExpr KExpr::operator+(int64_t o) const { return *this + KExpr(const_int(dtype(), o)); }
KExpr KExpr::operator*(int64_t o) const { return *this * KExpr(const_int(dtype(), o)); }
KExpr KExpr::operator<(int64_t o) const { return *this < KExpr(const_int(dtype(), o)); }
KExpr KExpr::max(const KExpr& a, const KExpr& b) { return binary(Op::MAX, a, b); }
KExpr KExpr::exp2() const {
  if (!dtype().is_float()) bad(std::string("exp2 of ") + dtype().name() + ": floats only");
  return KExpr(alu(Op::EXP2, node));
}
KExpr KExpr::where(const KExpr& c, const KExpr& a, const KExpr& b) {
  if (a.dtype() != b.dtype()) bad("where of " + a.dtype().name() + " and " + b.dtype().name());
  return KExpr(
      alu(Op::WHERE, need(c, "condition")->dtype.is_bool() ? c.node : c.cast(dtypes::bool_).node, a.node, b.node));
}

KExpr KExpr::fma(const KExpr& a, const KExpr& b, const KExpr& c) {
  if (a.dtype() != b.dtype() || a.dtype() != c.dtype() || !a.dtype().is_float())
    bad("fma needs three operands of one float dtype, got " + a.dtype().name() + ", " + b.dtype().name() + " and " +
        c.dtype().name());
  return KExpr(alu(Op::FMA, need(a, "fma operand"), need(b, "fma operand"), need(c, "fma operand")));
}

KExpr KExpr::dot4(const KExpr& acc, const KExpr& u, const KExpr& s, bool narrow) {
  if (acc.dtype() != dtypes::int32 || u.dtype() != dtypes::int32 || s.dtype() != dtypes::int32)
    bad("dot4 needs three int32 operands, got " + acc.dtype().name() + ", " + u.dtype().name() + " and " +
        s.dtype().name());
  if (!narrow) return KExpr(alu(Op::DOT4, acc.node, u.node, s.node));
  return KExpr(UOp::make(Op::DOT4, acc.node->dtype, {acc.node, u.node, s.node}, int64_t{TG_KIR_DOT4_NARROW}));
}

KExpr KExpr::lut16(const KExpr& idx, const std::array<uint8_t, 16>& table) {
  if (idx.dtype() != dtypes::int32) bad("lut16 indexes with an int32 word, got " + idx.dtype().name());
  std::vector<UOpPtr> src{need(idx, "lut16 index")};
  for (int w = 0; w < 4; ++w) {
    uint32_t word = 0;
    for (int b = 0; b < 4; ++b) word |= uint32_t{table[static_cast<size_t>(4 * w + b)]} << (8 * b);
    src.push_back(const_int(dtypes::int32, static_cast<int32_t>(word)));
  }
  return KExpr(UOp::make(Op::LUT16, dtypes::int32, std::move(src)));
}

struct CustomKernel::Impl {
  std::string name;
  std::vector<UOpPtr> statements, global_ranges, local_ranges;
  std::vector<std::pair<int, DType>> buffers;
  std::vector<UOpPtr> vars;  // DEFINE_VARs read, in declaration order
  int64_t next_id = 0;
  bool parallel = false;
  // written_inputs() per output count: the walk over the whole graph is done once, not per call (the LLM calls
  // its kernels hundreds of times a forward pass); the statements no longer change once the kernel runs
  std::mutex written_mu;
  std::map<size_t, std::vector<int>> written;
};

namespace {

// The parameters past the n_outputs outputs that the kernel's statements store into (an in-place update).
std::vector<int> written_inputs(const std::vector<UOpPtr>& statements, size_t n_outputs) {
  std::vector<int> written;
  std::set<const UOp*> seen;
  std::function<void(const UOpPtr&)> scan = [&](const UOpPtr& u) {
    if (!seen.insert(u.get()).second) return;
    const UOp* target = u->op == Op::STORE || u->op == Op::TILE_MMA ? u->src[0].get() : nullptr;
    while (target && target->op == Op::AFTER) target = target->src[0].get();  // a store through after(buffer)
    if (target && target->op == Op::PARAM) {
      int idx = static_cast<int>(std::get<int64_t>(target->arg));
      if (idx >= static_cast<int>(n_outputs) && std::find(written.begin(), written.end(), idx) == written.end())
        written.push_back(idx);
    }
    for (const auto& s : u->src) scan(s);
  };
  for (const auto& st : statements) scan(st);
  return written;
}

}  // namespace

CustomKernel::CustomKernel(std::string name) : impl_(std::make_shared<Impl>()) {
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_'))
    bad("name '" + name + "' is not an identifier");
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') bad("name '" + name + "' is not an identifier");
  impl_->name = std::move(name);
}

KExpr CustomKernel::buffer(int index, DType dtype) {
  if (index < 0) bad("buffer index " + std::to_string(index));
  for (auto& [i, d] : impl_->buffers)
    if (i == index && d != dtype)
      bad("buffer " + std::to_string(index) + " declared as " + d.name() + " and " + dtype.name());
  impl_->buffers.emplace_back(index, dtype);
  return KExpr(UOp::make(Op::PARAM, dtype, {}, static_cast<int64_t>(index)));
}

KExpr CustomKernel::range(int64_t n, Axis axis) {
  if (n < 1) bad("range of size " + std::to_string(n));
  static constexpr AxisType map[] = {AxisType::GLOBAL, AxisType::LOOP,   AxisType::REDUCE,
                                     AxisType::UPCAST, AxisType::UNROLL, AxisType::LOCAL};
  UOpPtr r = UOp::make(Op::RANGE, dtypes::int64, {const_int(dtypes::int64, n)},
                       RangeInfo{impl_->next_id++, map[static_cast<int>(axis)]});
  if (axis == Axis::GLOBAL) impl_->global_ranges.push_back(r);
  if (axis == Axis::LOCAL) impl_->local_ranges.push_back(r);
  return KExpr(r);
}

KExpr CustomKernel::constant(double v, DType dtype) { return KExpr(const_float(dtype, v)); }

KExpr CustomKernel::variable(const Variable& v) {
  for (const auto& u : impl_->vars)
    if (u->var().name == v.name() && u != v.node()) bad("two different variables named '" + v.name() + "'");
  if (std::find(impl_->vars.begin(), impl_->vars.end(), v.node()) == impl_->vars.end()) impl_->vars.push_back(v.node());
  return KExpr(v.node());
}

KExpr CustomKernel::load(const KExpr& buf, const KExpr& idx) {
  const UOpPtr& b = need(buf, "buffer");
  return KExpr(UOp::make(Op::LOAD, b->dtype,
                         {b, need(idx, "index")->dtype == dtypes::int64 ? idx.node : idx.cast(dtypes::int64).node}));
}

KExpr CustomKernel::load(const KExpr& buf, const KExpr& idx, const KExpr& gate) {
  KExpr l = load(buf, idx);
  return KExpr(UOp::make(Op::LOAD, l.node->dtype, {l.node->src[0], l.node->src[1], gate.cast(dtypes::bool_).node}));
}

KExpr CustomKernel::load_packed(const KExpr& bytes, const KExpr& idx, DType dtype) {
  const UOpPtr& b = need(bytes, "buffer");
  if (b->op != Op::PARAM || b->dtype != dtypes::uint8) bad("load_packed reads a uint8 buffer, not " + b->dtype.name());
  if (dtype.count != 1 || (dtype.itemsize() != 2 && dtype.itemsize() != 4 && dtype.itemsize() != 8))
    bad("load_packed of " + dtype.name() + ": only 2-, 4- and 8-byte scalars are packed");
  KExpr l = load(bytes, idx);
  return KExpr(UOp::make(Op::LOAD, dtype, {l.node->src[0], l.node->src[1]}));
}

KExpr CustomKernel::reduce(const KExpr& value, Reduce op, const std::vector<KExpr>& ranges) {
  std::vector<UOpPtr> src{need(value, "reduced value")};
  for (const auto& r : ranges) {
    if (need(r, "range")->op != Op::RANGE) bad("reduce over something that is not a range");
    src.push_back(r.node);
  }
  return KExpr(UOp::make(Op::REDUCE, value.dtype(), std::move(src), static_cast<int64_t>(op)));
}

// The id keeps two arrays of the same type and size distinct (nodes are hash-consed).
KExpr CustomKernel::reg(DType dtype, int64_t size) {
  if (size < 1) bad("register array of size " + std::to_string(size));
  return KExpr(UOp::make(Op::DEFINE_REG, dtype, {}, std::vector<int64_t>{size, impl_->next_id++}));
}

KExpr CustomKernel::local(DType dtype, int64_t size) {
  if (size < 1) bad("local array of size " + std::to_string(size));
  return KExpr(UOp::make(Op::DEFINE_LOCAL, dtype, {}, std::vector<int64_t>{size, impl_->next_id++}));
}

KExpr CustomKernel::store(const KExpr& buf, const KExpr& idx, const KExpr& value) {
  const UOpPtr& b = need(buf, "buffer");
  if (b->op == Op::PARAM || b->op == Op::DEFINE_REG || b->op == Op::DEFINE_LOCAL || b->op == Op::AFTER) {
    if (value.dtype() != b->dtype) bad("storing " + value.dtype().name() + " into a " + b->dtype.name() + " buffer");
    return KExpr(UOp::make(Op::STORE, b->dtype, {b, idx.cast(dtypes::int64).node, value.node}));
  }
  bad("store into something that is not a buffer");
}

KExpr CustomKernel::store(const KExpr& buf, const KExpr& idx, const KExpr& value, const KExpr& gate) {
  KExpr s = store(buf, idx, value);
  std::vector<UOpPtr> src = s.node->src;
  src.push_back(gate.cast(dtypes::bool_).node);
  return KExpr(UOp::make(Op::STORE, s.node->dtype, std::move(src)));
}

KExpr CustomKernel::loop(const std::vector<KExpr>& statements, const std::vector<KExpr>& ranges) {
  std::vector<UOpPtr> src;
  for (const auto& s : statements) src.push_back(need(s, "statement"));
  for (const auto& r : ranges) {
    if (need(r, "range")->op != Op::RANGE) bad("loop over something that is not a range");
    src.push_back(r.node);
  }
  return KExpr(UOp::make(Op::END, dtypes::bool_, std::move(src), static_cast<int64_t>(statements.size())));
}

KExpr CustomKernel::after(const KExpr& buf, const std::vector<KExpr>& statements) {
  std::vector<UOpPtr> src{need(buf, "buffer")};
  for (const auto& s : statements) src.push_back(need(s, "statement"));
  return KExpr(UOp::make(Op::AFTER, buf.node->dtype, std::move(src), buf.node->arg));
}

KExpr CustomKernel::barrier(const std::vector<KExpr>& statements) {
  std::vector<UOpPtr> src;
  for (const auto& s : statements) src.push_back(need(s, "statement"));
  return KExpr(UOp::make(Op::BARRIER, dtypes::bool_, std::move(src)));
}

namespace {

// The variants as one node argument: "lang\0code\0lang\0code" (hash-consing compares whole strings).
UOpPtr inline_code(Op op, DType dtype, const CustomKernel::Code& code, const std::vector<KExpr>& args) {
  if (code.empty()) bad("inline code without any language variant");
  if (args.size() > 10) bad("inline code takes at most 10 operands ({0}..{9}), got " + std::to_string(args.size()));
  std::string variants;
  for (const auto& [lang, snippet] : code) {
    if (lang.empty() || lang.find('\0') != std::string::npos || snippet.find('\0') != std::string::npos)
      bad("inline code: a language name is empty, or a name or snippet holds a NUL byte");
    variants += lang + '\0' + snippet + '\0';
  }
  std::vector<UOpPtr> src;
  for (const auto& a : args) src.push_back(need(a, "inline code operand"));
  return UOp::make(op, dtype, std::move(src), variants);
}

}  // namespace

KExpr CustomKernel::inline_expr(DType dtype, const Code& code, const std::vector<KExpr>& args) {
  return KExpr(inline_code(Op::CUSTOMI, dtype, code, args));
}

KExpr CustomKernel::inline_stmt(const Code& code, const std::vector<KExpr>& args) {
  return KExpr(inline_code(Op::CUSTOM, dtypes::bool_, code, args));
}

KExpr CustomKernel::tile_mma(const TileOperand& c, const TileOperand& a, const TileOperand& b, const KExpr& steps,
                             int m_tiles, int n_tiles, bool accumulate) {
  const DType cd = need(c.buffer, "tile_mma's C")->dtype, ad = need(a.buffer, "tile_mma's A")->dtype;
  const DType want = cd == dtypes::float32 ? dtypes::bfloat16 : dtypes::int8;
  if ((cd != dtypes::float32 && cd != dtypes::int32) || ad != want || need(b.buffer, "tile_mma's B")->dtype != want)
    bad("tile_mma takes float32 C from bfloat16 A and B, or int32 C from int8 A and B; got " + cd.name() + " from " +
        ad.name() + " and " + b.buffer.node->dtype.name());
  if (m_tiles < 1 || m_tiles > 2 || n_tiles < 1 || n_tiles > 2)
    bad("tile_mma's C is 16 or 32 rows by 16 or 32 columns; got " + std::to_string(16 * m_tiles) + " by " +
        std::to_string(16 * n_tiles));
  std::vector<UOpPtr> src;
  for (const TileOperand* o : {&c, &a, &b}) {
    src.push_back(o->buffer.node);
    for (const KExpr* e : {&o->index, &o->stride}) {
      if (!need(*e, "tile_mma index or stride")->dtype.is_int())
        bad("tile_mma's indices and strides are integers, got " + e->dtype().name());
      src.push_back(e->node);
    }
  }
  if (!need(steps, "tile_mma steps")->dtype.is_int())
    bad("tile_mma's steps are an integer, got " + steps.dtype().name());
  src.push_back(steps.node);
  return KExpr(UOp::make(Op::TILE_MMA, cd, std::move(src), int64_t{m_tiles | n_tiles << 4 | (accumulate ? 256 : 0)}));
}

bool CustomKernel::has_matrix_unit(const std::string& device, DType dtype) {
  const tg_renderer_caps& caps = rt::Device::get(device).caps();
  const auto d = static_cast<uint32_t>(dtype.scalar);
  return (caps.dtypes >> d & 1u) && (caps.ops[d] >> TG_KIR_TILE_MMA & 1u);
}

void CustomKernel::run(const KExpr& statement) {
  impl_->statements.push_back(need(statement, "statement"));
  std::lock_guard lock(impl_->written_mu);
  impl_->written.clear();
}

CustomKernel& CustomKernel::parallel(bool on) {
  impl_->parallel = on;
  return *this;
}

std::vector<Tensor> CustomKernel::operator()(const std::vector<std::pair<Shape, DType>>& outputs,
                                             const std::vector<Tensor>& inputs,
                                             const std::vector<BoundVariable>& vars) const {
  if (impl_->statements.empty()) bad(impl_->name + " has no statements (add them with run())");
  // inputs the kernel stores into are writable parameters (everything else stays read-only)
  std::vector<int> written;
  {
    std::lock_guard lock(impl_->written_mu);
    auto it = impl_->written.find(outputs.size());
    if (it == impl_->written.end())
      it = impl_->written.emplace(outputs.size(), written_inputs(impl_->statements, outputs.size())).first;
    written = it->second;
  }
  for (int idx : written) {
    const size_t in = static_cast<size_t>(idx) - outputs.size();
    // an in-place store must land in the caller's buffer: a lazy input would be realized into a temporary
    if (in < inputs.size() && inputs[in].node()->op != Op::BUFFER)
      bad(impl_->name + " stores into input " + std::to_string(idx) +
          ", which is not a realized buffer (realize() it first: the store would be lost)");
  }
  std::string device = inputs.empty() ? default_device() : inputs[0].device();
  std::vector<Tensor> outs;
  std::vector<std::shared_ptr<rt::Buffer>> bufs;
  for (const auto& [shape, dtype] : outputs) {
    outs.push_back(Tensor::empty(shape, dtype, device));
    bufs.push_back(rt::buffer_of(*outs.back().node()));
  }
  for (Tensor t : inputs) {
    if (t.device() != device) bad(impl_->name + " inputs are on " + device + " and " + t.device());
    t.realize();
    bufs.push_back(rt::buffer_of(*t.node()));
  }
  if (bufs.empty()) bad(impl_->name + " has neither outputs nor inputs");
  for (int idx : written)
    if (idx < static_cast<int>(bufs.size()) && bufs[static_cast<size_t>(idx)]->is_adopted_host_memory())
      bad(impl_->name + " stores into input " + std::to_string(idx) +
          ", which is read-only host memory (Tensor::from_host_memory)");
  for (const auto& [i, d] : impl_->buffers) {
    if (i >= static_cast<int>(bufs.size()))
      bad(impl_->name + " uses buffer " + std::to_string(i) + " but was called with " + std::to_string(bufs.size()) +
          " tensors");
    if (bufs[i]->dtype() != d)
      bad(impl_->name + " declares buffer " + std::to_string(i) + " as " + d.name() + ", got " +
          bufs[i]->dtype().name());
  }
  // a schedule of one item whose every buffer is the caller's (an input slot)
  sched::Schedule s;
  for (const auto& b : bufs)
    s.slots.push_back({sched::BufferSlot::Kind::INPUT, b->dtype(), b->numel(), b->device_name()});
  sched::ScheduleItem item;
  for (size_t i = 0; i < bufs.size(); ++i) item.slots.push_back(static_cast<int>(i));
  item.kernel.written_inputs = written;
  // kernel params after the buffers: the variables sorted by name, as the scheduler orders them
  std::vector<UOpPtr> declared = impl_->vars;
  std::sort(declared.begin(), declared.end(),
            [](const UOpPtr& a, const UOpPtr& b) { return a->var().name < b->var().name; });
  for (const auto& d : declared) {
    auto it = std::find_if(vars.begin(), vars.end(), [&](const BoundVariable& b) { return b.var().node() == d; });
    if (it == vars.end()) bad(impl_->name + " reads variable '" + d->var().name + "' but no value was bound for it");
    item.kernel.vars.push_back(d);
    item.var_vals.push_back(it->value());
  }
  for (const auto& b : vars)
    if (std::find(declared.begin(), declared.end(), b.var().node()) == declared.end())
      bad(impl_->name + " was given variable '" + b.var().name() + "', which it does not read");
  item.kernel.sink = UOp::make(Op::SINK, dtypes::bool_, impl_->statements);
  item.kernel.out_ranges = impl_->global_ranges;
  item.kernel.local_ranges = impl_->local_ranges;
  item.kernel.name = impl_->name;
  item.kernel.n_outputs = static_cast<int>(outputs.size());
  item.kernel.custom = true;
  item.kernel.parallel = impl_->parallel;
  sched::describe_params(item, s.slots);
  s.items.push_back(std::move(item));
  rt::run_schedule(s, bufs);
  return outs;
}

}  // namespace tg

namespace tg {
std::vector<Tensor> Tensor::custom_kernel(const CustomKernel& k, const std::vector<std::pair<Shape, DType>>& outputs,
                                          const std::vector<Tensor>& inputs) {
  return k(outputs, inputs);
}
}  // namespace tg
