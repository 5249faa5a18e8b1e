// tg::sdk::SharedObject: a compiled kernel library (an ELF shared object blob) loaded into this process with
// dlopen from a private copy: written to a uniquely named file, opened, then unlinked (the mapping stays). dlopen
// knows an object by its path, so two programs never share a file even when their kernels share a name, and
// destroying the object unmaps the code. The dynamic loader resolves libc/libm from this process.
#pragma once

#include <tg/sdk/status.hpp>

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace tg::sdk {

// Writes `size` bytes to a new file $TMPDIR/<prefix>_<pid>_<n>_<name> (or /tmp) with `mode`; returns its path.
// A name over 64 characters is shortened before its extension (kernel.c stays a .c file).
// Throws TG_ERR_INTERNAL when the file cannot be created, TG_ERR_OUT_OF_MEMORY when it cannot be written (a full
// disk), naming the path; nothing is left behind on failure.
inline std::string write_private_file(const void* data, size_t size, const std::string& prefix, const std::string& name,
                                      mode_t mode = 0700) {
  static std::atomic<uint64_t> next{0};
  const char* tmp = std::getenv("TMPDIR");
  const size_t dot = name.rfind('.');
  const std::string ext = dot != std::string::npos && name.size() - dot <= 8 ? name.substr(dot) : "";
  const std::string stem = name.substr(0, name.size() - ext.size());
  const std::string path = cat(tmp && *tmp ? tmp : "/tmp", "/", prefix, "_", ::getpid(), "_", next++, "_",
                               stem.substr(0, 64 - ext.size()), ext);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) throw Error(TG_ERR_INTERNAL, cat("cannot create ", path, ": ", std::strerror(errno)));
  const char* p = static_cast<const char*>(data);
  for (size_t left = size; left > 0;) {
    const ssize_t n = ::write(fd, p, left);
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      ::close(fd), ::unlink(path.c_str());
      throw Error(TG_ERR_OUT_OF_MEMORY, cat("cannot write ", path, ": ", std::strerror(err)));
    }
    p += n, left -= static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(path.c_str());
    throw Error(TG_ERR_OUT_OF_MEMORY, cat("cannot write ", path, ": ", std::strerror(err)));
  }
  return path;
}

class SharedObject {
 public:
  // Throws TG_ERR_INVALID_ARGUMENT when the blob is not an ELF file or the loader refuses it (its message).
  SharedObject(const void* blob, size_t size, const std::string& file_prefix, const std::string& kernel_name) {
    if (blob == nullptr || size < 4 ||
        std::memcmp(blob,
                    "\x7f"
                    "ELF",
                    4) != 0)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("the blob for kernel ", kernel_name, " is not a shared object"));
    const std::string path = write_private_file(blob, size, file_prefix, kernel_name + ".so");
    handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    const char* why = handle_ ? nullptr : dlerror();
    ::unlink(path.c_str());
    if (!handle_)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("cannot load kernel ", kernel_name, ": ", why ? why : "dlopen failed"));
  }
  SharedObject(const SharedObject&) = delete;
  SharedObject& operator=(const SharedObject&) = delete;
  ~SharedObject() {
    if (handle_) dlclose(handle_);
  }

  // The exported function `name`; throws TG_ERR_INVALID_ARGUMENT when the object does not define it.
  template <class Fn>
  Fn function(const char* name) const {
    void* symbol = dlsym(handle_, name);
    if (symbol == nullptr) throw Error(TG_ERR_INVALID_ARGUMENT, cat("the blob does not define kernel ", name));
    return reinterpret_cast<Fn>(symbol);
  }

 private:
  void* handle_ = nullptr;
};

}  // namespace tg::sdk
