// tg-conformance's harness: loading the plugin, opening the session, statuses that name their ABI call, device
// buffers, and Kernel (render -> compile -> load -> launch) with failure messages that carry KIR and source.
#include "harness.hpp"

#include <cstdio>

#include <dlfcn.h>

#include <sstream>

namespace tg::conformance {

const char* volatile current_call = nullptr;

const char* code_name(int code) {
  switch (code) {
    case TG_OK: return "TG_OK";
    case TG_ERR_INVALID_ARGUMENT: return "TG_ERR_INVALID_ARGUMENT";
    case TG_ERR_OUT_OF_MEMORY: return "TG_ERR_OUT_OF_MEMORY";
    case TG_ERR_COMPILE: return "TG_ERR_COMPILE";
    case TG_ERR_UNSUPPORTED: return "TG_ERR_UNSUPPORTED";
    case TG_ERR_UNAVAILABLE: return "TG_ERR_UNAVAILABLE";
    case TG_ERR_ABI: return "TG_ERR_ABI";
    case TG_ERR_INTERNAL: return "TG_ERR_INTERNAL";
    default: return "<unknown status code>";  // plugins may return anything; say so rather than crash
  }
}

Options& options() {
  static Options opts;
  return opts;
}

Plugin& plugin() {
  static Plugin p = [] {
    Plugin out;
    out.path = options().plugin_path;
    // RTLD_LOCAL, as the core loads plugins: a plugin must not rely on symbols leaking between plugins.
    out.handle = dlopen(out.path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (out.handle == nullptr) {
      const char* why = dlerror();
      out.error = cat("dlopen(\"", out.path, "\") failed: ", why ? why : "unknown error");
      return out;
    }
    out.entry = reinterpret_cast<tg_plugin_get_api_fn>(dlsym(out.handle, TG_ABI_ENTRY_POINT));
    if (out.entry == nullptr) {
      out.error = cat(out.path, " does not export the entry point ", TG_ABI_ENTRY_POINT);
      return out;
    }
    tg_status_t status = nullptr;
    current_call = "tg_plugin_get_api(TG_ABI_VERSION_MAJOR, TG_ABI_VERSION_MINOR, &status)";
    out.api = out.entry(TG_ABI_VERSION_MAJOR, TG_ABI_VERSION_MINOR, &status);
    current_call = nullptr;
    if (out.api == nullptr) {
      out.error = cat("tg_plugin_get_api(", TG_ABI_VERSION_MAJOR, ", ", TG_ABI_VERSION_MINOR, ") returned NULL",
                      status && status->message ? cat(": ", status->message) : std::string());
      // No table means no status_free; the SDK allocates statuses with malloc, so free() is the best guess.
      if (status != nullptr) {
        std::free(status->message);
        std::free(status);
      }
    }
    return out;
  }();
  return p;
}

const tg_plugin_api& api() {
  if (plugin().api == nullptr) throw Failure("no plugin table: " + plugin().error);
  return *plugin().api;
}

Status take(tg_status_t status) {
  if (status == nullptr) return {};
  Status out{status->code, status->message ? status->message : ""};
  api().status_free(status);
  return out;
}

Status call_status(const char* what, const std::function<tg_status_t()>& call) {
  current_call = what;
  tg_status_t status = call();
  current_call = nullptr;
  Status out = take(status);
  if (status != nullptr && out.code == TG_OK)
    throw Failure(cat(what, " returned a non-NULL status with code TG_OK (", out.message,
                      "); success must be NULL, so the core would treat this as an error"));
  return out;
}

void call_ok(const char* what, const std::function<tg_status_t()>& call) {
  const Status s = call_status(what, call);
  if (!s.ok()) throw Failure(cat(what, " failed with ", code_name(s.code), ": ", s.message));
}

// ---- session ----------------------------------------------------------------------------------------------------

namespace {

void open_session(Session& s) {
  const tg_plugin_api& a = api();
  s.index = options().device;
  TGC_OK(a.device_count(&s.device_count));
  if (s.device_count == 0) {
    // no hardware here (a GPU plugin on a machine without one): device_open says why; tests that need a device skip
    tg_device none = nullptr;
    const Status why = TGC_STATUS(a.device_open(0, &none));
    if (none != nullptr) a.device_close(none);
    s.no_device = why.message.empty() ? "device_count() is 0" : why.message;
    return;
  }
  if (s.index >= s.device_count)
    throw Failure(cat("--device ", s.index, " but device_count() reports ", s.device_count, " device(s)"));
  TGC_OK(a.device_open(s.index, &s.device));
  s.info.struct_size = sizeof(s.info);
  TGC_OK(a.device_get_info(s.device, &s.info));
  TGC_OK(a.renderer_create(s.device, nullptr, &s.renderer));
  s.caps.struct_size = sizeof(s.caps);
  TGC_OK(a.renderer_get_caps(s.renderer, &s.caps));
  TGC_OK(a.compiler_create(s.device, &s.compiler));
  TGC_OK(a.hwqueue_create(s.device, &s.queue));
}

}  // namespace

Session& session() {
  static Session s;
  static bool opened = false;
  if (!opened) {
    opened = true;
    try {
      open_session(s);
    } catch (const Failure& e) {
      s.error = cat("cannot open the session on device ", options().device, ": ", e.what());
    }
  }
  if (!s.error.empty()) throw Failure(s.error);
  if (!s.no_device.empty()) throw Skip("the plugin has no device here: " + s.no_device);
  return s;
}

// ---- buffers ----------------------------------------------------------------------------------------------------

Buffer::Buffer(uint64_t size) {
  Session& s = session();
  TGC_OK(api().allocator_alloc(s.device, size, &desc_));
}

Buffer::Buffer(const void* data, uint64_t size) : Buffer(size) {
  Session& s = session();
  try {
    TGC_OK(api().allocator_copy_in(s.device, &desc_, 0, data, size));
  } catch (...) {
    api().allocator_free(s.device, &desc_);
    throw;
  }
}

Buffer::~Buffer() { api().allocator_free(session().device, &desc_); }

std::vector<unsigned char> Buffer::read() const {
  std::vector<unsigned char> out(desc_.size);
  TGC_OK(api().allocator_copy_out(session().device, out.data(), &desc_, 0, desc_.size));
  return out;
}

// ---- kernels ----------------------------------------------------------------------------------------------------

std::string excerpt(const std::string& source, size_t max_lines) {
  std::istringstream in(source);
  std::string line, out;
  size_t n = 0, total = 0;
  while (std::getline(in, line)) {
    if (n++ < max_lines) out += "    | " + line + "\n";
    ++total;
  }
  if (total > max_lines) out += cat("    | ... ", total - max_lines, " more lines\n");
  return out;
}

Kernel::Kernel(Kir& kir, const std::string& name) : kir_(kir), kernel_(kir.kernel(name)), name_(name) {
  Session& s = session();
  const tg_plugin_api& a = api();
  const char* source = nullptr;
  Status st = TGC_STATUS(a.renderer_render(s.renderer, &kernel_, &source));
  if (!st.ok()) fail(cat("renderer_render failed with ", code_name(st.code), ": ", st.message));
  if (source == nullptr) fail("renderer_render returned success but no source");
  source_ = source;
  void* blob = nullptr;
  size_t size = 0;
  st = TGC_STATUS(a.compiler_compile(s.compiler, source_.c_str(), name_.c_str(), &blob, &size));
  if (!st.ok()) fail(cat("compiler_compile failed with ", code_name(st.code), ": ", st.message));
  st = TGC_STATUS(a.program_create(s.device, blob, size, name_.c_str(), kir_.params().data(),
                                   static_cast<uint32_t>(kir_.params().size()), &program_));
  a.blob_free(blob);
  if (!st.ok()) fail(cat("program_create failed with ", code_name(st.code), ": ", st.message));
  if (program_ == nullptr) fail("program_create returned success but a NULL program");
}

Kernel::~Kernel() {
  if (program_ != nullptr) api().program_destroy(program_);
}

void Kernel::launch(const std::vector<uint64_t>& args, tg_launch_dims dims) {
  Session& s = session();
  const tg_plugin_api& a = api();
  const std::vector<unsigned char> blob = pack_args(kir_.params(), args);
  const std::string where = cat("launching kernel ", name_, " (", blob.size(), " bytes of arguments, global [",
                                dims.global[0], ",", dims.global[1], ",", dims.global[2], "] local [", dims.local[0],
                                ",", dims.local[1], ",", dims.local[2], "])");
  const auto step = [&](const Status& st, const char* call) {
    if (!st.ok()) fail(cat(where, ": ", call, " failed with ", code_name(st.code), ": ", st.message));
  };
  step(TGC_STATUS(a.hwqueue_exec(s.queue, program_, blob.data(), blob.size(), &dims)), "hwqueue_exec");
  const uint64_t value = ++s.signal;
  step(TGC_STATUS(a.hwqueue_signal(s.queue, value)), "hwqueue_signal");
  step(TGC_STATUS(a.hwqueue_submit(s.queue)), "hwqueue_submit");
  // A bounded wait: a plugin that never raises the signal fails this test instead of hanging the suite.
  step(TGC_STATUS(a.hwqueue_wait(s.queue, value, uint64_t{60} * 1000 * 1000 * 1000)), "hwqueue_wait");
}

std::string Kernel::dump() const {
  std::string out = dump_kir(kernel_);
  if (!source_.empty()) out += "rendered source:\n" + excerpt(source_);
  return out;
}

void Kernel::fail(const std::string& what) const { throw Failure(what + "\n" + dump()); }

std::string wrote_nothing(const std::vector<unsigned char>& got, unsigned char fill) {
  for (unsigned char byte : got)
    if (byte != fill) return "";
  char hex[8];
  std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned>(fill));
  return cat("the kernel wrote nothing: all ", got.size(), " output bytes still hold their fill ", hex,
             " (did hwqueue_exec run it? control.work_item_ids checks a plain launch); ");
}

const char* tier_name(Tier tier) {
  switch (tier) {
    case Tier::Core: return "core";
    case Tier::Queues: return "queues";
    case Tier::MultiDevice: return "multi-device";
  }
  return "?";
}

}  // namespace tg::conformance
