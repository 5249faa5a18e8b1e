// The ABI battery: the entry point and its table, major/minor version rules, status_free, devices and their
// info, and time travel: the core's calls as an older or newer minor would make them (smaller and larger
// struct_sizes in and out, unknown extension names, the optional slots of later minors).
#include "harness.hpp"

#include <tg/sdk/abi_layout.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <functional>

namespace tg::conformance {
namespace {

tg_plugin_get_api_fn entry() {
  if (plugin().entry == nullptr) throw Failure(plugin().error);
  return plugin().entry;
}

// Calls the entry point as a core speaking `major.minor` would, and takes the status it answers with.
const tg_plugin_api* negotiate(uint32_t major, uint32_t minor, Status* out) {
  tg_status_t status = nullptr;
  current_call = "tg_plugin_get_api";
  const tg_plugin_api* table = entry()(major, minor, &status);
  current_call = nullptr;
  *out = take(status);
  return table;
}

void entry_point_exists() {
  if (plugin().handle == nullptr) throw Failure(plugin().error);
  entry();
}

void table_is_sane() {
  entry();
  if (plugin().api == nullptr) throw Failure(plugin().error);
  const tg_plugin_api& a = *plugin().api;
  // v1.0's table ends after its last slot; a newer minor may append slots, but a table of megabytes is garbage.
  expect(a.struct_size >= TG_PLUGIN_API_SIZE_1_0,
         cat("table struct_size is ", a.struct_size, ", smaller than ABI 1.0's ", TG_PLUGIN_API_SIZE_1_0,
             " bytes: the core would read slots past its end"));
  expect(a.struct_size % alignof(void*) == 0 && a.struct_size < (1u << 16),
         cat("table struct_size ", a.struct_size, " is not a plausible size (a multiple of 8 below 64 KiB)"));
  expect(a.abi_major == TG_ABI_VERSION_MAJOR,
         cat("table abi_major is ", a.abi_major, " but the entry point was called with major ", TG_ABI_VERSION_MAJOR));
  expect(a.plugin_name != nullptr && *a.plugin_name != '\0', "table plugin_name is NULL or empty");
  expect(a.device_name != nullptr && *a.device_name != '\0', "table device_name is NULL or empty");
  std::string missing;
  for (const sdk::AbiSlot& slot : sdk::kRequiredSlots) {
    void* fn = nullptr;
    std::memcpy(&fn, reinterpret_cast<const char*>(&a) + slot.offset, sizeof fn);
    if (fn == nullptr) missing += cat(missing.empty() ? "" : ", ", slot.name);
  }
  expect(missing.empty(), "table slots that ABI 1.0 requires are NULL: " + missing);
  Status again;
  expect(negotiate(TG_ABI_VERSION_MAJOR, TG_ABI_VERSION_MINOR, &again) == &a && again.ok(),
         "calling tg_plugin_get_api twice returned a different table (or a status)");
}

void newer_minor_is_accepted() {
  Status s;
  const tg_plugin_api* table = negotiate(TG_ABI_VERSION_MAJOR, TG_ABI_VERSION_MINOR + 7, &s);
  expect(table != nullptr && s.ok(),
         cat("tg_plugin_get_api(", TG_ABI_VERSION_MAJOR, ", ", TG_ABI_VERSION_MINOR + 7, ") was refused (",
             code_name(s.code), ": ", s.message,
             "); minor versions only append, so a newer core of the same major must be served"));
}

// A core of an older minor is served, or refused (a plugin may need what that minor lacks) the way a wrong major
// is: TG_ERR_ABI naming both versions.
void older_core_minor_is_served() {
  Status s;
  const tg_plugin_api* table = negotiate(TG_ABI_VERSION_MAJOR, 0, &s);
  const std::string call = cat("tg_plugin_get_api(", TG_ABI_VERSION_MAJOR, ", 0)");
  if (table != nullptr) {
    expect(s.ok(), call + " returned a table and a status");
    return;
  }
  expect(s.code == TG_ERR_ABI, cat(call, " returned NULL with ", code_name(s.code), "; a refusal must be TG_ERR_ABI"));
  expect(s.message.find(cat(TG_ABI_VERSION_MAJOR, ".0")) != std::string::npos,
         cat(call, " refused with \"", s.message, "\", which does not name the core's version"));
}

// A core of another major must be refused with TG_ERR_ABI and a message naming both versions.
void check_refused(uint32_t major, uint32_t minor) {
  Status s;
  const tg_plugin_api* table = negotiate(major, minor, &s);
  const std::string call = cat("tg_plugin_get_api(", major, ", ", minor, ")");
  expect(table == nullptr, call + " returned a table; a different major must be refused");
  expect(s.code == TG_ERR_ABI,
         cat(call, " returned NULL with ", code_name(s.code), " (", s.message, "); expected TG_ERR_ABI"));
  const std::string core = cat(major, ".", minor), own = cat(api().abi_major, ".", api().abi_minor);
  expect(s.message.find(core) != std::string::npos && s.message.find(own) != std::string::npos,
         cat(call, " refused with message \"", s.message, "\", which must name both the core's version ", core,
             " and the plugin's ", own));
}

void wrong_major_is_refused() {
  check_refused(TG_ABI_VERSION_MAJOR + 1, 3);
  // Major 0 is what a zeroed struct would say: it must never look valid.
  check_refused(0, 0);
}

void status_free_works() {
  const tg_plugin_api& a = api();
  uint32_t count = 0;
  TGC_OK(a.device_count(&count));
  tg_device device = nullptr;
  // Asking for a device past the end must fail with a status (which take() frees through status_free).
  const Status s = TGC_STATUS(a.device_open(count, &device));
  expect(!s.ok(), cat("device_open(", count, ") succeeded, but device_count() is ", count));
  expect(!s.message.empty(), cat("device_open(", count, ") failed with ", code_name(s.code), " but an empty message"));
  expect(device == nullptr, "device_open failed but wrote a device handle");
}

// Every device opens (beside the session's: the core keeps one handle per device, so the session's own device is
// described through its handle rather than opened twice) and describes itself.
void devices_open_and_describe() {
  const tg_plugin_api& a = api();
  const Session& s = session();
  uint32_t count = 0;
  TGC_OK(a.device_count(&count));
  expect(count == s.device_count, cat("device_count() changed from ", s.device_count, " to ", count));
  for (uint32_t i = 0; i < count; ++i) {
    const bool is_session = i == s.index;
    tg_device device = is_session ? s.device : nullptr;
    if (!is_session) TGC_OK(a.device_open(i, &device));
    expect(device != nullptr, cat("device_open(", i, ") succeeded with a NULL handle"));
    tg_device_info info{};
    info.struct_size = sizeof(info);
    const Status st = TGC_STATUS(a.device_get_info(device, &info));
    // the strings are borrowed from the device: read them before closing it
    const std::string name = st.ok() && info.name ? info.name : "(null)";
    const bool described = st.ok() && info.description != nullptr && info.arch != nullptr;
    if (!is_session) a.device_close(device);
    if (!st.ok())
      throw Failure(cat("device_get_info(device ", i, ") failed with ", code_name(st.code), ": ", st.message));
    expect(info.struct_size == sizeof(info),
           cat("device_get_info overwrote the caller's struct_size with ", info.struct_size));
    expect(name == a.device_name,
           cat("device ", i, " is named \"", name, "\" but the table's device_name is \"", a.device_name, "\""));
    expect(described, cat("device_get_info(device ", i, ") left description or arch NULL"));
  }
}

// An older core passes a smaller out-struct; a newer one a larger. The plugin must write only what fits (the
// bytes past the caller's struct_size keep their canary) and must keep the caller's struct_size.
template <class T>
void check_struct_size(const char* call, size_t size, const std::function<tg_status_t(T*)>& fill) {
  constexpr unsigned char kCanary = 0xA5;
  unsigned char raw[sizeof(T) + 64];
  std::memset(raw, kCanary, sizeof raw);
  std::memcpy(raw, &size, sizeof size);
  call_ok(call, [&] { return fill(reinterpret_cast<T*>(raw)); });
  size_t stored = 0;
  std::memcpy(&stored, raw, sizeof stored);
  expect(stored == size, cat(call, " changed struct_size from ", size, " to ", stored));
  for (size_t b = std::min(size, sizeof(T)); b < sizeof raw; ++b)
    expect(raw[b] == kCanary,
           cat(call, " with struct_size ", size, " wrote byte ", b, ", which ",
               size > sizeof(T) ? "this ABI does not define" : "is past the end of the caller's struct"));
}

void older_and_newer_struct_sizes() {
  const tg_plugin_api& a = api();
  const Session& s = session();
  const std::function<tg_status_t(tg_device_info*)> info = [&](tg_device_info* out) {
    return a.device_get_info(s.device, out);
  };
  const std::function<tg_status_t(tg_renderer_caps*)> caps = [&](tg_renderer_caps* out) {
    return a.renderer_get_caps(s.renderer, out);
  };
  check_struct_size("device_get_info", offsetof(tg_device_info, arch), info);           // older: name, description
  check_struct_size("device_get_info", sizeof(tg_device_info) + 64, info);              // newer: 64 unknown bytes
  check_struct_size("renderer_get_caps", offsetof(tg_renderer_caps, has_local), caps);  // older: no work-groups
  check_struct_size("renderer_get_caps", offsetof(tg_renderer_caps, language), caps);   // ABI 1.0's caps
  check_struct_size("renderer_get_caps", sizeof(tg_renderer_caps) + 64, caps);          // newer
}

// Slots appended after ABI 1.0 are optional: where the table provides one it must behave as plugin_abi.h says.
bool provides(size_t offset) {
  const tg_plugin_api& a = api();
  if (a.struct_size < offset + sizeof(void*)) return false;
  void* fn = nullptr;
  std::memcpy(&fn, reinterpret_cast<const char*>(&a) + offset, sizeof fn);
  return fn != nullptr;
}

void optional_slots_behave() {
  const tg_plugin_api& a = api();
  const bool ext = provides(offsetof(tg_plugin_api, get_extension)),
             sync = provides(offsetof(tg_plugin_api, device_synchronize));
  if (!ext && !sync)
    throw Skip("the table provides none of ABI 1.1's optional slots (NULL: the core uses its fallbacks)");
  if (ext) {
    current_call = "get_extension(\"tg.conformance.no_such_extension.v0\")";
    const void* unknown = a.get_extension("tg.conformance.no_such_extension.v0");
    current_call = "get_extension(\"\")";
    const void* empty = a.get_extension("");
    current_call = nullptr;
    expect(unknown == nullptr && empty == nullptr,
           "get_extension returned a table for an unknown (or empty) extension name; unknown names must give NULL");
  }
  if (sync) {
    Session& s = session();
    TGC_OK(a.hwqueue_signal(s.queue, ++s.signal));
    TGC_OK(a.hwqueue_submit(s.queue));
    TGC_OK(a.device_synchronize(s.device));
    // everything submitted has finished: waiting for it must not block
    const Status w = TGC_STATUS(a.hwqueue_wait(s.queue, s.signal, 1000000));
    expect(w.ok(), cat("after device_synchronize, hwqueue_wait for the last signal failed with ", code_name(w.code),
                       ": ", w.message));
  }
}

// The core's kernel struct as an ABI 1.0 core passes it (it ends before `strings`) and as a newer core would (64
// unknown bytes appended): the renderer must read what it knows and produce the same source.
void kernel_struct_sizes() {
  const Session& s = session();
  if (!s.claims_op(TG_DTYPE_INT32, TG_KIR_ADD)) throw Skip("the renderer does not claim int32 ADD");
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT32, true), in = k.buffer(TG_DTYPE_INT32);
  const int g = k.global_id(16);
  k.store(out, g, k.alu(TG_KIR_ADD, TG_DTYPE_INT32, {k.load(TG_DTYPE_INT32, in, g), k.i32(1)}));
  const tg_kir_kernel current = k.kernel("conf_struct_sizes");
  auto render = [&](const tg_kir_kernel* kernel, const std::string& what) {
    const char* source = nullptr;
    const Status st = TGC_STATUS(api().renderer_render(s.renderer, kernel, &source));
    expect(st.ok() && source != nullptr, cat("renderer_render of a kernel struct ", what, " failed with ",
                                             code_name(st.code), ": ", st.message, "\n", dump_kir(current)));
    return std::string(source);
  };
  const std::string want = render(&current, "of this ABI's size");
  tg_kir_kernel older = current;
  older.struct_size = offsetof(tg_kir_kernel, strings);
  older.strings = reinterpret_cast<const char* const*>(uintptr_t{0xdeadbeef});  // past its end: never read
  expect(render(&older, "as ABI 1.0 sizes it (ending before strings)") == want,
         "rendering the kernel with ABI 1.0's struct_size gave different source than with the current size");
  struct {
    tg_kir_kernel kernel;
    unsigned char unknown[64];
  } newer;
  newer.kernel = current;
  std::memset(newer.unknown, 0xA5, sizeof newer.unknown);
  newer.kernel.struct_size = sizeof newer;
  expect(render(&newer.kernel, "64 bytes larger, as a newer core's") == want,
         "rendering the kernel with a newer core's larger struct_size gave different source");
}

void caps_are_consistent() {
  const Session& s = session();
  const tg_renderer_caps& c = s.caps;
  expect(c.struct_size == sizeof(c), cat("renderer_get_caps changed struct_size to ", c.struct_size));
  expect(c.dtypes != 0, "renderer_get_caps declares no dtype");
  expect((c.dtypes >> TG_DTYPE_COUNT) == 0, cat("caps.dtypes has bits past TG_DTYPE_COUNT: 0x", std::hex, c.dtypes));
  for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d) {
    const bool claimed = (c.dtypes >> d) & 1u;
    expect(claimed || c.ops[d] == 0,
           cat("caps.ops[", sdk::dtype_name(d), "] is nonzero but caps.dtypes does not include ", sdk::dtype_name(d)));
    expect((c.ops[d] >> TG_KIR_OP_COUNT) == 0, cat("caps.ops[", sdk::dtype_name(d), "] has bits past TG_KIR_OP_COUNT"));
    expect((c.vector_widths[d] & 1u) == 0,
           cat("caps.vector_widths[", sdk::dtype_name(d), "] sets bit 0 (a vector of 0 lanes)"));
  }
  expect(c.max_global_dims >= 1 && c.max_global_dims <= 3,
         cat("caps.max_global_dims is ", c.max_global_dims, "; the core needs 1..3"));
  expect(c.max_global[0] >= 1, "caps.max_global[0] is 0");
  expect(c.max_params >= 2, cat("caps.max_params is ", c.max_params, "; a kernel needs at least 2"));
  if (c.has_local) {
    expect(c.local_mem_bytes > 0, "caps.has_local is set but caps.local_mem_bytes is 0");
    expect(c.max_local[0] >= 1 && c.max_local_threads >= 1, "caps.has_local is set but no local size is allowed");
  }
}

}  // namespace

void add_abi_tests(Tests& tests) {
  tests.push_back({"abi.entry_point_exists", Tier::Core, entry_point_exists});
  tests.push_back({"abi.table_is_sane", Tier::Core, table_is_sane});
  tests.push_back({"abi.newer_minor_is_accepted", Tier::Core, newer_minor_is_accepted});
  tests.push_back({"abi.older_core_minor_is_served", Tier::Core, older_core_minor_is_served});
  tests.push_back({"abi.wrong_major_is_refused", Tier::Core, wrong_major_is_refused});
  tests.push_back({"abi.optional_slots_behave", Tier::Core, optional_slots_behave});
  tests.push_back({"abi.kernel_struct_sizes", Tier::Core, kernel_struct_sizes});
  tests.push_back({"abi.status_free_works", Tier::Core, status_free_works});
  tests.push_back({"abi.devices_open_and_describe", Tier::Core, devices_open_and_describe});
  tests.push_back({"abi.older_and_newer_struct_sizes", Tier::Core, older_and_newer_struct_sizes});
  tests.push_back({"abi.caps_are_consistent", Tier::Core, caps_are_consistent});
}

}  // namespace tg::conformance
