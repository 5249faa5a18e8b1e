// Hand-written kernels: several outputs, a top-k over 256 lanes, register arrays with loop-carried state,
// unrolled reductions, and the errors a kernel author can make — all against plain C++ loops.
#include "tg/custom_kernel.hpp"
#include "tg/device.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <array>

#include <cmath>

#include <algorithm>
#include <numeric>
#include <random>

#include "../random_floats.hpp"

namespace tg {
namespace {

using ::testing::HasSubstr;

std::vector<float> random_floats(size_t n, uint32_t seed) { return test::random_floats(n, seed, -10, 10); }

TEST(CustomKernel, TwoOutputsInOneParallelKernel) {
  const int64_t n = 1000;
  auto a = random_floats(n, 1), b = random_floats(n, 2);
  CustomKernel k("sum_and_product");
  KExpr i = k.range(n, Axis::GLOBAL);
  KExpr x = k.load(k.buffer(2, dtypes::float32), i), y = k.load(k.buffer(3, dtypes::float32), i);
  k.run(k.store(k.buffer(0, dtypes::float32), i, x + y));
  k.run(k.store(k.buffer(1, dtypes::float32), i, x * y));
  k.parallel();
  auto outs = Tensor::custom_kernel(k, {{{n}, dtypes::float32}, {{n}, dtypes::float32}},
                                    {Tensor::from_vector(a, {n}), Tensor::from_vector(b, {n})});
  auto s = outs[0].to_vector<float>(), p = outs[1].to_vector<float>();
  for (int64_t j = 0; j < n; ++j) {
    ASSERT_EQ(s[j], a[j] + b[j]) << j;
    ASSERT_EQ(p[j], a[j] * b[j]) << j;
  }
}

TEST(CustomKernel, TopKOver256Lanes) {
  const int64_t rows = 4, n = 256, topk = 8;
  uint32_t seed = std::random_device{}();
  std::cout << "topk seed=" << seed << "\n";
  auto host = random_floats(rows * n, seed);
  for (int64_t j = 0; j < 16; ++j) host[j * 3] = host[j * 3 + 1];  // ties: broken by the lower index
  CustomKernel k("topk256");
  KExpr r = k.range(rows, Axis::GLOBAL), i = k.range(n, Axis::LOOP), j = k.range(n, Axis::REDUCE);
  KExpr x = k.buffer(2, dtypes::float32);
  KExpr xi = k.load(x, r * n + i), xj = k.load(x, r * n + j);
  // the rank of lane i: how many lanes beat it (larger, or equal with a lower index)
  KExpr beats = (xi < xj) || ((xj == xi) && (j < i));
  KExpr rank =
      k.reduce(KExpr::where(beats, k.constant(1, dtypes::int64), k.constant(0, dtypes::int64)), Reduce::SUM, {j});
  KExpr slot = r * topk + rank, keep = rank < topk;
  KExpr sv = k.store(k.buffer(0, dtypes::float32), slot, xi, keep);
  KExpr si = k.store(k.buffer(1, dtypes::int32), slot, i.cast(dtypes::int32), keep);
  k.run(k.loop({sv, si}, {i}));
  k.parallel();
  auto outs =
      k({{{rows, topk}, dtypes::float32}, {{rows, topk}, dtypes::int32}}, {Tensor::from_vector(host, {rows, n})});
  auto vals = outs[0].to_vector<float>();
  auto idx = outs[1].to_vector<int32_t>();
  for (int64_t row = 0; row < rows; ++row) {
    std::vector<int32_t> order(n);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int32_t p, int32_t q) { return host[row * n + p] > host[row * n + q]; });
    for (int64_t t = 0; t < topk; ++t) {
      EXPECT_EQ(idx[row * topk + t], order[t]) << "row " << row << " rank " << t;
      EXPECT_EQ(vals[row * topk + t], host[row * n + order[t]]) << "row " << row << " rank " << t;
    }
  }
}

TEST(CustomKernel, RegisterArrayCarriesAPrefixSum) {
  const int64_t rows = 3, n = 50;
  auto host = random_floats(rows * n, 5);
  CustomKernel k("cumsum");
  KExpr r = k.range(rows, Axis::GLOBAL), i = k.range(n, Axis::LOOP);
  KExpr acc = k.reg(dtypes::float32, 1), zero = k.constant(0, dtypes::int64);
  KExpr init = k.store(acc, zero, k.constant(0, dtypes::float32));
  KExpr v = k.load(k.after(acc, {init}), zero) + k.load(k.buffer(1, dtypes::float32), r * n + i);
  k.run(init);
  k.run(k.loop({k.store(acc, zero, v), k.store(k.buffer(0, dtypes::float32), r * n + i, v)}, {i}));
  auto out = k({{{rows, n}, dtypes::float32}}, {Tensor::from_vector(host, {rows, n})})[0].to_vector<float>();
  for (int64_t row = 0; row < rows; ++row) {
    float s = 0;
    for (int64_t c = 0; c < n; ++c) {
      s += host[row * n + c];
      ASSERT_EQ(out[row * n + c], s) << row << "," << c;
    }
  }
}

// The register array is first touched inside a loop (its zeroing), then accumulated in a second loop and read
// in a third: it must be one array for the work-item, not one per loop that uses it.
TEST(CustomKernel, RegisterArrayInitializedInALoopLivesAcrossLoops) {
  const int64_t rows = 7, lanes = 8, n = 40;  // out[r] = sum over c of a[r, c] * b[c], in 8 partial sums
  auto a = random_floats(rows * n, 11), b = random_floats(n, 12);
  CustomKernel k("lanes_dot");
  KExpr r = k.range(rows, Axis::GLOBAL), z = k.range(lanes, Axis::LOOP);
  KExpr acc = k.reg(dtypes::float32, lanes);
  KExpr init = k.loop({k.store(acc, z, k.constant(0, dtypes::float32))}, {z});
  KExpr blk = k.range(n / lanes, Axis::LOOP), lane = k.range(lanes, Axis::UPCAST);
  KExpr col = blk * lanes + lane;
  KExpr step = k.loop({k.store(acc, lane,
                               k.load(k.after(acc, {init}), lane) + k.load(k.buffer(1, dtypes::float32), r * n + col) *
                                                                        k.load(k.buffer(2, dtypes::float32), col))},
                      {blk, lane});
  KExpr fin = k.range(lanes, Axis::LOOP);
  k.run(init);
  k.run(step);
  k.run(k.store(k.buffer(0, dtypes::float32), r, k.reduce(k.load(k.after(acc, {step}), fin), Reduce::SUM, {fin})));
  k.parallel();
  auto out = k({{{rows}, dtypes::float32}}, {Tensor::from_vector(a, {rows, n}), Tensor::from_vector(b, {n})})[0]
                 .to_vector<float>();
  for (int64_t row = 0; row < rows; ++row) {
    std::vector<float> part(lanes, 0.0f);  // the kernel's association: lane partial sums, then lanes in order
    for (int64_t c = 0; c < n; ++c) part[c % lanes] = part[c % lanes] + a[row * n + c] * b[c];
    float want = 0;
    for (float p : part) want += p;
    EXPECT_EQ(out[row], want) << row;
  }
}

// A reduction read per UPCAST lane: the lanes make it one vector accumulator, each lane summing its row in order
// (unrolled along j per lane instead, each row would be summed in another association and one loop per lane).
TEST(CustomKernel, AReductionPerUpcastLaneSumsItsRowInOrder) {
  const int64_t rows = 8, n = 64;
  auto a = random_floats(rows * n, 21);
  CustomKernel k("rowsum_lanes");
  KExpr g = k.range(rows / 4, Axis::GLOBAL), u = k.range(4, Axis::UPCAST), j = k.range(n, Axis::REDUCE);
  KExpr row = g * 4 + u;
  k.run(k.loop({k.store(k.buffer(0, dtypes::float32), row,
                        k.reduce(k.load(k.buffer(1, dtypes::float32), row * n + j), Reduce::SUM, {j}))},
               {u}));
  auto out = k({{{rows}, dtypes::float32}}, {Tensor::from_vector(a, {rows, n})})[0].to_vector<float>();
  for (int64_t r = 0; r < rows; ++r) {
    float want = 0;
    for (int64_t c = 0; c < n; ++c) want = want + a[r * n + c];
    EXPECT_EQ(out[r], want) << r;
  }
}

// UPCAST lanes through a register array (the LLM's matrix-vector shape): out[i, l] = 3 in[i, l] + l over 32
// lanes, written as vector stores on CPU (the emitter groups innermost UPCAST stores), as scalars on INTERP, and
// the odd lanes' gated store stays per lane; all three must match a plain loop.
TEST(CustomKernel, UpcastLanesThroughARegisterArray) {
  const int64_t rows = 8, lanes = 32;
  std::vector<float> x(rows * lanes);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.25f - 9.0f;
  CustomKernel k("lanes_to_vectors");
  KExpr i = k.range(rows, Axis::GLOBAL);
  KExpr acc = k.reg(dtypes::float32, lanes);
  KExpr l = k.range(lanes, Axis::UPCAST), l2 = k.range(lanes, Axis::UPCAST), l3 = k.range(lanes, Axis::UPCAST);
  KExpr fill = k.loop({k.store(acc, l, k.load(k.buffer(1, dtypes::float32), i * lanes + l) * 3.0f)}, {l});
  k.run(fill);
  KExpr out = k.buffer(0, dtypes::float32);
  KExpr put = k.loop({k.store(out, i * lanes + l2, k.load(k.after(acc, {fill}), l2) + l2.cast(dtypes::float32))}, {l2});
  k.run(put);
  k.run(k.loop({k.store(k.after(out, {put}), i * lanes + l3, k.constant(-1, dtypes::float32),
                        l3 % k.constant(2, dtypes::int64) == k.constant(1, dtypes::int64))},
               {l3}));
  for (const char* dev : {"CPU", "INTERP"}) {
    auto got =
        Tensor::custom_kernel(k, {{{rows * lanes}, dtypes::float32}}, {Tensor::from_vector(x, {rows * lanes}, dev)})[0]
            .to_vector<float>();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < lanes; ++j) {
        const float want = j % 2 ? -1.0f : x[r * lanes + j] * 3.0f + static_cast<float>(j);
        ASSERT_EQ(got[r * lanes + j], want) << dev << " row " << r << " lane " << j;
      }
  }
}

// KExpr::fma: one rounding where the renderer has FMA (CPU), a product and a sum where it does not (the core
// decomposes it); both within those roundings of the float64 value a * b + c, and exact where that is exact.
TEST(CustomKernel, FmaRoundsOnceOrTwice) {
  const int64_t n = 257;
  std::vector<float> a(n), b(n), c(n);
  for (int64_t j = 0; j < n; ++j)
    a[j] = 1.0f + static_cast<float>(j) / 3.0f, b[j] = 0.5f - static_cast<float>(j) / 7.0f,
    c[j] = static_cast<float>(j % 5) - 2.0f;
  a[0] = 3.0f, b[0] = 4.0f, c[0] = 5.0f;  // exact: 17
  CustomKernel k("fma_kernel");
  KExpr i = k.range(n, Axis::GLOBAL);
  auto in = [&](int slot) { return k.load(k.buffer(slot, dtypes::float32), i); };
  k.run(k.store(k.buffer(0, dtypes::float32), i, KExpr::fma(in(1), in(2), in(3))));
  EXPECT_THROW(KExpr::fma(in(1), in(2), i), std::invalid_argument);  // an int64 operand
  for (const char* dev : {"CPU", "INTERP"}) {
    auto out = Tensor::custom_kernel(k, {{{n}, dtypes::float32}},
                                     {Tensor::from_vector(a, {n}, dev), Tensor::from_vector(b, {n}, dev),
                                      Tensor::from_vector(c, {n}, dev)})[0]
                   .to_vector<float>();
    EXPECT_EQ(out[0], 17.0f) << dev;
    for (int64_t j = 0; j < n; ++j) {
      const double want = static_cast<double>(a[j]) * b[j] + c[j];
      // at most half an ulp for the product (when rounded on its own) and half an ulp for the result
      const double bound = (std::fabs(static_cast<double>(a[j]) * b[j]) + std::fabs(want)) * 0x1p-24;
      ASSERT_NEAR(out[j], want, bound) << dev << " element " << j;
    }
  }
}

// KExpr::dot4 and CustomKernel::load_packed against their definitions computed here byte by byte: vpdpbusd and
// unaligned vector loads on the CPU, the interpreter's own DOT4 and packed loads, and the core's decompositions
// (byte loads, shifts, multiplies) on a renderer that takes neither (QCOM on PoCL, where present).
// Vectors of 4, 8 and 16 lanes: each width has its own instruction sequence on an AVX2 host without VNNI.
TEST(CustomKernel, Dot4AndPackedLoadsMatchTheirDefinition) {
  const uint32_t seed = std::random_device{}();
  for (const int64_t lanes : {4, 8, 16}) {
    const int64_t groups = 37, n = groups * lanes;
    std::mt19937 rng(seed);
    std::vector<uint8_t> bytes(n * 8 + 16);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    for (int64_t j = 0; j < 4; ++j) bytes[1 + j] = 255, bytes[n * 4 + 3 + j] = 128;  // extremes: 255 x -128
    std::vector<int32_t> acc(n);
    for (auto& a : acc) a = static_cast<int32_t>(rng() % 2000001) - 1000000;
    const auto word = [&](int64_t at) {
      uint32_t w = 0;
      for (int64_t b = 0; b < 4; ++b) w |= uint32_t{bytes[at + b]} << (8 * b);
      return w;
    };
    CustomKernel k("dot4_packed");
    KExpr g = k.range(groups, Axis::GLOBAL), l = k.range(lanes, Axis::UPCAST);
    KExpr e = g * lanes + l, buf = k.buffer(2, dtypes::uint8);  // outputs are buffers 0 and 1
    // u words at odd byte offsets (1 + 4e), s words at 3 + 4n + 4e: no access is 4-byte aligned
    KExpr u = k.load_packed(buf, e * 4 + 1, dtypes::int32), sv = k.load_packed(buf, e * 4 + (n * 4 + 3), dtypes::int32);
    KExpr d = KExpr::dot4(k.load(k.buffer(3, dtypes::int32), e), u, sv);
    KExpr h = k.load_packed(buf, e * 2 + 5, dtypes::uint16).cast(dtypes::int32);  // a 2-byte packed load
    k.run(k.loop({k.store(k.buffer(0, dtypes::int32), e, d), k.store(k.buffer(1, dtypes::int32), e, h)}, {l}));
    EXPECT_THROW(KExpr::dot4(u, u, h.cast(dtypes::int64)), std::invalid_argument);
    EXPECT_THROW(k.load_packed(k.buffer(3, dtypes::int32), e, dtypes::int32), std::invalid_argument);  // not bytes
    std::vector<std::string> devs{"CPU", "INTERP"};
    for (const std::string& dev : available_devices())
      if (dev.rfind("QCOM", 0) == 0) devs.push_back(dev);
    for (const std::string& dev : devs) {
      Tensor tb = Tensor::from_vector(bytes, {static_cast<int64_t>(bytes.size())}, dtypes::uint8, dev);
      Tensor ta = Tensor::from_vector(acc, {n}, dtypes::int32, dev);
      auto out = k({{{n}, dtypes::int32}, {{n}, dtypes::int32}}, {tb, ta});
      auto got = out[0].to_vector<int32_t>(), half = out[1].to_vector<int32_t>();
      for (int64_t i = 0; i < n; ++i) {
        const uint32_t a = word(1 + 4 * i), b = word(n * 4 + 3 + 4 * i);
        int64_t want = acc[i];
        for (int q = 0; q < 4; ++q)
          want += int64_t{static_cast<uint8_t>(a >> (8 * q))} * static_cast<int8_t>(b >> (8 * q));
        ASSERT_EQ(got[i], want) << dev << " element " << i << " seed " << seed;
        ASSERT_EQ(half[i], bytes[i * 2 + 5] | bytes[i * 2 + 6] << 8) << dev << " element " << i << " seed " << seed;
      }
    }
  }
}

// KExpr::dot4 with its narrow promise (each pair of byte products within int16) against the definition, at the
// promise's edges: u bytes up to 127 against any s (127 x -128 twice: -32512), and any u against s within +-64
// (255 x 64 twice: 32640). On an AVX2 host without VNNI the CPU sums pairs with saturation (vpmaddubsw); elsewhere
// the promise changes nothing. 4, 8 and 16 lanes.
TEST(CustomKernel, NarrowDot4WithinItsPromiseMatchesItsDefinition) {
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  for (const int64_t lanes : {4, 8, 16})
    for (const bool small_u : {true, false}) {
      SCOPED_TRACE(std::to_string(lanes) + (small_u ? " lanes, u <= 127" : " lanes, |s| <= 64"));
      const int64_t n = 23 * lanes;
      std::vector<int32_t> u(n), s(n), acc(n);
      for (int64_t i = 0; i < n; ++i) {
        uint32_t wu = 0, ws = 0;
        for (int b = 0; b < 4; ++b) {
          const uint32_t ub = small_u ? rng() % 128 : rng() % 256;
          const int32_t sb = small_u ? static_cast<int32_t>(rng() % 256) - 128 : static_cast<int32_t>(rng() % 129) - 64;
          wu |= ub << (8 * b), ws |= (static_cast<uint32_t>(sb) & 255u) << (8 * b);
        }
        if (i % 7 == 0) wu = small_u ? 0x7f7f7f7fu : 0xffffffffu, ws = small_u ? 0x80808080u : 0x40404040u;
        if (i % 7 == 1) wu = small_u ? 0x7f7f7f7fu : 0xffffffffu, ws = small_u ? 0x7f7f7f7fu : 0xc0c0c0c0u;
        u[i] = static_cast<int32_t>(wu), s[i] = static_cast<int32_t>(ws);
        acc[i] = static_cast<int32_t>(rng() % 2000001) - 1000000;
      }
      CustomKernel k("dot4_narrow");
      KExpr g = k.range(n / lanes, Axis::GLOBAL), l = k.range(lanes, Axis::UPCAST), e = g * lanes + l;
      auto in = [&](int slot) { return k.load(k.buffer(slot, dtypes::int32), e); };
      k.run(k.loop({k.store(k.buffer(0, dtypes::int32), e, KExpr::dot4(in(1), in(2), in(3), true))}, {l}));
      std::vector<std::string> devs{"CPU", "INTERP"};
      for (const std::string& dev : available_devices())
        if (dev.rfind("QCOM", 0) == 0) devs.push_back(dev);
      for (const std::string& dev : devs) {
        auto got = k({{{n}, dtypes::int32}}, {Tensor::from_vector(acc, {n}, dtypes::int32, dev),
                                              Tensor::from_vector(u, {n}, dtypes::int32, dev),
                                              Tensor::from_vector(s, {n}, dtypes::int32, dev)})[0]
                       .to_vector<int32_t>();
        for (int64_t i = 0; i < n; ++i) {
          int64_t want = acc[i];
          for (int q = 0; q < 4; ++q)
            want += int64_t{static_cast<uint8_t>(static_cast<uint32_t>(u[i]) >> (8 * q))} *
                    static_cast<int8_t>(static_cast<uint32_t>(s[i]) >> (8 * q));
          ASSERT_EQ(got[i], want) << dev << " element " << i << " seed " << seed;
        }
      }
    }
}

// KExpr::lut16 against its definition computed here: pshufb on 4, 8 and 16 lanes and the helper on one lane on the
// CPU, the interpreter's LUT16, the core's selects on a renderer without it (QCOM on PoCL, where present). Index
// bytes have random high nibbles (ignored by definition).
TEST(CustomKernel, Lut16MatchesItsDefinition) {
  const int64_t n = 16 * 7 + 3;
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::array<uint8_t, 16> table;
  for (auto& t : table) t = static_cast<uint8_t>(rng());
  std::vector<int32_t> idx(n);
  for (auto& v : idx) v = static_cast<int32_t>(rng());
  CustomKernel k("lut16");
  std::vector<KExpr> stores;
  const int64_t widths[] = {16, 8, 4, 1};
  for (int64_t wi = 0; wi < 4; ++wi) {  // output wi holds the table looked up in vectors of widths[wi] lanes
    const int64_t w = widths[wi];
    KExpr g = k.range(n / w, Axis::LOOP), l = k.range(w, Axis::UPCAST), e = g * w + l;
    k.run(k.loop({k.store(k.buffer(static_cast<int>(wi), dtypes::int32), e,
                          KExpr::lut16(k.load(k.buffer(4, dtypes::int32), e), table))},
                 {g, l}));
  }
  EXPECT_THROW(
      KExpr::lut16(k.load(k.buffer(4, dtypes::int32), k.constant(0, dtypes::int64)).cast(dtypes::int64), table),
      std::invalid_argument);
  std::vector<std::string> devs{"CPU", "INTERP"};
  for (const std::string& dev : available_devices())
    if (dev.rfind("QCOM", 0) == 0) devs.push_back(dev);
  for (const std::string& dev : devs) {
    auto out = k({{{n}, dtypes::int32}, {{n}, dtypes::int32}, {{n}, dtypes::int32}, {{n}, dtypes::int32}},
                 {Tensor::from_vector(idx, {n}, dtypes::int32, dev)});
    for (int64_t wi = 0; wi < 4; ++wi) {
      auto got = out[static_cast<size_t>(wi)].to_vector<int32_t>();
      for (int64_t i = 0; i < n / widths[wi] * widths[wi]; ++i) {
        uint32_t want = 0;
        for (int b = 0; b < 4; ++b) want |= uint32_t{table[(static_cast<uint32_t>(idx[i]) >> (8 * b)) & 15]} << (8 * b);
        ASSERT_EQ(static_cast<uint32_t>(got[i]), want)
            << dev << " " << widths[wi] << " lanes, element " << i << " seed " << seed;
      }
    }
  }
}

TEST(CustomKernel, UnrolledAndLoopedReduction) {
  const int64_t rows = 5, n = 64;
  auto a = random_floats(rows * n, 7), b = random_floats(n, 8);
  CustomKernel k("dot_unroll4");
  KExpr r = k.range(rows, Axis::GLOBAL), outer = k.range(n / 4, Axis::REDUCE), u = k.range(4, Axis::UNROLL);
  KExpr col = outer * 4 + u;
  KExpr prod = k.load(k.buffer(1, dtypes::float32), r * n + col) * k.load(k.buffer(2, dtypes::float32), col);
  k.run(k.store(k.buffer(0, dtypes::float32), r, k.reduce(prod, Reduce::SUM, {outer, u})));
  k.parallel();
  auto out = k({{{rows}, dtypes::float32}}, {Tensor::from_vector(a, {rows, n}), Tensor::from_vector(b, {n})})[0]
                 .to_vector<float>();
  for (int64_t row = 0; row < rows; ++row) {
    // same association as the kernel: per outer step, the 4 unrolled terms left to right, then accumulate
    float acc = 0;
    for (int64_t o = 0; o < n / 4; ++o) {
      float t = a[row * n + o * 4] * b[o * 4];
      for (int64_t q = 1; q < 4; ++q) t = t + a[row * n + o * 4 + q] * b[o * 4 + q];
      acc = acc + t;
    }
    EXPECT_EQ(out[row], acc) << row;
  }
}

TEST(CustomKernelErrors, MistakesAreReported) {
  CustomKernel k("bad");
  KExpr i = k.range(4, Axis::GLOBAL);
  EXPECT_THROW(k.load(k.buffer(0, dtypes::float32), i) + k.constant(1, dtypes::int32), std::invalid_argument);
  EXPECT_THROW(k.store(k.buffer(0, dtypes::float32), i, k.constant(1, dtypes::int32)), std::invalid_argument);
  EXPECT_THROW(CustomKernel("9lives"), std::invalid_argument);
  k.run(k.store(k.buffer(0, dtypes::float32), i, k.load(k.buffer(1, dtypes::float32), i)));
  try {
    k({{{4}, dtypes::float32}}, {});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("uses buffer 1 but was called with 1 tensors"));
  }
}

TEST(CustomKernelErrors, LocalMemoryOnARendererWithout) {
  CustomKernel k("needs_local");
  KExpr i = k.range(4, Axis::GLOBAL);
  KExpr tile = k.local(dtypes::float32, 4);
  KExpr st = k.store(tile, i, k.constant(1, dtypes::float32));
  k.run(k.store(k.buffer(0, dtypes::float32), i, k.load(k.after(tile, {k.barrier({st})}), i)));
  try {
    k({{{4}, dtypes::float32}}, {});
    GTEST_SKIP() << "this device has local memory";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("needs local memory"));
  }
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {

// popcount through inline code: each language spells it its own way; the result is checked against a host loop.
CustomKernel popcount_kernel(int64_t n, const CustomKernel::Code& code) {
  CustomKernel k("inline_popcount");
  KExpr i = k.range(n, Axis::GLOBAL);
  KExpr x = k.load(k.buffer(1, dtypes::uint32), i);
  KExpr bits = k.inline_expr(dtypes::int32, code, {x});
  // a statement too: out[i] = bits * 2 + 1, written as C text
  k.run(k.inline_stmt({{"c", "{0}[{1}] = {2} * 2 + 1;"}, {"opencl-c", "{0}[{1}] = {2} * 2 + 1;"}},
                      {k.buffer(0, dtypes::int32), i, bits}));
  return k;
}

const CustomKernel::Code kPopcount = {
    {"c", "__builtin_popcount({0})"}, {"opencl-c", "(int)popcount({0})"}, {"cuda", "__popc({0})"}};

TEST(CustomKernelInlineCode, ExpressionAndStatementOnCpu) {
  const int64_t n = 300;
  std::vector<uint32_t> x(n);
  for (int64_t j = 0; j < n; ++j) x[j] = static_cast<uint32_t>(j * 2654435761u);
  auto out = Tensor::custom_kernel(popcount_kernel(n, kPopcount), {{{n}, dtypes::int32}},
                                   {Tensor::from_vector(x, {n}, dtypes::uint32, "CPU")})[0]
                 .to_vector<int32_t>();
  for (int64_t j = 0; j < n; ++j) {
    int bits = 0;
    for (uint32_t v = x[j]; v; v &= v - 1) ++bits;
    ASSERT_EQ(out[j], bits * 2 + 1) << "element " << j << " (x = " << x[j] << ")";
  }
}

TEST(CustomKernelInlineCode, NoVariantForTheRenderersLanguageIsAnError) {
  const int64_t n = 4;
  std::vector<uint32_t> x(n, 7);
  try {
    Tensor::custom_kernel(popcount_kernel(n, {{"cuda", "__popc({0})"}}), {{{n}, dtypes::int32}},
                          {Tensor::from_vector(x, {n}, dtypes::uint32, "CPU")})[0]
        .realize();
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("inline code is written for cuda, but this renderer speaks c"));
  }
}

TEST(CustomKernelInlineCode, RendererWithoutInlineCodeIsAnError) {
  const int64_t n = 4;
  std::vector<uint32_t> x(n, 7);
  try {
    Tensor::custom_kernel(popcount_kernel(n, kPopcount), {{{n}, dtypes::int32}},
                          {Tensor::from_vector(x, {n}, dtypes::uint32, "INTERP")})[0]
        .realize();
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("inline code is written for c, opencl-c, cuda, but this renderer takes no inline code"));
  }
}

// A hint: out[i] = 2 x[i] with a prefetch of x that C renderers take and the rest ("*": empty) skip; the same
// kernel runs on CPU (which pastes the prefetch) and on INTERP (which has no inline code at all).
TEST(CustomKernelInlineCode, EmptyFallbackStatementIsAHintOthersSkip) {
  const int64_t n = 100;
  std::vector<float> x(n);
  for (int64_t j = 0; j < n; ++j) x[j] = static_cast<float>(j) * 0.5f - 7.0f;
  CustomKernel k("prefetch_hint");
  KExpr i = k.range(n, Axis::GLOBAL);
  KExpr in = k.buffer(1, dtypes::float32);
  KExpr ahead = KExpr::where(i + 16 < n, i + 16, i);
  k.run(k.inline_stmt({{"c", "__builtin_prefetch(&{0}[{1}]);"}, {"*", ""}}, {in, ahead}));
  k.run(k.store(k.buffer(0, dtypes::float32), i, k.load(in, i) * 2.0f));
  for (const char* dev : {"CPU", "INTERP"}) {
    auto out =
        Tensor::custom_kernel(k, {{{n}, dtypes::float32}}, {Tensor::from_vector(x, {n}, dev)})[0].to_vector<float>();
    for (int64_t j = 0; j < n; ++j) ASSERT_EQ(out[j], x[j] * 2.0f) << dev << " element " << j;
  }
}

TEST(CustomKernelInlineCode, BadVariantsAreRefused) {
  CustomKernel k("bad_inline");
  KExpr i = k.range(4, Axis::GLOBAL);
  EXPECT_THROW(k.inline_expr(dtypes::int32, {}, {i}), std::invalid_argument);
  EXPECT_THROW(k.inline_expr(dtypes::int32, {{"", "x"}}, {i}), std::invalid_argument);
  EXPECT_THROW(k.inline_expr(dtypes::int32, {{"c", "{0}"}}, std::vector<KExpr>(11, i)), std::invalid_argument);
}

}  // namespace
}  // namespace tg

namespace tg {
namespace {

// C = A @ B as a work-group kernel: each 8x8 group stages a tile of A and of B in local memory, synchronizes,
// accumulates the tile's products, and synchronizes again before the next tile overwrites the staging arrays.
CustomKernel tiled_matmul(int64_t m, int64_t n, int64_t kdim, int64_t t) {
  CustomKernel k("tiled_matmul_local");
  KExpr gy = k.range(m / t, Axis::GLOBAL), gx = k.range(n / t, Axis::GLOBAL);
  KExpr ly = k.range(t, Axis::LOCAL), lx = k.range(t, Axis::LOCAL);
  KExpr kt = k.range(kdim / t, Axis::LOOP), kk = k.range(t, Axis::REDUCE);
  KExpr a = k.buffer(1, dtypes::float32), b = k.buffer(2, dtypes::float32), c = k.buffer(0, dtypes::float32);
  KExpr as = k.local(dtypes::float32, t * t), bs = k.local(dtypes::float32, t * t), acc = k.reg(dtypes::float32, 1);
  KExpr zero = k.constant(0, dtypes::int64);
  KExpr init = k.store(acc, zero, k.constant(0, dtypes::float32));
  KExpr row = gy * t + ly, col = gx * t + lx;
  KExpr stage_a = k.store(as, ly * t + lx, k.load(a, row * kdim + kt * t + lx));
  KExpr stage_b = k.store(bs, ly * t + lx, k.load(b, (kt * t + ly) * n + col));
  KExpr staged = k.barrier({stage_a, stage_b});
  KExpr as_ready = k.after(as, {staged}), bs_ready = k.after(bs, {staged});
  KExpr partial = k.reduce(k.load(as_ready, ly * t + kk) * k.load(bs_ready, kk * t + lx), Reduce::SUM, {kk});
  KExpr update = k.store(acc, zero, k.load(k.after(acc, {init}), zero) + partial);
  KExpr tile = k.loop({k.barrier({update})}, {kt});
  k.run(init);
  k.run(tile);
  k.run(k.store(c, row * n + col, k.load(k.after(acc, {tile}), zero)));
  return k;
}

TEST(CustomKernel, TiledMatmulThroughLocalMemory) {
  const int64_t m = 32, n = 24, kdim = 40, t = 8;
  uint32_t seed = std::random_device{}();
  std::cout << "tiled matmul seed=" << seed << "\n";
  auto a = random_floats(m * kdim, seed), b = random_floats(kdim * n, seed + 1);
  std::vector<float> got;
  try {
    got = Tensor::custom_kernel(tiled_matmul(m, n, kdim, t), {{{m, n}, dtypes::float32}},
                                {Tensor::from_vector(a, {m, kdim}), Tensor::from_vector(b, {kdim, n})})[0]
              .to_vector<float>();
  } catch (const Error& e) {
    if (std::string(e.what()).find("which this renderer does not have") == std::string::npos) throw;
    GTEST_SKIP() << "the default device has no work-groups with local memory: " << e.what();
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;  // the kernel sums each tile in order, then the tiles: compare with a tolerance
      for (int64_t p = 0; p < kdim; ++p) want += static_cast<double>(a[i * kdim + p]) * b[p * n + j];
      ASSERT_NEAR(got[i * n + j], want, 1e-3 * (1 + std::abs(want))) << "C[" << i << "][" << j << "]";
    }
}

TEST(CustomKernel, WorkGroupLimitsAreNamed) {
  CustomKernel k("too_wide");
  KExpr g = k.range(2, Axis::GLOBAL), l = k.range(1 << 20, Axis::LOCAL);
  k.run(k.store(k.buffer(0, dtypes::float32), g * (1 << 20) + l, k.constant(1, dtypes::float32)));
  try {
    Tensor::custom_kernel(k, {{{2 << 20}, dtypes::float32}}, {})[0].realize();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    // a device with work-groups names its limit; one without says it has none
    const std::string what = e.what();
    EXPECT_TRUE(what.find("max_local[0]") != std::string::npos ||
                what.find("which this renderer does not have") != std::string::npos)
        << what;
  }
}

}  // namespace
}  // namespace tg
