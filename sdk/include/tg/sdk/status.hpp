// tg::sdk status helpers: making and freeing tg_status_t, the Error exception, and guard(), which keeps every
// exception on the plugin's side of the C ABI.
#pragma once

#include <tg/plugin_abi.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace tg::sdk {

// What plugin code throws for an error a caller can act on; guard() turns it into a status with this code.
class Error : public std::runtime_error {
 public:
  Error(tg_status_code code, const std::string& message) : std::runtime_error(message), code_(code) {}
  tg_status_code code() const noexcept { return code_; }

 private:
  tg_status_code code_;
};

// One message from pieces: cat("cannot allocate ", n, " bytes").
template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// The status handed out when not even a status can be allocated. It is static, so status_free skips it.
inline tg_status* out_of_memory_status() noexcept {
  static char message[] = "out of memory";
  static tg_status status{TG_ERR_OUT_OF_MEMORY, message};
  return &status;
}

// A status with a malloc'ed struct and message (so a core that never got a table can still free() it).
// TG_OK makes no status: NULL is success.
inline tg_status_t make_status(tg_status_code code, std::string_view message) noexcept {
  if (code == TG_OK) return nullptr;
  auto* status = static_cast<tg_status*>(std::malloc(sizeof(tg_status)));
  auto* text = static_cast<char*>(std::malloc(message.size() + 1));
  if (status == nullptr || text == nullptr) {
    std::free(status);
    std::free(text);
    return out_of_memory_status();
  }
  std::memcpy(text, message.data(), message.size());
  text[message.size()] = '\0';
  status->code = code;
  status->message = text;
  return status;
}

// The plugin table's status_free slot.
inline void status_free(tg_status_t status) noexcept {
  if (status == nullptr || status == out_of_memory_status()) return;
  std::free(status->message);
  std::free(status);
}

// Runs body() and returns NULL, or the status for whatever it threw; `where` (e.g. "cpu allocator_alloc") starts
// the message. Nothing escapes: this is the only way an ABI slot should call into C++ code.
template <class F>
tg_status_t guard(const char* where, F&& body) noexcept {
  try {
    try {
      body();
      return nullptr;
    } catch (const Error& e) {
      return make_status(e.code(), cat(where, ": ", e.what()));
    } catch (const std::bad_alloc&) {
      return make_status(TG_ERR_OUT_OF_MEMORY, cat(where, ": out of memory"));
    } catch (const std::exception& e) {
      return make_status(TG_ERR_INTERNAL, cat(where, ": internal error: ", e.what()));
    } catch (...) {
      return make_status(TG_ERR_INTERNAL, cat(where, ": internal error: unknown exception"));
    }
  } catch (...) {  // building the message itself threw (bad_alloc from cat)
    return out_of_memory_status();
  }
}

// For slots that return void (the *_destroy family): runs body(), and drops any error, which has nowhere to go.
template <class F>
void guard_void(const char* where, F&& body) noexcept {
  status_free(guard(where, static_cast<F&&>(body)));
}

// Throws TG_ERR_INVALID_ARGUMENT naming `what` unless the pointer is set; returns it, so it can wrap a use.
template <class T>
T* require(T* pointer, const char* what) {
  if (pointer == nullptr) throw Error(TG_ERR_INVALID_ARGUMENT, cat("null ", what));
  return pointer;
}

namespace status_detail {

// "<plugin> <slot>", built at compile time, with nothing to allocate (or fail) on the way in.
template <const std::string_view& Plugin, const std::string_view& Slot>
inline constexpr auto where = [] {
  std::array<char, Plugin.size() + 1 + Slot.size() + 1> text{};
  auto out = std::copy(Plugin.begin(), Plugin.end(), text.begin());
  *out++ = ' ';
  std::copy(Slot.begin(), Slot.end(), out);
  return text;
}();

}  // namespace status_detail

// guard()'s `where` for a slot of a plugin, e.g. slot_where<plugin, slot> == "cpu device_open" (both are
// std::string_view constants with static storage).
template <const std::string_view& Plugin, const std::string_view& Slot>
inline constexpr const char* slot_where = status_detail::where<Plugin, Slot>.data();

// Throws TG_ERR_INVALID_ARGUMENT unless [offset, offset+size) lies inside `buffer` (its size): the bounds check of
// every allocator copy and queue copy (check_range in host_queue.hpp, check_device_range in device_allocator.hpp).
inline void check_extent(const tg_buffer_desc& buffer, uint64_t offset, uint64_t size, const char* what) {
  if (offset > buffer.size || size > buffer.size - offset)
    throw Error(TG_ERR_INVALID_ARGUMENT, cat(what, ": offset ", offset, " + size ", size, " is past the end of a ",
                                             buffer.size, "-byte buffer"));
}

}  // namespace tg::sdk
