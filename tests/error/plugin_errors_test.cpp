// The error catalogue, plugins: unloading (tg/device.hpp) and the manifest beside a plugin file. A malformed manifest
// reaches a user as the plugin's verdict in `tg devices --explain`; its message is read_manifest's, made here through
// runtime/plugin_manifest.hpp on files written to a temporary folder.
//
// Messages (tg::Error):
//   unloading
//     core/src/runtime/plugin_registry.cpp PluginRegistry::unload "tg: cannot unload 'NOSUCH': no loaded plugin
//     provides it" core/src/runtime/device.cpp unload_plugin                     "tg: cannot unload the INTERP plugin:
//     INTERP still has 1 buffer(s) (tensors)
//                                                                and 0 program(s) (Jit captures) alive; release them
//                                                                first"
//   manifests: "tg: plugin manifest FILE:LINE: ..." (core/src/runtime/plugin_manifest.cpp read_manifest and the
//   value parsers it calls; the numbers are that file's lines as of this writing)
//     :33   "expected a \"quoted string\" in: TEXT"
//     :36   "escapes are not supported in: TEXT"
//     :39   "unterminated string in: TEXT"
//     :45   "expected a [\"list\", \"of strings\"] in: TEXT"
//     :58   "expected ',' or ']' in: TEXT"
//     :65   "expected an integer in: TEXT"
//     :71   "unexpected text after the value: TEXT"
//     :83   "abi must read \"MAJOR.MINOR-MAJOR.MINOR\" (the oldest core served - the version implemented), not \"1.x\""
//     :86   "abi \"1.2-1.1\" is not a range inside one nonzero major version"
//     :106  "tg: plugin manifest FILE: cannot be read"                  (not as root: root reads any file)
//     :118  "expected key = value"
//     :130  "tg: plugin manifest FILE: the required key 'abi' is missing"
//     :131  "tg: plugin manifest FILE: devices lists no DEV name"
// The loader's verdicts on a plugin file (no entry point, wrong ABI major, a NULL slot, ...) are report lines of
// `tg devices`, not exceptions: tests/unit/runtime/plugin_registry_test.cpp checks them.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "error_test_util.hpp"
#include "runtime/plugin_manifest.hpp"
#include "tg/device.hpp"
#include "tg/error.hpp"
#include "tg/tensor.hpp"

namespace tg {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;
using tgerr::error_of;

// ---- unloading ----------------------------------------------------------------------------------------------------

TEST(PluginErrors, UnloadUnknownDevice) {
  EXPECT_MSG(error_of<Error>([] { unload_plugin("NOSUCH"); }),
             HasSubstr("tg: cannot unload 'NOSUCH': no loaded plugin provides it"));
}

TEST(PluginErrors, UnloadWithLiveTensors) {
  Tensor t = Tensor::zeros({1});
  try {
    t = Tensor::zeros({4}, dtypes::float32, "INTERP").contiguous().realize();
  } catch (const std::exception&) {
    GTEST_SKIP() << "the INTERP plugin was not built";
  }
  EXPECT_MSG(
      error_of<Error>([] { unload_plugin("INTERP"); }),
      HasSubstr("tg: cannot unload the INTERP plugin: INTERP still has 1 buffer(s) (tensors) and 0 program(s) (Jit "
                "captures) alive; release them first"));
}

// ---- manifests ----------------------------------------------------------------------------------------------------

// A manifest in a fresh folder: the required keys, with `line` in place of the one that starts like it.
class ManifestErrors : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tg-error-manifest-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& text) {
    std::string path = (dir_ / "libtg_plugin_x.manifest").string();
    std::ofstream(path) << text;
    return path;
  }
  // The message read_manifest gives for a manifest whose second line is `line`.
  std::string error_for(const std::string& line) {
    path_ = write("plugin = \"x\"\n" + line + "\n");
    return error_of<Error>([&] { (void)rt::read_manifest(path_); });
  }
  fs::path dir_;
  std::string path_;
};

TEST_F(ManifestErrors, ExpectedQuotedString) {
  EXPECT_MSG(error_for("abi = 1.0"), StartsWith("tg: plugin manifest "),
             HasSubstr("libtg_plugin_x.manifest:2: expected a \"quoted string\" in:  1.0"));
}

TEST_F(ManifestErrors, EscapesNotSupported) {
  EXPECT_MSG(error_for("abi = \"1\\.0\""), HasSubstr(":2: escapes are not supported in:  \"1\\.0\""));
}

TEST_F(ManifestErrors, UnterminatedString) {
  EXPECT_MSG(error_for("abi = \"1.0"), HasSubstr(":2: unterminated string in:  \"1.0"));
}

TEST_F(ManifestErrors, ExpectedList) {
  EXPECT_MSG(error_for("devices = \"X\""), HasSubstr(":2: expected a [\"list\", \"of strings\"] in:  \"X\""));
}

TEST_F(ManifestErrors, ExpectedCommaOrBracket) {
  EXPECT_MSG(error_for("devices = [\"X\" \"Y\"]"), HasSubstr(":2: expected ',' or ']' in:  [\"X\" \"Y\"]"));
}

TEST_F(ManifestErrors, ExpectedInteger) {
  EXPECT_MSG(error_for("priority = high"), HasSubstr(":2: expected an integer in:  high"));
}

TEST_F(ManifestErrors, TextAfterTheValue) {
  EXPECT_MSG(error_for("priority = 3 4"), HasSubstr(":2: unexpected text after the value: 4"));
}

TEST_F(ManifestErrors, AbiNotAVersionRange) {
  EXPECT_MSG(error_for("abi = \"1.x\""), HasSubstr(":2: abi must read \"MAJOR.MINOR-MAJOR.MINOR\" (the oldest core "
                                                   "served - the version implemented), not \"1.x\""));
}

TEST_F(ManifestErrors, AbiRangeBackwards) {
  EXPECT_MSG(error_for("abi = \"1.2-1.1\""),
             HasSubstr(":2: abi \"1.2-1.1\" is not a range inside one nonzero major version"));
}

TEST_F(ManifestErrors, CannotBeRead) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads a file whatever its permissions";
  const std::string path = write("plugin = \"x\"\n");
  ::chmod(path.c_str(), 0);
  EXPECT_MSG(error_of<Error>([&] { (void)rt::read_manifest(path); }),
             HasSubstr("tg: plugin manifest " + path + ": cannot be read"));
}

TEST_F(ManifestErrors, ExpectedKeyValue) {
  EXPECT_MSG(error_for("devices [\"X\"]"), HasSubstr("libtg_plugin_x.manifest:2: expected key = value"));
}

TEST_F(ManifestErrors, RequiredKeyMissing) {
  EXPECT_MSG(error_for("devices = [\"X\"]"),
             HasSubstr("tg: plugin manifest " + path_ + ": the required key 'abi' is missing"));
}

TEST_F(ManifestErrors, NoDeviceNames) {
  EXPECT_MSG(error_for("devices = []\nabi = \"1.0-1.1\""),
             HasSubstr("tg: plugin manifest " + path_ + ": devices lists no DEV name"));
}

}  // namespace
}  // namespace tg
