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

// Returns `api` when the core speaks the same major version, else NULL with a status naming both versions.
// Minor versions only append, so either side being newer within a major is fine: each reads what it knows.
inline const tg_plugin_api* negotiate_abi(const tg_plugin_api& api, uint32_t core_major, uint32_t core_minor,
                                          tg_status_t* out_status) noexcept {
  if (out_status != nullptr) *out_status = nullptr;
  if (core_major == api.abi_major) return &api;
  if (out_status != nullptr) {
    try {
      *out_status = make_status(
          TG_ERR_ABI, cat("plugin ", api.plugin_name, " speaks tg plugin ABI ", api.abi_major, ".", api.abi_minor,
                          " but the core speaks ", core_major, ".", core_minor, "; the major versions must match"));
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
