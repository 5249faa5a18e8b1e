// Weight formats: tg's in-kernel decoders against the PyPI `gguf` package's numpy dequantizer (random blocks
// written by gen_quant_fixture.py), hand-built blocks with known values, and the quantized matrix product and
// embedding kernels against float64 loops over the reference values.
#include "quant/quant.hpp"
#include "quant/quant_int8.hpp"
#include "quant/quant_matrix_unit.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "q8_reference.hpp"
#include "tg/custom_kernel.hpp"
#include "tg/dtype.hpp"

namespace tg::llm {
namespace {

constexpr int64_t kRows = 3, kCols = 512;

std::vector<uint8_t> read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(f), {});
}

// The fixture directory, produced once per test run by the Python reference.
struct RemovedAtExit {
  std::string path;
  ~RemovedAtExit() { std::filesystem::remove_all(path); }
};

const std::string& fixture_dir() {
  static RemovedAtExit dir{[] {
    // one directory per process: ctest -j runs the test cases as separate processes, each writing its own
    // random fixture, and a shared one was read by one while another rewrote it
    std::string d = ::testing::TempDir() + "tg_quant_fixture_" + std::to_string(getpid());
    uint32_t seed = std::random_device{}();
    std::cout << "quant fixture seed=" << seed << "\n";
    std::string cmd =
        std::string(TG_PYTHON) + " " + TG_LLM_TEST_DIR + "/gen_quant_fixture.py " + d + " " + std::to_string(seed);
    if (std::system(cmd.c_str()) != 0)
      throw std::runtime_error("the fixture script failed (needs python3 with the gguf package): " + cmd);
    return d;
  }()};
  return dir.path;
}

struct Fixture {
  std::vector<uint8_t> raw;
  std::vector<float> want;
};

Fixture load(const std::string& type) {
  Fixture f{read_file(fixture_dir() + "/" + type + ".bin"), {}};
  auto v = read_file(fixture_dir() + "/" + type + ".f32");
  f.want.resize(v.size() / 4);
  std::memcpy(f.want.data(), v.data(), v.size());
  return f;
}

GGUFTensor as_tensor(GGMLType t, const std::vector<uint8_t>& raw, int64_t rows, int64_t cols) {
  GGUFTensor g;
  g.name = "w";
  g.ne = {cols, rows};
  g.type = t;
  g.data = raw.data();
  g.nbytes = raw.size();
  return g;
}

TEST(Int8Activation, MatchesQuantizeRowQ8_0) {
  const int64_t T = 3, cols = 96;
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> x(T * cols);
  for (auto& v : x) v = nd(rng);
  for (int i = 0; i < 32; ++i) x[32 + i] = 0.0f;  // an all-zero block: d = 0, q = 0
  x[70] = 127.5f * 0.25f, x[71] = -x[70];         // exact halves in a block whose d is 0.25
  for (int i = 64; i < 96; ++i)
    if (i != 70 && i != 71) x[i] = 0.0f;
  x[64] = 31.75f;  // max: d = 0.25
  std::vector<float> d;
  auto q = q8_values(x, d);
  Int8Activation a = quantize_int8(Tensor::from_vector(x, {T, cols}));
  auto words = a.words.to_vector<int32_t>();
  auto scales = a.scale.to_vector<float>();
  ASSERT_EQ(words.size(), x.size() / 4);
  for (size_t b = 0; b < d.size(); ++b) ASSERT_EQ(scales[b], d[b]) << "block " << b << " seed " << seed;
  for (size_t w = 0; w < words.size(); ++w)
    for (int i = 0; i < 4; ++i)
      ASSERT_EQ(static_cast<int8_t>(static_cast<uint32_t>(words[w]) >> (8 * i)), q[w * 4 + i])
          << "value " << w * 4 + i << " seed " << seed;
  // the block sums a format's minimum multiplies: d x (the sum of q, exact in float32)
  ASSERT_TRUE(a.block_sums.has_value());
  auto sums = a.block_sums->to_vector<float>();
  ASSERT_EQ(sums.size(), d.size());
  for (size_t b = 0; b < d.size(); ++b) {
    int sum = 0;
    for (int i = 0; i < 32; ++i) sum += q[b * 32 + i];
    ASSERT_EQ(sums[b], d[b] * static_cast<float>(sum)) << "block " << b << " seed " << seed;
  }
  EXPECT_THROW(quantize_int8(Tensor::zeros({2, 40})), std::invalid_argument);
  EXPECT_THROW(quantize_int8(Tensor::zeros({3, 32}), 2), std::invalid_argument);  // T not a multiple of the group
}

// The grouped layout of the tiled product: the same q and d, G tokens side by side, plus each half-block's sum of q.
TEST(Int8Activation, GroupedLayoutHoldsTheSameValues) {
  const int64_t G = 4, T = 8, cols = 64, nb = cols / 32;
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> x(T * cols);
  for (auto& v : x) v = nd(rng);
  std::vector<float> d;
  auto q = q8_values(x, d);
  Int8Activation a = quantize_int8(Tensor::from_vector(x, {T, cols}), G);
  ASSERT_EQ(a.group, G);
  auto words = a.words.to_vector<int32_t>();
  auto scales = a.scale.to_vector<float>();
  ASSERT_TRUE(a.sums.has_value());
  auto sums = a.sums->to_vector<int32_t>();
  for (int64_t t = 0; t < T; ++t)
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t at = (t / G) * nb + b, lane = t % G;
      ASSERT_EQ(scales[at * G + lane], d[t * nb + b]) << "token " << t << " block " << b << " seed " << seed;
      for (int64_t h = 0; h < 2; ++h) {
        int32_t sum = 0;
        for (int64_t i = 0; i < 16; ++i) sum += q[(t * nb + b) * 32 + h * 16 + i];
        ASSERT_EQ(sums[(at * 2 + h) * G + lane], sum)
            << "token " << t << " block " << b << " half " << h << " seed " << seed;
      }
      for (int64_t j = 0; j < 8; ++j)
        for (int i = 0; i < 4; ++i)
          ASSERT_EQ(static_cast<int8_t>(static_cast<uint32_t>(words[(at * 8 + j) * G + lane]) >> (8 * i)),
                    q[(t * nb + b) * 32 + j * 4 + i])
              << "token " << t << " block " << b << " word " << j << " seed " << seed;
    }
  // biased (for weights taken as the signed operand): the same layout with each byte q + 128, the same sums of q
  Int8Activation u = quantize_int8(Tensor::from_vector(x, {T, cols}), G, true);
  ASSERT_TRUE(u.biased);
  ASSERT_TRUE(u.sums.has_value());
  EXPECT_EQ(u.sums->to_vector<int32_t>(), sums);
  EXPECT_EQ(u.scale.to_vector<float>(), scales);
  auto biased = u.words.to_vector<int32_t>();
  ASSERT_EQ(biased.size(), words.size());
  for (size_t w = 0; w < words.size(); ++w)
    for (int i = 0; i < 4; ++i) {
      const int8_t q8 = static_cast<int8_t>(static_cast<uint32_t>(words[w]) >> (8 * i));
      ASSERT_EQ(static_cast<uint8_t>(static_cast<uint32_t>(biased[w]) >> (8 * i)), q8 + 128)
          << "word " << w << " seed " << seed;
    }
  EXPECT_THROW(quantize_int8(Tensor::from_vector(x, {T, cols}), 1, true), std::invalid_argument);  // biased is grouped
}

// v rounded to bfloat16 (to nearest, ties to even), as the matrix unit's product takes its operands.
double bf16(double v) {
  const float f = static_cast<float>(v);
  uint32_t b;
  std::memcpy(&b, &f, 4);
  b = (b + 0x7FFFu + ((b >> 16) & 1u)) & 0xFFFF0000u;
  float r;
  std::memcpy(&r, &b, 4);
  return r;
}

// The activation a product of m by T tokens multiplies: x itself, x rounded to bfloat16 on the matrix unit, or x as
// Q8_0 rounds it for an int8 product (the integer formats).
std::vector<double> multiplied_activation(const QuantMatrix& m, int64_t T, const std::vector<float>& x) {
  std::vector<double> xv(x.begin(), x.end());
  if (takes_matrix_unit(m, T)) {
    for (double& v : xv) v = bf16(v);
  } else if (has_int8_product(m)) {
    xv = q8_rounded(x);
  }
  return xv;
}

class Formats : public ::testing::TestWithParam<GGMLType> {};

TEST_P(Formats, DequantizeMatchesGgufPy) {
  GGMLType t = GetParam();
  Fixture f = load(type_name(t));
  ASSERT_EQ(f.want.size(), static_cast<size_t>(kRows * kCols));
  QuantMatrix m = upload_matrix(as_tensor(t, f.raw, kRows, kCols), nullptr);
  auto got = dequantize(m).to_vector<float>();
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got[i], f.want[i], 1e-6 * std::fabs(f.want[i]) + 1e-7) << type_name(t) << " element " << i;
}

TEST_P(Formats, MatrixProductAndEmbeddingMatchFloat64Loops) {
  GGMLType t = GetParam();
  Fixture f = load(type_name(t));
  QuantMatrix m = upload_matrix(as_tensor(t, f.raw, kRows, kCols), nullptr);
  // the in-kernel decode (lanes along the block), the tiled int8 product (lanes along the tokens; padded), the
  // float formats' panel GEMM. 120 then 128 tokens: both padded to 128, the tiled product on words as stored, then
  // on weights decoded to signed bytes (from 128 tokens): two kernels, not one cached for both
  for (int64_t T : {int64_t{1}, int64_t{3}, int64_t{5}, int64_t{12}, kTileTokens, kTileTokens + 7, int64_t{120},
                    int64_t{128}, kPanelTokens + 3}) {
    std::vector<float> x(static_cast<size_t>(T * kCols));
    std::mt19937 rng(static_cast<uint32_t>(T));
    std::normal_distribution<float> nd;
    for (auto& v : x) v = nd(rng);
    auto y = qmatmul(m, Tensor::from_vector(x, {T, kCols})).to_vector<float>();
    ASSERT_EQ(y.size(), static_cast<size_t>(T * kRows));
    const std::vector<double> xv = multiplied_activation(m, T, x);
    for (int64_t tt = 0; tt < T; ++tt)
      for (int64_t r = 0; r < kRows; ++r) {
        double ref = 0, mag = 0;
        for (int64_t c = 0; c < kCols; ++c) {
          ref += static_cast<double>(f.want[r * kCols + c]) * xv[tt * kCols + c];
          mag += std::fabs(static_cast<double>(f.want[r * kCols + c]) * xv[tt * kCols + c]);
        }
        EXPECT_NEAR(y[tt * kRows + r], ref, 1e-5 * mag + 1e-6)
            << type_name(t) << " T=" << T << " t=" << tt << " row " << r;
      }
  }
  // many rows (the fixture's, repeated): the products then work on row blocks, with several token groups
  const int64_t copies = 64, rows = kRows * copies;
  std::vector<uint8_t> tiled;
  for (int64_t c = 0; c < copies; ++c) tiled.insert(tiled.end(), f.raw.begin(), f.raw.end());
  QuantMatrix big = upload_matrix(as_tensor(t, tiled, rows, kCols), nullptr);
  for (int64_t T : {int64_t{1}, int64_t{20}, 2 * kTileTokens}) {
    std::vector<float> x(static_cast<size_t>(T * kCols));
    std::mt19937 rng(static_cast<uint32_t>(T) + 100);
    std::normal_distribution<float> nd;
    for (auto& v : x) v = nd(rng);
    auto y = qmatmul(big, Tensor::from_vector(x, {T, kCols})).to_vector<float>();
    const std::vector<double> xv = multiplied_activation(big, T, x);
    const bool unit = takes_matrix_unit(big, T);  // the weights rounded to bfloat16 too
    for (int64_t tt = 0; tt < T; ++tt)
      for (int64_t r = 0; r < rows; ++r) {
        double ref = 0, mag = 0;
        for (int64_t c = 0; c < kCols; ++c) {
          const double wv = unit ? bf16(f.want[(r % kRows) * kCols + c]) : f.want[(r % kRows) * kCols + c];
          ref += wv * xv[tt * kCols + c];
          mag += std::fabs(wv * xv[tt * kCols + c]);
        }
        ASSERT_NEAR(y[tt * rows + r], ref, 1e-5 * mag + 1e-6)
            << type_name(t) << " T=" << T << " t=" << tt << " row " << r << (unit ? " (matrix unit)" : "");
      }
  }
  std::vector<int32_t> ids = {2, 0, 2, -1, 7};
  auto e = qembedding(m, Tensor::from_vector(ids, {5}, dtypes::int32)).to_vector<float>();
  for (size_t i = 0; i < ids.size(); ++i)
    for (int64_t c = 0; c < kCols; ++c) {
      float want = ids[i] >= 0 && ids[i] < kRows ? f.want[ids[i] * kCols + c] : 0.0f;
      ASSERT_NEAR(e[i * kCols + c], want, 1e-6 * std::fabs(want) + 1e-7)
          << type_name(t) << " id " << ids[i] << " col " << c;
    }
}

// The fixture's rows as experts of one row each: (E, rows, cols) = (3, 1, 512).
QuantMatrix stacked_experts(GGMLType t, const Fixture& f) {
  GGUFTensor g = as_tensor(t, f.raw, kRows, kCols);
  g.ne = {kCols, 1, kRows};
  return upload_matrix(g, nullptr);
}

// The stacked experts' product (qmatmul_experts): the fixture's rows as experts of one row each, each (token,
// slot) pair by its own expert; the input shared by a token's slots or one per pair; an id out of range: zeros.
TEST_P(Formats, ExpertProductsMatchFloat64Loops) {
  GGMLType t = GetParam();
  Fixture f = load(type_name(t));
  const QuantMatrix m = stacked_experts(t, f);
  const int64_t T = 5, K = 2;
  const std::vector<int32_t> ids = {0, 2, 1, -1, 2, 2, 3, 0, 1, 0};
  std::mt19937 rng(7);
  std::normal_distribution<float> nd;
  for (bool shared : {true, false}) {
    const int64_t n = shared ? T : T * K;
    std::vector<float> x(static_cast<size_t>(n * kCols));
    for (auto& v : x) v = nd(rng);
    auto y =
        qmatmul_experts(m, kRows, Tensor::from_vector(x, {n, kCols}), Tensor::from_vector(ids, {T, K}, dtypes::int32))
            .to_vector<float>();
    ASSERT_EQ(y.size(), static_cast<size_t>(T * K));
    const std::vector<double> xv = has_int8_product(m) ? q8_rounded(x) : std::vector<double>(x.begin(), x.end());
    for (int64_t p = 0; p < T * K; ++p) {
      const int32_t e = ids[static_cast<size_t>(p)];
      double ref = 0, mag = 0;
      for (int64_t c = 0; e >= 0 && e < kRows && c < kCols; ++c) {
        const double term =
            static_cast<double>(f.want[e * kCols + c]) * xv[static_cast<size_t>((shared ? p / K : p) * kCols + c)];
        ref += term;
        mag += std::fabs(term);
      }
      EXPECT_NEAR(y[static_cast<size_t>(p)], ref, 1e-5 * mag + 1e-6)
          << type_name(t) << (shared ? " shared" : " per pair") << " pair " << p;
    }
    if (shared) continue;
    // summed by routing weights into one row per token (down's epilogue)
    std::vector<float> wts(static_cast<size_t>(T * K));
    for (auto& v : wts) v = nd(rng);
    ProductInput in{Tensor::from_vector(x, {T * K, kCols}), nullptr};
    auto z = qmatmul_experts_summed(m, kRows, in, Tensor::from_vector(ids, {T, K}, dtypes::int32),
                                    Tensor::from_vector(wts, {T, K}))
                 .to_vector<float>();
    ASSERT_EQ(z.size(), static_cast<size_t>(T));
    for (int64_t tt = 0; tt < T; ++tt) {
      double ref = 0, mag = 0;
      for (int64_t sl = 0; sl < K; ++sl) {
        const int64_t p = tt * K + sl;
        const int32_t e = ids[static_cast<size_t>(p)];
        for (int64_t c = 0; e >= 0 && e < kRows && c < kCols; ++c) {
          const double term = wts[static_cast<size_t>(p)] * static_cast<double>(f.want[e * kCols + c]) *
                              xv[static_cast<size_t>(p * kCols + c)];
          ref += term;
          mag += std::fabs(term);
        }
      }
      EXPECT_NEAR(z[static_cast<size_t>(tt)], ref, 1e-5 * mag + 1e-6) << type_name(t) << " summed, token " << tt;
    }
  }
}

// The prefill form (qmatmul_grouped): runs of kExpertRunTokens rows, each by its expert's rows; 4 runs take the
// words as unsigned bytes in the loop, 24 (128 tokens an expert; from 32) decode the weights to signed bytes first.
TEST_P(Formats, GroupedExpertProductsMatchFloat64Loops) {
  GGMLType t = GetParam();
  Fixture f = load(type_name(t));
  const QuantMatrix m = stacked_experts(t, f);
  const uint32_t seed = std::random_device{}();
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  for (const int64_t runs : {4, 24}) {
    const int64_t T = runs * kExpertRunTokens;
    std::vector<int32_t> ids(static_cast<size_t>(runs));
    for (auto& e : ids) e = static_cast<int32_t>(rng() % kRows);
    std::vector<float> x(static_cast<size_t>(T * kCols));
    for (auto& v : x) v = nd(rng);
    ProductInput in{Tensor::from_vector(x, {T, kCols}), nullptr};
    const Tensor id_tensor = Tensor::from_vector(ids, {runs}, dtypes::int32);
    if (!has_int8_product(m)) {
      EXPECT_THROW(qmatmul_grouped(m, kRows, in, id_tensor), std::invalid_argument) << type_name(t);
      return;
    }
    const auto y = qmatmul_grouped(m, kRows, in, id_tensor).to_vector<float>();
    ASSERT_EQ(y.size(), static_cast<size_t>(T));
    const std::vector<double> xv = q8_rounded(x);
    for (int64_t tt = 0; tt < T; ++tt) {
      const int32_t e = ids[static_cast<size_t>(tt / kExpertRunTokens)];
      double ref = 0, mag = 0;
      for (int64_t c = 0; c < kCols; ++c) {
        const double term = static_cast<double>(f.want[e * kCols + c]) * xv[static_cast<size_t>(tt * kCols + c)];
        ref += term;
        mag += std::fabs(term);
      }
      EXPECT_NEAR(y[static_cast<size_t>(tt)], ref, 1e-5 * mag + 1e-6)
          << type_name(t) << " " << runs << " runs, token " << tt << " seed " << seed;
    }
  }
  // runs that do not tile the rows, or ids of another shape: one clear error
  ProductInput odd{Tensor::zeros({kExpertRunTokens + 1, kCols}), nullptr};
  EXPECT_THROW(qmatmul_grouped(m, kRows, odd, Tensor::zeros({1}, dtypes::int32)), std::invalid_argument);
  ProductInput even{Tensor::zeros({kExpertRunTokens * 2, kCols}), nullptr};
  EXPECT_THROW(qmatmul_grouped(m, kRows, even, Tensor::zeros({3}, dtypes::int32)), std::invalid_argument);
}

// Greedy decoding's head: the row qargmax picks holds the largest float64 product (to the products' rounding), and
// of equal rows (the fixture's rows repeated) the first: the pick is always in the first copy.
TEST_P(Formats, ArgmaxPicksTheFirstLargestRow) {
  GGMLType t = GetParam();
  Fixture f = load(type_name(t));
  const int64_t copies = 64, rows = kRows * copies;
  std::vector<uint8_t> tiled;
  for (int64_t c = 0; c < copies; ++c) tiled.insert(tiled.end(), f.raw.begin(), f.raw.end());
  QuantMatrix big = upload_matrix(as_tensor(t, tiled, rows, kCols), nullptr);
  for (int64_t T : {int64_t{1}, int64_t{3}}) {
    std::vector<float> x(static_cast<size_t>(T * kCols));
    std::mt19937 rng(static_cast<uint32_t>(T) + 300);
    std::normal_distribution<float> nd;
    for (auto& v : x) v = nd(rng);
    ProductInput in{Tensor::from_vector(x, {T, kCols}), nullptr};
    auto pick = qargmax(big, in).to_vector<int32_t>();
    ASSERT_EQ(pick.size(), static_cast<size_t>(T));
    const std::vector<double> xv = multiplied_activation(big, T, x);
    for (int64_t tt = 0; tt < T; ++tt) {
      std::vector<double> ref(kRows), mag(kRows);
      for (int64_t r = 0; r < kRows; ++r)
        for (int64_t c = 0; c < kCols; ++c) {
          ref[r] += static_cast<double>(f.want[r * kCols + c]) * xv[tt * kCols + c];
          mag[r] += std::fabs(static_cast<double>(f.want[r * kCols + c]) * xv[tt * kCols + c]);
        }
      const int32_t p = pick[static_cast<size_t>(tt)];
      ASSERT_TRUE(p >= 0 && p < kRows) << type_name(t) << " T=" << T << " t=" << tt << ": picked row " << p
                                       << ", not the first copy";
      const double best = *std::max_element(ref.begin(), ref.end());
      EXPECT_GE(ref[p], best - 2e-5 * *std::max_element(mag.begin(), mag.end()) - 1e-6)
          << type_name(t) << " T=" << T << " t=" << tt << " row " << p;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllSupported, Formats, ::testing::ValuesIn(supported_types()),
                         [](const auto& info) { return type_name(info.param); });

// Hand-built blocks whose values are worked out by hand from ggml's layouts.
TEST(QuantBlocks, KnownValues) {
  // Q8_0: d = 0.5, q = -16..15: value = d * q
  std::vector<uint8_t> q8(34);
  uint16_t half = float_to_half(0.5f);
  std::memcpy(q8.data(), &half, 2);
  for (int i = 0; i < 32; ++i) q8[2 + i] = static_cast<uint8_t>(static_cast<int8_t>(i - 16));
  auto v = dequantize(upload_matrix(as_tensor(GGMLType::Q8_0, q8, 1, 32), nullptr)).to_vector<float>();
  for (int i = 0; i < 32; ++i) EXPECT_EQ(v[i], 0.5f * (i - 16)) << i;
  // Q4_0: d = 2, byte j = (15-j%16) << 4 | j%16: element j < 16 is the low nibble j, element 16+j the high 15-j; minus
  // 8
  std::vector<uint8_t> q4(18);
  half = float_to_half(2.0f);
  std::memcpy(q4.data(), &half, 2);
  for (int j = 0; j < 16; ++j) q4[2 + j] = static_cast<uint8_t>(((15 - j) << 4) | j);
  v = dequantize(upload_matrix(as_tensor(GGMLType::Q4_0, q4, 1, 32), nullptr)).to_vector<float>();
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(v[j], 2.0f * (j - 8)) << j;
    EXPECT_EQ(v[16 + j], 2.0f * (15 - j - 8)) << 16 + j;
  }
  // Q5_0: d = 1, qs = 0, qh = 0xAAAAAAAA (odd elements have the fifth bit): value = 16 * (e odd) - 16
  std::vector<uint8_t> q5(22);
  half = float_to_half(1.0f);
  std::memcpy(q5.data(), &half, 2);
  for (int j = 0; j < 4; ++j) q5[2 + j] = 0xAA;
  v = dequantize(upload_matrix(as_tensor(GGMLType::Q5_0, q5, 1, 32), nullptr)).to_vector<float>();
  for (int e = 0; e < 32; ++e) EXPECT_EQ(v[e], e % 2 ? 0.0f : -16.0f) << e;
  // MXFP4: e = 129 (scale 2^(129 - 128) = 2), nibbles as Q4_0's above; e2m1 codes, doubled: 0 1 2 3 4 6 8 12, then
  // the same negated (code 8 is -0)
  const float e2m1[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  std::vector<uint8_t> mx(17);
  mx[0] = 129;
  for (int j = 0; j < 16; ++j) mx[1 + j] = static_cast<uint8_t>(((15 - j) << 4) | j);
  v = dequantize(upload_matrix(as_tensor(GGMLType::MXFP4, mx, 1, 32), nullptr)).to_vector<float>();
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(v[j], 2.0f * e2m1[j]) << j;
    EXPECT_EQ(v[16 + j], 2.0f * e2m1[15 - j]) << 16 + j;
  }
}

// A NaN in one token's activation makes that token's outputs NaN, and only its (every prefill path: the matrix unit's
// bfloat16 rounding must not carry a NaN into an infinity or a zero). Q8_0, 64 x 64, 40 tokens (AMX=0: the int8
// tiled product).
TEST(QuantNaN, ATokensNaNStaysInItsRow) {
  const int64_t rows = 64, cols = 64, T = 40;
  std::vector<uint8_t> bytes(static_cast<size_t>(rows * cols / 32 * 34));
  for (size_t i = 0; i < bytes.size(); ++i)
    bytes[i] = i % 34 == 0 ? 0x00 : i % 34 == 1 ? 0x2c : static_cast<uint8_t>(i * 7 % 251);
  QuantMatrix m{GGMLType::Q8_0, rows, cols,
                Tensor::from_vector(bytes, {static_cast<int64_t>(bytes.size())}, dtypes::uint8)};
  std::vector<float> x(static_cast<size_t>(T * cols), 0.5f);
  const uint32_t all_ones_nan = 0x7FFFFFFFu;  // its rounding carry runs into the sign bit: -0 unless handled
  std::memcpy(&x[5 * cols + 7], &all_ones_nan, 4);
  const std::vector<float> y = qmatmul(m, Tensor::from_vector(x, {T, cols})).to_vector<float>();
  for (int64_t t = 0; t < T; ++t)
    for (int64_t r = 0; r < rows; ++r)
      ASSERT_EQ(std::isnan(y[t * rows + r]), t == 5) << "token " << t << " row " << r << ": " << y[t * rows + r]
                                                     << (takes_matrix_unit(m, T) ? " (matrix unit)" : "");
}

// The 2-bit and ternary formats, hand-built: every byte of the 2-bit fields is 0xE4 (fields 0 1 2 3 from the low
// bits), so element e's field is (e / 32) % 4.
TEST(QuantBlocks, LowBitKnownValues) {
  auto values = [](GGMLType t, const std::vector<uint8_t>& block) {
    return dequantize(upload_matrix(as_tensor(t, block, 1, 256), nullptr)).to_vector<float>();
  };
  auto put_half = [](std::vector<uint8_t>& b, size_t at, float v) {
    const uint16_t h = float_to_half(v);
    std::memcpy(b.data() + at, &h, 2);
  };
  // Q2_K: scale byte 0x12 (scale 2, min 1) for all 16, d = 1, dmin = 0.5: value 2 q - 0.5
  std::vector<uint8_t> q2(84, 0xE4);
  std::fill(q2.begin(), q2.begin() + 16, 0x12);
  put_half(q2, 80, 1.0f), put_half(q2, 82, 0.5f);
  auto v = values(GGMLType::Q2_K, q2);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(v[e], 2.0f * ((e / 32) % 4) - 0.5f) << "Q2_K " << e;
  // Q3_K: every 6-bit scale 33 (low nibbles 1: bytes 0x11; high bits 2: bytes 0xAA), so 33 - 32 = 1; d = 1; hmask
  // bytes 0x0F: the third bit set in sub-blocks 0-3 (value q), clear in 4-7 (value q - 4)
  std::vector<uint8_t> q3(110, 0xE4);
  std::fill(q3.begin(), q3.begin() + 32, 0x0F);
  std::fill(q3.begin() + 96, q3.begin() + 104, 0x11);
  std::fill(q3.begin() + 104, q3.begin() + 108, 0xAA);
  put_half(q3, 108, 1.0f);
  v = values(GGMLType::Q3_K, q3);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(v[e], static_cast<float>((e / 32) % 4 - (e < 128 ? 0 : 4))) << "Q3_K " << e;
  // TQ2_0: d = 2, value 2 (q - 1)
  std::vector<uint8_t> t2(66, 0xE4);
  put_half(t2, 64, 2.0f);
  v = values(GGMLType::TQ2_0, t2);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(v[e], 2.0f * ((e / 32) % 4 - 1)) << "TQ2_0 " << e;
  // TQ1_0: byte 86 holds the base-3 digits 1 0 0 0 0 (86 x 3 / 256 = 1; 86 x 3 mod 256 = 2, 2 x 3 / 256 = 0; ...),
  // byte 255 the digits 2 2 2 2; value digit - 1. Elements 0-31 are digit 0 of the first 32 bytes, 32-159 digits
  // 1-4; 160-175 digit 0 of bytes 32-47, 176-239 digits 1-4; 240-255 the 4 digits of the 4 bytes at 48.
  std::vector<uint8_t> t1(54, 86);
  std::fill(t1.begin() + 48, t1.begin() + 52, 0xFF);
  put_half(t1, 52, 1.0f);
  v = values(GGMLType::TQ1_0, t1);
  for (int e = 0; e < 256; ++e)
    EXPECT_EQ(v[e], e < 32 || (e >= 160 && e < 176) ? 0.0f : e >= 240 ? 1.0f : -1.0f) << "TQ1_0 " << e;
}

// IQ blocks built by hand from grid entries read off the gguf package's grids (IQ2_XXS entry 1 = 43 8 8 8 8 8 8 8;
// IQ1_S entry 2 = 0 0 -1 -1 -1 -1 -1 -1).
TEST(QuantBlocks, GridKnownValues) {
  auto values = [](GGMLType t, const std::vector<uint8_t>& block) {
    return dequantize(upload_matrix(as_tensor(t, block, 1, 256), nullptr)).to_vector<float>();
  };
  const uint16_t one = float_to_half(1.0f);
  // IQ2_XXS: d = 1; per 32 elements grid indices 1 1 1 1 and aux = scale 1 << 28 | sign index 1 for the first 8
  // (bit 0 set, and bit 7 for its odd parity): scale (0.5 + 1) / 4 = 0.375
  std::vector<uint8_t> iq2(66);
  std::memcpy(iq2.data(), &one, 2);
  for (int ib = 0; ib < 8; ++ib) {
    std::fill(iq2.begin() + 2 + 8 * ib, iq2.begin() + 6 + 8 * ib, 1);
    const uint32_t aux = 1u << 28 | 1u;
    std::memcpy(iq2.data() + 6 + 8 * ib, &aux, 4);
  }
  auto v = values(GGMLType::IQ2_XXS, iq2);
  for (int e = 0; e < 256; ++e) {
    const int j = e % 8;
    const float mag = j == 0 ? 16.125f : 3.0f, sign = e % 32 < 8 && (j == 0 || j == 7) ? -1.0f : 1.0f;
    EXPECT_EQ(v[e], sign * mag) << "IQ2_XXS " << e;
  }
  // IQ1_S: d = 1; grid index 2 everywhere; per 32 a uint16 0x9000: scale 2 x 1 + 1 = 3, delta -1/8
  std::vector<uint8_t> iq1(50, 2);
  std::memcpy(iq1.data(), &one, 2);
  for (int ib = 0; ib < 8; ++ib) iq1[34 + 2 * ib] = 0x00, iq1[35 + 2 * ib] = 0x90;
  v = values(GGMLType::IQ1_S, iq1);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(v[e], e % 8 < 2 ? -0.375f : -3.375f) << "IQ1_S " << e;
}

TEST(QuantErrors, UnsupportedTypesAndBadShapesAreNamed) {
  std::vector<uint8_t> raw(292);  // Q8_K: llama.cpp's activation format, never a GGUF weight's
  try {
    upload_matrix(as_tensor(GGMLType::Q8_K, raw, 1, 256), nullptr);
    FAIL() << "Q8_K accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor 'w' has weight type Q8_K"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Q4_K"), std::string::npos) << e.what();
  }
  std::vector<uint8_t> q8(34 * 2);
  QuantMatrix m = upload_matrix(as_tensor(GGMLType::Q8_0, q8, 1, 64), nullptr);
  EXPECT_THROW(qmatmul(m, Tensor::zeros({1, 32})), std::invalid_argument);
  EXPECT_THROW(upload_matrix(as_tensor(GGMLType::Q8_0, std::vector<uint8_t>(30), 1, 32), nullptr), Error);
}

// Weights adopted from a read-only mapping can be read by kernels but never stored into; an in-place store
// into a lazy tensor would be lost, so it is refused too.
TEST(QuantErrors, InPlaceStoresNeedAWritableRealizedBuffer) {
  std::vector<uint8_t> raw(34, 0);
  QuantMatrix m = upload_matrix(as_tensor(GGMLType::Q8_0, raw, 1, 32), nullptr);
  CustomKernel k("poke");
  KExpr i = k.range(1, Axis::GLOBAL);
  k.run(k.store(k.buffer(0, dtypes::uint8), i, k.constant(1, dtypes::uint8)));
  try {
    k({}, {m.words});
    if (m.words.device() == "CPU") FAIL() << "a store into adopted host memory ran";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("read-only host memory"), std::string::npos) << e.what();
  }
  try {
    k({}, {Tensor::zeros({4}, dtypes::uint8)});
    FAIL() << "a store into a lazy input was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("not a realized buffer"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tg::llm
