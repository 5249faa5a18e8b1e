// The error catalogue, runtime: devices (DEV=, names), the Jit (tg/jit.hpp), environment switches, the disk cache,
// and a plugin's own error status. One test per message, made the way a user would where a public path exists.
//
// Messages (tg::Error unless noted):
//   devices
//     core/src/runtime/device.cpp Device::get        "tg: unknown device 'NOSUCH' (available: CPU, ...); plugins:\n<a
//     line per plugin file,
//                                                    then the folders searched>" (several lines by design, the first
//                                                    one checked)
//     core/src/runtime/device.cpp Device::get        "tg: device CPU:5 does not exist: plugin .../libtg_plugin_cpu.so
//     has 1 device(s)" core/src/runtime/device.cpp default_device     "tg: DEV=? lists the candidates (set DEV to one
//     of the loaded devices):\n<list>"
//                                                    (several lines by design: the first says what it is, the rest the
//                                                    candidates)
//     core/src/runtime/plugin_registry.cpp check_status "tg: CPU: compile k: <the plugin's message>" (what the core
//                                                    asked the device for, then the plugin's own message: compiler
//                                                    diagnostics)
//   Jit
//     core/src/tensor/jit.cpp Jit::Impl::capture          "tg: Jit: the function changed its graph between calls 1 and
//     2 (1 launches, then 1); ..." core/src/tensor/jit.cpp Jit::Impl::check_signature  "tg: Jit: captured with 1
//     inputs, called with 2"
//                                                          "tg: Jit: input 0 is (5,) float32 on CPU, captured as (4,)
//                                                          float32 on CPU; call reset() ..." "tg: Jit: captured with 1
//                                                          variables, called with 0" "tg: Jit: variable 0 is m,
//                                                          captured as n"
//   warnings on stderr, one line each
//     core/src/runtime/env.hpp getenv_int              "tg: NOOPT=abc is not an integer tg can use; NOOPT stays 0"
//     core/src/runtime/disk_cache.cpp DiskCache::DiskCache "tg: warning: cache directory D is not writable (why);
//     compiling without a disk cache"
// Unreachable from user input, or not from a test process:
//   device.cpp default_device "tg: no device available; plugins: ..." - the build tree's plugin folder is always
//     searched, so a process of this build always finds the CPU plugin (an install without any plugin shows it).
//   buffer.cpp Buffer::adopt_host_memory (on a device buffer / twice), Buffer::copy_in (into adopted host memory;
//     its size), Buffer::copy_out (its size): Tensor::from_host_memory, from_bytes, copy_out and the custom-kernel call
//     check all of these first, with their own messages (tensor_api_errors_test, custom_kernel_errors_test).
//   shadow_check.cpp check_copy_round_trip (CHECK=: the copy round trip is broken) and shadow_check (CHECK=: kernel K
//     differs from REF, with the KIR and source on the following lines): only a plugin that computes or copies
//     wrongly makes them;
//     tests/unit/runtime/shadow_check_test.cpp makes both by corrupting a result.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "../unit/runtime/fresh_cache_dir.hpp"
#include "error_test_util.hpp"
#include "runtime/disk_cache.hpp"
#include "tg/custom_kernel.hpp"
#include "tg/device.hpp"
#include "tg/error.hpp"
#include "tg/jit.hpp"
#include "tg/tensor.hpp"
#include "tg/variable.hpp"

namespace tg {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using tgerr::error_of;

const std::string kCacheDir = test::fresh_cache_dir("errors");

// Sets an environment variable for one scope, then puts back what was there.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// ---- devices ------------------------------------------------------------------------------------------------------

TEST(RuntimeErrors, DeviceUnknown) {
  const std::string m = error_of<Error>([] { (void)Tensor::zeros({2}, dtypes::float32, "NOSUCH"); });
  // the first line says what is wrong and what there is; the plugin files and the folders searched follow, a line each
  EXPECT_MSG(m.substr(0, m.find('\n')), StartsWith("tg: unknown device 'NOSUCH' (available: "), HasSubstr("CPU"),
             HasSubstr("); plugins:"));
  EXPECT_THAT(m, HasSubstr("libtg_plugin_cpu.so: provides CPU"));
  EXPECT_THAT(m, HasSubstr("searched (TG_PLUGIN_PATH, the install, the build tree): "));
}

TEST(RuntimeErrors, DeviceIndexPastTheCount) {
  EXPECT_MSG(error_of<Error>([] { (void)Tensor::zeros({2}, dtypes::float32, "CPU:16"); }),
             HasSubstr("tg: device CPU:16 does not exist: plugin "), HasSubstr("libtg_plugin_cpu.so has 16 device(s)"));
}

TEST(RuntimeErrors, DevQuestionMarkListsTheCandidates) {
  ScopedEnv dev("DEV", "?");
  const std::string m = error_of<Error>([] { (void)Tensor::zeros({2}); });
  // several lines by design: what DEV=? does, then the candidate plugin files
  EXPECT_THAT(m, StartsWith("tg: DEV=? lists the candidates (set DEV to one of the loaded devices):\n"));
  EXPECT_THAT(m, HasSubstr("libtg_plugin_cpu.so"));
}

TEST(RuntimeErrors, PluginStatusIsPassedOn) {
  CustomKernel k("broken_inline");
  KExpr i = k.range(4, Axis::GLOBAL);
  k.run(k.inline_stmt({{"c", "this is not C;"}}, {i}));
  k.run(k.store(k.buffer(0, dtypes::float32), i, k.constant(1, dtypes::float32)));
  const std::string m =
      error_of<Error>([&] { (void)k({{{4}, dtypes::float32}}, {Tensor::zeros({4}, dtypes::float32, "CPU")}); });
  // the core's part: the device and what it asked the plugin for; then the plugin's message, here the compiler's
  // diagnostics, several lines
  EXPECT_THAT(m, StartsWith("tg: CPU: compile broken_inline: "));
  EXPECT_THAT(m, HasSubstr("undeclared identifier 'this'"));
  // and only what is wrong with the kernel: no warning about the host's target features (AVX-512 VMs that also
  // report AVX10.1-256 had every message start with one)
  EXPECT_THAT(m, ::testing::Not(HasSubstr("feature combination")));
}

// ---- Jit ----------------------------------------------------------------------------------------------------------

Tensor ones(int64_t n) { return Tensor::ones({n}); }

TEST(RuntimeErrors, JitGraphChangedBetweenCalls) {
  int calls = 0;
  Jit f([&](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    return std::vector<Tensor>{++calls == 1 ? in[0] + 1.0 : in[0] * 3.0};
  });
  (void)f({ones(4)});
  EXPECT_MSG(error_of<Error>([&] { (void)f({ones(4)}); }),
             HasSubstr("tg: Jit: the function changed its graph between calls 1 and 2 (1 launches, then 1)"),
             HasSubstr("make it depend only on its inputs and variables"));
}

Jit doubler() {
  return Jit([](const std::vector<Tensor>& in, const std::vector<BoundVariable>&) {
    return std::vector<Tensor>{in[0] * 2.0};
  });
}

TEST(RuntimeErrors, JitInputCount) {
  Jit f = doubler();
  (void)f({ones(4)}), (void)f({ones(4)});
  EXPECT_MSG(error_of<Error>([&] { (void)f({ones(4), ones(4)}); }),
             HasSubstr("tg: Jit: captured with 1 inputs, called with 2"));
}

TEST(RuntimeErrors, JitInputShape) {
  Jit f = doubler();
  (void)f({ones(4)}), (void)f({ones(4)});
  EXPECT_MSG(
      error_of<Error>([&] { (void)f({ones(5)}); }),
      HasSubstr(
          "tg: Jit: input 0 is (5,) float32 on CPU, captured as (4,) float32 on CPU; call reset() to capture again"));
}

TEST(RuntimeErrors, JitVariableCount) {
  Jit f = doubler();
  Variable n("n", 1, 8);
  (void)f({ones(4)}, {n.bind(2)}), (void)f({ones(4)}, {n.bind(2)});
  EXPECT_MSG(error_of<Error>([&] { (void)f({ones(4)}); }),
             HasSubstr("tg: Jit: captured with 1 variables, called with 0"));
}

TEST(RuntimeErrors, JitVariableName) {
  Jit f = doubler();
  Variable n("n", 1, 8), m("m", 1, 8);
  (void)f({ones(4)}, {n.bind(2)}), (void)f({ones(4)}, {n.bind(2)});
  EXPECT_MSG(error_of<Error>([&] { (void)f({ones(4)}, {m.bind(2)}); }),
             HasSubstr("tg: Jit: variable 0 is m, captured as n"));
}

// ---- warnings -----------------------------------------------------------------------------------------------------

TEST(RuntimeErrors, SwitchThatIsNotAnInteger) {
  ScopedEnv noopt("NOOPT", "abc");
  testing::internal::CaptureStderr();
  (void)(Tensor::ones({3}) + 2.0).realize();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr("tg: NOOPT=abc is not an integer tg can use; NOOPT stays 0\n"));
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;  // one line, once
}

TEST(RuntimeErrors, CacheDirectoryNotWritable) {
  testing::internal::CaptureStderr();
  rt::DiskCache cache("/proc/tg-error-test/cache");
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_MSG(err.substr(0, err.size() - (err.empty() ? 0 : 1)),
             HasSubstr("tg: warning: cache directory /proc/tg-error-test/cache is not writable ("),
             HasSubstr("); compiling without a disk cache"));
  EXPECT_THAT(err, testing::EndsWith("\n"));
}

}  // namespace
}  // namespace tg
