// The op table, the generator, and the three ways to read a program: run on tg, run the float64 reference,
// print as C++.
#include "program.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "leaf_data.hpp"
#include "ops.hpp"
#include "reference.hpp"

namespace tg::difftest {

namespace {

// value ranges of fresh inputs: plain, wide, the large arguments trig range reduction must handle, and the tiny
// ones where tanh/sigmoid-style decompositions cancel
struct Range {
  double lo, hi, weight;
};
constexpr Range kFloatRanges[] = {{-1, 1, 5}, {-4, 4, 2}, {0, 3, 1}, {-1e4, 1e4, 1}, {-1e-6, 1e-6, 1}};

// a leaf as C++, its seed spelled as given (a number, or an expression of the Jit call's round)
std::string leaf_cpp(const Node& n, const std::string& seed) {
  std::string args = std::to_string(ref::numel(n.shape)) + ", " + seed + ", " + repr(n.lo) + ", " + repr(n.hi);
  if (n.dtype == dtypes::int32)
    return "Tensor::from_vector(leaf_ints(" + args + "), " + ints_cpp(n.shape) + ", tg::dtypes::int32)";
  return "Tensor::from_vector(leaf_data(" + args + "), " + ints_cpp(n.shape) + ")";
}

OpDef leaf_def() {
  return OpDef{
      "leaf",
      0,
      [](Gen&, Node&) { return false; },
      [](const std::vector<Tensor>&, const Node& n) {
        size_t count = static_cast<size_t>(ref::numel(n.shape));
        if (n.dtype == dtypes::int32)
          return Tensor::from_vector(leaf_ints(count, n.seed, n.lo, n.hi), n.shape, n.dtype);
        return Tensor::from_vector(leaf_data(count, n.seed, n.lo, n.hi), n.shape);
      },
      [](const std::vector<const Val*>&, const Node& n) {
        Val v = ref::make_val(n.shape);
        auto d = leaf_data(v.v.size(), n.seed, n.lo, n.hi, n.dtype == dtypes::int32);
        std::copy(d.begin(), d.end(), v.v.begin());
        return v;
      },
      [](const std::vector<std::string>&, const Node& n) { return leaf_cpp(n, std::to_string(n.seed) + "u"); }};
}

}  // namespace

const std::vector<OpDef>& op_table() {
  static const std::vector<OpDef> t = [] {
    std::vector<OpDef> out{leaf_def()};
    for (auto* part : {&elementwise_ops, &shape_ops})
      for (auto& d : part()) out.push_back(std::move(d));
    return out;
  }();
  return t;
}

const OpDef& op_def(const std::string& name) {
  static const std::map<std::string, const OpDef*> by_name = [] {
    std::map<std::string, const OpDef*> m;
    for (const auto& d : op_table()) m[d.name] = &d;
    return m;
  }();
  auto it = by_name.find(name);
  if (it == by_name.end()) throw std::logic_error("difftest: no op " + name);
  return *it->second;
}

int64_t Gen::uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }
bool Gen::chance(double p) { return std::bernoulli_distribution(p)(rng); }

int Gen::add(Node n) {
  prog.nodes.push_back(std::move(n));
  return static_cast<int>(prog.nodes.size()) - 1;
}

int Gen::leaf(const Shape& s, DType d) {
  Node n{.op = "leaf", .seed = rng(), .shape = s, .dtype = d};
  if (d == dtypes::int32) {
    n.lo = -8, n.hi = 8;
  } else {
    double total = 0, w;
    for (const Range& r : kFloatRanges) total += r.weight;
    w = std::uniform_real_distribution<double>(0, total)(rng);
    for (const Range& r : kFloatRanges)
      if ((w -= r.weight) <= 0 || &r == std::end(kFloatRanges) - 1) {
        n.lo = r.lo, n.hi = r.hi;
        break;
      }
  }
  return add(n);
}

int Gen::pick(DType d, const std::function<bool(const Node&)>& ok) {
  std::vector<int> cand;
  for (size_t i = 0; i < prog.nodes.size(); ++i)
    if (prog.nodes[i].dtype == d && (!ok || ok(prog.nodes[i]))) cand.push_back(static_cast<int>(i));
  if (cand.empty()) return -1;
  // recent nodes are likelier (programs grow deep), any earlier one stays possible (shared subexpressions)
  std::geometric_distribution<size_t> back(0.4);
  size_t k = std::min(back(rng), cand.size() - 1);
  return cand[cand.size() - 1 - k];
}

Program generate(uint64_t seed, const GenOptions& o) {
  Program p;
  p.seed = seed;
  Gen g(seed, p);
  // one or two inputs of a random shape (rank 0..4) to start from
  auto random_shape = [&] {
    Shape s(static_cast<size_t>(g.chance(0.05) ? 0 : g.uniform(1, 4)));
    // mostly small dims; now and then one long enough for vector lanes, register tiles and their remainders
    for (auto& d : s)
      d = g.chance(0.15) ? 1 : g.chance(0.12) ? g.uniform(15, 70) : g.chance(0.02) ? 0 : g.uniform(2, 9);
    return s;
  };
  g.leaf(random_shape(), dtypes::float32);
  if (g.chance(0.3)) g.leaf(random_shape(), dtypes::int32);
  std::vector<const OpDef*> ops;
  std::vector<double> weights;
  for (const auto& d : op_table())
    if (d.weight > 0) ops.push_back(&d), weights.push_back(d.weight);
  std::discrete_distribution<size_t> draw(weights.begin(), weights.end());
  int target = static_cast<int>(g.uniform(o.min_ops, o.max_ops)), made = 0;
  for (int tries = 0; made < target && tries < 50 * target; ++tries) {
    size_t mark = p.nodes.size();
    const OpDef* d = ops[draw(g.rng)];
    Node n{.op = d->name};
    if (d->make(g, n) && ref::numel(n.shape) <= o.max_numel && n.shape.size() <= 5) {
      g.add(std::move(n));
      ++made;
    } else {
      p.nodes.resize(mark);  // drop the helpers of a node that did not fit
    }
  }
  p.outputs = {static_cast<int>(p.nodes.size()) - 1};
  // a few more outputs realized in the same call (several kernels, shared inputs)
  for (int i = 0; i + 1 < static_cast<int>(p.nodes.size()); ++i)
    if (p.nodes[static_cast<size_t>(i)].op != "leaf" && g.chance(0.15)) p.outputs.insert(p.outputs.begin(), i);
  return p;
}

Program prune(const Program& p, const std::vector<int>& keep) {
  std::vector<bool> live(p.nodes.size());
  int last = 0;
  for (int k : keep) live[static_cast<size_t>(k)] = true, last = std::max(last, k);
  for (int i = last; i >= 0; --i)
    if (live[static_cast<size_t>(i)])
      for (int x : p.nodes[static_cast<size_t>(i)].in) live[static_cast<size_t>(x)] = true;
  Program out;
  out.seed = p.seed;
  std::vector<int> renum(p.nodes.size(), -1);
  for (size_t i = 0; i <= static_cast<size_t>(last); ++i) {
    if (!live[i]) continue;
    Node n = p.nodes[i];
    for (int& x : n.in) x = renum[static_cast<size_t>(x)];
    renum[i] = static_cast<int>(out.nodes.size());
    out.nodes.push_back(std::move(n));
  }
  for (int k : keep) out.outputs.push_back(renum[static_cast<size_t>(k)]);
  return out;
}

std::vector<Tensor> run_tg(const Program& p) {
  std::vector<Tensor> t;
  for (const Node& n : p.nodes) {
    std::vector<Tensor> in;
    for (int x : n.in) in.push_back(t[static_cast<size_t>(x)]);
    t.push_back(op_def(n.op).run(in, n));
  }
  std::vector<Tensor*> outs;
  for (int o : p.outputs) outs.push_back(&t[static_cast<size_t>(o)]);
  Tensor::realize_all(outs);
  return t;
}

std::vector<Tensor> run_outputs(const Program& p, const std::vector<Tensor>& leaves) {
  std::vector<Tensor> t;
  size_t next_leaf = 0;
  for (const Node& n : p.nodes) {
    std::vector<Tensor> in;
    for (int x : n.in) in.push_back(t[static_cast<size_t>(x)]);
    t.push_back(n.op == "leaf" ? leaves.at(next_leaf++) : op_def(n.op).run(in, n));
  }
  std::vector<Tensor> out;
  for (int o : p.outputs) out.push_back(t[static_cast<size_t>(o)]);
  return out;
}

std::vector<Tensor> make_leaves(const Program& p) {
  std::vector<Tensor> out;
  for (const Node& n : p.nodes)
    if (n.op == "leaf") out.push_back(op_def(n.op).run({}, n).realize());
  return out;
}

Program with_fresh_leaves(const Program& p, uint64_t round) {
  Program q = p;
  for (Node& n : q.nodes)
    if (n.op == "leaf") n.seed = n.seed * 6364136223846793005ull + round;
  return q;
}

std::vector<Val> run_reference(const Program& p, bool planted_bug) {
  std::vector<Val> v;
  v.reserve(p.nodes.size());
  for (const Node& n : p.nodes) {
    std::vector<const Val*> in;
    for (int x : n.in) in.push_back(&v[static_cast<size_t>(x)]);
    v.push_back(op_def(n.op).ref(in, n));
    if (planted_bug && n.op == "add")
      for (double& x : v.back().v) x *= 1 + 1e-4;
    // past float32's range the tensor holds inf (or wraps, for ints) where the reference holds a number
    // (an exact infinity, the max of nothing, stays)
    double limit = n.dtype == dtypes::float32 ? 3.4028234663852886e38 : 2147483648.0;
    Val& r = v.back();
    for (size_t i = 0; i < r.v.size(); ++i)
      if (!(std::fabs(r.v[i]) <= limit) && !(std::isinf(r.v[i]) && r.e[i] == 0)) r.e[i] = ref::kInf;
  }
  return v;
}

// Prints each output of the program (a statement per output; `names` spells the nodes)
std::string print_outputs(const Program& p, const std::vector<std::string>& names, const std::string& indent) {
  std::string s;
  for (int o : p.outputs) {
    const Node& n = p.nodes[static_cast<size_t>(o)];
    const char* host = n.dtype == dtypes::float32 ? "float" : n.dtype == dtypes::int32 ? "int32_t" : "uint8_t";
    const char* fmt = n.dtype == dtypes::float32 ? "%.9g " : "%d ";
    s += indent + "for (auto v : " + names[static_cast<size_t>(o)] + ".to_vector<" + host + ">()) std::printf(\"" +
         fmt + "\", " + (n.dtype == dtypes::float32 ? "v" : "int(v)") + ");\n" + indent + "std::printf(\"\\n\");\n";
  }
  return s;
}

std::string to_cpp(const Program& p, const std::string& header_comment, int jit_rounds) {
  std::string s = header_comment;
  s += "// build: c++ -std=c++20 repro.cpp -Icore/include -Itests/differential -Lbuild/lib -ltg_core "
       "-Wl,-rpath,build/lib\n";
  s += "#include <cstdio>\n\n#include \"leaf_data.hpp\"\n";
  s += jit_rounds ? "#include \"tg/jit.hpp\"\n" : "";
  s += "#include \"tg/tensor.hpp\"\n\nusing tg::Tensor;\nusing tg::difftest::leaf_data;\nusing "
       "tg::difftest::leaf_ints;\n\n";
  std::vector<std::string> names;
  std::string body, indent = jit_rounds ? "    " : "  ", leaves;
  size_t next_leaf = 0;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const Node& n = p.nodes[i];
    std::vector<std::string> in;
    for (int x : n.in) in.push_back(names[static_cast<size_t>(x)]);
    names.push_back("t" + std::to_string(i));
    std::string expr = op_def(n.op).cpp(in, n);
    if (jit_rounds && n.op == "leaf") {  // the Jit's inputs: the same leaves, drawn again for each call
      leaves += "      " + leaf_cpp(n, "with_fresh_seed(" + std::to_string(n.seed) + "u, round)") + ",\n";
      expr = "in[" + std::to_string(next_leaf++) + "]";
    }
    body +=
        indent + "Tensor " + names.back() + " = " + expr + ";  // " + shape_str(n.shape) + " " + n.dtype.name() + "\n";
  }
  if (!jit_rounds) {
    s += "int main() {\n" + body;
    if (p.outputs.size() > 1) {  // realized in one call, as the tester does
      s += "  Tensor::realize_all({";
      for (size_t i = 0; i < p.outputs.size(); ++i) s += (i ? ", &" : "&") + names[static_cast<size_t>(p.outputs[i])];
      s += "});\n";
    }
    return s + print_outputs(p, names, "  ") + "}\n";
  }
  // as the tester runs it with --jit: a tg::Jit function called jit_rounds times, fresh inputs each call
  std::vector<std::string> outs;
  for (size_t k = 0; k < p.outputs.size(); ++k) outs.push_back("out[" + std::to_string(k) + "]");
  std::vector<std::string> out_names(p.nodes.size());
  for (size_t k = 0; k < p.outputs.size(); ++k) out_names[static_cast<size_t>(p.outputs[k])] = outs[k];
  s += "static uint64_t with_fresh_seed(uint64_t seed, uint64_t round) { return seed * 6364136223846793005ull + round; "
       "}\n\n";
  s +=
      "int main() {\n  tg::Jit jit([](const std::vector<Tensor>& in, const std::vector<tg::BoundVariable>&) {\n" + body;
  s += "    return std::vector<Tensor>{";
  for (size_t k = 0; k < p.outputs.size(); ++k) s += (k ? ", " : "") + names[static_cast<size_t>(p.outputs[k])];
  s += "};\n  });\n  for (uint64_t round = 0; round < " + std::to_string(jit_rounds) + "; ++round) {\n";
  s += "    std::vector<Tensor> out = jit({\n" + leaves + "    });\n";
  s += "    std::printf(\"call %d\\n\", int(round) + 1);\n" + print_outputs(p, out_names, "    ") + "  }\n}\n";
  return s;
}

}  // namespace tg::difftest
