// The METAL plugin's private declarations: the Objective-C runtime and Metal as far as this plugin calls them
// (loaded with dlopen at run time and declared here, so the plugin builds anywhere, with no Apple headers), the
// objects behind the ABI's handles that more than one file needs (device, program), the tensor cores its renderer
// claims (simdgroup matrices), and the slot classes each interface file defines.
//
// The renderer (KIR -> Metal Shading Language) needs no device and works everywhere. Everything else needs Metal,
// which exists only on macOS: elsewhere (or where TG_METAL_OBJC_LIB / TG_METAL_FRAMEWORK name a missing library)
// there are zero devices, and device_open / compiler_create say which library is missing.
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/plugin_handles.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

// The handles behind tg_device and tg_program, complete before the SDK's slot templates see them.
namespace tg::metal {
struct Device;
struct Program;
}  // namespace tg::metal
struct tg_device_s : tg::sdk::DeviceHandle<tg::metal::Device> {};
struct tg_program_s : tg::sdk::ProgramHandle<tg::metal::Program> {};

#include <tg/sdk/device_queue.hpp>
#include <tg/sdk/plugin_slots.hpp>
#include <tg/sdk/program_signature.hpp>
#include <tg/sdk/status.hpp>

namespace tg::metal {

// ---- the Objective-C runtime (objc.h, message.h) and Metal, as far as this plugin uses them ------------------
using id = void*;   // any Objective-C object; nullptr is nil
using SEL = void*;  // a registered selector
struct MTLSize {    // NSUInteger width, height, depth (64-bit on every Mac Metal runs on)
  uint64_t width, height, depth;
};
constexpr uint64_t kMTLResourceStorageModeShared = 0;         // one allocation the CPU and the GPU both see
constexpr uint64_t kMTLLanguageVersion3_1 = (3u << 16) | 1u;  // bfloat needs MSL 3.1
constexpr uint64_t kMTLCommandBufferStatusCompleted = 4, kMTLCommandBufferStatusError = 5;

struct ObjcApi {
  id (*objc_getClass)(const char*);
  SEL (*sel_registerName)(const char*);
  void (*objc_msgSend)();  // called only through send<>() below, cast to each call's own type
  void* (*objc_autoreleasePoolPush)();
  void (*objc_autoreleasePoolPop)(void*);
  id (*MTLCreateSystemDefaultDevice)();  // from Metal.framework, the rest from libobjc
};

// libobjc and Metal, loaded once (TG_METAL_OBJC_LIB, default /usr/lib/libobjc.A.dylib; TG_METAL_FRAMEWORK, default
// /System/Library/Frameworks/Metal.framework/Metal); throws TG_ERR_UNAVAILABLE saying which is missing and why.
const ObjcApi& objc();
// Why Metal is unusable here ("" when it loaded), without throwing.
const std::string& objc_error();

// [self sel args...]: objc_msgSend cast to this call's types (R and Args must be what the method declares; no
// struct returns, which would need objc_msgSend_stret on x86-64).
template <class R = id, class... Args>
R send(id self, const char* selector, Args... args) {
  const ObjcApi& rt = objc();
  return reinterpret_cast<R (*)(id, SEL, Args...)>(rt.objc_msgSend)(self, rt.sel_registerName(selector), args...);
}

// An object this plugin owns (+1: new*, retained), released with it.
struct Release {
  void operator()(id object) const;
};
using Ref = std::unique_ptr<void, Release>;
Ref retained(id object);  // takes a +1 reference to an autoreleased (borrowed) object; nil stays nil

// Every slot that makes autoreleased objects (strings, command buffers, encoders) drains them on return.
struct AutoreleasePool {
  void* token;
  AutoreleasePool() : token(objc().objc_autoreleasePoolPush()) {}
  ~AutoreleasePool() { objc().objc_autoreleasePoolPop(token); }
  AutoreleasePool(const AutoreleasePool&) = delete;
  AutoreleasePool& operator=(const AutoreleasePool&) = delete;
};

id ns_string(const std::string& text);  // an autoreleased NSString
std::string from_ns_string(id string);  // UTF8String's text ("" for nil)
std::string error_text(id error);       // NSError's localizedDescription ("unknown error" for nil)

// One MTLDevice (the system default one). Shared by its handle and everything made from it.
struct Device {
  std::string name = "METAL";
  std::string description;  // "Apple M2 Max, Metal"
  std::string arch = "msl3.1";
  uint64_t memory_bytes = 0;      // recommendedMaxWorkingSetSize
  uint64_t max_buffer_bytes = 0;  // maxBufferLength: the largest one buffer
  Ref device;
  void bind() const {}  // Metal calls name their device
};

// A kernel's compute pipeline, and a copy of its signature (kinds and offsets say how to bind each argument).
struct Program {
  std::shared_ptr<Device> device;
  Ref library, function, pipeline;
  std::string kernel_name;
  sdk::Signature signature;
  size_t args_size = 0;
  uint64_t max_threads = 0;  // the pipeline's maxTotalThreadsPerThreadgroup
};

// A Metal library of `source` on `device`; a source Metal refuses is TG_ERR_COMPILE with its diagnostics.
Ref new_library(id device, const std::string& source, const std::string& kernel_name);

// The system default MTLDevice (kept for the life of the process), or nil when there is none.
id system_device();

// ---- tensor cores: simdgroup_multiply_accumulate on 8x8 simdgroup matrices -----------------------------------
// A simdgroup of 32 threads holds each 8x8 matrix two elements per thread (thread_elements()[0..1]): lane l holds
// row (l >> 1 & 3) + 4 (l >> 4 & 1), columns 2 (l & 1) + 4 (l >> 3 & 1) + e for e = 0, 1. A, B and C share it.
inline constexpr uint8_t kSimdgroupMap[16] = {TG_TC_LANE(1), TG_TC_LANE(2), TG_TC_LANE(4),
                                              TG_TC_ELEM(0), TG_TC_LANE(0), TG_TC_LANE(3)};

// ---- slot functions (one group per file) ------------------------------------------------------------------------
// plugin.cpp: the device; its DeviceHooks sit next to the table
std::shared_ptr<Device> device_of(tg_device device);  // throws on NULL

// renderer.cpp (KIR -> MSL, no device needed) and compiler.cpp (MSL checked by Metal; the blob is the source)
struct RendererHooks;
struct CompilerHooks;
using RendererSlots = sdk::RendererSlots<RendererHooks>;
using CompilerSlots = sdk::CompilerSlots<CompilerHooks>;

// allocator.cpp: shared-storage MTLBuffers; a buffer's address is its MTLBuffer (the queue binds it back), and
// copies go through `contents`
struct AllocatorSlots {
  static tg_status_t alloc(tg_device device, uint64_t size, tg_buffer_desc* out_buffer) noexcept;
  static void free(tg_device device, const tg_buffer_desc* buffer) noexcept;
  static tg_status_t copy_in(tg_device device, const tg_buffer_desc* dst, uint64_t offset, const void* src,
                             uint64_t size) noexcept;
  static tg_status_t copy_out(tg_device device, void* dst, const tg_buffer_desc* src, uint64_t offset,
                              uint64_t size) noexcept;
};
// Throws TG_ERR_INVALID_ARGUMENT unless [offset, offset+size) lies inside the buffer and it has an MTLBuffer.
void check_range(const tg_buffer_desc& buffer, uint64_t offset, uint64_t size, const char* what);

// program.cpp: the source compiled again on the device, its function and compute pipeline
struct ProgramHooks {
  using Program = metal::Program;
  static constexpr std::string_view plugin = "metal";
  static std::shared_ptr<Program> load(tg_device device, const void* blob, size_t size, const char* kernel_name,
                                       sdk::Signature signature);
};
using ProgramSlots = sdk::ProgramSlots<ProgramHooks>;

// hwqueue.cpp: tg::sdk::DeviceQueue over an MTLCommandQueue, one command buffer per submit
struct QueueBackend;
using QueueSlots = sdk::DeviceQueueSlots<tg_hwqueue_s, QueueBackend>;

}  // namespace tg::metal

// Compiled where tg_renderer_s and tg_compiler_s are complete (renderer.cpp, compiler.cpp).
extern template struct tg::sdk::RendererSlots<tg::metal::RendererHooks>;
extern template struct tg::sdk::CompilerSlots<tg::metal::CompilerHooks>;
// Compiled where tg_hwqueue_s and the backend are complete (hwqueue.cpp).
extern template struct tg::sdk::DeviceQueueSlots<tg_hwqueue_s, tg::metal::QueueBackend>;
