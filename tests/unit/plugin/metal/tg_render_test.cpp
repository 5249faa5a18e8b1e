// `tg render --dev METAL <example>` for every example `tg render` lists, with no Metal device: each prints its
// kernels as MSL (a `// ---- NAME on METAL (no device)` header, then `kernel void NAME(`), and each kernel passes
// the MSL syntax check. The same device-less path renders for NV without a GPU. Runs the built `tg` (TG_EXE_PATH).
#include "msl_check.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace {

using tg::test::CheckResult;

// The example names `tg render` prints when given none ("  name: description" lines).
std::vector<std::string> listed_examples() {
  const CheckResult r = tg::test::run_command(tg::test::quoted(TG_EXE_PATH) + " render --dev METAL");
  std::vector<std::string> names;
  std::istringstream lines(r.diagnostics);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("  ", 0) == 0 && line.find(':') != std::string::npos)
      names.push_back(line.substr(2, line.find(':') - 2));
  return names;
}

// The kernels of `tg render` output: the text from each `// ---- ` header to the next.
std::vector<std::string> kernels_of(const std::string& output) {
  std::vector<std::string> kernels;
  for (size_t at = output.find("// ---- "); at != std::string::npos;) {
    const size_t next = output.find("// ---- ", at + 1);
    kernels.push_back(output.substr(at, next == std::string::npos ? std::string::npos : next - at));
    at = next;
  }
  return kernels;
}

TEST(TgRenderMetal, EveryExampleRendersCheckedMsl) {
  const std::vector<std::string> examples = listed_examples();
  ASSERT_GE(examples.size(), 5u) << "tg render listed no examples";
  for (const std::string& example : examples) {
    SCOPED_TRACE(example);
    const CheckResult r =
        tg::test::run_command("env -u DEV " + tg::test::quoted(TG_EXE_PATH) + " render --dev METAL " + example);
    ASSERT_TRUE(r.ok) << r.diagnostics;
    const std::vector<std::string> kernels = kernels_of(r.diagnostics);
    ASSERT_FALSE(kernels.empty()) << r.diagnostics;
    for (size_t i = 0; i < kernels.size(); ++i) {
      const std::string& k = kernels[i];
      const std::string name = k.substr(8, k.find(' ', 8) - 8);
      EXPECT_NE(k.find(name + " on METAL (no device)\n"), std::string::npos) << k;
      EXPECT_NE(k.find("#include <metal_stdlib>"), std::string::npos) << k;
      EXPECT_NE(k.find("kernel void " + name + "("), std::string::npos) << k;
      const CheckResult check = tg::test::msl_syntax_check(k, "tg_render_" + example + "_" + std::to_string(i));
      EXPECT_TRUE(check.ok) << check.diagnostics << "\n" << k;
    }
  }
}

// The matmul example on a device-less METAL renderer goes through simdgroup matrices.
TEST(TgRenderMetal, MatmulUsesSimdgroupMatrices) {
  const CheckResult r =
      tg::test::run_command("env -u DEV " + tg::test::quoted(TG_EXE_PATH) + " render --dev METAL matmul");
  ASSERT_TRUE(r.ok) << r.diagnostics;
  EXPECT_NE(r.diagnostics.find("simdgroup_multiply_accumulate"), std::string::npos) << r.diagnostics;
}

// A device no plugin provides is still one clear error.
TEST(TgRenderMetal, UnknownDeviceIsOneError) {
  const CheckResult r =
      tg::test::run_command("env -u DEV " + tg::test::quoted(TG_EXE_PATH) + " render --dev NOSUCHDEV matmul");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.diagnostics.find("NOSUCHDEV"), std::string::npos) << r.diagnostics;
}

#ifdef TG_HAS_NV_PLUGIN
// The same path renders CUDA C++ for NV where no GPU (or no driver) is present.
TEST(TgRenderNv, RendersWithoutAGpu) {
  const CheckResult r =
      tg::test::run_command("env -u DEV " + tg::test::quoted(TG_EXE_PATH) + " render --dev NV matmul");
  ASSERT_TRUE(r.ok) << r.diagnostics;
  EXPECT_NE(r.diagnostics.find("extern \"C\" __global__ void"), std::string::npos) << r.diagnostics;
}
#endif

}  // namespace
