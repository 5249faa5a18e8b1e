// The CPU plugin's entry point and table, and its one device: the host CPU (model, cores, vector features,
// physical memory), with a oneTBB arena that kernel launches split across.
#include "cpu_plugin.hpp"

#include <tg/sdk/plugin.hpp>

#include <llvm/ADT/StringMap.h>
#include <llvm/TargetParser/Host.h>

#include <oneapi/tbb/info.h>

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <thread>

namespace tg::cpu {

using sdk::cat;
using sdk::Error;

namespace {

// Threads a launch uses: CPU_COUNT, else what oneTBB sees (it honours the process's affinity mask).
unsigned thread_count() {
  const char* env = std::getenv("CPU_COUNT");
  if (env == nullptr || *env == '\0') return static_cast<unsigned>(std::max(1, tbb::info::default_concurrency()));
  char* end = nullptr;
  errno = 0;
  const unsigned long count = std::strtoul(env, &end, 10);
  if (*end != '\0' || errno != 0 || count == 0 || count > 4096 || env[0] == '-')
    throw Error(TG_ERR_INVALID_ARGUMENT, cat("CPU_COUNT=", env, " is not a thread count (1..4096)"));
  return static_cast<unsigned>(count);
}

// "znver4, 16 cores, using 8 (avx2 avx512f fma ...)": the features that decide which vector code runs.
std::string describe_host(const std::string& cpu, unsigned threads) {
  static const char* const notable[] = {"sse4.2",     "avx",      "avx2",     "fma",        "f16c",
                                        "avx512f",    "avx512bw", "avx512vl", "avx512vnni", "avx512bf16",
                                        "avx512fp16", "amx-tile", "neon",     "fp16",       "dotprod",
                                        "bf16",       "i8mm",     "sve",      "sve2"};
  const llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  std::string found;
  for (const char* name : notable) {
    const auto it = features.find(name);
    if (it != features.end() && it->second) found += (found.empty() ? "" : " ") + std::string(name);
  }
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  return cat(cpu, ", ", cores, " cores", threads != cores ? cat(", using ", threads) : "", " (",
             found.empty() ? "no vector extensions" : found, ")");
}

uint64_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size) : 0;
}

}  // namespace

std::shared_ptr<Device> device_of(tg_device device) { return sdk::require(device, "device")->device; }

tg_status_t device_count(uint32_t* out_count) {
  return sdk::guard("cpu device_count", [&] { *sdk::require(out_count, "out_count") = 1; });
}

tg_status_t device_open(uint32_t index, tg_device* out_device) {
  return sdk::guard("cpu device_open", [&] {
    sdk::require(out_device, "out_device");
    if (index != 0) throw Error(TG_ERR_INVALID_ARGUMENT, cat("no CPU device ", index, "; there is one, CPU:0"));
    auto device = std::make_shared<Device>();
    device->threads = thread_count();
    device->arch = llvm::sys::getHostCPUName().str();
    device->description = describe_host(device->arch, device->threads);
    device->memory_bytes = physical_memory();
    device->arena = std::make_unique<tbb::task_arena>(static_cast<int>(device->threads));
    *out_device = new tg_device_s{std::move(device)};
  });
}

void device_close(tg_device device) {
  sdk::guard_void("cpu device_close", [&] { delete device; });
}

tg_status_t device_get_info(tg_device device, tg_device_info* out_info) {
  return sdk::guard("cpu device_get_info", [&] {
    const Device& dev = *device_of(device);
    tg_device_info info{};
    info.struct_size = sizeof(info);
    info.name = dev.name.c_str();
    info.description = dev.description.c_str();
    info.arch = dev.arch.c_str();
    info.memory_bytes = dev.memory_bytes;
    info.is_host = 1;
    sdk::write_versioned(out_info, info, "out_info");
  });
}

const tg_plugin_api& plugin_api() {
  static const tg_plugin_api api = {
      .struct_size = sizeof(tg_plugin_api),
      .abi_major = TG_ABI_VERSION_MAJOR,
      .abi_minor = TG_ABI_VERSION_MINOR,
      .plugin_name = "cpu",
      .device_name = "CPU",
      .status_free = sdk::status_free,
      .device_count = device_count,
      .device_open = device_open,
      .device_close = device_close,
      .device_get_info = device_get_info,
      .renderer_create = renderer_create,
      .renderer_destroy = renderer_destroy,
      .renderer_get_caps = renderer_get_caps,
      .renderer_render = renderer_render,
      .compiler_create = compiler_create,
      .compiler_destroy = compiler_destroy,
      .compiler_compile = compiler_compile,
      .blob_free = blob_free,
      .allocator_alloc = allocator_alloc,
      .allocator_free = allocator_free,
      .allocator_copy_in = allocator_copy_in,
      .allocator_copy_out = allocator_copy_out,
      .program_create = program_create,
      .program_destroy = program_destroy,
      .hwqueue_create = QueueSlots::create,
      .hwqueue_destroy = QueueSlots::destroy,
      .hwqueue_exec = QueueSlots::exec,
      .hwqueue_copy = QueueSlots::copy,
      .hwqueue_signal = QueueSlots::signal,
      .hwqueue_timestamp = QueueSlots::timestamp,
      .hwqueue_submit = QueueSlots::submit,
      .hwqueue_wait = QueueSlots::wait,
      .hwqueue_read_timestamp = QueueSlots::read_timestamp,
  };
  return api;
}

}  // namespace tg::cpu

TG_SDK_PLUGIN_ENTRY(tg::cpu::plugin_api());
