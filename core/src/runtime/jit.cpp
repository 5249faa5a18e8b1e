// Jit: records the launches of a function's second call and replays them as one queue batch, patching input
// buffer addresses and variable values into the recorded argument blobs.
#include "tg/jit.hpp"

#include <cstring>
#include <map>
#include <mutex>

#include "ir/sym_shape.hpp"
#include "ir/uop.hpp"
#include "runtime/collectives.hpp"
#include "runtime/env.hpp"
#include "runtime/options.hpp"
#include "runtime/launch.hpp"
#include "schedule/schedule.hpp"

namespace tg {

namespace {

struct Patch {
  size_t offset;  // into the argument blob
  size_t size;    // bytes (8 for buffer addresses)
  size_t index;   // input or variable number
};

struct Replay {
  rt::CapturedLaunch launch;
  std::vector<uint8_t> args;
  std::vector<Patch> inputs, vars;
};

struct Output {
  std::shared_ptr<rt::Buffer> buf;  // null when the output is input `input`
  size_t input = 0;
  Shape shape;
  ir::Dims sym_shape;  // a symbolic output's dims: its shape on replay comes from the new variable values
  std::string device;
};

std::shared_ptr<rt::Buffer> buffer_of(const Tensor& t) {
  return rt::buffer_of(*t.node());
}

std::string describe(const Tensor& t) {
  std::string dims = t.is_symbolic() ? ir::dims_str(ir::dims_of(*t.node())) + " = " : "";
  return dims + shape_str(t.shape()) + " " + t.dtype().name() + " on " + t.device();
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
    for (auto& o : outs) {
      if (o.device().find(',') != std::string::npos)
        throw Error("tg: Jit: an output lives on several devices (" + o.device() + "); gather it with .to(device) inside the function");
      o.realize();
    }
    return outs;
  }

  void capture(const std::vector<Tensor>& inputs, const std::vector<BoundVariable>& vars, const std::vector<Tensor>& outs,
               std::vector<rt::CapturedLaunch>& launches) {
    // call 2 must launch what call 1 launched after its one-time work: the tail of call 1's trace
    if (launches.size() > first_trace.size() ||
        !std::equal(launches.begin(), launches.end(), first_trace.end() - static_cast<long>(launches.size()),
                    [](const rt::CapturedLaunch& l, uint64_t h) { return l.kir_hash == h; }))
      throw Error("tg: Jit: the function changed its graph between calls 1 and 2 (" + std::to_string(first_trace.size()) +
                  " launches, then " + std::to_string(launches.size()) + "); make it depend only on its inputs and variables");
    std::map<const rt::Buffer*, size_t> input_index;
    for (size_t i = 0; i < inputs.size(); ++i) input_index.emplace(buffer_of(inputs[i]).get(), i);
    for (const auto& v : vars) var_names.push_back(v.var().name());
    for (auto& l : launches) {
      Replay r{l, {}, {}, {}};
      if (l.program) {
        const rt::Program& p = *l.program;
        r.args = rt::pack_args(p, l.bufs, l.var_vals);
        for (size_t i = 0; i < l.bufs.size(); ++i)
          if (auto it = input_index.find(l.bufs[i].get()); it != input_index.end()) r.inputs.push_back({p.signature.offsets()[i], 8, it->second});
        for (size_t k = 0; k < l.var_names.size(); ++k) {
          size_t param = l.bufs.size() + k;
          for (size_t j = 0; j < var_names.size(); ++j)
            if (var_names[j] == l.var_names[k]) r.vars.push_back({p.signature.offsets()[param], tg_param_size(&p.signature.params()[param]), j});
        }
      }
      replays.push_back(std::move(r));
    }
    for (const auto& o : outs) {
      auto buf = buffer_of(o);
      Output out{buf, 0, o.shape(), o.node()->sym_shape, o.device()};
      if (auto it = input_index.find(buf.get()); it != input_index.end()) out.buf = nullptr, out.input = it->second;
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
      throw Error("tg: Jit: captured with " + std::to_string(input_sig.size()) + " inputs, called with " + std::to_string(inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i)
      if (!same_input_dims(inputs[i], input_sig[i], vars) || inputs[i].dtype() != input_sig[i].dtype() ||
          inputs[i].device() != input_sig[i].device())
        throw Error("tg: Jit: input " + std::to_string(i) + " is " + describe(inputs[i]) + ", captured as " + describe(input_sig[i]) +
                    "; call reset() to capture again");
    if (vars.size() != var_names.size())
      throw Error("tg: Jit: captured with " + std::to_string(var_names.size()) + " variables, called with " + std::to_string(vars.size()));
    for (size_t j = 0; j < vars.size(); ++j)
      if (vars[j].var().name() != var_names[j])
        throw Error("tg: Jit: variable " + std::to_string(j) + " is " + vars[j].var().name() + ", captured as " + var_names[j]);
  }

  std::vector<Tensor> replay(const std::vector<Tensor>& inputs, const std::vector<BoundVariable>& vars) {
    check_signature(inputs, vars);
    std::vector<uint64_t> addrs;
    for (const auto& t : inputs) addrs.push_back(buffer_of(t)->desc().addr);
    std::vector<rt::Device::LaunchCmd> batch;
    rt::Device* dev = nullptr;
    auto flush = [&] {
      if (dev) dev->launch_batch(batch, false);
      batch.clear();
    };
    for (auto& r : replays) {
      if (!r.launch.program) {  // a copy between devices or a collective: drain, then run it through the host
        flush();
        if (r.launch.collective.empty()) rt::copy_between(*r.launch.bufs[0], *r.launch.bufs[1]);
        else rt::run_collective(r.launch.collective, *r.launch.bufs[0], *r.launch.bufs[1]);
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
      if (!o.buf) outs.push_back(inputs[o.input]);
      else if (o.sym_shape.empty()) outs.emplace_back(rt::buffer_node(o.buf, o.shape), o.device);
      else {
        ir::Dims ds;
        for (const auto& d : o.sym_shape) ds.push_back(rebind(d, vars));
        auto [shape, sym] = ir::shape_args(ds);
        outs.emplace_back(rt::buffer_node(o.buf, shape, sym), o.device);
      }
    }
    return outs;
  }
};

Jit::Jit(Fn fn) : impl_(std::make_shared<Impl>()) { impl_->fn = std::move(fn); }

std::vector<Tensor> Jit::operator()(const std::vector<Tensor>& in, const std::vector<BoundVariable>& vars) {
  Impl& j = *impl_;
  std::lock_guard lock(j.mu);
  std::vector<Tensor> inputs = in;  // realized copies: the caller's tensors are left as they are
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].device().find(',') != std::string::npos)
      throw Error("tg: Jit: input " + std::to_string(i) + " lives on several devices (" + inputs[i].device() +
                  "); a Jit takes tensors on one device each (sharded inputs are not supported yet)");
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
