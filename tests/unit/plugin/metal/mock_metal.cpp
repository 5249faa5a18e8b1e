// A stand-in for libobjc and Metal.framework for the METAL plugin's runtime test (the test points
// TG_METAL_OBJC_LIB and TG_METAL_FRAMEWORK at this one library). It runs no MSL: objects are C++ structs with a
// reference count, objc_msgSend dispatches on the selector's name and reads its arguments with va_arg (on x86-64
// SysV, integer and pointer arguments and a 24-byte MTLSize read back the same as the plugin's typed calls passed
// them), buffers are host memory, blit copies are done, and every call that matters is logged for the test
// (mock_metal_log). Command buffers complete at commit, each 1 ms after the last (GPUEndTime), unless the test made
// the next one fail (mock_metal_fail_next_commit). The MSL "compiler" refuses a source that is not MSL 3.1 with
// fast math off, lacks <metal_stdlib>, holds a character no MSL token has (@ ` $) or MOCK_COMPILE_ERROR, with a
// clang-like diagnostic.
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace {

struct MTLSize {
  uint64_t width, height, depth;
};

struct Obj {
  explicit Obj(std::string k) : kind(std::move(k)) {}
  std::string kind;  // "class:<name>", device, string, options, library, function, pipeline, queue, cb, compute,
                     // blit, buffer, error
  int refs = 1;
  std::string text;                  // a string's text, a library's source, a function's name, an error's text
  std::vector<unsigned char> bytes;  // a buffer's memory
  uint64_t number = 0;               // an options' language version, an error's code, a command buffer's status
  bool fast_math = true;
  double end_time = 0;
  Obj* error = nullptr;  // a failed command buffer's error
};

std::recursive_mutex g_mutex;
std::set<std::string> g_selectors;  // interned: a SEL is a pointer to its name
std::vector<std::string> g_log;
std::vector<Obj*> g_pool;  // autoreleased, not yet drained
std::set<Obj*> g_live;
int g_autorelease_without_pool = 0;
int g_pool_depth = 0;
uint64_t g_max_threads = 1024;
int64_t g_fail_code = 0;  // the next commit fails with this MTLCommandBufferError (0: none)
std::string g_fail_text;
double g_clock = 100.0;
Obj g_nsstring_class{"class:NSString"}, g_options_class{"class:MTLCompileOptions"};

Obj* make(const std::string& kind) {
  Obj* o = new Obj{kind};
  g_live.insert(o);
  return o;
}
Obj* autoreleased(Obj* o) {
  if (g_pool_depth == 0) ++g_autorelease_without_pool;
  g_pool.push_back(o);
  return o;
}
void release(Obj* o) {
  if (--o->refs > 0) return;
  g_live.erase(o);
  if (o->error) release(o->error);
  delete o;
}
Obj* string(const std::string& text) {
  Obj* s = make("string");
  s->text = text;
  return autoreleased(s);
}
std::string hex(const void* p, size_t n) {
  std::string out;
  char b[3];
  for (size_t i = 0; i < n; ++i) std::snprintf(b, sizeof b, "%02x", static_cast<const unsigned char*>(p)[i]), out += b;
  return out;
}
void log(const std::string& entry) { g_log.push_back(entry); }
std::string ptr(const void* p) { return std::to_string(reinterpret_cast<uintptr_t>(p)); }

// objc_msgSend's result in both return registers of x86-64 SysV ({INTEGER, SSE}: rax and xmm0), so a caller that
// cast it to return a pointer or an integer reads `p`, and one that cast it to return a double reads `d`.
struct Ret {
  void* p;
  double d;
};
Ret ret(const void* p) { return {const_cast<void*>(p), 0}; }
Ret ret_u(uint64_t v) { return {reinterpret_cast<void*>(v), 0}; }

Ret dispatch(Obj* self, const std::string& sel, va_list ap) {
  if (self == nullptr) return ret(nullptr);  // messages to nil return nil
  const std::string& k = self->kind;
  if (sel == "retain") return ++self->refs, ret(self);
  if (sel == "release") return release(self), ret(nullptr);
  if (k == "class:NSString" && sel == "stringWithUTF8String:") return ret(string(va_arg(ap, const char*)));
  if (k == "class:MTLCompileOptions" && sel == "new") return ret(make("options"));
  if (k == "string" && sel == "UTF8String") return ret(self->text.c_str());
  if (k == "options" && sel == "setFastMathEnabled:")  // a BOOL: only its low byte is set
    return self->fast_math = (va_arg(ap, int) & 0xff) != 0, ret(nullptr);
  if (k == "options" && sel == "setLanguageVersion:") return self->number = va_arg(ap, uint64_t), ret(nullptr);
  if (k == "error" && sel == "localizedDescription") return ret(string(self->text));
  if (k == "error" && sel == "code") return ret_u(self->number);
  if (k == "device") {
    if (sel == "name") return ret(string("Apple Mock GPU"));
    if (sel == "recommendedMaxWorkingSetSize") return ret_u(uint64_t{8} << 30);
    if (sel == "maxBufferLength") return ret_u(uint64_t{2} << 30);
    if (sel == "newBufferWithLength:options:") {
      const uint64_t length = va_arg(ap, uint64_t), options = va_arg(ap, uint64_t);
      log("newBufferWithLength:" + std::to_string(length) + " options:" + std::to_string(options));
      if (length > (uint64_t{1} << 30)) return ret(nullptr);  // the mock's memory is 1 GiB: nil, as Metal says no
      Obj* b = make("buffer");
      b->bytes.assign(length, 0);
      return ret(b);
    }
    if (sel == "newLibraryWithSource:options:error:") {
      const Obj* source = va_arg(ap, Obj*);
      const Obj* options = va_arg(ap, Obj*);
      Obj** error = va_arg(ap, Obj**);
      std::string why;
      if (options == nullptr || options->number != ((3u << 16) | 1u))
        why = "mock: MSL 3.1 was not asked for";
      else if (options->fast_math)
        why = "mock: fast math is on";
      else if (source->text.find("#include <metal_stdlib>") == std::string::npos)
        why = "mock: no <metal_stdlib>";
      else if (source->text.find_first_of("@`$") != std::string::npos)  // in no MSL token
        why = "program_source: error: stray character in program";
      else if (source->text.find("MOCK_COMPILE_ERROR") != std::string::npos)
        why = "program_source:3:5: error: use of undeclared identifier 'MOCK_COMPILE_ERROR'";
      log("newLibraryWithSource");
      if (!why.empty()) {
        Obj* e = make("error");
        e->text = why;
        *error = autoreleased(e);
        return ret(nullptr);
      }
      Obj* l = make("library");
      l->text = source->text;
      return ret(l);
    }
    if (sel == "newComputePipelineStateWithFunction:error:") {
      const Obj* f = va_arg(ap, Obj*);
      if (f == nullptr || f->kind != "function") return ret(nullptr);
      Obj* p = make("pipeline");
      p->text = f->text;
      return ret(p);
    }
    if (sel == "newCommandQueue") return log("newCommandQueue"), ret(make("queue"));
  }
  if (k == "library" && sel == "newFunctionWithName:") {
    const std::string name = va_arg(ap, Obj*)->text;
    if (self->text.find("kernel void " + name + "(") == std::string::npos) return ret(nullptr);
    Obj* f = make("function");
    f->text = name;
    return ret(f);
  }
  if (k == "pipeline" && sel == "maxTotalThreadsPerThreadgroup") return ret_u(g_max_threads);
  if (k == "buffer" && sel == "contents") return ret(self->bytes.data());
  if (k == "queue" && sel == "commandBuffer") return log("commandBuffer"), ret(autoreleased(make("cb")));
  if (k == "cb") {
    if (sel == "computeCommandEncoder") return log("computeCommandEncoder"), ret(autoreleased(make("compute")));
    if (sel == "blitCommandEncoder") return log("blitCommandEncoder"), ret(autoreleased(make("blit")));
    if (sel == "commit") {
      log("commit");
      g_clock += 0.001;
      self->end_time = g_clock;
      self->number = 4;  // MTLCommandBufferStatusCompleted
      if (g_fail_code != 0) {
        self->number = 5;  // MTLCommandBufferStatusError
        self->error = make("error");
        self->error->number = static_cast<uint64_t>(g_fail_code);
        self->error->text = g_fail_text;
        g_fail_code = 0;
      }
      return ret(nullptr);
    }
    if (sel == "status") return ret_u(self->number);
    if (sel == "error") return ret(self->error);
    if (sel == "waitUntilCompleted") return log("waitUntilCompleted"), ret(nullptr);
    if (sel == "GPUEndTime") return {nullptr, self->end_time};
  }
  if (k == "compute" || k == "blit") {
    if (sel == "endEncoding") return log("endEncoding"), ret(nullptr);
    if (sel == "setComputePipelineState:")
      return log("setComputePipelineState:" + va_arg(ap, Obj*)->text), ret(nullptr);
    if (sel == "setBuffer:offset:atIndex:") {
      const Obj* b = va_arg(ap, Obj*);
      const uint64_t offset = va_arg(ap, uint64_t), index = va_arg(ap, uint64_t);
      log("setBuffer:" + ptr(b) + " offset:" + std::to_string(offset) + " atIndex:" + std::to_string(index));
      return ret(nullptr);
    }
    if (sel == "setBytes:length:atIndex:") {
      const void* bytes = va_arg(ap, const void*);
      const uint64_t length = va_arg(ap, uint64_t), index = va_arg(ap, uint64_t);
      log("setBytes:" + hex(bytes, length) + " length:" + std::to_string(length) + " atIndex:" + std::to_string(index));
      return ret(nullptr);
    }
    if (sel == "dispatchThreadgroups:threadsPerThreadgroup:") {
      const MTLSize grid = va_arg(ap, MTLSize), block = va_arg(ap, MTLSize);
      log("dispatch:" + std::to_string(grid.width) + "," + std::to_string(grid.height) + "," +
          std::to_string(grid.depth) + " threads:" + std::to_string(block.width) + "," + std::to_string(block.height) +
          "," + std::to_string(block.depth));
      return ret(nullptr);
    }
    if (sel == "copyFromBuffer:sourceOffset:toBuffer:destinationOffset:size:") {
      Obj* src = va_arg(ap, Obj*);
      const uint64_t src_offset = va_arg(ap, uint64_t);
      Obj* dst = va_arg(ap, Obj*);
      const uint64_t dst_offset = va_arg(ap, uint64_t), size = va_arg(ap, uint64_t);
      log("copy:" + std::to_string(size));
      std::memmove(dst->bytes.data() + dst_offset, src->bytes.data() + src_offset, size);
      return ret(nullptr);
    }
  }
  log("UNKNOWN " + k + " " + sel);
  return ret(nullptr);
}

}  // namespace

#define MOCK extern "C" __attribute__((visibility("default")))

MOCK void* objc_getClass(const char* name) {
  const std::string n(name);
  return n == "NSString" ? &g_nsstring_class : n == "MTLCompileOptions" ? &g_options_class : nullptr;
}
MOCK void* sel_registerName(const char* name) {
  std::lock_guard lock(g_mutex);
  return const_cast<char*>(g_selectors.insert(name).first->c_str());
}
MOCK Ret objc_msgSend(void* self, void* sel, ...) {
  std::lock_guard lock(g_mutex);
  va_list ap;
  va_start(ap, sel);
  const Ret r = dispatch(static_cast<Obj*>(self), static_cast<const char*>(sel), ap);
  va_end(ap);
  return r;
}
MOCK void* objc_autoreleasePoolPush() {
  std::lock_guard lock(g_mutex);
  ++g_pool_depth;
  return reinterpret_cast<void*>(g_pool.size());
}
MOCK void objc_autoreleasePoolPop(void* token) {
  std::lock_guard lock(g_mutex);
  --g_pool_depth;
  const size_t mark = reinterpret_cast<size_t>(token);
  while (g_pool.size() > mark) {
    Obj* o = g_pool.back();
    g_pool.pop_back();
    release(o);
  }
}
MOCK void* MTLCreateSystemDefaultDevice() {
  std::lock_guard lock(g_mutex);
  log("MTLCreateSystemDefaultDevice");
  return make("device");
}

// For the test.
MOCK const char* mock_metal_log() {
  static std::string joined;
  std::lock_guard lock(g_mutex);
  joined.clear();
  for (const std::string& entry : g_log) joined += entry + "\n";
  return joined.c_str();
}
MOCK void mock_metal_clear_log() {
  std::lock_guard lock(g_mutex);
  g_log.clear();
}
MOCK void mock_metal_set_max_threads(uint64_t n) { g_max_threads = n; }
MOCK void mock_metal_fail_next_commit(int64_t code, const char* text) {
  std::lock_guard lock(g_mutex);
  g_fail_code = code, g_fail_text = text;
}
// Objects alive of a kind ("" for all), and autoreleases made outside any pool (leaks on a real Mac).
MOCK size_t mock_metal_live(const char* kind) {
  std::lock_guard lock(g_mutex);
  size_t n = 0;
  for (const Obj* o : g_live) n += *kind == '\0' || o->kind == kind;
  return n;
}
MOCK int mock_metal_autoreleased_without_pool() { return g_autorelease_without_pool; }
