// tg::sdk::Unavailable{Allocator,Program,Queue}Slots: the allocator, program and hwqueue slots of a render-only
// build, a plugin whose devices can never be opened here (METAL off macOS): every slot that could be reached says
// what it cannot do and why, in one line; the slots that take a handle that can never exist do nothing.
//
//   struct Unavailable {
//     static constexpr std::string_view plugin = "metal";                // "metal allocator_alloc: ..."
//     static constexpr std::string_view no_queue = "no Metal command queue";
//     [[noreturn]] static void fail(const std::string& what);            // throws TG_ERR_UNAVAILABLE: what, and why
//   };
//   ... sdk::plugin_table<DeviceSlots, RendererSlots, CompilerSlots, sdk::UnavailableAllocatorSlots<Unavailable>,
//                         sdk::UnavailableProgramSlots<Unavailable>, sdk::UnavailableQueueSlots<Unavailable>>(...)
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/status.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace tg::sdk {

namespace unavailable_detail {

inline constexpr std::string_view kAlloc = "allocator_alloc", kCopyIn = "allocator_copy_in",
                                  kCopyOut = "allocator_copy_out", kProgramCreate = "program_create",
                                  kCreate = "hwqueue_create", kExec = "hwqueue_exec", kCopy = "hwqueue_copy",
                                  kSignal = "hwqueue_signal", kTimestamp = "hwqueue_timestamp",
                                  kSubmit = "hwqueue_submit", kWait = "hwqueue_wait",
                                  kReadTimestamp = "hwqueue_read_timestamp";

template <class Hooks, const std::string_view& Slot>
tg_status_t fail(const std::string& what) noexcept {
  return guard(slot_where<Hooks::plugin, Slot>, [&] { Hooks::fail(what); });
}

}  // namespace unavailable_detail

template <class Hooks>
struct UnavailableAllocatorSlots {
  static tg_status_t alloc(tg_device, uint64_t size, tg_buffer_desc*) noexcept {
    return unavailable_detail::fail<Hooks, unavailable_detail::kAlloc>(cat("cannot allocate ", size, " bytes"));
  }
  static void free(tg_device, const tg_buffer_desc*) noexcept {}  // nothing was ever allocated
  static tg_status_t copy_in(tg_device, const tg_buffer_desc*, uint64_t, const void*, uint64_t size) noexcept {
    return unavailable_detail::fail<Hooks, unavailable_detail::kCopyIn>(cat("cannot copy ", size, " bytes in"));
  }
  static tg_status_t copy_out(tg_device, void*, const tg_buffer_desc*, uint64_t, uint64_t size) noexcept {
    return unavailable_detail::fail<Hooks, unavailable_detail::kCopyOut>(cat("cannot copy ", size, " bytes out"));
  }
};

template <class Hooks>
struct UnavailableProgramSlots {
  static tg_status_t create(tg_device, const void*, size_t, const char* kernel_name, const tg_kir_param*, uint32_t,
                            tg_program*) noexcept {
    return unavailable_detail::fail<Hooks, unavailable_detail::kProgramCreate>(
        cat("cannot load kernel ", kernel_name ? kernel_name : "(unnamed)"));
  }
  static void destroy(tg_program) noexcept {}  // no program is ever made
};

// hwqueue_create fails; the others can only be reached with a queue, which never exists, and say the same.
template <class Hooks>
struct UnavailableQueueSlots {
  template <const std::string_view& Slot>
  static tg_status_t no_queue() noexcept {
    return unavailable_detail::fail<Hooks, Slot>(std::string(Hooks::no_queue));
  }
  static tg_status_t create(tg_device, tg_hwqueue*) noexcept { return no_queue<unavailable_detail::kCreate>(); }
  static void destroy(tg_hwqueue) noexcept {}
  static tg_status_t exec(tg_hwqueue, tg_program, const void*, size_t, const tg_launch_dims*) noexcept {
    return no_queue<unavailable_detail::kExec>();
  }
  static tg_status_t copy(tg_hwqueue, const tg_buffer_desc*, uint64_t, const tg_buffer_desc*, uint64_t,
                          uint64_t) noexcept {
    return no_queue<unavailable_detail::kCopy>();
  }
  static tg_status_t signal(tg_hwqueue, uint64_t) noexcept { return no_queue<unavailable_detail::kSignal>(); }
  static tg_status_t timestamp(tg_hwqueue, uint64_t*) noexcept { return no_queue<unavailable_detail::kTimestamp>(); }
  static tg_status_t submit(tg_hwqueue) noexcept { return no_queue<unavailable_detail::kSubmit>(); }
  static tg_status_t wait(tg_hwqueue, uint64_t, uint64_t) noexcept { return no_queue<unavailable_detail::kWait>(); }
  static tg_status_t read_timestamp(tg_hwqueue, uint64_t, uint64_t*) noexcept {
    return no_queue<unavailable_detail::kReadTimestamp>();
  }
};

}  // namespace tg::sdk
