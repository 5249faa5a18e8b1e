// The scheduler: walks a tensor graph from each realize point, carrying the output index of every node
// (movement ops rewrite the index by the rules in index_folding.cpp, PAD adds a validity mask), and emits one
// kernel per realized node.
// A REDUCE_AXIS fuses into its consumer unless it is reached through an EXPAND (then it would be recomputed
// for every broadcast element) or has several consumers; such reduces are realized into their own kernel.
// A symbolic dim becomes a loop to an expression of DEFINE_VARs (the kernel does not depend on the values,
// which travel with the launch) and its buffers are sized for the variables' max.
#include "schedule/schedule.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "ir/sym_shape.hpp"
#include "ir/symbolic.hpp"
#include "schedule/index_folding.hpp"
#include "tg/error.hpp"

namespace tg::sched {

using namespace ir;

namespace {

// Elements a buffer for this node needs: every dim at its max.
int64_t max_numel(const UOp& node) {
  int64_t n = 1;
  for (const auto& d : dims_of(node)) n *= dim_max(d);
  return n;
}

// The device a graph computes on: that of any buffer it reads or copy it makes, not looking below a copy (whose
// source is on another device); "" for a graph of constants.
std::string graph_device(const UOpPtr& node) {
  std::vector<const UOp*> todo{node.get()};
  std::unordered_set<const UOp*> seen;
  while (!todo.empty()) {
    const UOp* u = todo.back();
    todo.pop_back();
    if (u->op == Op::BUFFER) return u->payload()->device_name();
    if (u->op == Op::COPY) return u->arg_str();
    for (const auto& x : u->src)
      if (seen.insert(x.get()).second) todo.push_back(x.get());
  }
  return "";
}

class Scheduler;

// The schedule being built, its input slots by buffer, and one scheduler per device it computes on: a node is
// realized once per device however many copies read it (an allreduce copies one partial to every other device).
struct Building {
  Schedule out;
  std::unordered_map<const Payload*, int> input_slot;
  std::vector<UOpPtr> roots;
  std::map<std::string, std::unique_ptr<Scheduler>> by_device;
  Scheduler& on(const std::string& device);

  int add_slot(BufferSlot::Kind kind, DType dtype, int64_t numel, const std::string& device) {
    out.slots.push_back({kind, dtype, numel, device});
    return static_cast<int>(out.slots.size()) - 1;
  }
  int input(const UOp& buffer) { return input_slot.at(buffer.payload().get()); }
};

class Scheduler {
 public:
  Scheduler(const std::vector<UOpPtr>& roots, std::string device, Building& b) : device_(std::move(device)), b_(b) {
    auto order = toposort(roots);
    for (const UOp* u : order)
      for (const auto& x : u->src) ++consumers_[x.get()];
    // has_reduce_: a reduction would be fused somewhere below this node. Below an EXPAND, or below a shared
    // node that is realized on its own, it would not, so those do not make this node expensive.
    for (const UOp* u : order) {
      bool r = u->op == Op::REDUCE_AXIS;
      for (const auto& x : u->src) r |= has_reduce_[x.get()] && !shared_realize(x.get());
      has_reduce_[u] = r && u->op != Op::BUFFER && u->op != Op::EXPAND;
    }
    // a chain of ops fused into one kernel deeper than kMaxFusedDepth is cut into kernels that deep (built
    // recursively, a deeper one would overflow the stack: 25000 chained adds did)
    std::unordered_map<const UOp*, int> depth;
    for (const UOp* u : order) {
      int d = 0;
      for (const auto& x : u->src) d = std::max(d, depth[x.get()]);
      const bool own_kernel = u->op == Op::BUFFER || u->op == Op::COPY || u->op == Op::COLLECTIVE ||
                              u->op == Op::CONTIGUOUS || shared_realize(u);
      depth[u] = own_kernel ? 0 : d + 1;
      if (depth[u] >= kMaxFusedDepth && !is_movement(u->op)) cuts_.push_back(u->ptr()), cut_.insert(u), depth[u] = 0;
    }
  }
  static constexpr int kMaxFusedDepth = 1000;
  std::vector<UOpPtr> cuts_;  // realized on their own, deepest first (create_schedule)
  std::unordered_set<const UOp*> cut_;

  // A shared subgraph that contains a fused reduction is computed once into its own buffer, not per consumer.
  bool shared_realize(const UOp* u) { return consumers_[u] > 1 && has_reduce_[u] && !is_movement(u->op); }

  // The slot holding the node's value: its kernel's output (built here once), or the buffer it already is.
  int realize(const UOpPtr& node) {
    if (node->op == Op::BUFFER) return b_.input(*node);
    if (auto it = done_.find(node.get()); it != done_.end()) return it->second;
    if (node->op == Op::COPY) return realize_copy(node);
    if (node->op == Op::COLLECTIVE) return realize_collective(node);
    UOpPtr body = node->op == Op::CONTIGUOUS ? node->src[0] : node;
    if (body->op == Op::BUFFER) return b_.input(*body);  // contiguous of a realized buffer is that buffer

    KernelBuilder kb{*this, body.get()};
    const int out = b_.add_slot(BufferSlot::Kind::TEMP, node->dtype, max_numel(*node), device_);
    kb.bufs.push_back(out);
    std::vector<UOpPtr> idx;
    Dims dims = kb.kdims(*node);
    for (const auto& d : dims) idx.push_back(kb.new_range(d, AxisType::GLOBAL, true));
    UOpPtr value = kb.build(body, idx, const_int(dtypes::bool_, 1), false);
    UOpPtr out_param = UOp::make(Op::PARAM, node->dtype, {}, int64_t{0});
    UOpPtr store = UOp::make(Op::STORE, node->dtype, {out_param, simplify(linear_index(idx, dims)), value});
    ScheduleItem item;
    item.kernel.sink = UOp::make(Op::SINK, dtypes::bool_, {store});
    item.kernel.out_ranges = kb.out_ranges;
    item.kernel.name = kernel_name(dims, kb.has_reduce);
    std::sort(kb.vars.begin(), kb.vars.end(),
              [](const auto& a, const auto& b) { return a.first->var().name < b.first->var().name; });
    for (auto& [v, val] : kb.vars) item.kernel.vars.push_back(v), item.var_vals.push_back(val);
    item.slots = std::move(kb.bufs);
    describe_params(item, b_.out.slots);
    b_.out.items.push_back(std::move(item));
    done_[node.get()] = out;
    keep_.push_back(node);
    return out;
  }

  // The source realized here, then combined with the other ranks' into a buffer of its own.
  int realize_collective(const UOpPtr& node) {
    const int src_slot = realize(node->src[0]);
    const int out = b_.add_slot(BufferSlot::Kind::TEMP, node->dtype, max_numel(*node), device_);
    ScheduleItem item;
    item.kind = ScheduleItem::Kind::COLLECTIVE;
    item.kernel.name = node->arg_str();
    item.slots = {out, src_slot};
    b_.out.items.push_back(std::move(item));
    done_[node.get()] = out;
    keep_.push_back(node);
    return out;
  }

 private:
  std::string device_;
  Building& b_;
  std::unordered_map<const UOp*, int> consumers_;
  std::unordered_map<const UOp*, bool> has_reduce_;
  std::unordered_map<const UOp*, int> done_;
  std::vector<UOpPtr> keep_;

  // A graph that reads no buffer (only constants) is computed where it is copied to, without a copy.
  int realize_copy(const UOpPtr& node) {
    const UOpPtr& src = node->src[0];
    const std::string from = graph_device(src), to = node->arg_str();
    const int src_slot = b_.on(from.empty() ? to : from).realize(src);
    if (from.empty() || from == to) return done_[node.get()] = src_slot;
    const int out = b_.add_slot(BufferSlot::Kind::TEMP, node->dtype, max_numel(*node), to);
    ScheduleItem item;
    item.kind = ScheduleItem::Kind::COPY;
    item.slots = {out, src_slot};
    b_.out.items.push_back(std::move(item));
    done_[node.get()] = out;
    keep_.push_back(node);
    return out;
  }

  // symbolic dims by their expression, spelled as an identifier: start_pos+1 -> start_pos_1
  static std::string kernel_name(const Dims& dims, bool reduce) {
    std::string n = reduce ? "r" : "E";
    for (const auto& d : dims) {
      std::string s = dim_str(d);
      std::replace_if(s.begin(), s.end(), [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
      n += "_" + s;
    }
    return n;
  }

  struct KernelBuilder {
    Scheduler& s;
    const UOp* root;
    std::vector<int> bufs;  // slots, in parameter order
    std::vector<UOpPtr> out_ranges;
    bool has_reduce = false;
    int64_t next_range = 0;
    // (node, valid, expanded, index...) -> built value. The key holds raw pointers, so memo_alive keeps the key's
    // nodes alive: an index node freed after its build could otherwise come back at the same address as a
    // different one, and the memo would answer for it (a load of x[i // 2] stood in for x[i % 2]; found by
    // tg-difftest, and poisoned the disk schedule cache with the wrong kernel)
    std::map<std::vector<const void*>, UOpPtr> memo;
    std::vector<UOpPtr> memo_alive;
    std::vector<std::pair<UOpPtr, int64_t>> vars;  // DEFINE_VAR and its bound value

    // BIND -> its DEFINE_VAR (the kernel stays value independent); the value travels with the launch
    UOpPtr bind(const UOpPtr& b) {
      const UOpPtr& v = b->src[0];
      for (auto& [var, val] : vars) {
        if (var->var().name != v->var().name) continue;
        if (var.get() != v.get() || val != b->arg_int())
          throw Error("tg: variable " + v->var().name + " is bound to two values (" + std::to_string(val) + " and " +
                      std::to_string(b->arg_int()) + ") in one kernel");
        return v;
      }
      vars.emplace_back(v, b->arg_int());
      return v;
    }

    // a dim in the kernel: its variables as DEFINE_VARs (their values recorded for the launch)
    UOpPtr kdim(const UOpPtr& d) {
      return map_binds(d, [this](const UOpPtr& b) { return bind(b); });
    }
    Dims kdims(const UOp& node) {
      Dims ds = dims_of(node);
      for (auto& d : ds) d = kdim(d);
      return ds;
    }

    UOpPtr new_range(const UOpPtr& size, AxisType t, bool output) {
      UOpPtr r = UOp::make(Op::RANGE, dtypes::int64, {size}, RangeInfo{next_range++, t});
      if (output) out_ranges.push_back(r);
      return is_one(size) ? const_int(dtypes::int64, 0) : r;
    }

    UOpPtr param_for(int slot) {
      const DType d = s.b_.out.slots[static_cast<size_t>(slot)].dtype;
      for (size_t i = 0; i < bufs.size(); ++i)
        if (bufs[i] == slot) return UOp::make(Op::PARAM, d, {}, static_cast<int64_t>(i));
      bufs.push_back(slot);
      return UOp::make(Op::PARAM, d, {}, static_cast<int64_t>(bufs.size() - 1));
    }

    UOpPtr load(int slot, const std::vector<UOpPtr>& idx, const Dims& shape, const UOpPtr& valid) {
      const BufferSlot& b = s.b_.out.slots[static_cast<size_t>(slot)];
      if (b.device != s.device_)
        throw Error("tg: kernel on " + s.device_ + " reads a tensor on " + b.device + "; copy it first with .to(\"" +
                    s.device_ + "\")");
      UOpPtr index = simplify(linear_index(idx, shape));
      UOpPtr v = simplify(valid);
      std::vector<UOpPtr> src = {param_for(slot), index};
      if (!(v->op == Op::CONST && v->arg_int() == 1)) src.push_back(v);
      return UOp::make(Op::LOAD, b.dtype, std::move(src));
    }

    UOpPtr build(const UOpPtr& node, const std::vector<UOpPtr>& idx, const UOpPtr& valid, bool expanded) {
      std::vector<const void*> key{node.get(), valid.get(), reinterpret_cast<const void*>(expanded)};
      for (auto& i : idx) key.push_back(i.get());
      if (auto it = memo.find(key); it != memo.end()) return it->second;
      UOpPtr out = build_uncached(node, idx, valid, expanded);
      memo.emplace(std::move(key), out);
      memo_alive.insert(memo_alive.end(), idx.begin(), idx.end());
      memo_alive.push_back(valid);
      return out;
    }

    UOpPtr build_uncached(const UOpPtr& node, const std::vector<UOpPtr>& idx, const UOpPtr& valid, bool expanded) {
      Dims shape = kdims(*node);
      if (node.get() != root && (s.shared_realize(node.get()) || s.cut_.count(node.get())))
        return load(s.realize(node), idx, shape, valid);
      if (node->op == Op::BUFFER) return load(s.b_.input(*node), idx, shape, valid);
      if (node->op == Op::CONST) return node->shape.empty() ? node : UOp::make(Op::CONST, node->dtype, {}, node->arg);
      if (node->op == Op::COPY || node->op == Op::COLLECTIVE || node->op == Op::CONTIGUOUS)
        return load(s.realize(node), idx, shape, valid);
      if (auto f = fold_index(*node, idx, shape, [this](const UOpPtr& d) { return kdim(d); })) {
        // a padded source is read only inside the padding's bounds (the gate), and the output is 0 outside them
        if (!f->cond) return build(node->src[0], f->idx, valid, expanded || f->expanded);
        UOpPtr inner = build(node->src[0], f->idx, simplify(valid & f->cond), expanded || f->expanded);
        return simplify(alu(Op::WHERE, f->cond, inner, const_float(node->dtype, 0)));
      }
      if (node->op == Op::BIND) return cast(bind(node), node->dtype);
      if (node->op == Op::REDUCE_AXIS) return build_reduce(node, idx, shape, valid, expanded);
      if (!is_alu(node->op)) throw Error(std::string("tg: scheduler cannot handle ") + op_name(node->op));
      std::vector<UOpPtr> src;
      for (const auto& x : node->src) src.push_back(build(x, idx, valid, expanded));
      return UOp::make(node->op, node->dtype, std::move(src), node->arg);
    }

    // A reduction fuses here as REDUCE over new ranges, unless it is broadcast or read twice: then it is loaded
    // from its own kernel. The kernel's own root is built here, not loaded (it is what s.realize is building).
    UOpPtr build_reduce(const UOpPtr& node, const std::vector<UOpPtr>& idx, const Dims& shape, const UOpPtr& valid,
                        bool expanded) {
      if (node.get() != root && (expanded || s.consumers_[node.get()] > 1))
        return load(s.realize(node), idx, shape, valid);
      has_reduce = true;
      const auto& a = node->arg_ints();
      Dims in = kdims(*node->src[0]);
      for (size_t k = 1; k < a.size(); ++k)  // empty reduction (a symbolic one is an empty loop)
        if (is_static(in[a[k]]) && in[a[k]]->arg_int() == 0)
          return reduce_identity(static_cast<ReduceOp>(a[0]), node->dtype);
      std::vector<UOpPtr> nidx = idx, ranges;
      for (size_t k = 1; k < a.size(); ++k) {
        UOpPtr r = new_range(in[a[k]], AxisType::REDUCE, false);
        nidx[a[k]] = r;
        if (r->op == Op::RANGE) ranges.push_back(r);
      }
      UOpPtr inner = build(node->src[0], nidx, valid, false);
      if (ranges.empty()) return inner;
      std::vector<UOpPtr> src{inner};
      src.insert(src.end(), ranges.begin(), ranges.end());
      return UOp::make(Op::REDUCE, node->dtype, std::move(src), a[0]);
    }
  };
};

}  // namespace

size_t Schedule::n_inputs() const {
  size_t n = 0;
  while (n < slots.size() && slots[n].kind == BufferSlot::Kind::INPUT) ++n;
  return n;
}

void describe_params(ScheduleItem& item, const std::vector<BufferSlot>& slots) {
  item.kernel.params.clear();
  if (item.kind != ScheduleItem::Kind::KERNEL) return;
  for (int s : item.slots)
    item.kernel.params.push_back({slots.at(static_cast<size_t>(s)).dtype, slots.at(static_cast<size_t>(s)).numel});
}

std::vector<std::shared_ptr<Payload>> input_buffers(const std::vector<const UOp*>& order) {
  std::vector<std::shared_ptr<Payload>> inputs;
  std::unordered_set<const Payload*> seen;
  for (const UOp* u : order)
    if (u->op == Op::BUFFER && seen.insert(u->payload().get()).second) inputs.push_back(u->payload());
  return inputs;
}

std::vector<std::shared_ptr<Payload>> input_buffers(const std::vector<UOpPtr>& roots) {
  return input_buffers(toposort(roots));
}

Scheduler& Building::on(const std::string& device) {
  auto& s = by_device[device];
  if (!s) s = std::make_unique<Scheduler>(roots, device, *this);
  return *s;
}

Schedule create_schedule(const std::vector<UOpPtr>& roots, const std::string& device) {
  Building b;
  b.roots = roots;
  for (const auto& in : input_buffers(roots)) {
    b.input_slot.emplace(in.get(), static_cast<int>(b.out.slots.size()));
    b.add_slot(BufferSlot::Kind::INPUT, in->dtype(), in->numel(), in->device_name());
  }
  Scheduler& s = b.on(device);
  // in order: each kernel's build stops at the cut below it; a cut computes where its graph does
  for (const auto& cut : s.cuts_) {
    const std::string d = graph_device(cut);
    b.on(d.empty() ? device : d).realize(cut);
  }
  for (const auto& r : roots) {
    const int slot = s.realize(r);
    auto& kind = b.out.slots[static_cast<size_t>(slot)].kind;
    if (kind == BufferSlot::Kind::TEMP) kind = BufferSlot::Kind::OUTPUT;
    b.out.roots.push_back(slot);
  }
  return std::move(b.out);
}

}  // namespace tg::sched
