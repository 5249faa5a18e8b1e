// Plugin discovery and loading: each broken plugin file gets its own clear error and never stops the others.
#include "runtime/plugin_registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "tg/device.hpp"
#include "tg/tensor.hpp"

namespace tg::rt {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

const PluginInfo* find_report(const PluginRegistry& reg, const std::string& file) {
  for (const auto& r : reg.reports())
    if (fs::path(r.path).filename() == file) return &r;
  return nullptr;
}

TEST(PluginLoader, MissingFileIsReported) {
  std::string err;
  EXPECT_EQ(PluginRegistry::load("/nonexistent/libtg_plugin_nope.so", err), nullptr);
  EXPECT_THAT(err, HasSubstr("cannot load"));
}

TEST(PluginLoader, SharedObjectWithoutEntryPoint) {
  std::string err;
  EXPECT_EQ(PluginRegistry::load(TG_FAKE_PLUGIN_DIR "/libtg_plugin_noentry.so", err), nullptr);
  EXPECT_THAT(err, HasSubstr("no exported symbol tg_plugin_get_api"));
}

TEST(PluginLoader, DifferentMajorVersionNamesBoth) {
  std::string err;
  EXPECT_EQ(PluginRegistry::load(TG_FAKE_PLUGIN_DIR "/libtg_plugin_wrongmajor.so", err), nullptr);
  EXPECT_THAT(err, HasSubstr("plugin implements 99.0"));
  EXPECT_THAT(err, HasSubstr("core speaks 1.0"));
}

TEST(PluginLoader, RefusalMessageIsPassedOn) {
  std::string err;
  EXPECT_EQ(PluginRegistry::load(TG_FAKE_PLUGIN_DIR "/libtg_plugin_refuses.so", err), nullptr);
  EXPECT_THAT(err, HasSubstr("this plugin implements ABI 0.9 only"));
}

TEST(PluginLoader, BrokenPluginsDoNotStopTheOthers) {
  // fake plugins first, then the real CPU plugin: every file is reported, CPU still loads and runs
  PluginRegistry reg({TG_FAKE_PLUGIN_DIR, TG_CPU_PLUGIN_DIR});
  ASSERT_NE(find_report(reg, "libtg_plugin_noentry.so"), nullptr);
  EXPECT_FALSE(find_report(reg, "libtg_plugin_noentry.so")->loaded);
  EXPECT_FALSE(find_report(reg, "libtg_plugin_wrongmajor.so")->loaded);
  EXPECT_FALSE(find_report(reg, "libtg_plugin_refuses.so")->loaded);
  const PluginInfo* cpu = find_report(reg, "libtg_plugin_cpu.so");
  ASSERT_NE(cpu, nullptr);
  EXPECT_TRUE(cpu->loaded) << cpu->error;
  EXPECT_EQ(cpu->abi_version, "1.0");
  EXPECT_NE(reg.find("CPU"), nullptr);
  EXPECT_EQ(reg.find("FUTURE"), nullptr);
}

TEST(DeviceSelection, UnknownDeviceNamesThePlugins) {
  try {
    Tensor::zeros({2}, dtypes::float32, "NOSUCHDEV");
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown device 'NOSUCHDEV'"));
    EXPECT_THAT(e.what(), HasSubstr("CPU"));
  }
}

TEST(DeviceSelection, IndexBeyondTheDevicesIsAnError) {
  EXPECT_THROW(Tensor::zeros({2}, dtypes::float32, "CPU:7"), std::exception);
}

TEST(DeviceSelection, CpuIsAvailableAndCaseInsensitive) {
  EXPECT_EQ(canonical_device("cpu"), "CPU");
  Tensor t = Tensor::ones({3}, dtypes::float32, "CPU:0");
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>({1, 1, 1}));
}

}  // namespace
}  // namespace tg::rt
