// tg::sdk::open_first / resolve_api: a vendor runtime (the CUDA driver, NVRTC, the HIP runtime) opened at run time,
// so that a plugin builds without the vendor's SDK and loads on a machine without it (zero devices, and a reason).
// The plugin declares the subset of the API it calls as a struct of function pointers, in the order of a list of
// names, and keeps the handle open for the life of the process (runtimes keep threads and atexit handlers).
#pragma once

#include <dlfcn.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace tg::sdk {

// The first of `candidates` dlopen() accepts (RTLD_NOW | RTLD_LOCAL), or nullptr; for each one refused before it,
// (name, dlerror's reason) in `refused`.
inline void* open_first(const std::vector<std::string>& candidates,
                        std::vector<std::pair<std::string, std::string>>* refused) {
  for (const std::string& name : candidates) {
    if (void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL)) return lib;
    const char* why = dlerror();
    if (refused) refused->emplace_back(name, why ? why : "unknown error");
  }
  return nullptr;
}

// Resolves every slot of `api` (a struct of N function pointers, in declaration order) from `names`; returns the
// first missing name, or "" when all were found.
template <class Api, size_t N>
std::string resolve_api(void* lib, Api& api, const char* const (&names)[N]) {
  static_assert(sizeof(Api) == N * sizeof(void*), "one name per slot");
  auto* slots = reinterpret_cast<void**>(&api);
  for (size_t i = 0; i < N; ++i) {
    slots[i] = dlsym(lib, names[i]);
    if (slots[i] == nullptr) return names[i];
  }
  return "";
}

}  // namespace tg::sdk
