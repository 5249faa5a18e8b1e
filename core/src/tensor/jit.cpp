// Jit: records the launches of a function's second call and replays them as one queue batch, patching input
// buffer addresses and variable values into the recorded argument blobs. A sharded tensor (a MULTI node, one
// buffer per device) stands for its shards' buffers, in device order: its inputs are patched shard by shard and
// its outputs come back as a sharded tensor over the replay's buffers. It belongs to the tensor layer: it takes
// and returns Tensors.
#include "tg/jit.hpp"

#include <cstring>
#include <map>
#include <mutex>
#include <optional>

#include "ir/sym_shape.hpp"
#include "ir/uop.hpp"
#include "runtime/collectives.hpp"
#include "runtime/env.hpp"
#include "runtime/launch.hpp"
#include "runtime/options.hpp"
#include "schedule/schedule.hpp"
#include "tensor/multi.hpp"

namespace tg {

namespace {

struct Patch {
  size_t offset;  // into the argument blob
  size_t size;    // bytes (8 for buffer addresses)
  size_t index;   // input buffer slot (inputs' buffers in order, a sharded one's shard by shard) or variable number
};

struct Replay {
  rt::CapturedLaunch launch;
  std::vector<uint8_t> args;
  std::vector<Patch> inputs, vars;
  std::vector<std::optional<size_t>> slots;  // a copy's or collective's {dst, src}: the input buffer it is, if any
};

// One buffer of an output: a captured buffer, or an input's (the function returned an input, or a shard of one).
struct OutputPart {
  std::shared_ptr<rt::Buffer> buf;  // null when it is input buffer `slot`
  size_t slot = 0;
  Shape shape;
  ir::Dims sym_shape;  // a symbolic part's dims: its shape on replay comes from the new variable values
};

struct Output {
  std::vector<OutputPart> parts;  // one, or one per device of a sharded output
  std::string sharding;           // a sharded output's MULTI arg; empty on one device
  ir::Dims dims;
  DType dtype;
  std::string device;
};

// The buffers a realized tensor stands for: its own, or each shard's (device order).
std::vector<std::shared_ptr<rt::Buffer>> buffers_of(const Tensor& t) {
  const auto& n = t.node();
  if (n->op != ir::Op::MULTI) return {rt::buffer_of(*n)};
  std::vector<std::shared_ptr<rt::Buffer>> out;
  for (const auto& s : n->src) out.push_back(rt::buffer_of(*s));
  return out;
}

std::vector<std::shared_ptr<rt::Buffer>> buffers_of(const std::vector<Tensor>& ts) {
  std::vector<std::shared_ptr<rt::Buffer>> out;
  for (const auto& t : ts)
    for (auto& b : buffers_of(t)) out.push_back(std::move(b));
  return out;
}

std::string sharding_of(const Tensor& t) { return t.node()->op == ir::Op::MULTI ? t.node()->arg_str() : std::string(); }

std::string describe(const Tensor& t) {
  std::string dims = t.is_symbolic() ? ir::dims_str(ir::dims_of(*t.node())) + " = " : "";
  std::string where = t.node()->op == ir::Op::MULTI ? Sharding::parse(t.node()->arg_str()).describe() : t.device();
  return dims + shape_str(t.shape()) + " " + t.dtype().name() + " on " + where;
}

// d with the variables passed to this call bound to their new values
ir::UOpPtr rebind(const ir::UOpPtr& d, const std::vector<BoundVariable>& vars) {
  return ir::map_binds(d, [&](const ir::UOpPtr& b) {
    for (const auto& v : vars)
      if (v.var().name() == b->src[0]->var().name) return v.node();
    return b;
  });
}

}  // namespace

struct Jit::Impl {
  Fn fn;
  int calls = 0;
  std::mutex mu;
  std::vector<uint64_t> first_trace;  // kernel hashes of call 1
  std::vector<Tensor> input_sig;      // shapes/dtypes/devices of the captured inputs (not their data)
  std::vector<std::string> var_names;
  std::vector<Replay> replays;
  std::vector<Output> outputs;

  std::vector<Tensor> run(const std::vector<Tensor>& inputs, const std::vector<BoundVariable>& vars) {
    std::vector<Tensor> outs = fn(inputs, vars);
    for (auto& o : outs) o.realize();
    return outs;
  }

  void capture(const std::vector<Tensor>& inputs, const std::vector<BoundVariable>& vars,
               const std::vector<Tensor>& outs, std::vector<rt::CapturedLaunch>& launches) {
    // call 2 must launch what call 1 launched after its one-time work: the tail of call 1's trace
    if (launches.size() > first_trace.size() ||
        !std::equal(launches.begin(), launches.end(), first_trace.end() - static_cast<long>(launches.size()),
                    [](const rt::CapturedLaunch& l, uint64_t h) { return l.kir_hash == h; }))
      throw Error("tg: Jit: the function changed its graph between calls 1 and 2 (" +
                  std::to_string(first_trace.size()) + " launches, then " + std::to_string(launches.size()) +
                  "); make it depend only on its inputs and variables");
    std::map<const rt::Buffer*, size_t> input_index;  // input buffer -> its slot (inputs' buffers in order)
    for (const auto& b : buffers_of(inputs)) input_index.emplace(b.get(), input_index.size());
    auto slot_of = [&](const std::shared_ptr<rt::Buffer>& b) -> std::optional<size_t> {
      if (auto it = input_index.find(b.get()); it != input_index.end()) return it->second;
      return std::nullopt;
    };
    for (const auto& v : vars) var_names.push_back(v.var().name());
    for (auto& l : launches) {
      Replay r{l, {}, {}, {}, {}};
      if (l.program) {
        const rt::Program& p = *l.program;
        r.args = rt::pack_args(p, l.bufs, l.var_vals);
        for (size_t i = 0; i < l.bufs.size(); ++i)
          if (auto slot = slot_of(l.bufs[i])) r.inputs.push_back({p.signature.offsets()[i], 8, *slot});
        for (size_t k = 0; k < l.var_names.size(); ++k) {
          size_t param = l.bufs.size() + k;
          for (size_t j = 0; j < var_names.size(); ++j)
            if (var_names[j] == l.var_names[k])
              r.vars.push_back({p.signature.offsets()[param], tg_param_size(&p.signature.params()[param]), j});
        }
      } else {  // a copy or collective that reads or writes an input must use this call's buffer
        for (const auto& b : l.bufs) r.slots.push_back(slot_of(b));
      }
      replays.push_back(std::move(r));
    }
    for (const auto& o : outs) {
      Output out{{}, sharding_of(o), ir::dims_of(*o.node()), o.dtype(), o.device()};
      const auto bufs = buffers_of(o);
      for (size_t i = 0; i < bufs.size(); ++i) {
        const ir::UOp& part = out.sharding.empty() ? *o.node() : *o.node()->src[i];
        OutputPart op{bufs[i], 0, part.shape, part.sym_shape};
        if (auto slot = slot_of(bufs[i])) op.buf = nullptr, op.slot = *slot;
        out.parts.push_back(std::move(op));
      }
      outputs.push_back(std::move(out));
    }
    input_sig = inputs;
  }

  // A symbolic input's dims must be the captured ones with this call's variable values: a variable that is not
  // passed to the call keeps its captured value in the kernels, so its value must not change.
  static bool same_input_dims(const Tensor& in, const Tensor& captured, const std::vector<BoundVariable>& vars) {
    ir::Dims want = ir::dims_of(*captured.node());
    for (auto& d : want) d = rebind(d, vars);
    return ir::same_dims(ir::dims_of(*in.node()), want);
  }

  void check_signature(const std::vector<Tensor>& inputs, const std::vector<BoundVariable>& vars) const {
    if (inputs.size() != input_sig.size())
      throw Error("tg: Jit: captured with " + std::to_string(input_sig.size()) + " inputs, called with " +
                  std::to_string(inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!same_input_dims(inputs[i], input_sig[i], vars) || inputs[i].dtype() != input_sig[i].dtype() ||
          inputs[i].device() != input_sig[i].device() || sharding_of(inputs[i]) != sharding_of(input_sig[i]))
        throw Error("tg: Jit: input " + std::to_string(i) + " is " + describe(inputs[i]) + ", captured as " +
                    describe(input_sig[i]) + "; call reset() to capture again");
    if (vars.size() != var_names.size())
      throw Error("tg: Jit: captured with " + std::to_string(var_names.size()) + " variables, called with " +
                  std::to_string(vars.size()));
    for (size_t j = 0; j < vars.size(); ++j)
      if (vars[j].var().name() != var_names[j])
        throw Error("tg: Jit: variable " + std::to_string(j) + " is " + vars[j].var().name() + ", captured as " +
                    var_names[j]);
  }

  std::vector<Tensor> replay(const std::vector<Tensor>& inputs, const std::vector<BoundVariable>& vars) {
    check_signature(inputs, vars);
    const std::vector<std::shared_ptr<rt::Buffer>> in_bufs = buffers_of(inputs);
    std::vector<uint64_t> addrs;
    for (const auto& b : in_bufs) addrs.push_back(b->desc().addr);
    std::vector<rt::Device::LaunchCmd> batch;
    rt::Device* dev = nullptr;
    auto flush = [&] {
      if (dev) dev->launch_batch(batch, false);
      batch.clear();
    };
    for (auto& r : replays) {
      if (!r.launch.program) {  // a copy between devices or a collective: drain, then run it through the host
        flush();
        auto buf = [&](size_t k) -> rt::Buffer& { return r.slots[k] ? *in_bufs[*r.slots[k]] : *r.launch.bufs[k]; };
        if (r.launch.collective.empty())
          rt::copy_between(buf(0), buf(1));
        else
          rt::run_collective(r.launch.collective, buf(0), buf(1));
        continue;
      }
      for (const auto& p : r.inputs) std::memcpy(r.args.data() + p.offset, &addrs[p.index], 8);
      for (const auto& p : r.vars) {
        int64_t v = vars[p.index].value();
        std::memcpy(r.args.data() + p.offset, &v, p.size);
      }
      rt::Device* d = r.launch.program->device;
      if (d != dev) flush(), dev = d;
      batch.push_back({r.launch.program.get(), &r.args, r.launch.dims});
    }
    flush();
    std::vector<Tensor> outs;
    for (const auto& o : outputs) {
      std::vector<ir::UOpPtr> parts;
      for (const auto& p : o.parts) {
        const auto& buf = p.buf ? p.buf : in_bufs[p.slot];
        if (p.sym_shape.empty()) {
          parts.push_back(rt::buffer_node(buf, p.shape));
          continue;
        }
        ir::Dims ds;
        for (const auto& d : p.sym_shape) ds.push_back(rebind(d, vars));
        auto [shape, sym] = ir::shape_args(ds);
        parts.push_back(rt::buffer_node(buf, shape, sym));
      }
      if (o.sharding.empty()) {
        outs.emplace_back(parts[0], o.device);
        continue;
      }
      ir::Dims dims;
      for (const auto& d : o.dims) dims.push_back(rebind(d, vars));
      outs.emplace_back(multi_node(Sharding::parse(o.sharding), std::move(parts), o.dtype, dims), o.device);
    }
    return outs;
  }
};

Jit::Jit(Fn fn) : impl_(std::make_shared<Impl>()) { impl_->fn = std::move(fn); }

std::vector<Tensor> Jit::operator()(const std::vector<Tensor>& in, const std::vector<BoundVariable>& vars) {
  Impl& j = *impl_;
  std::lock_guard lock(j.mu);
  std::vector<Tensor> inputs = in;  // realized copies: the caller's tensors are left as they are
  for (auto& t : inputs) t.realize();
  if (!rt::read_options().jit) return j.run(inputs, vars);
  if (!j.replays.empty() || (j.calls >= 2 && !j.outputs.empty())) return j.replay(inputs, vars);
  ++j.calls;
  std::vector<rt::CapturedLaunch> launches;
  rt::set_capture(&launches);
  std::vector<Tensor> outs;
  try {
    outs = j.run(inputs, vars);
  } catch (...) {
    rt::set_capture(nullptr);
    throw;
  }
  rt::set_capture(nullptr);
  if (j.calls == 1) {
    for (const auto& l : launches) j.first_trace.push_back(l.kir_hash);
    return outs;
  }
  j.capture(inputs, vars, outs, launches);
  return outs;
}

void Jit::reset() {
  std::lock_guard lock(impl_->mu);
  Impl& j = *impl_;
  j.calls = 0;
  j.first_trace.clear();
  j.input_sig.clear();
  j.var_names.clear();
  j.replays.clear();
  j.outputs.clear();
}

size_t Jit::captured_launches() const { return impl_->replays.size(); }

}  // namespace tg
