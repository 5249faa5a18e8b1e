// tg::sdk::CompanionLibrary: a shared object that ships beside the plugin file (its compiler, say, which links
// LLVM), opened on first use from the plugin's own directory, so that loading the plugin maps nothing heavy. It is
// never closed (LLVM does not unload cleanly). A failure to open or resolve is kept as one message, reported when
// the library is needed.
#pragma once

#include <tg/sdk/status.hpp>

#include <dlfcn.h>

#include <string>

namespace tg::sdk {

class CompanionLibrary {
 public:
  // `file` beside the shared object that contains `address_in_plugin`; `what` names it in messages ("the CPU
  // compiler").
  CompanionLibrary(const void* address_in_plugin, const std::string& file, const std::string& what) {
    Dl_info info{};
    std::string dir = ".";
    if (dladdr(address_in_plugin, &info) && info.dli_fname) {
      dir = info.dli_fname;
      const size_t slash = dir.find_last_of('/');
      dir = slash == std::string::npos ? "." : dir.substr(0, slash);
    }
    path_ = dir + "/" + file;
    handle_ = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
      const char* why = dlerror();
      error_ = cat("cannot open ", what, " ", path_, ": ", why ? why : "unknown error");
    }
  }

  // The exported function `name`, or nullptr (and error() says which) when the library or the symbol is missing.
  template <class Fn>
  Fn function(const char* name) {
    if (handle_ == nullptr) return nullptr;
    void* symbol = dlsym(handle_, name);
    if (symbol == nullptr && error_.empty()) error_ = cat(path_, " does not export ", name);
    return reinterpret_cast<Fn>(symbol);
  }

  const std::string& error() const { return error_; }  // "" when everything resolved

 private:
  std::string path_, error_;
  void* handle_ = nullptr;
};

}  // namespace tg::sdk
