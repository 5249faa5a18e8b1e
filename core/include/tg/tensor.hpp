// tg::Tensor: lazy n-dimensional arrays. Ops build a graph; realize() (or reading data) compiles and runs it.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tg/dtype.hpp"
#include "tg/error.hpp"
#include "tg/variable.hpp"

namespace tg {

namespace ir {
class UOp;
enum class Op : uint8_t;
enum class ReduceOp : int64_t;
}  // namespace ir

using Shape = std::vector<int64_t>;
class CustomKernel;
std::string shape_str(const Shape& s);  // "(2, 3)"

// Axes of a reduction, as tinygrad takes them: x.sum(1), x.sum({0, 2}), x.sum() (every axis), or a vector.
struct Axes {
  std::vector<int64_t> list;  // empty: every axis
  Axes() = default;
  Axes(int64_t axis) : list{axis} {}  // NOLINT: implicit, so sum(1) reads as in tinygrad
  Axes(std::initializer_list<int64_t> axes) : list(axes) {}
  Axes(std::vector<int64_t> axes) : list(std::move(axes)) {}  // NOLINT
};

class Tensor {
 public:
  // ---- creation (device "" = the default device) ----
  static Tensor empty(const Shape& shape, DType dtype = dtypes::float32, const std::string& device = "");
  static Tensor full(const Shape& shape, double value, DType dtype = dtypes::float32, const std::string& device = "");
  static Tensor zeros(const Shape& shape, DType dtype = dtypes::float32, const std::string& device = "");
  static Tensor ones(const Shape& shape, DType dtype = dtypes::float32, const std::string& device = "");
  static Tensor arange(double start, double stop, double step = 1, DType dtype = dtypes::int32,
                       const std::string& device = "");
  static Tensor eye(int64_t n, DType dtype = dtypes::float32, const std::string& device = "");
  // uniform in [0, 1) / standard normal, reproducible from the seed on every device
  static Tensor rand(const Shape& shape, uint64_t seed, DType dtype = dtypes::float32, const std::string& device = "");
  static Tensor randn(const Shape& shape, uint64_t seed, DType dtype = dtypes::float32, const std::string& device = "");
  // host data (T must match dtype's size: float, int32_t, uint16_t for float16/bfloat16 bits, ...)
  static Tensor from_bytes(const void* data, size_t nbytes, const Shape& shape, DType dtype,
                           const std::string& device = "");
  // Host memory the caller keeps alive through `owner` (a memory-mapped file, say): on devices whose buffers the
  // host addresses (the CPU) the tensor reads it in place, with no copy; elsewhere it is copied in. Kernels only
  // read such a tensor: it must be an input, never written.
  static Tensor from_host_memory(const void* data, size_t nbytes, const Shape& shape, DType dtype,
                                 std::shared_ptr<const void> owner, const std::string& device = "");
  template <typename T>
  static Tensor from_vector(const std::vector<T>& v, const Shape& shape, DType dtype, const std::string& device = "") {
    return from_bytes(v.data(), v.size() * sizeof(T), shape, dtype, device);
  }
  static Tensor from_vector(const std::vector<float>& v, const Shape& shape, const std::string& device = "") {
    return from_bytes(v.data(), v.size() * sizeof(float), shape, dtypes::float32, device);
  }
  // a scalar whose value is the variable's at launch: kernels using it compile once for every value
  static Tensor from_variable(const BoundVariable& v, const std::string& device = "");

  // ---- properties ----
  const Shape& shape() const;     // symbolic dims at their bound values
  std::vector<Dim> dims() const;  // the dims as declared: static sizes or expressions of bound variables
  bool is_symbolic() const;       // some dim is an expression of variables
  DType dtype() const;
  const std::string& device() const;
  int64_t ndim() const { return static_cast<int64_t>(shape().size()); }
  int64_t numel() const;

  // ---- elementwise (numpy-style broadcasting; scalars take the tensor's dtype when they fit) ----
  Tensor operator+(const Tensor& o) const;
  Tensor operator-(const Tensor& o) const;
  Tensor operator*(const Tensor& o) const;
  Tensor operator/(const Tensor& o) const;  // true division: ints divide as float32
  Tensor operator-() const { return neg(); }
  Tensor operator+(double s) const;
  Tensor operator-(double s) const;
  Tensor operator*(double s) const;
  Tensor operator/(double s) const;
  Tensor idiv(const Tensor& o) const;  // ints: truncating division, x/0 = 0
  Tensor mod(const Tensor& o) const;   // ints: C remainder, x%0 = 0
  Tensor neg() const;
  Tensor minimum(const Tensor& o) const;
  Tensor maximum(const Tensor& o) const;
  Tensor lt(const Tensor& o) const;
  Tensor le(const Tensor& o) const;
  Tensor gt(const Tensor& o) const;
  Tensor ge(const Tensor& o) const;
  Tensor eq(const Tensor& o) const;
  Tensor ne(const Tensor& o) const;
  Tensor logical_not() const;
  static Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
  Tensor exp() const;
  Tensor log() const;
  Tensor exp2() const;
  Tensor log2() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor reciprocal() const;
  Tensor abs() const;
  Tensor relu() const;
  Tensor sigmoid() const;
  Tensor tanh() const;
  Tensor gelu() const;  // tanh approximation
  Tensor silu() const;
  Tensor pow(const Tensor& e) const;
  Tensor pow(double e) const;
  Tensor cast(DType d) const;
  Tensor bitcast(DType d) const;  // same itemsize

  // ---- reductions over axes (empty = all), negative axes count from the end ----
  Tensor sum(Axes axes = {}, bool keepdim = false) const;
  Tensor max(Axes axes = {}, bool keepdim = false) const;
  Tensor min(Axes axes = {}, bool keepdim = false) const;
  Tensor mean(Axes axes = {}, bool keepdim = false) const;
  Tensor argmax(int64_t axis, bool keepdim = false) const;  // int32, first maximal index
  Tensor softmax(int64_t axis = -1) const;
  Tensor log_softmax(int64_t axis = -1) const;

  // ---- movement (views: no data is copied) ----
  // one -1 allowed; a symbolic reshape must provably keep the element count ((v*4,) <-> (v, 4))
  Tensor reshape(Shape shape) const;
  Tensor reshape(const std::vector<Dim>& dims) const;
  Tensor reshape(std::initializer_list<Dim> dims) const { return reshape(std::vector<Dim>(dims)); }
  Tensor permute(std::vector<int64_t> order) const;
  Tensor transpose(int64_t a = -2, int64_t b = -1) const;
  Tensor expand(Shape shape) const;  // -1 keeps a dim
  Tensor expand(const std::vector<Dim>& dims) const;
  Tensor expand(std::initializer_list<Dim> dims) const { return expand(std::vector<Dim>(dims)); }
  Tensor pad(std::vector<std::pair<int64_t, int64_t>> padding) const;    // (before, after) per dim, >= 0
  Tensor shrink(std::vector<std::pair<int64_t, int64_t>> bounds) const;  // [start, end) per dim
  Tensor slice(int64_t axis, int64_t start, int64_t end) const;          // python-like: negatives, clamping
  Tensor flip(std::vector<int64_t> axes) const;
  // [start, start + length) along axis; either may be symbolic (the KV-cache row at start_pos: (pos, 1); the
  // cache so far: (0, pos + 1)). Must stay inside the axis for every value of the variables.
  Tensor shrink(int64_t axis, const Dim& start, const Dim& length) const;
  // `before` zeros in front along axis, zeros after up to `total`; either may be symbolic
  Tensor pad(int64_t axis, const Dim& before, const Dim& total) const;
  Tensor unsqueeze(int64_t axis) const;
  Tensor squeeze(int64_t axis) const;
  static Tensor cat(const std::vector<Tensor>& ts, int64_t axis = 0);
  static Tensor stack(const std::vector<Tensor>& ts, int64_t axis = 0);
  Tensor gather(int64_t axis, const Tensor& index) const;  // out[..i..] = self[..index[..i..]..] along axis

  Tensor matmul(const Tensor& o) const;  // batch dims broadcast; 1-D operands as in numpy

  // Runs a hand-written kernel (tg/custom_kernel.hpp) on these inputs; returns its outputs.
  static std::vector<Tensor> custom_kernel(const CustomKernel& k, const std::vector<std::pair<Shape, DType>>& outputs,
                                           const std::vector<Tensor>& inputs);

  // ---- execution ----
  Tensor& realize();
  static void realize_all(std::vector<Tensor*> ts);
  Tensor contiguous() const;
  // to("CPU:1") copies; a list ("CPU:0,CPU:1") puts a whole copy on each (shard(devices) with no axis); a tensor
  // on several devices comes to one whole (its distinct shards copied there and put in place).
  Tensor to(const std::string& device) const;

  // ---- several devices (tensor/tensor_multi.cpp) ----
  // One part of `axis` per device, in order (the size must divide evenly); no axis: a whole copy on each. Ops on
  // sharded tensors run on every device; a reduction over a split axis ends in an allreduce (the result is then
  // whole on every device); a matmul along a split axis is a local matmul plus an allreduce.
  Tensor shard(const std::vector<std::string>& devices, std::optional<int64_t> axis = std::nullopt) const;
  // Over a mesh of devices (row-major: on a 2x2 mesh devices[2*i + j] sits at (i, j)): axes[m] is the axis split
  // along mesh dim m, or nullopt where the tensor is whole along it (replicated).
  Tensor shard(const std::vector<std::string>& devices, const Shape& mesh,
               const std::vector<std::optional<int64_t>>& axes) const;
  Tensor shard_like(const Tensor& other) const;  // as `other` is sharded
  std::vector<std::string> devices() const;      // {device()} for a tensor on one
  void copy_out(void* dst, size_t nbytes);       // realizes; nbytes must equal numel * itemsize
  template <typename T>
  std::vector<T> to_vector() {
    check_host_type(sizeof(T));
    std::vector<T> out(static_cast<size_t>(numel()));
    copy_out(out.data(), out.size() * sizeof(T));
    return out;
  }
  template <typename T>
  T item() {
    if (numel() != 1)
      throw std::invalid_argument("tg: item() needs a tensor with one element, got shape " + shape_str(shape()));
    return to_vector<T>()[0];
  }

  // the node this tensor currently stands for (tg internals and tests)
  std::shared_ptr<const ir::UOp> node() const;
  explicit Tensor(std::shared_ptr<const ir::UOp> node, std::string device);

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
  void check_host_type(size_t size) const;
  Tensor binop(ir::Op op, const Tensor& o) const;
  Tensor scalar_like(double v) const;
  Tensor reduce(ir::ReduceOp op, std::vector<int64_t> axes, bool keepdim) const;
};

inline Tensor operator+(double s, const Tensor& t) { return t + s; }
inline Tensor operator*(double s, const Tensor& t) { return t * s; }
inline Tensor operator-(double s, const Tensor& t) { return -t + s; }

}  // namespace tg
