// Mirrors core/src/runtime/plugin_manifest.cpp: read_manifest() on files written here, one behaviour of the
// documented format (plugin_manifest.hpp) per test; errors name the file (and the line) and say what is wrong.
// Discovery's use of manifests (priority, shadowing, ABI ranges) is tested in plugin_registry_test.
#include "runtime/plugin_manifest.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>

#include "tg/error.hpp"

namespace tg::rt {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class Manifest : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tg_manifest_parse_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& text, const std::string& file = "libtg_plugin_x.manifest") {
    std::ofstream(dir_ / file) << text;
    return (dir_ / file).string();
  }
  // The error read_manifest throws for `text` ("" when it throws none).
  std::string error_of(const std::string& text) {
    try {
      read_manifest(write(text));
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

TEST_F(Manifest, EveryKeyOfTheFormat) {
  const std::string path = write(
      "# written by tg_add_plugin\n"
      "plugin = \"cpu\"\n"
      "devices = [\"CPU\", \"HOST\"]   # two names\n"
      "\n"
      "abi = \"1.0-1.3\"\n"
      "requires = [\"libfoo.so.1\"]\n"
      "priority = -7\n");
  auto m = read_manifest(path);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->path, path);
  EXPECT_EQ(m->plugin, "cpu");
  EXPECT_EQ(m->devices, (std::vector<std::string>{"CPU", "HOST"}));
  EXPECT_EQ(m->abi_major, 1u);
  EXPECT_EQ(m->abi_min_minor, 0u);
  EXPECT_EQ(m->abi_max_minor, 3u);
  EXPECT_EQ(m->abi_range(), "1.0-1.3");
  EXPECT_EQ(m->requires_libs, (std::vector<std::string>{"libfoo.so.1"}));
  EXPECT_EQ(m->priority, -7);
}

TEST_F(Manifest, DefaultsAndSpacing) {
  auto m =
      read_manifest(write("  plugin=\"a\"\t\r\ndevices=[ ]\n"
                          "devices =[\"A\" ,\"B\"]\nabi = \"2.4\"\nrequires = []\n"));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->devices, (std::vector<std::string>{"A", "B"})) << "a repeated key: the last one counts";
  EXPECT_EQ(m->abi_range(), "2.4-2.4") << "a single version is a range of one";
  EXPECT_TRUE(m->requires_libs.empty());
  EXPECT_EQ(m->priority, 0) << "priority defaults to 0";
}

TEST_F(Manifest, UnknownKeysAreIgnored) {
  auto m = read_manifest(write("plugin = \"a\"\nfuture_key = {not even parsed}\ndevices = [\"A\"]\nabi = \"1.1\"\n"));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->plugin, "a");
}

TEST_F(Manifest, MissingFileIsNoManifest) { EXPECT_EQ(read_manifest((dir_ / "nope.manifest").string()), std::nullopt); }

TEST_F(Manifest, ManifestPathSitsBesideThePlugin) {
  EXPECT_EQ(manifest_path_for("/a/b/libtg_plugin_cpu.so"), "/a/b/libtg_plugin_cpu.manifest");
  EXPECT_EQ(manifest_path_for("libtg_plugin_x.so"), "libtg_plugin_x.manifest");
}

TEST_F(Manifest, ErrorsNameTheFileLineAndProblem) {
  const std::string file = (dir_ / "libtg_plugin_x.manifest").string();
  struct Case {
    const char* text;
    std::string want;
  };
  const Case cases[] = {
      {"plugin = cpu\n", file + ":1: expected a \"quoted string\" in:  cpu"},
      {"plugin = \"a\nb\"\n", file + ":1: unterminated string in:  \"a"},
      {"plugin = \"a\\\"b\"\n", file + ":1: escapes are not supported"},
      {"plugin = \"a\"\ndevices = \"A\"\n", file + ":2: expected a [\"list\", \"of strings\"]"},
      {"plugin = \"a\"\ndevices = [\"A\" \"B\"]\n", file + ":2: expected ',' or ']'"},
      {"plugin = \"a\"\ndevices = [\"A\"\n", file + ":2: expected ',' or ']'"},
      {"plugin = \"a\"\npriority = high\n", file + ":2: expected an integer in:  high"},
      {"plugin = \"a\" extra\n", file + ":1: unexpected text after the value: extra"},
      {"just words\n", file + ":1: expected key = value"},
      {"= \"a\"\n", file + ":1: expected key = value"},
      {"plugin = \"a\"\nabi = \"one\"\n", file + ":2: abi must read \"MAJOR.MINOR-MAJOR.MINOR\""},
      {"plugin = \"a\"\nabi = \"1.3-1.1\"\n",
       file + ":2: abi \"1.3-1.1\" is not a range inside one nonzero major version"},
      {"plugin = \"a\"\nabi = \"1.0-2.0\"\n", file + ":2: abi \"1.0-2.0\" is not a range"},
      {"plugin = \"a\"\nabi = \"0.1\"\n", file + ":2: abi \"0.1\" is not a range"},
      {"devices = [\"A\"]\nabi = \"1.0\"\n", file + ": the required key 'plugin' is missing"},
      {"plugin = \"a\"\nabi = \"1.0\"\n", file + ": the required key 'devices' is missing"},
      {"plugin = \"a\"\ndevices = [\"A\"]\n", file + ": the required key 'abi' is missing"},
      {"plugin = \"a\"\ndevices = []\nabi = \"1.0\"\n", file + ": devices lists no DEV name"},
  };
  for (const Case& c : cases) {
    const std::string err = error_of(c.text);
    EXPECT_THAT(err, HasSubstr("tg: plugin manifest " + c.want)) << "manifest text:\n" << c.text;
  }
}

TEST_F(Manifest, TrailingTextAfterAbiIsRefused) {
  // sscanf's %c after the second version catches "1.0-1.1x"
  EXPECT_THAT(error_of("plugin = \"a\"\ndevices = [\"A\"]\nabi = \"1.0-1.1x\"\n"), HasSubstr(":3: abi must read"));
  // a single version followed by junk
  const std::string err = error_of("plugin = \"a\"\ndevices = [\"A\"]\nabi = \"1.1junk\"\n");
  EXPECT_THAT(err, HasSubstr(":3: abi must read"));
}

TEST_F(Manifest, UnreadableFileIsAnError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file";
  const std::string path = write("plugin = \"a\"\n");
  fs::permissions(path, fs::perms::none);
  try {
    read_manifest(path);
    FAIL() << "an unreadable manifest should throw";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "tg: plugin manifest " + path + ": cannot be read");
  }
}

}  // namespace
}  // namespace tg::rt
