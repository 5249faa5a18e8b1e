// Quiesce-and-unload: a plugin is unloaded in a running process (refused while tensors or Jit captures on it are
// alive), its library is unmapped, and the next use loads the file found then (a "rebuilt" copy).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tg/device.hpp"
#include "tg/error.hpp"
#include "tg/jit.hpp"
#include "tg/tensor.hpp"

namespace tg {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

bool mapped(const std::string& path) {
  std::ifstream maps("/proc/self/maps");
  std::stringstream ss;
  ss << maps.rdbuf();
  return ss.str().find(path) != std::string::npos;
}

// A plugin directory first in TG_PLUGIN_PATH holding a copy of INTERP, set before tg discovers plugins.
class PluginReload : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tg_reload_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    install();
    ::setenv("TG_PLUGIN_PATH", dir_.c_str(), 1);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // (Re)places the plugin file, as a rebuild would: a new file under the same name.
  void install() {
    fs::remove(plugin());
    fs::copy_file(TG_PLUGIN_DIR "/libtg_plugin_interp.so", plugin());
  }
  std::string plugin() const { return (dir_ / "libtg_plugin_interp.so").string(); }
  fs::path dir_;
};

std::vector<float> affine(int n) {
  Tensor a = Tensor::arange(0, n, 1, dtypes::float32, "INTERP");
  return (a * 2.0f + 1.0f).to_vector<float>();
}

TEST_F(PluginReload, UnloadUnmapsAndTheNextUseLoadsTheNewFile) {
  EXPECT_EQ(affine(5), std::vector<float>({1, 3, 5, 7, 9}));
  ASSERT_TRUE(mapped(plugin()));
  unload_plugin("INTERP");
  EXPECT_FALSE(mapped(plugin())) << "the library is still mapped after unload_plugin";
  install();
  EXPECT_EQ(affine(4), std::vector<float>({1, 3, 5, 7}));
  EXPECT_TRUE(mapped(plugin()));
  bool listed = false;
  for (const auto& r : plugin_reports())
    if (r.path == plugin()) listed = r.loaded;
  EXPECT_TRUE(listed) << "the reloaded plugin is not reported as loaded";
}

TEST_F(PluginReload, RefusedWhileTensorsLive) {
  Tensor a = Tensor::arange(0, 8, 1, dtypes::float32, "INTERP").realize();
  try {
    unload_plugin("INTERP");
    FAIL() << "unload_plugin succeeded with a live buffer";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot unload the INTERP plugin: INTERP still has 1 buffer(s)"));
  }
  EXPECT_TRUE(mapped(plugin()));
  EXPECT_EQ(a.to_vector<float>(), std::vector<float>({0, 1, 2, 3, 4, 5, 6, 7}));  // still works
}

TEST_F(PluginReload, RefusedWhileAJitHoldsPrograms) {
  Jit jit([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    return std::vector<Tensor>{(in[0] + 1.0f).realize()};
  });
  for (int i = 0; i < 3; ++i) jit(std::vector<Tensor>{Tensor::arange(0, 4, 1, dtypes::float32, "INTERP").realize()});
  EXPECT_THROW(unload_plugin("INTERP"), Error);
}

TEST_F(PluginReload, UnknownDeviceIsAnError) {
  affine(2);
  try {
    unload_plugin("NOSUCH");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("cannot unload 'NOSUCH': no loaded plugin provides it"));
  }
}

}  // namespace
}  // namespace tg
