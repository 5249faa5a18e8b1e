// The QCOM plugin's entry point and table, the run-time loading of libOpenCL.so.1, OpenCL error names, and its
// devices: every OpenCL device of every platform the ICD loader finds (on our machines, PoCL's CPU device).
#include "qcom_plugin.hpp"

#include <tg/sdk/plugin.hpp>
#include <tg/sdk/plugin_table.hpp>

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>

namespace tg::qcom {

using sdk::cat;
using sdk::Error;

namespace {

// The library to open: QCOM_OPENCL_LIBRARY when set (a test points it at a missing file), else the ICD loader.
std::string opencl_library() {
  const char* env = std::getenv("QCOM_OPENCL_LIBRARY");
  return env != nullptr && *env != '\0' ? env : "libOpenCL.so.1";
}

struct LoadedApi {
  ClApi api;
  std::string error;  // why the API is unusable; empty when loaded
};

const LoadedApi& loaded_api() {
  static const LoadedApi loaded = [] {
    LoadedApi out;
    const std::string path = opencl_library();
    // RTLD_LOCAL: the ICD loader's symbols stay out of the process's global namespace. Never closed: vendor
    // drivers register atexit handlers that must find their code mapped.
    void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* why = dlerror();
      out.error = cat("cannot load ", path, ": ", why ? why : "unknown error",
                      " (install an OpenCL ICD loader and driver, e.g. ocl-icd-libopencl1 and pocl-opencl-icd)");
      return out;
    }
#define TG_QCOM_CL_LOAD(fn)                                             \
  out.api.fn = reinterpret_cast<decltype(out.api.fn)>(dlsym(lib, #fn)); \
  if (out.api.fn == nullptr && out.error.empty())                       \
    out.error = cat(path, " has no ", #fn, ": it is not an OpenCL 1.2 (or newer) ICD loader");
    TG_QCOM_CL_FUNCTIONS(TG_QCOM_CL_LOAD)
#undef TG_QCOM_CL_LOAD
    return out;
  }();
  return loaded;
}

// Every device of every platform, in platform order, found once: device indices must be stable for a process.
struct DeviceList {
  std::vector<std::pair<cl_platform_id, cl_device_id>> devices;
  std::string error;         // the library or every platform is missing: device_count fails with this
  std::string empty_reason;  // platforms without devices: device_count is 0, device_open says this
};

const DeviceList& device_list() {
  static const DeviceList list = [] {
    DeviceList out;
    try {
      const ClApi& api = cl();
      cl_uint nplatforms = 0;
      const cl_int err = api.clGetPlatformIDs(0, nullptr, &nplatforms);
      if (err == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (err == CL_SUCCESS && nplatforms == 0)) {
        out.error = "no OpenCL platform found (is an ICD such as pocl-opencl-icd installed in /etc/OpenCL/vendors?)";
        return out;
      }
      check_cl(err, "clGetPlatformIDs");
      std::vector<cl_platform_id> platforms(nplatforms);
      check_cl(api.clGetPlatformIDs(nplatforms, platforms.data(), nullptr), "clGetPlatformIDs");
      for (cl_platform_id platform : platforms) {
        cl_uint ndevices = 0;
        if (api.clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &ndevices) != CL_SUCCESS) continue;
        std::vector<cl_device_id> ids(ndevices);
        check_cl(api.clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, ndevices, ids.data(), nullptr), "clGetDeviceIDs");
        for (cl_device_id id : ids) out.devices.emplace_back(platform, id);
      }
      if (out.devices.empty()) out.empty_reason = "the OpenCL platforms found have no devices";
    } catch (const Error& e) {
      out.error = e.what();
    }
    return out;
  }();
  return list;
}

std::string device_string(cl_device_id id, cl_device_info what) {
  size_t size = 0;
  check_cl(cl().clGetDeviceInfo(id, what, 0, nullptr, &size), "clGetDeviceInfo");
  std::string out(size, '\0');
  check_cl(cl().clGetDeviceInfo(id, what, size, out.data(), nullptr), "clGetDeviceInfo");
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

std::string platform_string(cl_platform_id id, cl_platform_info what) {
  size_t size = 0;
  check_cl(cl().clGetPlatformInfo(id, what, 0, nullptr, &size), "clGetPlatformInfo");
  std::string out(size, '\0');
  check_cl(cl().clGetPlatformInfo(id, what, size, out.data(), nullptr), "clGetPlatformInfo");
  while (!out.empty() && out.back() == '\0') out.pop_back();
  return out;
}

template <class T>
T device_value(cl_device_id id, cl_device_info what) {
  T value{};
  check_cl(cl().clGetDeviceInfo(id, what, sizeof(T), &value, nullptr), "clGetDeviceInfo");
  return value;
}

bool has_extension(const std::string& extensions, const std::string& name) {
  return (" " + extensions + " ").find(" " + name + " ") != std::string::npos;
}

}  // namespace

const ClApi& cl() {
  const LoadedApi& loaded = loaded_api();
  if (!loaded.error.empty()) throw Error(TG_ERR_UNAVAILABLE, loaded.error);
  return loaded.api;
}

namespace {
std::atomic<bool> exiting{false};
}  // namespace

bool process_exiting() { return exiting.load(); }
void set_process_exiting() { exiting.store(true); }

std::mutex& build_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::string cl_error_name(cl_int err) {
  switch (err) {
    // clang-format off: one line per few codes (clang-format lays an X-macro list out as a call chain)
#define TG_QCOM_CL_ERROR(name) \
  case name: return #name;
    TG_QCOM_CL_ERROR(CL_SUCCESS) TG_QCOM_CL_ERROR(CL_DEVICE_NOT_FOUND) TG_QCOM_CL_ERROR(CL_DEVICE_NOT_AVAILABLE)
    TG_QCOM_CL_ERROR(CL_COMPILER_NOT_AVAILABLE) TG_QCOM_CL_ERROR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    TG_QCOM_CL_ERROR(CL_OUT_OF_RESOURCES) TG_QCOM_CL_ERROR(CL_OUT_OF_HOST_MEMORY)
    TG_QCOM_CL_ERROR(CL_PROFILING_INFO_NOT_AVAILABLE) TG_QCOM_CL_ERROR(CL_MEM_COPY_OVERLAP)
    TG_QCOM_CL_ERROR(CL_IMAGE_FORMAT_MISMATCH) TG_QCOM_CL_ERROR(CL_IMAGE_FORMAT_NOT_SUPPORTED)
    TG_QCOM_CL_ERROR(CL_BUILD_PROGRAM_FAILURE) TG_QCOM_CL_ERROR(CL_MAP_FAILURE)
    TG_QCOM_CL_ERROR(CL_MISALIGNED_SUB_BUFFER_OFFSET) TG_QCOM_CL_ERROR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    TG_QCOM_CL_ERROR(CL_COMPILE_PROGRAM_FAILURE) TG_QCOM_CL_ERROR(CL_LINKER_NOT_AVAILABLE)
    TG_QCOM_CL_ERROR(CL_LINK_PROGRAM_FAILURE) TG_QCOM_CL_ERROR(CL_DEVICE_PARTITION_FAILED)
    TG_QCOM_CL_ERROR(CL_KERNEL_ARG_INFO_NOT_AVAILABLE) TG_QCOM_CL_ERROR(CL_INVALID_VALUE)
    TG_QCOM_CL_ERROR(CL_INVALID_DEVICE_TYPE) TG_QCOM_CL_ERROR(CL_INVALID_PLATFORM) TG_QCOM_CL_ERROR(CL_INVALID_DEVICE)
    TG_QCOM_CL_ERROR(CL_INVALID_CONTEXT) TG_QCOM_CL_ERROR(CL_INVALID_QUEUE_PROPERTIES)
    TG_QCOM_CL_ERROR(CL_INVALID_COMMAND_QUEUE) TG_QCOM_CL_ERROR(CL_INVALID_HOST_PTR)
    TG_QCOM_CL_ERROR(CL_INVALID_MEM_OBJECT) TG_QCOM_CL_ERROR(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)
    TG_QCOM_CL_ERROR(CL_INVALID_IMAGE_SIZE) TG_QCOM_CL_ERROR(CL_INVALID_SAMPLER) TG_QCOM_CL_ERROR(CL_INVALID_BINARY)
    TG_QCOM_CL_ERROR(CL_INVALID_BUILD_OPTIONS) TG_QCOM_CL_ERROR(CL_INVALID_PROGRAM)
    TG_QCOM_CL_ERROR(CL_INVALID_PROGRAM_EXECUTABLE) TG_QCOM_CL_ERROR(CL_INVALID_KERNEL_NAME)
    TG_QCOM_CL_ERROR(CL_INVALID_KERNEL_DEFINITION) TG_QCOM_CL_ERROR(CL_INVALID_KERNEL)
    TG_QCOM_CL_ERROR(CL_INVALID_ARG_INDEX) TG_QCOM_CL_ERROR(CL_INVALID_ARG_VALUE) TG_QCOM_CL_ERROR(CL_INVALID_ARG_SIZE)
    TG_QCOM_CL_ERROR(CL_INVALID_KERNEL_ARGS) TG_QCOM_CL_ERROR(CL_INVALID_WORK_DIMENSION)
    TG_QCOM_CL_ERROR(CL_INVALID_WORK_GROUP_SIZE) TG_QCOM_CL_ERROR(CL_INVALID_WORK_ITEM_SIZE)
    TG_QCOM_CL_ERROR(CL_INVALID_GLOBAL_OFFSET) TG_QCOM_CL_ERROR(CL_INVALID_EVENT_WAIT_LIST)
    TG_QCOM_CL_ERROR(CL_INVALID_EVENT) TG_QCOM_CL_ERROR(CL_INVALID_OPERATION) TG_QCOM_CL_ERROR(CL_INVALID_GL_OBJECT)
    TG_QCOM_CL_ERROR(CL_INVALID_BUFFER_SIZE) TG_QCOM_CL_ERROR(CL_INVALID_MIP_LEVEL)
    TG_QCOM_CL_ERROR(CL_INVALID_GLOBAL_WORK_SIZE) TG_QCOM_CL_ERROR(CL_INVALID_PROPERTY)
    TG_QCOM_CL_ERROR(CL_INVALID_IMAGE_DESCRIPTOR) TG_QCOM_CL_ERROR(CL_INVALID_COMPILER_OPTIONS)
    TG_QCOM_CL_ERROR(CL_INVALID_LINKER_OPTIONS) TG_QCOM_CL_ERROR(CL_INVALID_DEVICE_PARTITION_COUNT)
#undef TG_QCOM_CL_ERROR
      // clang-format on
      case -1001:
    return "CL_PLATFORM_NOT_FOUND_KHR";
  }
  return cat("CL error ", err);
}

void check_cl(cl_int err, const char* call) {
  if (err == CL_SUCCESS) return;
  tg_status_code code = TG_ERR_INTERNAL;
  if (err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY || err == CL_MEM_OBJECT_ALLOCATION_FAILURE)
    code = TG_ERR_OUT_OF_MEMORY;
  else if (err == CL_BUILD_PROGRAM_FAILURE || err == CL_COMPILE_PROGRAM_FAILURE || err == CL_LINK_PROGRAM_FAILURE)
    code = TG_ERR_COMPILE;
  else if (err == CL_DEVICE_NOT_FOUND || err == CL_DEVICE_NOT_AVAILABLE || err == CL_COMPILER_NOT_AVAILABLE ||
           err == -1001)
    code = TG_ERR_UNAVAILABLE;
  else if (err <= CL_INVALID_VALUE)
    code = TG_ERR_INVALID_ARGUMENT;
  throw Error(code, cat(call, " failed: ", cl_error_name(err), " (", err, ")"));
}

Device::~Device() {
  if (process_exiting()) return;
  for (auto& [key, view] : image_views) cl().clReleaseMemObject(view.image);
  if (copy_queue != nullptr) cl().clReleaseCommandQueue(copy_queue);
  if (context != nullptr) cl().clReleaseContext(context);
}

// What the device slots need to know (tg/sdk/plugin_slots.hpp): how many devices, and how to open one.
struct DeviceHooks {
  using Device = qcom::Device;
  static constexpr std::string_view plugin = "qcom";
  static constexpr bool is_host = false;  // buffers are cl_mem objects, reached only through copies
  static uint32_t count();
  static std::shared_ptr<Device> open(uint32_t index);
};
using DeviceSlots = sdk::DeviceSlots<DeviceHooks>;  // the table's device_* slots

std::shared_ptr<Device> device_of(tg_device device) { return sdk::require(device, "device")->device; }

// A missing library or platform is an error that `tg devices` shows; platforms without devices are just none.
uint32_t DeviceHooks::count() {
  const DeviceList& list = device_list();
  if (!list.error.empty()) throw Error(TG_ERR_UNAVAILABLE, list.error);
  return static_cast<uint32_t>(list.devices.size());
}

std::shared_ptr<Device> DeviceHooks::open(uint32_t index) {
  const DeviceList& list = device_list();
  if (list.devices.empty()) throw Error(TG_ERR_UNAVAILABLE, list.error.empty() ? list.empty_reason : list.error);
  if (index >= list.devices.size())
    throw Error(TG_ERR_INVALID_ARGUMENT, cat("no QCOM device ", index, "; there are ", list.devices.size()));
  const ClApi& api = cl();
  auto device = std::make_shared<Device>();
  device->platform = list.devices[index].first;
  device->id = list.devices[index].second;
  const std::string extensions = device_string(device->id, CL_DEVICE_EXTENSIONS);
  device->has_fp16 = has_extension(extensions, "cl_khr_fp16");
  device->has_fp64 = has_extension(extensions, "cl_khr_fp64");
  device->has_int64 =
      device_string(device->id, CL_DEVICE_PROFILE) == "FULL_PROFILE" || has_extension(extensions, "cles_khr_int64");
  device->correctly_rounded_sqrt = (device_value<cl_device_fp_config>(device->id, CL_DEVICE_SINGLE_FP_CONFIG) &
                                    CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
  device->memory_bytes = device_value<cl_ulong>(device->id, CL_DEVICE_GLOBAL_MEM_SIZE);
  device->max_alloc_bytes = device_value<cl_ulong>(device->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  device->max_param_bytes = device_value<size_t>(device->id, CL_DEVICE_MAX_PARAMETER_SIZE);
  device->max_work_group_size = device_value<size_t>(device->id, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  device->max_work_item_sizes = device_value<std::array<size_t, 3>>(device->id, CL_DEVICE_MAX_WORK_ITEM_SIZES);
  device->local_mem_bytes = device_value<cl_ulong>(device->id, CL_DEVICE_LOCAL_MEM_SIZE);
  if (device_value<cl_bool>(device->id, CL_DEVICE_IMAGE_SUPPORT)) {
    device->image_max_width = static_cast<uint32_t>(
        std::min<size_t>(device_value<size_t>(device->id, CL_DEVICE_IMAGE2D_MAX_WIDTH), 1u << 30));
    device->image_max_height = static_cast<uint32_t>(
        std::min<size_t>(device_value<size_t>(device->id, CL_DEVICE_IMAGE2D_MAX_HEIGHT), 1u << 30));
    device->image_from_buffer = has_extension(extensions, "cl_khr_image2d_from_buffer");
  }
  const std::string dev_name = device_string(device->id, CL_DEVICE_NAME);
  const std::string driver = device_string(device->id, CL_DRIVER_VERSION);
  device->description = cat(dev_name, " (", platform_string(device->platform, CL_PLATFORM_NAME), ", ",
                            device_string(device->id, CL_DEVICE_OPENCL_C_VERSION), ")");
  // Program binaries are only valid for the same device and driver: both name the target.
  device->arch = cat(dev_name, " / driver ", driver);

  cl_int err = CL_SUCCESS;
  const cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(device->platform),
                                         0};
  device->context = api.clCreateContext(props, 1, &device->id, nullptr, nullptr, &err);
  check_cl(err, "clCreateContext");
  device->copy_queue = api.clCreateCommandQueue(device->context, device->id, 0, &err);
  check_cl(err, "clCreateCommandQueue");
  return device;
}

const tg_plugin_api& plugin_api() {
  static const tg_plugin_api api =
      sdk::plugin_table<DeviceSlots, RendererSlots, CompilerSlots, AllocatorSlots, ProgramSlots, QueueSlots>("qcom",
                                                                                                             "QCOM");
  return api;
}

}  // namespace tg::qcom

TG_SDK_PLUGIN_ENTRY(tg::qcom::plugin_api());
