// Lowering graphs over MULTI nodes (the seed's schedule/multi.py, in C++): each op over sharded operands becomes
// that op on every device's shard, by a rule per op kind:
//   elementwise   operands brought to one sharding: a replicated operand (or a constant) is cut locally, one
//                 split differently is gathered and cut again
//   movement      the split axes follow RESHAPE / PERMUTE / EXPAND; PAD, SHRINK and FLIP of a split axis are refused
//   reduce        per device, then an allreduce over the mesh dims whose axis was reduced (each group of devices
//                 that differ only along them): naive copies, or a ring (reduce-scatter, then allgather) above
//                 256K elements on 3+ devices (RING=2: always, RING=0: never)
//   copy          to one device: the distinct shards copied there and put in place (the seed's pad-into-place)
// Collectives are spelled in COPY nodes and kernels, so the scheduler sees ordinary per-device graphs.
#include "tensor/multi.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "ir/sym_shape.hpp"
#include "tensor/tensor_internal.hpp"
#include "tg/error.hpp"

namespace tg {

using namespace ir;

namespace {

[[noreturn]] void refuse(const std::string& why) { throw Error("tg: " + why); }

constexpr int64_t kRingMinElements = 256 * 1024;  // tinygrad's threshold for the ring on 3+ devices

// A plain value (computes on one device, or only constants) is the sharding-less DeviceGraphs with one shard.
DeviceGraphs plain(UOpPtr u) { return DeviceGraphs{{}, {std::move(u)}}; }

// The dims of one shard: every split axis divided by its parts (split axes must be static and divide evenly).
Dims shard_dims(const Dims& full, const Sharding& s) {
  Dims out = full;
  for (size_t a = 0; a < full.size(); ++a) {
    const int64_t p = s.parts(static_cast<int64_t>(a));
    if (p == 1) continue;
    if (!is_static(full[a]))
      refuse("axis " + std::to_string(a) + " of " + dims_str(full) + " is symbolic and cannot be split over " +
             s.describe());
    const int64_t n = dim_value(full[a]);
    if (n % p != 0)
      refuse("axis " + std::to_string(a) + " of " + dims_str(full) + " (size " + std::to_string(n) +
             ") does not split into " + std::to_string(p) + " equal parts over " + s.describe() +
             "; pad it to a multiple of " + std::to_string(p));
    out[a] = dim_const(n / p);
  }
  return out;
}

Shape values(const Dims& ds) { return shape_args(ds).first; }

Tensor on(const UOpPtr& u, const Sharding& s, size_t d) { return Tensor(u, s.devices[d]); }

// Whether a value sharded as `from` becomes `to` by cutting on each device, without copies: every mesh dim
// splits the same axis or is replicated in `from`, and an axis `from` splits is split the same way in `to`.
bool cuts_locally(const Sharding& from, const Sharding& to) {
  if (from.devices != to.devices || from.mesh != to.mesh) return false;
  for (size_t m = 0; m < from.mesh.size(); ++m) {
    if (from.axes[m] >= 0 && from.axes[m] != to.axes[m]) return false;
    if (to.axes[m] >= 0 && from.axes[m] < 0 && from.parts(to.axes[m]) != 1) return false;
  }
  return true;
}

// The shard device d holds under `to`, cut from `shard` (d's shard under `from`, whole along the axes `to` adds).
UOpPtr cut(const UOpPtr& shard, const Sharding& from, const Sharding& to, size_t d) {
  Tensor t = on(shard, to, d);
  for (int64_t a = 0; a < t.ndim(); ++a) {
    if (to.parts(a) == 1 || from.parts(a) != 1) continue;
    const UOpPtr n = dims_of(*t.node())[static_cast<size_t>(a)];
    if (!is_static(n)) refuse("axis " + std::to_string(a) + " is symbolic and cannot be split over " + to.describe());
    const auto [start, end] = to.bounds(d, a, dim_value(n));
    if (dim_value(n) % to.parts(a) != 0)
      refuse("axis " + std::to_string(a) + " (size " + std::to_string(dim_value(n)) + ") does not split into " +
             std::to_string(to.parts(a)) + " equal parts over " + to.describe());
    t = t.shrink(a, Dim(start), Dim(end - start));
  }
  return t.node();
}

// The whole tensor on `device`: each distinct shard copied there (none where it or a replica already is) and put in
// place by adding bit patterns padded with zeros (exact for every dtype: -0.0 and NaN payloads survive).
UOpPtr gather(const DeviceGraphs& v, const std::string& device, const Dims& full) {
  const Sharding& s = v.sharding;
  std::optional<Tensor> whole;
  std::vector<size_t> replicated;
  for (size_t m = 0; m < s.mesh.size(); ++m)
    if (s.axes[m] < 0) replicated.push_back(m);
  for (size_t d = 0; d < s.size(); ++d) {
    if (!s.distinct(d)) continue;
    size_t from = d;  // a replica already on `device` needs no copy
    for (size_t e : s.group(d, replicated))
      if (s.devices[e] == device) from = e;
    Tensor piece = on(v.shards[from], s, from).to(device);
    if (!s.is_split()) return piece.node();
    std::vector<std::pair<int64_t, int64_t>> pad;
    for (size_t a = 0; a < full.size(); ++a) {
      if (s.parts(static_cast<int64_t>(a)) == 1) {
        pad.emplace_back(0, 0);
        continue;
      }
      const int64_t n = dim_value(full[a]);
      const auto [start, end] = s.bounds(d, static_cast<int64_t>(a), n);
      pad.emplace_back(start, n - end);
    }
    Tensor placed = to_bits(piece).pad(pad);
    whole = whole ? *whole + placed : placed;
  }
  return from_bits(*whole, v.shards[0]->dtype).node();
}

Tensor combine(ReduceOp op, const Tensor& a, const Tensor& b) {
  switch (op) {
    case ReduceOp::SUM: return a + b;
    case ReduceOp::MAX: return a.maximum(b);
    case ReduceOp::MIN: return a.minimum(b);
  }
  refuse("unknown reduce op in an allreduce");
}

// Every member's partial combined, the same result on each: naive (each copies every other partial and folds them
// in one fixed order, so all results are bitwise equal) or ring (the flattened partial in n chunks; chunk c is
// folded device by device around the ring, then copied to all: 2(n-1)/n of the data moves per device instead of
// n-1). Returns the result on each member, in `members` order.
std::vector<UOpPtr> allreduce(const std::vector<Tensor>& partials, ReduceOp op, int ring) {
  const size_t n = partials.size();
  std::vector<UOpPtr> out(n);
  const Shape shape = partials[0].shape();
  const int64_t numel = partials[0].numel();
  const bool use_ring = !partials[0].is_symbolic() && numel >= static_cast<int64_t>(n) && n >= 2 &&
                        (ring >= 2 || (ring == 1 && n > 2 && numel >= kRingMinElements));
  if (!use_ring) {
    for (size_t i = 0; i < n; ++i) {
      std::optional<Tensor> acc;
      for (size_t j = 0; j < n; ++j) {
        Tensor x = partials[j].to(partials[i].device());
        acc = acc ? combine(op, *acc, x) : x;
      }
      out[i] = acc->node();
    }
    return out;
  }
  auto chunk = [&](const Tensor& t, size_t c) {
    const int64_t start = numel * static_cast<int64_t>(c) / static_cast<int64_t>(n);
    const int64_t end = numel * static_cast<int64_t>(c + 1) / static_cast<int64_t>(n);
    return t.reshape(Shape{numel}).shrink(0, Dim(start), Dim(end - start));
  };
  std::vector<Tensor> reduced;  // chunk c, complete on member (c + n - 1) % n
  for (size_t c = 0; c < n; ++c) {
    Tensor acc = chunk(partials[c], c);
    for (size_t step = 1; step < n; ++step) {
      const Tensor& here = partials[(c + step) % n];
      acc = combine(op, acc.to(here.device()), chunk(here, c));
    }
    reduced.push_back(acc);
  }
  for (size_t i = 0; i < n; ++i) {
    std::vector<Tensor> chunks;
    for (const Tensor& r : reduced) chunks.push_back(r.to(partials[i].device()));
    out[i] = Tensor::cat(chunks, 0).reshape(shape).node();
  }
  return out;
}

class Lowering {
 public:
  explicit Lowering(int ring) : ring_(ring) {}

  const DeviceGraphs& visit(const UOpPtr& u) {
    if (auto it = memo_.find(u.get()); it != memo_.end()) return it->second;
    DeviceGraphs v;
    if (u->op == Op::MULTI) {  // its shards may read tensors gathered from other devices: those are lowered too
      v = DeviceGraphs{Sharding::parse(u->arg_str()), {}};
      for (const auto& x : u->src) v.shards.push_back(visit(x).shards.at(0));
    } else {
      std::vector<DeviceGraphs> src;
      bool any = false;
      for (const auto& x : u->src) src.push_back(visit(x)), any |= src.back().multi();
      v = any ? apply(u, src) : plain(rebuilt(u, src));
    }
    keep_.push_back(u);
    return memo_.emplace(u.get(), std::move(v)).first->second;
  }

 private:
  int ring_;
  std::unordered_map<const UOp*, DeviceGraphs> memo_;
  std::vector<UOpPtr> keep_;

  // u on one device, over its sources as lowered (a source that gathered a sharded tensor is now its gather)
  static UOpPtr rebuilt(const UOpPtr& u, const std::vector<DeviceGraphs>& src) {
    std::vector<UOpPtr> now;
    for (const auto& x : src) now.push_back(x.shards[0]);
    if (now == u->src) return u;
    return UOp::make(u->op, u->dtype, std::move(now), u->arg, u->shape, u->sym_shape);
  }

  using Rule = DeviceGraphs (Lowering::*)(const UOpPtr&, std::vector<DeviceGraphs>&);

  DeviceGraphs apply(const UOpPtr& u, std::vector<DeviceGraphs>& src) {
    static const std::map<Op, Rule> rules = {
        {Op::RESHAPE, &Lowering::reshape},    {Op::PERMUTE, &Lowering::permute}, {Op::EXPAND, &Lowering::expand},
        {Op::PAD, &Lowering::per_axis},       {Op::SHRINK, &Lowering::per_axis}, {Op::FLIP, &Lowering::per_axis},
        {Op::SHRINK_VAR, &Lowering::at_axis}, {Op::PAD_VAR, &Lowering::at_axis}, {Op::REDUCE_AXIS, &Lowering::reduce},
        {Op::COPY, &Lowering::copy},          {Op::CONTIGUOUS, &Lowering::each},
    };
    if (is_alu(u->op)) return elementwise(u, src);
    auto it = rules.find(u->op);
    if (it == rules.end()) refuse(std::string(op_name(u->op)) + " of a tensor on several devices is not supported");
    return (this->*(it->second))(u, src);
  }

  // u's op on every shard of src[0] (its other sources kept), sharded as `s`
  static DeviceGraphs each_shard(const UOpPtr& u, const DeviceGraphs& x, const Sharding& s, const Arg& arg) {
    DeviceGraphs out{s, {}};
    const Dims dims = shard_dims(dims_of(*u), s);
    for (const auto& shard : x.shards) {
      std::vector<UOpPtr> src = u->src;
      src[0] = shard;
      out.shards.push_back(mk(u->op, u->dtype, std::move(src), arg, dims));
    }
    return out;
  }

  DeviceGraphs each(const UOpPtr& u, std::vector<DeviceGraphs>& src) {
    return each_shard(u, src[0], src[0].sharding, u->arg);
  }

  // The value as `to` shards it on device d: as it is, cut locally, or gathered there and cut.
  UOpPtr as(const DeviceGraphs& v, const Sharding& to, size_t d, const Dims& full) {
    if (!v.multi()) return cut(v.shards[0], Sharding::replicated(to.devices), to, d);
    if (v.sharding == to) return v.shards[d];
    if (v.sharding.devices != to.devices)
      refuse("operands are on different device sets: " + v.sharding.describe() + " and " + to.describe());
    if (cuts_locally(v.sharding, to)) return cut(v.shards[d], v.sharding, to, d);
    return cut(gather(v, to.devices[d], full), Sharding::replicated(to.devices), to, d);
  }

  DeviceGraphs elementwise(const UOpPtr& u, std::vector<DeviceGraphs>& src) {
    // the sharding every other operand reaches by local cuts, if one does; else the first operand's
    std::optional<Sharding> target;
    for (const auto& c : src) {
      if (!c.multi()) continue;
      if (!target) target = c.sharding;
      bool all = true;
      for (const auto& o : src) all &= !o.multi() || cuts_locally(o.sharding, c.sharding);
      if (all) {
        target = c.sharding;
        break;
      }
    }
    DeviceGraphs out{*target, {}};
    const Dims dims = shard_dims(dims_of(*u), *target);
    for (size_t d = 0; d < target->size(); ++d) {
      std::vector<UOpPtr> operands;
      for (size_t i = 0; i < src.size(); ++i) operands.push_back(as(src[i], *target, d, dims_of(*u->src[i])));
      out.shards.push_back(mk(u->op, u->dtype, std::move(operands), u->arg, dims));
    }
    return out;
  }

  // A split axis a keeps its place in the new shape at the axis b whose outer dims hold the same elements
  // (prod(new[:b]) == prod(old[:a])) and whose size divides into the same parts.
  DeviceGraphs reshape(const UOpPtr& u, std::vector<DeviceGraphs>& src) {
    const Sharding& s = src[0].sharding;
    const Dims old = dims_of(*u->src[0]), now = dims_of(*u);
    Sharding out = s;
    for (size_t m = 0; m < s.mesh.size(); ++m) {
      if (s.axes[m] < 0) continue;
      const int64_t a = s.axes[m], p = s.parts(a);
      if (!is_static(Dims(old.begin(), old.begin() + a + 1)) || !is_static(now))
        refuse("reshape " + dims_str(old) + " -> " + dims_str(now) + " of a tensor split over " + s.describe() +
               " needs static dims");
      int64_t outer = 1, seen = 1;
      for (int64_t i = 0; i < a; ++i) outer *= dim_value(old[static_cast<size_t>(i)]);
      int64_t b = -1;
      for (size_t i = 0; i < now.size() && b < 0; ++i) {
        if (seen == outer && dim_value(now[i]) % p == 0 && dim_value(now[i]) >= p) b = static_cast<int64_t>(i);
        seen *= dim_value(now[i]);
      }
      if (b < 0)
        refuse("reshape " + dims_str(old) + " -> " + dims_str(now) + " merges or splits axis " + std::to_string(a) +
               ", which is split over " + s.describe());
      out.axes[m] = b;
    }
    for (size_t m = 0; m < s.mesh.size(); ++m)  // one axis per mesh dim's axis: two split axes may not meet
      for (size_t k = 0; k < m; ++k)
        if (s.axes[m] >= 0 && s.axes[k] >= 0 && s.axes[m] != s.axes[k] && out.axes[m] == out.axes[k])
          refuse("reshape " + dims_str(old) + " -> " + dims_str(now) + " merges two split axes of " + s.describe());
    return each_shard(u, src[0], out, values(shard_dims(now, out)));
  }

  DeviceGraphs permute(const UOpPtr& u, std::vector<DeviceGraphs>& src) {
    Sharding out = src[0].sharding;
    const auto& order = u->arg_ints();
    for (auto& a : out.axes)
      if (a >= 0) a = std::find(order.begin(), order.end(), a) - order.begin();
    return each_shard(u, src[0], out, u->arg);
  }

  DeviceGraphs expand(const UOpPtr& u, std::vector<DeviceGraphs>& src) {
    const Sharding& s = src[0].sharding;
    return each_shard(u, src[0], s, values(shard_dims(dims_of(*u), s)));
  }

  // PAD, SHRINK, FLIP: two ints (PAD, SHRINK) or one (FLIP) per axis; a split axis must be left as it is.
  DeviceGraphs per_axis(const UOpPtr& u, std::vector<DeviceGraphs>& src) {
    const Sharding& s = src[0].sharding;
    std::vector<int64_t> arg = u->arg_ints();
    const size_t per = u->op == Op::FLIP ? 1 : 2;
    const Dims in = dims_of(*u->src[0]), shard_in = shard_dims(in, s);
    for (size_t a = 0; a < in.size(); ++a) {
      if (s.parts(static_cast<int64_t>(a)) == 1) continue;
      const bool whole = u->op == Op::FLIP  ? arg[a] == 0
                         : u->op == Op::PAD ? arg[2 * a] == 0 && arg[2 * a + 1] == 0
                                            : arg[2 * a] == 0 && arg[2 * a + 1] == dim_value(in[a]);
      if (!whole)
        refuse(std::string(op_name(u->op)) + " along axis " + std::to_string(a) + ", which is split over " +
               s.describe() +
               ", is not supported: gather the tensor with .to(device) first, or split it along another axis");
      if (u->op == Op::SHRINK) arg[per * a + 1] = dim_value(shard_in[a]);
    }
    return each_shard(u, src[0], s, arg);
  }

  // SHRINK_VAR, PAD_VAR: a symbolic window along one axis, which must not be split.
  DeviceGraphs at_axis(const UOpPtr& u, std::vector<DeviceGraphs>& src) {
    const Sharding& s = src[0].sharding;
    const int64_t a = u->arg_ints()[0];
    if (s.parts(a) != 1)
      refuse(std::string(op_name(u->op)) + " along axis " + std::to_string(a) + ", which is split over " +
             s.describe() + ", is not supported");
    if (src.size() > 1 && src[1].multi()) refuse("a symbolic window's start cannot live on several devices");
    return each_shard(u, src[0], s, u->arg);
  }

  // Each device reduces its shard; the mesh dims whose axis was reduced are then combined by an allreduce over
  // each group of devices that differ only along them, and become replicated.
  DeviceGraphs reduce(const UOpPtr& u, std::vector<DeviceGraphs>& src) {
    const Sharding& s = src[0].sharding;
    const auto& arg = u->arg_ints();
    const auto op = static_cast<ReduceOp>(arg[0]);
    Sharding out = s;
    std::vector<size_t> reduced;
    for (size_t m = 0; m < s.mesh.size(); ++m)
      if (s.axes[m] >= 0 && std::find(arg.begin() + 1, arg.end(), s.axes[m]) != arg.end())
        reduced.push_back(m), out.axes[m] = -1;
    DeviceGraphs partial = each_shard(u, src[0], out, u->arg);
    if (reduced.empty()) return partial;
    DeviceGraphs result{out, std::vector<UOpPtr>(s.size())};
    for (size_t d = 0; d < s.size(); ++d) {
      if (result.shards[d]) continue;
      const std::vector<size_t> members = s.group(d, reduced);
      std::vector<Tensor> partials;
      for (size_t e : members) partials.push_back(on(partial.shards[e], s, e));
      const std::vector<UOpPtr> r = allreduce(partials, op, ring_);
      for (size_t i = 0; i < members.size(); ++i) result.shards[members[i]] = r[i];
    }
    return result;
  }

  DeviceGraphs copy(const UOpPtr& u, std::vector<DeviceGraphs>& src) {
    return plain(gather(src[0], u->arg_str(), dims_of(*u->src[0])));
  }
};

}  // namespace

bool has_multi(const UOpPtr& root) {
  for (const UOp* u : toposort(std::vector<UOpPtr>{root}))
    if (u->op == Op::MULTI) return true;
  return false;
}

std::vector<DeviceGraphs> lower_multi(const std::vector<UOpPtr>& roots, int ring) {
  Lowering lowering(ring);
  std::vector<DeviceGraphs> out;
  for (const auto& r : roots) out.push_back(lowering.visit(r));
  return out;
}

UOpPtr multi_node(const Sharding& s, std::vector<UOpPtr> shards, DType dtype, const Dims& full) {
  return mk(Op::MULTI, dtype, std::move(shards), s.str(), full);
}

}  // namespace tg
