// The QCOM plugin's Allocator: one cl_mem per buffer, its handle value doubling as the buffer's device address
// (the queue passes it back to clSetKernelArg), and blocking, bounds-checked copies in and out.
#include "qcom_plugin.hpp"

namespace tg::qcom {

using sdk::cat;
using sdk::Error;

void check_range(const tg_buffer_desc& buffer, uint64_t offset, uint64_t size, const char* what) {
  sdk::check_extent(buffer, offset, size, what);
  if (buffer.handle == nullptr) throw Error(TG_ERR_INVALID_ARGUMENT, cat(what, ": buffer has no cl_mem"));
}

tg_status_t AllocatorSlots::alloc(tg_device device, uint64_t size, tg_buffer_desc* out_buffer) noexcept {
  return sdk::guard("qcom allocator_alloc", [&] {
    sdk::require(out_buffer, "out_buffer");
    const std::shared_ptr<Device> dev = device_of(device);
    if (dev->max_alloc_bytes != 0 && size > dev->max_alloc_bytes)
      throw Error(TG_ERR_OUT_OF_MEMORY, cat("cannot allocate ", size, " bytes: the device's largest allocation is ",
                                            dev->max_alloc_bytes, " bytes (CL_DEVICE_MAX_MEM_ALLOC_SIZE)"));
    // Size 0 still gets a real cl_mem (OpenCL refuses empty buffers), so every buffer has a distinct address.
    cl_int err = CL_SUCCESS;
    cl_mem mem = cl().clCreateBuffer(dev->context, CL_MEM_READ_WRITE, size == 0 ? 1 : size, nullptr, &err);
    if (err == CL_INVALID_BUFFER_SIZE)
      throw Error(TG_ERR_OUT_OF_MEMORY,
                  cat("cannot allocate ", size, " bytes: clCreateBuffer failed: ", cl_error_name(err)));
    check_cl(err, "clCreateBuffer");
    *out_buffer = tg_buffer_desc{reinterpret_cast<uint64_t>(mem), size, mem};
  });
}

void AllocatorSlots::free(tg_device device, const tg_buffer_desc* buffer) noexcept {
  sdk::guard_void("qcom allocator_free", [&] {
    if (buffer == nullptr || buffer->handle == nullptr || process_exiting()) return;
    if (device != nullptr)
      release_image_views(*device_of(device), static_cast<cl_mem>(buffer->handle));  // before the memory they alias
    cl().clReleaseMemObject(static_cast<cl_mem>(buffer->handle));
  });
}

tg_status_t AllocatorSlots::copy_in(tg_device device, const tg_buffer_desc* dst, uint64_t offset, const void* src,
                                    uint64_t size) noexcept {
  return sdk::guard("qcom allocator_copy_in", [&] {
    const std::shared_ptr<Device> dev = device_of(device);
    check_range(*sdk::require(dst, "dst"), offset, size, "copy_in");
    if (size == 0) return;
    check_cl(cl().clEnqueueWriteBuffer(dev->copy_queue, static_cast<cl_mem>(dst->handle), CL_TRUE, offset, size,
                                       sdk::require(src, "src"), 0, nullptr, nullptr),
             "clEnqueueWriteBuffer");
  });
}

tg_status_t AllocatorSlots::copy_out(tg_device device, void* dst, const tg_buffer_desc* src, uint64_t offset,
                                     uint64_t size) noexcept {
  return sdk::guard("qcom allocator_copy_out", [&] {
    const std::shared_ptr<Device> dev = device_of(device);
    check_range(*sdk::require(src, "src"), offset, size, "copy_out");
    if (size == 0) return;
    check_cl(cl().clEnqueueReadBuffer(dev->copy_queue, static_cast<cl_mem>(src->handle), CL_TRUE, offset, size,
                                      sdk::require(dst, "dst"), 0, nullptr, nullptr),
             "clEnqueueReadBuffer");
  });
}

}  // namespace tg::qcom
