// The METAL plugin's Program: the blob (MSL source) compiled on the device into a library, its kernel function,
// and a compute pipeline, whose maxTotalThreadsPerThreadgroup bounds the work-groups the queue launches. The slots
// around it are the SDK's ProgramSlots.
#include "metal_plugin.hpp"

namespace tg::metal {

using sdk::cat;
using sdk::Error;

std::shared_ptr<Program> ProgramHooks::load(tg_device device, const void* blob, size_t size, const char* kernel_name,
                                            sdk::Signature signature) {
  auto program = std::make_shared<Program>();
  program->device = device_of(device);
  program->kernel_name = kernel_name;
  signature.refuse_images(kernel_name, "METAL");
  if (signature.size() > 31)  // Metal's argument table: [[buffer(0..30)]]
    throw Error(TG_ERR_INVALID_ARGUMENT,
                cat("kernel ", kernel_name, " has ", signature.size(), " parameters; Metal binds at most 31"));
  program->args_size = signature.args_size();
  program->signature = std::move(signature);
  if (size == 0) throw Error(TG_ERR_INVALID_ARGUMENT, cat("empty blob for kernel ", kernel_name));
  std::string source(static_cast<const char*>(blob), size);
  while (!source.empty() && source.back() == '\0') source.pop_back();

  AutoreleasePool pool;
  id mtl = program->device->device.get();
  program->library = new_library(mtl, source, kernel_name);
  program->function = Ref(send(program->library.get(), "newFunctionWithName:", ns_string(kernel_name)));
  if (!program->function) throw Error(TG_ERR_INVALID_ARGUMENT, cat("the Metal library has no kernel ", kernel_name));
  id error = nullptr;
  program->pipeline = Ref(send(mtl, "newComputePipelineStateWithFunction:error:", program->function.get(), &error));
  if (!program->pipeline)
    throw Error(TG_ERR_COMPILE,
                cat("Metal cannot make a compute pipeline for kernel ", kernel_name, ": ", error_text(error)));
  program->max_threads = send<uint64_t>(program->pipeline.get(), "maxTotalThreadsPerThreadgroup");
  return program;
}

}  // namespace tg::metal
