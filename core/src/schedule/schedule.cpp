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

UOpPtr buffer_node(const std::shared_ptr<rt::Buffer>& buf, const Shape& shape, const std::vector<UOpPtr>& sym_shape) {
  return UOp::make(Op::BUFFER, buf->dtype(), {}, std::static_pointer_cast<Payload>(buf), shape, sym_shape);
}

namespace {

std::shared_ptr<rt::Buffer> as_buffer(const UOp& u) { return std::static_pointer_cast<rt::Buffer>(u.payload()); }

// Elements a buffer for this node needs: every dim at its max.
int64_t max_numel(const UOp& node) {
  int64_t n = 1;
  for (const auto& d : dims_of(node)) n *= dim_max(d);
  return n;
}

class Scheduler {
 public:
  Scheduler(const std::vector<UOpPtr>& roots, std::string device) : device_(std::move(device)) {
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
      const bool own_kernel = u->op == Op::BUFFER || u->op == Op::COPY || u->op == Op::CONTIGUOUS || shared_realize(u);
      depth[u] = own_kernel ? 0 : d + 1;
      if (depth[u] >= kMaxFusedDepth && !is_movement(u->op)) cuts_.push_back(u->ptr()), cut_.insert(u), depth[u] = 0;
    }
  }
  static constexpr int kMaxFusedDepth = 1000;
  std::vector<UOpPtr> cuts_;  // realized on their own, deepest first (create_schedule)
  std::unordered_set<const UOp*> cut_;

  // A shared subgraph that contains a fused reduction is computed once into its own buffer, not per consumer.
  bool shared_realize(const UOp* u) { return consumers_[u] > 1 && has_reduce_[u] && !is_movement(u->op); }

  std::vector<ScheduleItem> items;

  std::shared_ptr<rt::Buffer> realize(const UOpPtr& node) {
    if (node->op == Op::BUFFER) return as_buffer(*node);
    if (auto it = done_.find(node.get()); it != done_.end()) return it->second;
    if (node->op == Op::COPY) return realize_copy(node);
    UOpPtr body = node->op == Op::CONTIGUOUS ? node->src[0] : node;
    if (body->op == Op::BUFFER) return as_buffer(*body);  // contiguous of a realized buffer is that buffer

    KernelBuilder kb{*this, body.get()};
    auto out = std::make_shared<rt::Buffer>(rt::Device::get(device_), node->dtype, max_numel(*node));
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
    std::sort(kb.vars.begin(), kb.vars.end(), [](const auto& a, const auto& b) { return a.first->var().name < b.first->var().name; });
    for (auto& [v, val] : kb.vars) item.kernel.vars.push_back(v), item.var_vals.push_back(val);
    item.bufs = std::move(kb.bufs);
    describe_buffers(item);
    items.push_back(std::move(item));
    done_[node.get()] = out;
    keep_.push_back(node);
    return out;
  }

 private:
  std::string device_;
  std::unordered_map<const UOp*, int> consumers_;
  std::unordered_map<const UOp*, bool> has_reduce_;
  std::unordered_map<const UOp*, std::shared_ptr<rt::Buffer>> done_;
  std::vector<UOpPtr> keep_;

  std::shared_ptr<rt::Buffer> realize_copy(const UOpPtr& node) {
    const UOpPtr& src = node->src[0];
    auto src_buf = Scheduler(std::vector<UOpPtr>{src}, src_device(src)).realize_into(items, src);
    auto out = std::make_shared<rt::Buffer>(rt::Device::get(node->arg_str()), node->dtype, max_numel(*node));
    ScheduleItem item;
    item.kind = ScheduleItem::Kind::COPY;
    item.bufs = {out, src_buf};
    items.push_back(std::move(item));
    done_[node.get()] = out;
    keep_.push_back(node);
    return out;
  }

  std::shared_ptr<rt::Buffer> realize_into(std::vector<ScheduleItem>& sink, const UOpPtr& node) {
    auto buf = realize(node);
    for (auto& it : items) sink.push_back(std::move(it));
    return buf;
  }

  // The device of a graph: the device of any buffer in it (copies name their source device in src).
  static std::string src_device(const UOpPtr& node) {
    for (const UOp* u : toposort(std::vector<UOpPtr>{node})) {
      if (u->op == Op::BUFFER) return as_buffer(*u)->device().name();
      if (u->op == Op::COPY) return u->arg_str();
    }
    return default_device_name();
  }
  static std::string default_device_name();

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
    std::vector<std::shared_ptr<rt::Buffer>> bufs;
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

    UOpPtr param_for(const std::shared_ptr<rt::Buffer>& b) {
      for (size_t i = 0; i < bufs.size(); ++i)
        if (bufs[i] == b) return UOp::make(Op::PARAM, b->dtype(), {}, static_cast<int64_t>(i));
      bufs.push_back(b);
      return UOp::make(Op::PARAM, b->dtype(), {}, static_cast<int64_t>(bufs.size() - 1));
    }

    UOpPtr load(const std::shared_ptr<rt::Buffer>& b, const std::vector<UOpPtr>& idx, const Dims& shape,
                const UOpPtr& valid) {
      if (&b->device() != &rt::Device::get(s.device_))
        throw Error("tg: kernel on " + s.device_ + " reads a tensor on " + b->device().name() + "; copy it first with .to(\"" +
                    s.device_ + "\")");
      UOpPtr index = simplify(linear_index(idx, shape));
      UOpPtr v = simplify(valid);
      std::vector<UOpPtr> src = {param_for(b), index};
      if (!(v->op == Op::CONST && v->arg_int() == 1)) src.push_back(v);
      return UOp::make(Op::LOAD, b->dtype(), std::move(src));
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
      if (node->op == Op::BUFFER) return load(as_buffer(*node), idx, shape, valid);
      if (node->op == Op::CONST) return node->shape.empty() ? node : UOp::make(Op::CONST, node->dtype, {}, node->arg);
      if (node->op == Op::COPY || node->op == Op::CONTIGUOUS) return load(s.realize(node), idx, shape, valid);
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
      if (node.get() != root && (expanded || s.consumers_[node.get()] > 1)) return load(s.realize(node), idx, shape, valid);
      has_reduce = true;
      const auto& a = node->arg_ints();
      Dims in = kdims(*node->src[0]);
      for (size_t k = 1; k < a.size(); ++k)  // empty reduction (a symbolic one is an empty loop)
        if (is_static(in[a[k]]) && in[a[k]]->arg_int() == 0) return reduce_identity(static_cast<ReduceOp>(a[0]), node->dtype);
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

std::string Scheduler::default_device_name() { return tg::default_device(); }

}  // namespace

void describe_buffers(ScheduleItem& item) {
  item.kernel.params.clear();
  if (item.kind != ScheduleItem::Kind::KERNEL) return;
  for (const auto& b : item.bufs) item.kernel.params.push_back({b->dtype(), static_cast<int64_t>(b->numel())});
}

std::vector<ScheduleItem> create_schedule(const std::vector<UOpPtr>& roots, const std::string& device,
                                          std::vector<std::shared_ptr<rt::Buffer>>& out) {
  Scheduler s(roots, device);
  for (const auto& cut : s.cuts_) s.realize(cut);  // in order: each kernel's build stops at the cut below it
  out.clear();
  for (const auto& r : roots) out.push_back(s.realize(r));
  return std::move(s.items);
}

}  // namespace tg::sched
