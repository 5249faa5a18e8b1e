// The CPU plugin's Program: the blob is a shared object (libtg_cpu_clang.so makes it); it is written to a file of
// its own name and opened with dlopen, so equal kernel names never clash and destroying the program unmaps its
// code. The dynamic loader resolves libc/libm (memset, exp2f, ...) from this process.
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "cpu_plugin.hpp"

namespace tg::cpu {

using sdk::cat;
using sdk::Error;

namespace {

// A unique path for a kernel's file: dlopen knows an object by its path, so a reused name would hand back an
// older kernel still loaded under it.
std::string kernel_path(const std::string& kernel_name) {
  static std::atomic<uint64_t> next{0};
  const char* tmp = std::getenv("TMPDIR");
  return cat(tmp && *tmp ? tmp : "/tmp", "/tg_cpu_", ::getpid(), "_", next++, "_", kernel_name.substr(0, 64), ".so");
}

// dlopen of a private copy: written, opened, then unlinked (the mapping stays)
void* open_blob(const void* blob, size_t size, const std::string& kernel_name) {
  if (size < 4 || std::memcmp(blob, "\x7f" "ELF", 4) != 0)
    throw Error(TG_ERR_INVALID_ARGUMENT, cat("the blob for kernel ", kernel_name, " is not a shared object"));
  const std::string path = kernel_path(kernel_name);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
  if (fd < 0) throw Error(TG_ERR_INTERNAL, cat("cannot create ", path, ": ", std::strerror(errno)));
  const char* p = static_cast<const char*>(blob);
  for (size_t left = size; left > 0;) {
    ssize_t n = ::write(fd, p, left);
    if (n <= 0) {
      int err = errno;
      ::close(fd), ::unlink(path.c_str());
      throw Error(TG_ERR_OUT_OF_MEMORY, cat("cannot write ", path, ": ", std::strerror(err)));
    }
    p += n, left -= static_cast<size_t>(n);
  }
  ::close(fd);
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  const char* why = h ? nullptr : dlerror();
  ::unlink(path.c_str());
  if (!h) throw Error(TG_ERR_INVALID_ARGUMENT, cat("cannot load kernel ", kernel_name, ": ", why ? why : "dlopen failed"));
  return h;
}

}  // namespace

Program::~Program() {
  if (library) dlclose(library);
}

std::shared_ptr<Program> program_of(tg_program program) { return sdk::require(program, "program")->program; }

tg_status_t program_create(tg_device device, const void* blob, size_t size, const char* kernel_name,
                           const tg_kir_param* params, uint32_t nparams, tg_program* out_program) {
  return sdk::guard("cpu program_create", [&] {
    sdk::require(out_program, "out_program");
    sdk::require(blob, "blob");
    sdk::require(kernel_name, "kernel_name");
    if (nparams != 0) sdk::require(params, "params");
    auto program = std::make_shared<Program>();
    program->device = device_of(device);
    program->kernel_name = kernel_name;

    // Keep a copy of the signature: the exec blob's size is checked against its layout.
    for (uint32_t p = 0; p < nparams; ++p) {
      if (params[p].kind > TG_PARAM_VAR || params[p].dtype >= TG_DTYPE_COUNT)
        throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", kernel_name, ": parameter ", p, " has kind ",
                                                 params[p].kind, " and dtype ", params[p].dtype));
      program->param_names.push_back(params[p].name ? params[p].name : "");
      program->params.push_back(params[p]);
    }
    for (uint32_t p = 0; p < nparams; ++p) program->params[p].name = program->param_names[p].c_str();
    std::vector<size_t> offsets(nparams);
    program->args_size = tg_param_layout(program->params.data(), nparams, offsets.data());

    program->library = open_blob(blob, size, program->kernel_name);
    program->fn = reinterpret_cast<KernelFn>(dlsym(program->library, kernel_name));
    if (!program->fn) throw Error(TG_ERR_INVALID_ARGUMENT, cat("the blob does not define kernel ", kernel_name));
    *out_program = new tg_program_s{std::move(program)};
  });
}

void program_destroy(tg_program program) {
  sdk::guard_void("cpu program_destroy", [&] { delete program; });
}

}  // namespace tg::cpu
