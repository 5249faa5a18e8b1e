// Mirrors core/src/runtime/options.cpp: read_options() maps each environment switch to its field, unset gives the
// documented default (runtime/options.hpp), and malformed values behave as the code reads them.
#include "runtime/options.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

namespace tg::rt {
namespace {

constexpr bool kDebugBuild = kChecksIrAlways;  // debug and sanitizer builds always check the IR (options.hpp)

const char* const kSwitches[] = {"BEAM", "NOOPT",         "IMAGE", "TC", "SCACHE", "TG_CHECK_IR", "PARALLEL_COMPILE",
                                 "JIT",  "TG_TIME_PASSES"};

// Clears every switch for one test and puts the caller's environment back afterwards.
class OptionsEnv : public testing::Test {
 protected:
  void SetUp() override {
    for (const char* name : kSwitches) {
      const char* v = std::getenv(name);
      saved_.push_back(v ? std::optional<std::string>(v) : std::nullopt);
      unsetenv(name);
    }
  }
  void TearDown() override {
    for (size_t i = 0; i < std::size(kSwitches); ++i) {
      if (saved_[i])
        setenv(kSwitches[i], saved_[i]->c_str(), 1);
      else
        unsetenv(kSwitches[i]);
    }
  }
  static Options with(const char* name, const char* value) {
    setenv(name, value, 1);
    Options o = read_options();
    unsetenv(name);
    return o;
  }

 private:
  std::vector<std::optional<std::string>> saved_;
};

TEST_F(OptionsEnv, UnsetGivesTheDocumentedDefaults) {
  Options o = read_options();
  EXPECT_EQ(o.beam, 0);
  EXPECT_FALSE(o.noopt);
  EXPECT_FALSE(o.images);
  EXPECT_TRUE(o.tensor_cores);
  EXPECT_TRUE(o.schedule_cache);
  EXPECT_EQ(o.check_ir, kDebugBuild);
  EXPECT_EQ(o.parallel_compile, 0);
  EXPECT_TRUE(o.jit);
  EXPECT_FALSE(o.time_passes);
}

TEST_F(OptionsEnv, EachSwitchSetsItsField) {
  EXPECT_EQ(with("BEAM", "4").beam, 4);
  EXPECT_TRUE(with("NOOPT", "1").noopt);
  EXPECT_TRUE(with("IMAGE", "1").images);
  EXPECT_FALSE(with("TC", "0").tensor_cores);
  EXPECT_FALSE(with("SCACHE", "0").schedule_cache);
  EXPECT_TRUE(with("TG_CHECK_IR", "1").check_ir);
  EXPECT_EQ(with("PARALLEL_COMPILE", "3").parallel_compile, 3);
  EXPECT_FALSE(with("JIT", "0").jit);
  EXPECT_TRUE(with("TG_TIME_PASSES", "1").time_passes);
  // each switch touches only its own field
  Options base = read_options();
  Options beam = with("BEAM", "2");
  beam.beam = base.beam;
  EXPECT_EQ(beam.noopt, base.noopt);
  EXPECT_EQ(beam.tensor_cores, base.tensor_cores);
  EXPECT_EQ(beam.jit, base.jit);
  EXPECT_EQ(beam.parallel_compile, base.parallel_compile);
}

TEST_F(OptionsEnv, IntegerSwitchesTreatAnyNonzeroAsOn) {
  EXPECT_TRUE(with("NOOPT", "2").noopt);
  EXPECT_TRUE(with("NOOPT", "-1").noopt);
  EXPECT_FALSE(with("NOOPT", "0").noopt);
  EXPECT_TRUE(with("TC", "7").tensor_cores);
  EXPECT_TRUE(with("JIT", "1").jit);
  EXPECT_TRUE(with("SCACHE", "1").schedule_cache);
}

TEST_F(OptionsEnv, EmptyValueIsUnset) {
  EXPECT_EQ(with("BEAM", "").beam, 0);
  EXPECT_TRUE(with("TC", "").tensor_cores);
  EXPECT_TRUE(with("JIT", "").jit);
  EXPECT_FALSE(with("TG_TIME_PASSES", "").time_passes);
  EXPECT_EQ(with("TG_CHECK_IR", "").check_ir, kDebugBuild);
}

// getenv_int (runtime/env.hpp) falls back to the default for a value that is not wholly a base-10 integer, and
// says so once per switch and value.
TEST_F(OptionsEnv, MalformedIntegersFallBackToTheDefault) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(with("BEAM", "abc").beam, 0);
  EXPECT_EQ(with("BEAM", "abc").beam, 0);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "tg: BEAM=abc is not an integer tg can use; BEAM stays 0\n");
  EXPECT_EQ(with("BEAM", "3abc").beam, 0);
  EXPECT_EQ(with("BEAM", "3 ").beam, 0);
  EXPECT_EQ(with("BEAM", "2.5").beam, 0);
  EXPECT_EQ(with("BEAM", " 3").beam, 3) << "strtol skips leading blanks";
  EXPECT_TRUE(with("TC", "off").tensor_cores) << "TC=off is not a number: tensor cores stay on";
  EXPECT_TRUE(with("JIT", "no").jit);
  EXPECT_FALSE(with("NOOPT", "yes").noopt) << "NOOPT=yes is not a number: optimizations stay on";
  EXPECT_EQ(with("PARALLEL_COMPILE", "x").parallel_compile, 0);
}

// TG_CHECK_IR and TG_TIME_PASSES are flags: anything but "" and "0" turns them on, words included.
TEST_F(OptionsEnv, FlagsAreOnForAnyValueButZero) {
  EXPECT_TRUE(with("TG_TIME_PASSES", "yes").time_passes);
  EXPECT_TRUE(with("TG_TIME_PASSES", "false").time_passes) << "a flag reads any text but 0 as on";
  EXPECT_FALSE(with("TG_TIME_PASSES", "0").time_passes);
  EXPECT_TRUE(with("TG_CHECK_IR", "2").check_ir);
  EXPECT_EQ(with("TG_CHECK_IR", "0").check_ir, kDebugBuild) << "debug and sanitizer builds check regardless";
}

TEST_F(OptionsEnv, OutOfRangeIntegersAreNotWrapped) {
  Options o = with("BEAM", "4294967297");  // 2^32 + 1
  EXPECT_EQ(o.beam, 0) << "a value past int falls back to the default, it does not wrap";
  EXPECT_EQ(with("PARALLEL_COMPILE", "4294967300").parallel_compile, 0);
  EXPECT_EQ(with("BEAM", "-2147483648").beam, INT_MIN) << "the ends of int are ints";
}

TEST_F(OptionsEnv, ReadAfreshOnEachCall) {
  setenv("BEAM", "2", 1);
  EXPECT_EQ(read_options().beam, 2);
  setenv("BEAM", "5", 1);
  EXPECT_EQ(read_options().beam, 5);
  unsetenv("BEAM");
  EXPECT_EQ(read_options().beam, 0);
}

}  // namespace
}  // namespace tg::rt
