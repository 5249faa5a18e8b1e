// A Tensor program on DEV INTERP, run by sdk_out_of_tree_interp with TG_PLUGIN_PATH naming an INTERP plugin built
// out of tree against the installed SDK: it checks that the plugin which provides INTERP is that file (and not
// the tg build tree's copy) and that it computes right, against plain C++ loops.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "tg/device.hpp"
#include "tg/plugin_abi.h"
#include "tg/tensor.hpp"

namespace {

TEST(SdkConsume, InterpComesFromTgPluginPath) {
  const char* dir = std::getenv("TG_PLUGIN_PATH");
  ASSERT_NE(dir, nullptr) << "run with TG_PLUGIN_PATH=<dir of the out-of-tree libtg_plugin_interp.so>";
  bool found = false;
  for (const tg::PluginInfo& p : tg::plugin_reports()) {
    if (p.device_name != "INTERP" || !p.loaded || p.shadowed) continue;
    EXPECT_EQ(p.path.rfind(dir, 0), 0u) << "INTERP is provided by " << p.path << ", not by a file in " << dir;
    EXPECT_EQ(p.abi_version, std::to_string(TG_ABI_VERSION_MAJOR) + "." + std::to_string(TG_ABI_VERSION_MINOR));
    EXPECT_FALSE(p.manifest.empty()) << "the installed plugin has no manifest beside it";
    found = true;
  }
  EXPECT_TRUE(found) << "no plugin provides INTERP";
}

TEST(SdkConsume, ComputesOnInterp) {
  constexpr int n = 100;
  std::vector<float> a(n), b(n), expected_sum(1, 0.0f);
  std::vector<int32_t> c(n);
  for (int i = 0; i < n; ++i)
    a[i] = 0.25f * static_cast<float>(i), b[i] = 3.0f - 0.5f * static_cast<float>(i), c[i] = i - 50;
  tg::Tensor ta = tg::Tensor::from_vector(a, {10, 10}, "INTERP"), tb = tg::Tensor::from_vector(b, {10, 10}, "INTERP");
  tg::Tensor tc = tg::Tensor::from_vector(c, {10, 10}, tg::dtypes::int32, "INTERP");
  EXPECT_EQ(ta.device(), "INTERP");

  std::vector<float> got = (ta * tb + ta).relu().to_vector<float>();
  for (int i = 0; i < n; ++i) {
    const float product = a[i] * b[i], want = std::max(product + a[i], 0.0f);
    EXPECT_EQ(got[i], want) << "element " << i;
  }
  std::vector<int32_t> rows =
      (tc * tc).idiv(tg::Tensor::full({10, 10}, 7, tg::dtypes::int32, "INTERP")).sum({1}).to_vector<int32_t>();
  for (int r = 0; r < 10; ++r) {
    int32_t want = 0;
    for (int k = 0; k < 10; ++k) want += c[r * 10 + k] * c[r * 10 + k] / 7;
    EXPECT_EQ(rows[r], want) << "row " << r;
  }
}

}  // namespace
