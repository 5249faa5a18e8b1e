// Plugin discovery and loading: each broken plugin file gets its own clear error and never stops the others.
#include "runtime/plugin_registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>

#include "tg/device.hpp"
#include "tg/tensor.hpp"

namespace tg::rt {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

const std::string kCoreVersion = std::to_string(TG_ABI_VERSION_MAJOR) + "." + std::to_string(TG_ABI_VERSION_MINOR);

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
  EXPECT_THAT(err, HasSubstr("ABI out of range: plugin implements 99.0"));
  EXPECT_THAT(err, HasSubstr("this core speaks " + kCoreVersion + " and loads plugins 1.0-1.x"));
}

TEST(PluginLoader, ZeroedTableIsRefused) {
  std::string err;
  EXPECT_EQ(PluginRegistry::load(TG_FAKE_PLUGIN_DIR "/libtg_plugin_zeroed.so", err), nullptr);
  EXPECT_THAT(err, HasSubstr("plugin table is zeroed"));
  EXPECT_THAT(err, HasSubstr("version 0 is never valid"));
}

TEST(PluginLoader, NullMandatorySlotIsNamed) {
  std::string err;
  EXPECT_EQ(PluginRegistry::load(TG_FAKE_PLUGIN_DIR "/libtg_plugin_nullslot.so", err), nullptr);
  EXPECT_THAT(err, HasSubstr("slots ABI 1.0 requires NULL: hwqueue_wait"));
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
  EXPECT_EQ(cpu->abi_version, kCoreVersion);
  EXPECT_FALSE(cpu->manifest.empty()) << "tg_add_plugin writes a manifest beside every plugin";
  EXPECT_NE(reg.find("CPU"), nullptr);
  EXPECT_EQ(reg.find("FUTURE"), nullptr);
}

// A scratch directory of plugin files and manifests for one discovery test.
class PluginDir {
 public:
  explicit PluginDir(const std::string& name)
      : dir_(fs::temp_directory_path() / ("tg_manifest_" + name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  ~PluginDir() { fs::remove_all(dir_); }
  // A copy of a real plugin (a copy, not a link: discovery treats links to one file as that file).
  void copy_plugin(const std::string& file, const std::string& from) {
    fs::copy_file(from, dir_ / file, fs::copy_options::overwrite_existing);
  }
  // A file that is no shared object at all: any attempt to load it fails with "cannot load".
  void fake_plugin(const std::string& file) { write(file, "not an ELF file"); }
  void write(const std::string& file, const std::string& text) { std::ofstream(dir_ / file) << text; }
  std::string path() const { return dir_.string(); }

 private:
  fs::path dir_;
};

const std::string kInterp = TG_CPU_PLUGIN_DIR "/libtg_plugin_interp.so";

TEST(PluginManifest, AbiOutOfRangeIsDecidedWithoutLoading) {
  PluginDir d("abi");
  d.fake_plugin("libtg_plugin_future.so");
  d.write("libtg_plugin_future.manifest", "plugin = \"future\"\ndevices = [\"FUTURE\"]\nabi = \"2.0-2.3\"\n");
  PluginRegistry reg({d.path()});
  const PluginInfo* r = find_report(reg, "libtg_plugin_future.so");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->loaded);
  EXPECT_THAT(r->error, HasSubstr("ABI out of range: the plugin serves cores 2.0-2.3, this core speaks " +
                                  kCoreVersion + " and loads plugins 1.0-1.x"));
  EXPECT_EQ(r->device_name, "FUTURE");  // known from the manifest alone
}

TEST(PluginManifest, MissingLibraryCarriesTheLoadersMessage) {
  PluginDir d("lib");
  d.fake_plugin("libtg_plugin_needy.so");
  d.write("libtg_plugin_needy.manifest",
          "plugin = \"needy\"\ndevices = [\"NEEDY\"]\nabi = \"1.0-1.1\"\nrequires = [\"libtg_no_such_lib.so.7\"]\n");
  PluginRegistry reg({d.path()});
  const PluginInfo* r = find_report(reg, "libtg_plugin_needy.so");
  ASSERT_NE(r, nullptr);
  EXPECT_THAT(
      r->error,
      HasSubstr("missing library libtg_no_such_lib.so.7: libtg_no_such_lib.so.7: cannot open shared object file"));
}

TEST(PluginManifest, HigherPriorityWinsAndTheLoserIsNeverLoaded) {
  PluginDir first("first"), second("second");
  // the loser, earlier in the search order, is not even a shared object: loading it would say "cannot load"
  first.fake_plugin("libtg_plugin_interp.so");
  first.write("libtg_plugin_interp.manifest", "plugin = \"interp\"\ndevices = [\"INTERP\"]\nabi = \"1.0-1.1\"\n");
  second.copy_plugin("libtg_plugin_interp.so", kInterp);
  second.write("libtg_plugin_interp.manifest",
               "plugin = \"interp\"\ndevices = [\"INTERP\"]\nabi = \"1.0-1.1\"\npriority = 5\n");
  PluginRegistry reg({first.path(), second.path()});
  ASSERT_EQ(reg.reports().size(), 2u);
  const PluginInfo& loser = reg.reports()[0];
  const PluginInfo& winner = reg.reports()[1];
  EXPECT_TRUE(winner.loaded) << winner.error;
  EXPECT_TRUE(loser.shadowed);
  EXPECT_TRUE(loser.error.empty()) << loser.error;
  EXPECT_THAT(loser.shadowed_by, HasSubstr(second.path() + "/libtg_plugin_interp.so (priority 5 > 0)"));
  ASSERT_NE(reg.find("INTERP"), nullptr);
  EXPECT_EQ(reg.find("INTERP")->path, second.path() + "/libtg_plugin_interp.so");
}

// Asking for one device loads only the plugins that may provide it: the CPU run of an LLM must not map the QCOM
// plugin's OpenCL stack. Listing the devices then probes the rest.
TEST(PluginManifest, LookupLoadsOnlyCandidatesForThatDevice) {
  PluginDir d("lazy");
  d.copy_plugin("libtg_plugin_interp.so", kInterp);
  d.write("libtg_plugin_interp.manifest", "plugin = \"interp\"\ndevices = [\"INTERP\"]\nabi = \"1.0-1.1\"\n");
  d.fake_plugin("libtg_plugin_other.so");  // loading it would fail with "cannot load"
  d.write("libtg_plugin_other.manifest", "plugin = \"other\"\ndevices = [\"OTHER\"]\nabi = \"1.0-1.1\"\n");
  PluginRegistry reg({d.path()});
  const std::string other = d.path() + "/libtg_plugin_other.so";
  ASSERT_NE(reg.find("INTERP"), nullptr);
  EXPECT_FALSE(reg.probed(other));
  EXPECT_TRUE(reg.probed(d.path() + "/libtg_plugin_interp.so"));
  EXPECT_EQ(reg.device_names(), std::vector<std::string>{"INTERP"});
  EXPECT_TRUE(reg.probed(other));
  const PluginInfo* r = find_report(reg, "libtg_plugin_other.so");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->loaded);
  EXPECT_THAT(r->error, HasSubstr("cannot load"));
}

TEST(PluginManifest, EqualPrioritiesKeepTheSearchOrder) {
  PluginDir first("eq1"), second("eq2");
  for (PluginDir* d : {&first, &second}) {
    d->copy_plugin("libtg_plugin_interp.so", kInterp);
    d->write("libtg_plugin_interp.manifest", "plugin = \"interp\"\ndevices = [\"INTERP\"]\nabi = \"1.0-1.1\"\n");
  }
  PluginRegistry reg({first.path(), second.path()});
  ASSERT_EQ(reg.reports().size(), 2u);
  EXPECT_TRUE(reg.reports()[0].loaded);
  EXPECT_THAT(reg.reports()[1].shadowed_by, HasSubstr("same priority, earlier in the search order"));
}

TEST(PluginManifest, MalformedManifestNamesFileAndLine) {
  PluginDir d("bad");
  d.copy_plugin("libtg_plugin_interp.so", kInterp);
  d.write("libtg_plugin_interp.manifest", "plugin = \"interp\"\ndevices = INTERP\n");
  PluginRegistry reg({d.path()});
  const PluginInfo* r = find_report(reg, "libtg_plugin_interp.so");
  ASSERT_NE(r, nullptr);
  EXPECT_FALSE(r->loaded);
  EXPECT_THAT(r->error, HasSubstr("libtg_plugin_interp.manifest:2: expected a [\"list\", \"of strings\"]"));
}

TEST(PluginManifest, MissingKeyAndBadAbiAreReported) {
  PluginDir d("keys");
  d.fake_plugin("libtg_plugin_a.so");
  d.write("libtg_plugin_a.manifest", "plugin = \"a\"\nabi = \"1.0-1.1\"\n");
  d.fake_plugin("libtg_plugin_b.so");
  d.write("libtg_plugin_b.manifest", "plugin = \"b\"\ndevices = [\"B\"]\nabi = \"1.3-1.1\"\n");
  PluginRegistry reg({d.path()});
  EXPECT_THAT(find_report(reg, "libtg_plugin_a.so")->error, HasSubstr("the required key 'devices' is missing"));
  EXPECT_THAT(find_report(reg, "libtg_plugin_b.so")->error, HasSubstr("is not a range inside one nonzero major"));
}

TEST(PluginManifest, TableMustProvideADeviceTheManifestLists) {
  PluginDir d("mismatch");
  d.copy_plugin("libtg_plugin_interp.so", kInterp);
  d.write("libtg_plugin_interp.manifest", "plugin = \"interp\"\ndevices = [\"OTHER\"]\nabi = \"1.0-1.1\"\n");
  PluginRegistry reg({d.path()});
  EXPECT_THAT(find_report(reg, "libtg_plugin_interp.so")->error,
              HasSubstr("the table provides device 'INTERP', which its manifest"));
  EXPECT_EQ(reg.find("INTERP"), nullptr);
}

TEST(PluginManifest, UnknownKeysFromANewerSdkAreIgnored) {
  PluginDir d("newer");
  d.copy_plugin("libtg_plugin_interp.so", kInterp);
  d.write("libtg_plugin_interp.manifest",
          "# comment\nplugin = \"interp\"\ndevices = [\"INTERP\"]\nabi = \"1.0-1.1\"\nvendor_url = \"x\"  # later\n");
  PluginRegistry reg({d.path()});
  EXPECT_TRUE(find_report(reg, "libtg_plugin_interp.so")->loaded) << find_report(reg, "libtg_plugin_interp.so")->error;
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
  EXPECT_THROW(Tensor::zeros({2}, dtypes::float32, "CPU:16"), std::exception);  // CPU:0 .. CPU:15
}

TEST(DeviceSelection, CpuIsAvailableAndCaseInsensitive) {
  EXPECT_EQ(canonical_device("cpu"), "CPU");
  Tensor t = Tensor::ones({3}, dtypes::float32, "CPU:0");
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>({1, 1, 1}));
}

}  // namespace
}  // namespace tg::rt
