// The DSP plugin's Program: the blob is a static Hexagon ELF executable (compiler.cpp). It is written once into a
// memfd, an anonymous file of this process, which qemu-hexagon runs at every launch through /proc/<pid>/fd/<n>: it
// goes away with the program or the process, so nothing is left in TMPDIR even when a program is never destroyed
// (the core keeps its programs until exit).
#include "dsp_plugin.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tg::dsp {

using sdk::cat;
using sdk::Error;

namespace {

void write_all(int fd, const void* data, size_t size, const std::string& kernel_name) {
  const char* p = static_cast<const char*>(data);
  for (size_t left = size; left > 0;) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      throw Error(TG_ERR_OUT_OF_MEMORY,
                  cat("cannot write the program of kernel ", kernel_name, ": ", std::strerror(errno)));
    p += n, left -= static_cast<size_t>(n);
  }
}

// An ELF32 executable for Hexagon (e_machine 164): anything else would only fail later inside qemu.
void check_blob(const void* blob, size_t size, const std::string& kernel_name) {
  const auto* b = static_cast<const unsigned char*>(blob);
  const bool is_hexagon_exec = size >= 52 &&
                               std::memcmp(b,
                                           "\x7f"
                                           "ELF",
                                           4) == 0 &&
                               b[4] == 1 /* ELFCLASS32 */ && b[16] == 2 /* ET_EXEC */ &&
                               (b[18] | b[19] << 8) == 164 /* EM_HEXAGON */;
  if (!is_hexagon_exec)
    throw Error(TG_ERR_INVALID_ARGUMENT, cat("the blob for kernel ", kernel_name, " is not a Hexagon ELF executable"));
}

}  // namespace

Program::~Program() {
  if (fd >= 0) ::close(fd);
}

std::shared_ptr<Program> ProgramHooks::load(tg_device device, const void* blob, size_t size, const char* kernel_name,
                                            sdk::Signature signature) {
  auto program = std::make_shared<Program>();
  program->device = device_of(device);
  program->kernel_name = kernel_name;
  signature.refuse_images(kernel_name, "the DSP");  // its caps claim no images
  program->args_size = signature.args_size();
  program->signature = std::move(signature);
  check_blob(blob, size, program->kernel_name);

  program->fd = ::memfd_create(program->kernel_name.substr(0, 64).c_str(), MFD_CLOEXEC);
  if (program->fd < 0)
    throw Error(TG_ERR_INTERNAL,
                cat("cannot create the program file of kernel ", kernel_name, ": ", std::strerror(errno)));
  write_all(program->fd, blob, size, program->kernel_name);
  return program;
}

}  // namespace tg::dsp
