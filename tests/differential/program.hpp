// The differential tester's programs: a list of tensor ops built through tg's public API, each with an
// independent float64 reference that also carries an error bound per element, and a C++ spelling so any
// failing program prints as a reproduction. Ops live in a table (ops_*.cpp); the generator draws from it.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "tg/tensor.hpp"

namespace tg::difftest {

struct Node {
  std::string op;                // a name in op_table()
  std::vector<int> in;           // earlier nodes
  std::vector<int64_t> ints;     // axes, shapes, paddings, ...
  double f = 0, lo = 0, hi = 0;  // a scalar operand; a leaf's value range
  bool flag = false;             // keepdim
  uint64_t seed = 0;             // a leaf's data
  Shape shape;
  DType dtype = dtypes::float32;
};

struct Program {
  uint64_t seed = 0;
  std::vector<Node> nodes;
  std::vector<int> outputs;  // realized together; the last node is always one
};

// A value of the float64 reference: per element, the exact result of the op on the reference's inputs and a
// bound on how far a correct float32 evaluation may be from it (inf: unchecked, e.g. a tie argmax may break
// either way, an overflow, a comparison of values closer than their error).
struct Val {
  Shape shape;
  std::vector<double> v, e;
};

class Gen;

struct OpDef {
  const char* name;
  int weight;  // how often the generator draws it
  // Fills node (inputs, parameters, shape, dtype) from the program so far, adding helper nodes through g;
  // false when no input suits this op.
  std::function<bool(Gen& g, Node& node)> make;
  std::function<Tensor(const std::vector<Tensor>& in, const Node& node)> run;
  std::function<Val(const std::vector<const Val*>& in, const Node& node)> ref;
  // the node as a C++ expression over its inputs' variable names
  std::function<std::string(const std::vector<std::string>& in, const Node& node)> cpp;
};

const std::vector<OpDef>& op_table();
const OpDef& op_def(const std::string& name);

// The generator's state: the program so far and its random stream.
class Gen {
 public:
  Gen(uint64_t seed, Program& p) : rng(seed), prog(p) {}
  std::mt19937_64 rng;
  Program& prog;

  int add(Node n);                          // appends a node, returns its index
  int leaf(const Shape& s, DType d);        // a fresh input of this shape
  int64_t uniform(int64_t lo, int64_t hi);  // inclusive
  bool chance(double p);
  // a node of dtype d that passes ok, recent ones likelier; -1 if none
  int pick(DType d, const std::function<bool(const Node&)>& ok = {});
  const Node& node(int i) const { return prog.nodes[static_cast<size_t>(i)]; }
};

struct GenOptions {
  int min_ops = 3, max_ops = 12;
  int64_t max_numel = 8192;
};
Program generate(uint64_t seed, const GenOptions& o = {});

// The nodes the outputs `keep` depend on, renumbered, with `keep` as the outputs.
Program prune(const Program& p, const std::vector<int>& keep);
// jit_rounds > 0: as --jit runs it, a tg::Jit function called that many times with fresh leaves
std::string to_cpp(const Program& p, const std::string& header_comment, int jit_rounds = 0);

std::vector<Tensor> run_tg(const Program& p);  // every node's tensor (outputs realized together)
// The program as a function of its leaves (the outputs, in p.outputs order), for tg::Jit: leaf k reads inputs[k].
std::vector<Tensor> run_outputs(const Program& p, const std::vector<Tensor>& leaves);
std::vector<Tensor> make_leaves(const Program& p);  // each leaf's tensor, realized
// p with every leaf's data drawn again from its seed mixed with `round` (same shapes, dtypes and ranges)
Program with_fresh_leaves(const Program& p, uint64_t round);
// planted_bug: the reference's `add` is 1e-4 too large (the tester's own test: it must catch that and shrink it)
std::vector<Val> run_reference(const Program& p, bool planted_bug = false);

}  // namespace tg::difftest
