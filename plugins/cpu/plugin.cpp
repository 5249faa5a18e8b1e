// The CPU plugin's entry point and table, and its devices: the host CPU (model, cores, vector features, physical
// memory), with a oneTBB arena that kernel launches split across. CPU:0 .. CPU:15 are instances of that one host:
// each has its own buffers, queue and arena, and they share the cores (every arena may use all of them), so
// sharding and collectives run on one machine as they would across devices.
#include "cpu_plugin.hpp"

#include <tg/sdk/plugin.hpp>
#include <tg/sdk/plugin_table.hpp>

#include <oneapi/tbb/info.h>

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
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

// The host as /proc/cpuinfo has it: the model name and the feature flags (read here rather than asked of LLVM,
// so that opening the device does not map LLVM: the compiler library is opened only when a kernel compiles).
struct HostCpu {
  std::string model = "unknown CPU";
  std::set<std::string> flags;
};
const HostCpu& host_cpu() {
  static const HostCpu cpu = [] {
    HostCpu h;
    std::ifstream in("/proc/cpuinfo");
    for (std::string line; std::getline(in, line);) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string key = line.substr(0, line.find_last_not_of(" \t", colon - 1) + 1), value = line.substr(colon + 1);
      if ((key == "model name" || key == "Hardware") && h.model == "unknown CPU")
        h.model = value.substr(value.find_first_not_of(' ') == std::string::npos ? 0 : value.find_first_not_of(' '));
      if ((key == "flags" || key == "Features") && h.flags.empty()) {
        std::istringstream words(value);
        for (std::string w; words >> w;) h.flags.insert(w);
      }
    }
    return h;
  }();
  return cpu;
}

// "Intel(R) Xeon(R) ..., 16 cores, using 8 (avx2 avx512f fma ...)": the features that decide which vector code runs.
std::string describe_host(const std::string& cpu, unsigned threads) {
  // LLVM's name for a feature, then /proc/cpuinfo's (x86 flags, then aarch64 Features)
  static const std::pair<const char*, const char*> notable[] = {{"sse4.2", "sse4_2"},
                                                                {"avx", "avx"},
                                                                {"avx2", "avx2"},
                                                                {"fma", "fma"},
                                                                {"f16c", "f16c"},
                                                                {"avx512f", "avx512f"},
                                                                {"avx512bw", "avx512bw"},
                                                                {"avx512vl", "avx512vl"},
                                                                {"avx512vnni", "avx512_vnni"},
                                                                {"avx512bf16", "avx512_bf16"},
                                                                {"avx512fp16", "avx512_fp16"},
                                                                {"amx-tile", "amx_tile"},
                                                                {"neon", "asimd"},
                                                                {"fp16", "fphp"},
                                                                {"dotprod", "asimddp"},
                                                                {"bf16", "bf16"},
                                                                {"i8mm", "i8mm"},
                                                                {"sve", "sve"},
                                                                {"sve2", "sve2"}};
  std::string found;
  for (const auto& [name, flag] : notable)
    if (host_cpu().flags.count(flag)) found += (found.empty() ? "" : " ") + std::string(name);
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

// What the device slots need to know (tg/sdk/plugin_slots.hpp): how many instances there are, and how to open one.
struct DeviceHooks {
  using Device = cpu::Device;
  static constexpr std::string_view plugin = "cpu";
  static constexpr std::string_view device_label = "CPU";
  static constexpr bool is_host = true;
  static constexpr uint32_t kInstances = 16;  // enough for a 4x4 mesh of the same host

  static uint32_t count() { return kInstances; }
  static std::shared_ptr<Device> open(uint32_t index) {
    if (index >= kInstances)
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("no CPU device ", index, "; there are ", kInstances, ", CPU:0 .. CPU:", kInstances - 1));
    auto device = std::make_shared<Device>();
    device->threads = thread_count();
    device->arch = host_cpu().model;
    device->description = describe_host(device->arch, device->threads);
    device->memory_bytes = physical_memory();
    device->arena = std::make_unique<tbb::task_arena>(static_cast<int>(device->threads));
    return device;
  }
};
using DeviceSlots = sdk::DeviceSlots<DeviceHooks>;  // the table's device_* slots

const tg_plugin_api& plugin_api() {
  static const tg_plugin_api api =
      sdk::plugin_table<DeviceSlots, RendererSlots, CompilerSlots, AllocatorSlots, ProgramSlots, QueueSlots>("cpu",
                                                                                                             "CPU");
  return api;
}

}  // namespace tg::cpu

TG_SDK_PLUGIN_ENTRY(tg::cpu::plugin_api());
