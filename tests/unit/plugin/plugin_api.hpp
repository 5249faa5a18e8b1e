// The plugin a test binary tests, loaded with dlopen as the core loads it: plugin_path() (each binary defines it),
// api() (its table, loaded once and never unloaded: its threads and JIT outlive any one test), and a status taken
// (freed) as a Status or as its message; ASSERT_OK.
#pragma once

#include <tg/plugin_abi.h>

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace tg::test {

// Each test binary tests one plugin and defines where its file is.
const char* plugin_path();

// The plugin's entry point. It is loaded once and never unloaded: its threads and JIT outlive any one test.
inline tg_plugin_get_api_fn entry_point() {
  static void* handle = dlopen(plugin_path(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) throw std::runtime_error(std::string("cannot load the plugin: ") + dlerror());
  return reinterpret_cast<tg_plugin_get_api_fn>(dlsym(handle, TG_ABI_ENTRY_POINT));
}

// The plugin's table, for the ABI version this test was built against.
inline const tg_plugin_api* api() {
  static const tg_plugin_api* table = [] {
    tg_status_t status = nullptr;
    const tg_plugin_api* t = entry_point()(TG_ABI_VERSION_MAJOR, TG_ABI_VERSION_MINOR, &status);
    if (t == nullptr) throw std::runtime_error(std::string("tg_plugin_get_api failed: ") + status->message);
    return t;
  }();
  return table;
}

// The environment variable `name` when it is set, else the path the build compiled in.
inline const char* path_from_env(const char* name, const char* built) {
  const char* env = std::getenv(name);
  return env != nullptr && *env != '\0' ? env : built;
}

// A status's code and message, taken (and freed).
struct Status {
  int code = TG_OK;
  std::string message;
};
inline Status take(tg_status_t status) {
  if (status == nullptr) return {};
  Status out{status->code, status->message ? status->message : ""};
  api()->status_free(status);
  return out;
}

// A status's message, taken (and freed): "" for success (and "(empty message)" for a failure without one); `code`
// gets its code.
inline std::string take_message(tg_status_t status, int32_t* code = nullptr) {
  const bool failed = status != nullptr;
  const Status s = take(status);
  if (code != nullptr) *code = s.code;
  return !failed ? "" : s.message.empty() ? "(empty message)" : s.message;
}

#define ASSERT_OK(expr)                                       \
  do {                                                        \
    const Status s_ = take(expr);                             \
    ASSERT_EQ(s_.code, TG_OK) << #expr << ": " << s_.message; \
  } while (0)

}  // namespace tg::test
