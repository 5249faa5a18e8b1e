// tg-conformance: runs the standard plugin battery against any plugin file and prints a GoogleTest-style
// summary; `--json` also writes a report with the results per tier (core, queues, multi-device).
//
//   tg-conformance <path/to/plugin.so> [--device N] [--json report.json] [--filter PATTERN] [--timeout S] [--list]
//
// It needs only the C ABI, the SDK headers and dlopen, so it checks a plugin built anywhere, out of tree too.
#include "harness.hpp"
#include "report.hpp"

#include <fnmatch.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

namespace tgc = tg::conformance;

namespace {

// Per test: a hung plugin call fails the run instead of hanging it (--timeout changes it).
unsigned g_timeout_seconds = 300;

const char* const kUsage =
    "usage: tg-conformance <path/to/plugin.so> [--device N] [--json report.json] [--filter PATTERN] [--timeout S]\n"
    "                      [--list]\n"
    "  --device N        run on device N of the plugin (default 0)\n"
    "  --json FILE       also write a JSON report (tiers: core, queues, multi-device)\n"
    "  --filter PATTERN  run only tests whose name matches: globs separated by ':', then optionally '-' and\n"
    "                    globs to exclude (GoogleTest syntax), e.g. 'ops.*:memory.*-ops.CAST.*'\n"
    "  --timeout S       fail a test (and end the run) when it takes over S seconds (default 300)\n"
    "  --list            print the tests that would run, and exit\n"
    "Order: the ABI rules, memory (copies), work-item and control flow, semantics, then the op battery: a plugin\n"
    "whose kernels never run fails one early test that says so instead of every op.\n";

// GoogleTest's filter syntax: positive globs, then '-' and negative globs, each list separated by ':'.
bool matches_filter(const std::string& name, const std::string& filter) {
  if (filter.empty()) return true;
  const size_t dash = filter.find('-');
  const std::string positive = filter.substr(0, dash),
                    negative = dash == std::string::npos ? "" : filter.substr(dash + 1);
  const auto any_glob = [&](const std::string& globs) {
    size_t start = 0;
    while (start <= globs.size()) {
      const size_t end = std::min(globs.find(':', start), globs.size());
      const std::string glob = globs.substr(start, end - start);
      if (!glob.empty() && fnmatch(glob.c_str(), name.c_str(), 0) == 0) return true;
      start = end + 1;
    }
    return false;
  };
  return (positive.empty() || any_glob(positive)) && !any_glob(negative);
}

// The crash and timeout handlers report what was running; not async-signal-safe in general, but the process is
// ending anyway and a message beats a bare "Segmentation fault".
tgc::Report* g_report = nullptr;
const tgc::Test* volatile g_running_test = nullptr;
std::chrono::steady_clock::time_point g_test_start;

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

void on_fatal_signal(int sig) {
  const char* call = tgc::current_call;
  const tgc::Test* test = g_running_test;
  const std::string what =
      tgc::cat(sig == SIGALRM ? tgc::cat("timed out after ", g_timeout_seconds, " s (--timeout)") : strsignal(sig),
               call ? tgc::cat(" in ", call) : " outside any ABI call", "; the remaining tests did not run");
  if (g_report == nullptr || test == nullptr) {
    std::fprintf(stdout, "[  FAILED  ] (setup): %s\n", what.c_str());
  } else {
    g_report->add({test->name, test->tier, tgc::Outcome::Failed, what, ms_since(g_test_start)});
    g_report->print_summary();
    g_report->write_json();
  }
  std::fflush(stdout);
  _exit(sig == SIGALRM ? 3 : 2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string json, filter;
  bool list = false;
  tgc::Options& opts = tgc::options();
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    const auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "tg-conformance: " << arg << " needs a value\n" << kUsage;
        std::exit(64);
      }
      return argv[++i];
    };
    if (arg == "--device") {
      const std::string v = value();
      char* end = nullptr;
      const unsigned long n = std::strtoul(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n > UINT32_MAX) {
        std::cerr << "tg-conformance: --device " << v << " is not a device index\n";
        return 64;
      }
      opts.device = static_cast<uint32_t>(n);
    } else if (arg == "--json") {
      json = value();
    } else if (arg == "--filter") {
      filter = value();
    } else if (arg == "--timeout") {
      const std::string v = value();
      char* end = nullptr;
      const unsigned long n = std::strtoul(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || n == 0 || n > 86400) {
        std::cerr << "tg-conformance: --timeout " << v << " is not a number of seconds from 1 to 86400\n";
        return 64;
      }
      g_timeout_seconds = static_cast<unsigned>(n);
    } else if (arg == "--list") {
      list = true;
    } else if (arg == "-h" || arg == "--help") {
      std::cout << kUsage;
      return 0;
    } else if (!arg.empty() && arg[0] == '-') {
      std::cerr << "tg-conformance: unknown option " << arg << "\n" << kUsage;
      return 64;
    } else if (opts.plugin_path.empty()) {
      opts.plugin_path = arg;
    } else {
      std::cerr << "tg-conformance: more than one plugin file given (" << opts.plugin_path << ", " << arg << ")\n";
      return 64;
    }
  }
  if (opts.plugin_path.empty()) {
    std::cerr << kUsage;
    return 64;
  }

  tgc::Report report(opts.plugin_path, opts.device, json);
  g_report = &report;
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGALRM}) signal(sig, on_fatal_signal);

  // ABI tests first: they need only the file. The rest open the session, and the op battery reads its caps. The
  // tiers a plugin needs before anything else can pass come first: copies, then a plain launch
  // (control.work_item_ids), then the semantics every kernel leans on.
  tgc::Tests tests;
  tgc::add_abi_tests(tests);
  tgc::add_memory_tests(tests);
  tgc::add_control_tests(tests);
  tgc::add_semantics_tests(tests);
  tgc::add_param_tests(tests);
  tgc::add_op_tests(tests);
  tgc::add_compile_tests(tests);
  tgc::add_queue_tests(tests);
  tgc::add_device_tests(tests);

  std::vector<const tgc::Test*> selected;
  for (const tgc::Test& t : tests)
    if (matches_filter(t.name, filter)) selected.push_back(&t);
  if (list) {
    for (const tgc::Test* t : selected) std::cout << t->name << "  [" << tgc::tier_name(t->tier) << "]\n";
    return 0;
  }

  report.print_header(selected.size());
  for (const tgc::Test* t : selected) {
    g_running_test = t;
    std::cout << "[ RUN      ] " << t->name << std::endl;
    g_test_start = std::chrono::steady_clock::now();
    tgc::Outcome outcome = tgc::Outcome::Passed;
    std::string message;
    alarm(g_timeout_seconds);
    try {
      t->body();
    } catch (const tgc::Skip& e) {
      outcome = tgc::Outcome::Skipped, message = e.what();
    } catch (const tgc::Failure& e) {
      outcome = tgc::Outcome::Failed, message = e.what();
    } catch (const std::exception& e) {
      outcome = tgc::Outcome::Failed, message = tgc::cat("unexpected exception in the harness: ", e.what());
    }
    alarm(0);
    report.add({t->name, t->tier, outcome, message, ms_since(g_test_start)});
    g_running_test = nullptr;
  }
  report.print_summary();
  if (!report.write_json()) return 1;
  return report.failed() == 0 ? 0 : 1;
}
