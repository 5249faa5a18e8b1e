// A deliberately broken plugin that tests tg-conformance itself: it forwards every slot to the CPU plugin except
// the one TG_BROKEN_PLUGIN_MODE breaks, so the suite must report exactly that failure.
//   add      float32 ADD is rendered as SUB (a wrong op result, caught by the op battery)
//   copy_in  allocator_copy_in drops the last byte of every copy (an off-by-one, caught by the round trips)
//   crash    allocator_copy_out writes through a null pointer (the suite must survive to name the call)
//   peer_copy  two devices, whose allocator_copy_peer copies the bytes one element too far
// and one mode that is not broken:
//   two_devices  the one CPU presented as two devices, so the multi-device tier runs without such hardware
#include <tg/plugin_abi.h>
#include <tg/sdk/status.hpp>

#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

tg_plugin_get_api_fn g_entry = nullptr;  // the real plugin's entry point
const tg_plugin_api* g_cpu = nullptr;    // the real plugin's table
tg_plugin_api g_table;                   // its copy with one slot broken

std::string mode() {
  const char* env = std::getenv("TG_BROKEN_PLUGIN_MODE");
  return env != nullptr ? env : "add";
}

tg_status_t render_add_as_sub(tg_renderer renderer, const tg_kir_kernel* kernel, const char** out_source) {
  if (kernel == nullptr) return g_cpu->renderer_render(renderer, kernel, out_source);
  std::vector<tg_kir_inst> insts(kernel->insts, kernel->insts + kernel->ninsts);
  for (tg_kir_inst& inst : insts)
    if (inst.op == TG_KIR_ADD && inst.dtype == TG_DTYPE_FLOAT32) inst.op = TG_KIR_SUB;
  tg_kir_kernel broken = *kernel;
  broken.insts = insts.data();
  return g_cpu->renderer_render(renderer, &broken, out_source);
}

tg_status_t copy_in_short_by_one(tg_device device, const tg_buffer_desc* dst, uint64_t offset, const void* src,
                                 uint64_t size) {
  return g_cpu->allocator_copy_in(device, dst, offset, src, size == 0 ? 0 : size - 1);
}

tg_status_t copy_out_crashes(tg_device, void*, const tg_buffer_desc*, uint64_t, uint64_t) {
  volatile int* nowhere = nullptr;
  *nowhere = 1;
  return nullptr;
}

tg_status_t copy_out_hangs(tg_device, void*, const tg_buffer_desc*, uint64_t, uint64_t) {
  std::this_thread::sleep_for(std::chrono::seconds(60));
  return nullptr;
}

tg_status_t two_device_count(uint32_t* out_count) {
  const tg_status_t status = g_cpu->device_count(out_count);
  if (status == nullptr && out_count != nullptr) *out_count = 2;
  return status;
}

tg_status_t copy_peer_one_element_late(tg_device dst_device, const tg_buffer_desc* dst, uint64_t dst_offset,
                                       tg_device src_device, const tg_buffer_desc* src, uint64_t src_offset,
                                       uint64_t size) {
  return g_cpu->allocator_copy_peer(dst_device, dst, dst_offset + 4, src_device, src, src_offset,
                                    size >= 4 ? size - 4 : size);
}

tg_status_t open_either_as_cpu0(uint32_t index, tg_device* out_device) {
  if (index > 1)
    return tg::sdk::make_status(TG_ERR_INVALID_ARGUMENT,
                                "no cpu-twice device " + std::to_string(index) + "; there are 2");
  return g_cpu->device_open(0, out_device);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const tg_plugin_api* tg_plugin_get_api(uint32_t core_major,
                                                                                         uint32_t core_minor,
                                                                                         tg_status_t* out_status) {
  if (out_status != nullptr) *out_status = nullptr;
  if (g_entry == nullptr) {
    const char* path = std::getenv("TG_BROKEN_PLUGIN_TARGET");
    void* handle = dlopen(path != nullptr ? path : TG_CPU_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    g_entry = handle ? reinterpret_cast<tg_plugin_get_api_fn>(dlsym(handle, TG_ABI_ENTRY_POINT)) : nullptr;
    if (g_entry == nullptr) return nullptr;
  }
  // The version rules stay the real plugin's: it answers, and we serve our copy wherever it serves its table.
  const tg_plugin_api* cpu = g_entry(core_major, core_minor, out_status);
  if (cpu == nullptr) return nullptr;  // keep the table the earlier calls got: it is still in use
  g_cpu = cpu;
  g_table = *g_cpu;
  g_table.plugin_name = "broken";
  if (mode() == "add") g_table.renderer_render = render_add_as_sub;
  if (mode() == "copy_in") g_table.allocator_copy_in = copy_in_short_by_one;
  if (mode() == "crash") g_table.allocator_copy_out = copy_out_crashes;
  if (mode() == "hang") g_table.allocator_copy_out = copy_out_hangs;
  if (mode() == "peer_copy") g_table.allocator_copy_peer = copy_peer_one_element_late;
  if (mode() == "two_devices" || mode() == "peer_copy") {
    g_table.plugin_name = "cpu-twice";
    g_table.device_count = two_device_count;
    g_table.device_open = open_either_as_cpu0;
  }
  return &g_table;
}
