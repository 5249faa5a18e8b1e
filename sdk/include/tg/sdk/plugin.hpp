// tg::sdk plugin helpers: TG_SDK_PLUGIN_ENTRY, which exports tg_plugin_get_api with the major-version check, and
// write_versioned() for out-structs that carry a struct_size.
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/abi_layout.hpp>
#include <tg/sdk/status.hpp>

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace tg::sdk {

// Returns `api` when the core speaks the same major version and at least `oldest_core_minor`, else NULL with a
// status naming both versions. Minor versions only append, so a newer core is served (it reads what it knows),
// and so is an older one down to `oldest_core_minor`: the plugin must then check TG_ABI_HAS before reading what
// the older core does not fill in (tg_kir_kernel.strings, for instance).
inline const tg_plugin_api* negotiate_abi(const tg_plugin_api& api, uint32_t core_major, uint32_t core_minor,
                                          tg_status_t* out_status, uint32_t oldest_core_minor = 0) noexcept {
  if (out_status != nullptr) *out_status = nullptr;
  if (core_major != 0 && core_major == api.abi_major && core_minor >= oldest_core_minor) return &api;
  if (out_status != nullptr) {
    try {
      *out_status =
          make_status(TG_ERR_ABI, cat("plugin ", api.plugin_name, " speaks tg plugin ABI ", api.abi_major, ".",
                                      api.abi_minor, " and serves cores ", api.abi_major, ".", oldest_core_minor,
                                      " to ", api.abi_major, ".x, but the core speaks ", core_major, ".", core_minor,
                                      core_major == 0 ? " (version 0 is never valid: a zeroed call?)" : ""));
    } catch (...) {
      *out_status = out_of_memory_status();
    }
  }
  return nullptr;
}

// Copies `full` into a caller's struct whose struct_size the caller preset, writing no byte past that size and
// keeping the caller's struct_size. An older caller simply sees fewer members.
template <class T>
void write_versioned(T* out, const T& full, const char* what) {
  static_assert(std::is_trivially_copyable_v<T>);
  require(out, what);
  const size_t size = out->struct_size;
  if (size < sizeof(size_t)) throw Error(TG_ERR_INVALID_ARGUMENT, cat(what, "->struct_size is ", size, ", not preset"));
  std::memcpy(reinterpret_cast<char*>(out) + sizeof(size_t), reinterpret_cast<const char*>(&full) + sizeof(size_t),
              std::min(size, sizeof(T)) - sizeof(size_t));
}

}  // namespace tg::sdk

// Exports the plugin's single entry point. `api_expr` is an expression of type `const tg_plugin_api&`.
//   TG_SDK_PLUGIN_ENTRY(tg::cpu::plugin_api());
#define TG_SDK_PLUGIN_ENTRY(api_expr)                                                       \
  extern "C" __attribute__((visibility("default"))) const tg_plugin_api* tg_plugin_get_api( \
      uint32_t core_major, uint32_t core_minor, tg_status_t* out_status) {                  \
    return ::tg::sdk::negotiate_abi((api_expr), core_major, core_minor, out_status);        \
  }                                                                                         \
  static_assert(std::is_same_v<decltype(&tg_plugin_get_api), tg_plugin_get_api_fn>,         \
                "tg_plugin_get_api must match tg_plugin_get_api_fn")
