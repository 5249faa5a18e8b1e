// The METAL plugin's bridge to the Objective-C runtime: libobjc and Metal.framework opened with dlopen at run time
// (as ops_metal.py does through ctypes), NSString and NSError read back through objc_msgSend, and the system
// default MTLDevice. No Objective-C or Apple header is used, so this builds on Linux, where it simply finds no
// library and the plugin has no devices.
#include "metal_plugin.hpp"

#include <tg/sdk/runtime_library.hpp>

#include <cstdlib>

namespace tg::metal {

using sdk::cat;
using sdk::Error;

namespace {

struct LoadedObjc {
  ObjcApi api{};
  std::string error;  // why Metal is unusable; empty when it loaded
};

// "<path>: <dlerror's reason>", the path once (glibc's and macOS's reasons already name it).
std::string refusal(const std::string& path, const std::string& why) {
  return why.find(path) != std::string::npos ? why : path + ": " + why;
}

std::string library_path(const char* variable, const char* fallback) {
  const char* env = std::getenv(variable);
  return env != nullptr && *env != '\0' ? env : fallback;
}

const LoadedObjc& loaded_objc() {
  static const LoadedObjc loaded = [] {
    LoadedObjc out;
    // Never closed: both keep process-wide state (classes, the device, its threads).
    const std::string objc_path = library_path("TG_METAL_OBJC_LIB", "/usr/lib/libobjc.A.dylib");
    const std::string metal_path =
        library_path("TG_METAL_FRAMEWORK", "/System/Library/Frameworks/Metal.framework/Metal");
    std::vector<std::pair<std::string, std::string>> refused;
    void* objc_lib = sdk::open_first({objc_path}, &refused);
    if (objc_lib == nullptr) {
      out.error = cat("no Objective-C runtime: ", refusal(objc_path, refused.at(0).second));
      return out;
    }
    void* metal_lib = sdk::open_first({metal_path}, &refused);
    if (metal_lib == nullptr) {
      out.error = cat("no Metal framework: ", refusal(metal_path, refused.at(0).second));
      return out;
    }
    struct {
      id (*objc_getClass)(const char*);
      SEL (*sel_registerName)(const char*);
      void (*objc_msgSend)();
      void* (*objc_autoreleasePoolPush)();
      void (*objc_autoreleasePoolPop)(void*);
    } runtime{};
    static const char* const runtime_names[] = {"objc_getClass", "sel_registerName", "objc_msgSend",
                                                "objc_autoreleasePoolPush", "objc_autoreleasePoolPop"};
    if (std::string missing = sdk::resolve_api(objc_lib, runtime, runtime_names); !missing.empty()) {
      out.error = cat("no Objective-C runtime: ", objc_path, " has no ", missing);
      return out;
    }
    struct {
      id (*MTLCreateSystemDefaultDevice)();
    } metal{};
    static const char* const metal_names[] = {"MTLCreateSystemDefaultDevice"};
    if (std::string missing = sdk::resolve_api(metal_lib, metal, metal_names); !missing.empty()) {
      out.error = cat("no Metal framework: ", metal_path, " has no ", missing);
      return out;
    }
    out.api = ObjcApi{runtime.objc_getClass,
                      runtime.sel_registerName,
                      runtime.objc_msgSend,
                      runtime.objc_autoreleasePoolPush,
                      runtime.objc_autoreleasePoolPop,
                      metal.MTLCreateSystemDefaultDevice};
    return out;
  }();
  return loaded;
}

}  // namespace

const ObjcApi& objc() {
  const LoadedObjc& loaded = loaded_objc();
  if (!loaded.error.empty()) throw Error(TG_ERR_UNAVAILABLE, cat(loaded.error, " (Metal exists only on macOS)"));
  return loaded.api;
}

const std::string& objc_error() { return loaded_objc().error; }

void Release::operator()(id object) const {
  if (object != nullptr) send<void>(object, "release");
}

Ref retained(id object) { return Ref(object != nullptr ? send(object, "retain") : nullptr); }

id ns_string(const std::string& text) {
  return send(objc().objc_getClass("NSString"), "stringWithUTF8String:", text.c_str());
}

std::string from_ns_string(id string) {
  const char* text = string != nullptr ? send<const char*>(string, "UTF8String") : nullptr;
  return text != nullptr ? text : "";
}

std::string error_text(id error) {
  if (error == nullptr) return "unknown error";
  std::string text = from_ns_string(send(error, "localizedDescription"));
  return text.empty() ? "unknown error" : text;
}

id system_device() {
  // Created once (an owned reference, kept): every MTLDevice call of the process goes to this one.
  static const id device = [] { return objc_error().empty() ? objc().MTLCreateSystemDefaultDevice() : nullptr; }();
  return device;
}

// newLibraryWithSource:options:error: with MSL 3.1 and fast math off (IEEE division and NaNs, as KIR says).
Ref new_library(id device, const std::string& source, const std::string& kernel_name) {
  AutoreleasePool pool;
  Ref options(send(objc().objc_getClass("MTLCompileOptions"), "new"));
  if (!options) throw Error(TG_ERR_INTERNAL, "cannot make MTLCompileOptions");
  send<void>(options.get(), "setFastMathEnabled:", static_cast<signed char>(0));
  send<void>(options.get(), "setLanguageVersion:", kMTLLanguageVersion3_1);
  id error = nullptr;
  Ref library(send(device, "newLibraryWithSource:options:error:", ns_string(source), options.get(), &error));
  if (!library) throw Error(TG_ERR_COMPILE, cat("Metal cannot compile kernel ", kernel_name, ":\n", error_text(error)));
  return library;
}

}  // namespace tg::metal
