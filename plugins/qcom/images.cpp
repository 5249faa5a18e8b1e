// The QCOM plugin's image views: a TG_PARAM_IMAGE parameter is a float32 buffer the kernel reads through
// read_imagef, the texture path Adreno caches serve well. Where the device has cl_khr_image2d_from_buffer the
// image aliases the buffer (no copy, made once); elsewhere (PoCL) a separate image is made once and refreshed from
// the buffer before each kernel that reads it, on the same in-order queue.
#include "qcom_plugin.hpp"

namespace tg::qcom {

using sdk::cat;
using sdk::Error;

cl_mem image_of_buffer(Device& device, cl_command_queue queue, cl_mem buffer, uint32_t width) {
  const ClApi& api = cl();
  size_t bytes = 0;
  check_cl(api.clGetMemObjectInfo(buffer, CL_MEM_SIZE, sizeof bytes, &bytes, nullptr),
           "clGetMemObjectInfo(CL_MEM_SIZE)");
  const size_t row = size_t{width} * 16, height = row ? bytes / row : 0;
  if (width == 0 || height == 0 || bytes % row || width > device.image_max_width || height > device.image_max_height)
    throw Error(TG_ERR_INVALID_ARGUMENT,
                cat("an image view ", width, " texels wide of a ", bytes, "-byte buffer does not fit ",
                    device.image_max_width, " x ", device.image_max_height, " (CL_DEVICE_IMAGE2D_MAX_*)"));
  std::lock_guard lock(device.image_mutex);
  const auto shared = device.image_views.find({buffer, width, nullptr});
  if (shared != device.image_views.end()) return shared->second.image;  // an alias: always current
  Device::ImageView& view = device.image_views[{buffer, width, queue}];
  if (view.image == nullptr) {
    const cl_image_format format{CL_RGBA, CL_FLOAT};
    cl_image_desc desc{};
    desc.image_type = CL_MEM_OBJECT_IMAGE2D;
    desc.image_width = width;
    desc.image_height = height;
    cl_int err = CL_INVALID_OPERATION;
    if (device.image_from_buffer) {
      desc.image_row_pitch = row;
      desc.buffer = buffer;
      const cl_mem alias = api.clCreateImage(device.context, CL_MEM_READ_ONLY, &format, &desc, nullptr, &err);
      if (err == CL_SUCCESS) {
        device.image_views.erase({buffer, width, queue});
        device.image_views[{buffer, width, nullptr}] = {alias, true};
        return alias;
      }
    }
    desc.image_row_pitch = 0;  // no aliasing here (or not for this pitch): a copy
    desc.buffer = nullptr;
    view.image = api.clCreateImage(device.context, CL_MEM_READ_ONLY, &format, &desc, nullptr, &err);
    if (err != CL_SUCCESS) {
      device.image_views.erase({buffer, width, queue});
      check_cl(err, "clCreateImage");
    }
  }
  const size_t origin[3] = {0, 0, 0}, region[3] = {width, height, 1};
  check_cl(api.clEnqueueCopyBufferToImage(queue, buffer, view.image, 0, origin, region, 0, nullptr, nullptr),
           "clEnqueueCopyBufferToImage");
  return view.image;
}

void release_queue_images(Device& device, cl_command_queue queue) {
  std::lock_guard lock(device.image_mutex);
  for (auto it = device.image_views.begin(); it != device.image_views.end();) {
    if (std::get<2>(it->first) != queue) {
      ++it;
      continue;
    }
    cl().clReleaseMemObject(it->second.image);
    it = device.image_views.erase(it);
  }
}

void release_image_views(Device& device, cl_mem buffer) {
  std::lock_guard lock(device.image_mutex);
  for (auto it = device.image_views.lower_bound({buffer, 0, nullptr});
       it != device.image_views.end() && std::get<0>(it->first) == buffer;) {
    cl().clReleaseMemObject(it->second.image);
    it = device.image_views.erase(it);
  }
}

}  // namespace tg::qcom
