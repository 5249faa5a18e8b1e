// The Tensor programs whose kernels the compile-only plugin tests render and compile (NV with NVRTC, AMD with LLVM's
// AMDGPU backend, METAL with a syntax check): elementwise over every dtype, casts, transcendentals, reductions,
// grouped reduces, a three-dim grid, matmuls (plain, tiled, tensor cores), vector accesses, softmax, movement views,
// gather and variables (int32 and int64). Each entry builds one lazy Tensor; the test schedules and lowers it.
#pragma once

#include "tg/tensor.hpp"
#include "tg/variable.hpp"

#include <functional>
#include <vector>

namespace tg::test {

namespace dt = tg::dtypes;

struct Program {
  const char* name;
  std::function<Tensor()> make;
};

inline std::vector<Program> compile_test_programs() {
  std::vector<Program> out;
  const auto arange = [](int64_t n, DType d) { return Tensor::arange(0, static_cast<double>(n)).cast(d); };
  // elementwise over every dtype: arithmetic where it means something, comparisons and where everywhere
  for (DType d : dt::all) {
    out.push_back({"elementwise", [=] {
                     const Tensor a = arange(64, d), b = arange(64, d).flip({0});
                     if (d == dt::bool_) return Tensor::where(a.eq(b), a, b.logical_not());
                     Tensor r = (a + b) * a - b;
                     if (d.is_float()) r = r / (b + Tensor::full({64}, 1.0, d));
                     if (!d.is_float()) r = r.idiv(b + Tensor::full({64}, 1.0, d)) + a.mod(b);
                     return Tensor::where(a.lt(b), r, a.maximum(b)).contiguous();
                   }});
    out.push_back({"cast to float32", [=] { return arange(64, d).cast(dt::float32); }});
    out.push_back({"cast from float32", [=] { return (Tensor::arange(0, 64).cast(dt::float32) * 0.37).cast(d); }});
    if (d.itemsize() == 2 && d != dt::bool_)
      out.push_back({"bitcast", [=] { return arange(16, d).bitcast(dt::int16); }});
  }
  out.push_back({"transcendentals", [] {
                   const Tensor x = Tensor::arange(1, 33).cast(dt::float32) * 0.1;
                   return x.exp() + x.log() + x.sin() + x.sqrt() + x.tanh() + x.gelu() + x.sigmoid() + x.pow(1.5);
                 }});
  out.push_back(
      {"transcendentals float64", [] { return (Tensor::arange(1, 33).cast(dt::float64) * 0.1).exp().log(); }});
  out.push_back({"transcendentals half", [] { return (Tensor::arange(1, 33).cast(dt::float16) * 0.1).exp().sqrt(); }});
  for (DType d : {dt::float32, dt::int32, dt::float16, dt::bfloat16, dt::int64, dt::float64}) {
    out.push_back({"sum", [=] { return arange(256, d).reshape({16, 16}).sum({1}); }});
    out.push_back({"max min", [=] {
                     return arange(256, d).reshape({16, 16}).max({0}) + arange(256, d).reshape({16, 16}).min({1});
                   }});
    out.push_back({"full reduce", [=] { return arange(1000, d).sum(); }});
  }
  // the GPU paths: a work-group per output sharing two long reduces through shared memory, a three-dim grid
  out.push_back({"grouped reduces", [] {
                   const Tensor x = Tensor::arange(0, 3 * 3000).cast(dt::float32).reshape({3, 3000});
                   return x.sum({1}) + x.max({1});
                 }});
  out.push_back(
      {"three-dim grid", [] { return Tensor::arange(0, 6 * 40 * 96).cast(dt::float32).reshape({6, 40, 96}) * 2.0; }});
  out.push_back({"mean", [] { return Tensor::arange(0, 60).cast(dt::float32).reshape({3, 4, 5}).mean({0, 2}); }});
  out.push_back({"argmax", [] { return Tensor::arange(0, 60).cast(dt::float32).reshape({6, 10}).argmax(1); }});
  for (DType d : {dt::float32, dt::float16, dt::bfloat16}) {
    out.push_back({"matmul", [=] {
                     return Tensor::arange(0, 64 * 32)
                         .cast(d)
                         .reshape({64, 32})
                         .matmul(Tensor::arange(0, 32 * 48).cast(d).reshape({32, 48}));
                   }});
  }
  // tiled through shared memory (float32) and on tensor cores (16-bit floats), with a batch on the grid's z
  for (DType d : {dt::float32, dt::float16, dt::bfloat16}) {
    out.push_back({"tiled matmul", [=] {
                     return Tensor::arange(0, 2 * 128 * 64)
                         .cast(d)
                         .reshape({2, 128, 64})
                         .matmul(Tensor::arange(0, 2 * 64 * 128).cast(d).reshape({2, 64, 128}));
                   }});
  }
  // float4 accesses: aligned where the index is a multiple of 4, lane by lane where a view shifts it by one
  out.push_back({"aligned vectors", [] { return Tensor::arange(0, 4096).cast(dt::float32).contiguous() * 2.0; }});
  out.push_back({"shifted vectors",
                 [] { return Tensor::arange(0, 4100).cast(dt::float32).contiguous().shrink(0, 1, 4096) * 2.0; }});
  out.push_back({"softmax", [] { return Tensor::arange(0, 128).cast(dt::float32).reshape({8, 16}).softmax(-1); }});
  out.push_back(
      {"log_softmax", [] { return Tensor::arange(0, 128).cast(dt::float32).reshape({8, 16}).log_softmax(0); }});
  out.push_back({"movement", [] {
                   const Tensor x = Tensor::arange(0, 120).cast(dt::float32).reshape({2, 3, 4, 5});
                   return x.permute({3, 1, 0, 2})
                       .pad({{1, 0}, {0, 2}, {0, 0}, {1, 1}})
                       .shrink({{0, 5}, {1, 4}, {0, 2}, {1, 5}})
                       .flip({1})
                       .contiguous();
                 }});
  out.push_back({"expand", [] { return Tensor::arange(0, 4).cast(dt::float32).reshape({4, 1}).expand({4, 8}) + 1.0; }});
  out.push_back({"cat", [] {
                   return Tensor::cat({Tensor::arange(0, 6).reshape({2, 3}), Tensor::arange(0, 9).reshape({3, 3})}, 0);
                 }});
  out.push_back({"gather", [] {
                   return Tensor::arange(0, 20)
                       .cast(dt::float32)
                       .reshape({4, 5})
                       .gather(1, Tensor::arange(0, 8).mod(Tensor::full({8}, 5, dt::int32)).reshape({4, 2}));
                 }});
  out.push_back({"variable shrink", [] {
                   const tg::Variable v("start_pos", 0, 30);
                   return Tensor::arange(0, 64).cast(dt::float32).shrink(0, v.bind(3), 8) * 2.0;
                 }});
  out.push_back({"int64 variable", [] {
                   const tg::Variable v("big", 0, int64_t{1} << 40, dt::int64);
                   return Tensor::from_variable(v.bind(int64_t{1} << 35)) + Tensor::full({4}, 1, dt::int64);
                 }});
  return out;
}

}  // namespace tg::test
