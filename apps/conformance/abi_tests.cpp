// The ABI battery: the entry point and its table, major/minor version rules, status_free, devices and their
// info, and struct_size handling as an older or newer core would call (smaller and larger out-structs).
#include "harness.hpp"

#include <tg/sdk/abi_layout.hpp>

#include <cstddef>
#include <cstdlib>
#include <cstring>

namespace tg::conformance {
namespace {

// A table slot the v1.0 core calls unconditionally: none of them may be NULL.
struct Slot {
  const char* name;
  size_t offset;
};
#define TGC_SLOT(member) Slot{#member, offsetof(tg_plugin_api, member)}
const Slot kSlots[] = {
    TGC_SLOT(status_free),       TGC_SLOT(device_count),       TGC_SLOT(device_open),
    TGC_SLOT(device_close),      TGC_SLOT(device_get_info),    TGC_SLOT(renderer_create),
    TGC_SLOT(renderer_destroy),  TGC_SLOT(renderer_get_caps),  TGC_SLOT(renderer_render),
    TGC_SLOT(compiler_create),   TGC_SLOT(compiler_destroy),   TGC_SLOT(compiler_compile),
    TGC_SLOT(blob_free),         TGC_SLOT(allocator_alloc),    TGC_SLOT(allocator_free),
    TGC_SLOT(allocator_copy_in), TGC_SLOT(allocator_copy_out), TGC_SLOT(program_create),
    TGC_SLOT(program_destroy),   TGC_SLOT(hwqueue_create),     TGC_SLOT(hwqueue_destroy),
    TGC_SLOT(hwqueue_exec),      TGC_SLOT(hwqueue_copy),       TGC_SLOT(hwqueue_signal),
    TGC_SLOT(hwqueue_timestamp), TGC_SLOT(hwqueue_submit),     TGC_SLOT(hwqueue_wait),
    TGC_SLOT(hwqueue_read_timestamp)};
#undef TGC_SLOT

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
  expect(a.struct_size >= sizeof(tg_plugin_api),
         cat("table struct_size is ", a.struct_size, ", smaller than ABI 1.0's ", sizeof(tg_plugin_api),
             " bytes: the core would read slots past its end"));
  expect(a.struct_size % alignof(void*) == 0 && a.struct_size < (1u << 16),
         cat("table struct_size ", a.struct_size, " is not a plausible size (a multiple of 8 below 64 KiB)"));
  expect(a.abi_major == TG_ABI_VERSION_MAJOR,
         cat("table abi_major is ", a.abi_major, " but the entry point was called with major ", TG_ABI_VERSION_MAJOR));
  expect(a.plugin_name != nullptr && *a.plugin_name != '\0', "table plugin_name is NULL or empty");
  expect(a.device_name != nullptr && *a.device_name != '\0', "table device_name is NULL or empty");
  std::string missing;
  for (const Slot& slot : kSlots) {
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
         cat("tg_plugin_get_api(", TG_ABI_VERSION_MAJOR, ", ", TG_ABI_VERSION_MINOR + 7,
             ") was refused (", code_name(s.code), ": ", s.message,
             "); minor versions only append, so a newer core of the same major must be served"));
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
  expect(count >= 1, "device_count() reports 0 devices; a plugin with no device should fail to initialise instead");
  expect(count == s.device_count, cat("device_count() changed from ", s.device_count, " to ", count));
  for (uint32_t i = 0; i < count; ++i) {
    const bool is_session = i == s.index;
    tg_device device = is_session ? s.device : nullptr;
    if (!is_session) TGC_OK(a.device_open(i, &device));
    expect(device != nullptr, cat("device_open(", i, ") succeeded with a NULL handle"));
    tg_device_info info{};
    info.struct_size = sizeof(info);
    const Status st = TGC_STATUS(a.device_get_info(device, &info));
    if (!is_session) a.device_close(device);
    if (!st.ok())
      throw Failure(cat("device_get_info(device ", i, ") failed with ", code_name(st.code), ": ", st.message));
    const std::string name = info.name ? info.name : "(null)";
    expect(info.struct_size == sizeof(info),
           cat("device_get_info overwrote the caller's struct_size with ", info.struct_size));
    expect(name == a.device_name,
           cat("device ", i, " is named \"", name, "\" but the table's device_name is \"", a.device_name, "\""));
    expect(info.description != nullptr && info.arch != nullptr,
           cat("device_get_info(device ", i, ") left description or arch NULL"));
  }
}

// An older core passes a smaller out-struct; a newer one a larger. The plugin must write only what fits and must
// keep the caller's struct_size.
void older_and_newer_struct_sizes() {
  const tg_plugin_api& a = api();
  const Session& s = session();
  constexpr unsigned char kCanary = 0xA5;
  {  // an older device_info: only struct_size, name and description
    unsigned char raw[sizeof(tg_device_info) + 64];
    std::memset(raw, kCanary, sizeof raw);
    const size_t small = offsetof(tg_device_info, arch);
    std::memcpy(raw, &small, sizeof small);
    TGC_OK(a.device_get_info(s.device, reinterpret_cast<tg_device_info*>(raw)));
    for (size_t b = small; b < sizeof raw; ++b)
      expect(raw[b] == kCanary, cat("device_get_info with struct_size ", small, " wrote byte ", b,
                                    ", past the end of the caller's struct"));
  }
  {  // a newer device_info: 64 bytes more than ABI 1.0 knows, which the plugin must leave alone
    unsigned char raw[sizeof(tg_device_info) + 64];
    std::memset(raw, kCanary, sizeof raw);
    const size_t big = sizeof raw;
    std::memcpy(raw, &big, sizeof big);
    TGC_OK(a.device_get_info(s.device, reinterpret_cast<tg_device_info*>(raw)));
    size_t stored = 0;
    std::memcpy(&stored, raw, sizeof stored);
    expect(stored == big, cat("device_get_info changed struct_size from ", big, " to ", stored));
    for (size_t b = sizeof(tg_device_info); b < sizeof raw; ++b)
      expect(raw[b] == kCanary, cat("device_get_info with struct_size ", big, " wrote byte ", b,
                                    ", which ABI 1.0 does not define"));
  }
  {  // older caps: up to vector_widths, without has_local and what follows
    unsigned char raw[sizeof(tg_renderer_caps) + 64];
    std::memset(raw, kCanary, sizeof raw);
    const size_t small = offsetof(tg_renderer_caps, has_local);
    std::memcpy(raw, &small, sizeof small);
    TGC_OK(a.renderer_get_caps(s.renderer, reinterpret_cast<tg_renderer_caps*>(raw)));
    for (size_t b = small; b < sizeof raw; ++b)
      expect(raw[b] == kCanary, cat("renderer_get_caps with struct_size ", small, " wrote byte ", b,
                                    ", past the end of the caller's struct"));
  }
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
  tests.push_back({"abi.wrong_major_is_refused", Tier::Core, wrong_major_is_refused});
  tests.push_back({"abi.status_free_works", Tier::Core, status_free_works});
  tests.push_back({"abi.devices_open_and_describe", Tier::Core, devices_open_and_describe});
  tests.push_back({"abi.older_and_newer_struct_sizes", Tier::Core, older_and_newer_struct_sizes});
  tests.push_back({"abi.caps_are_consistent", Tier::Core, caps_are_consistent});
}

}  // namespace tg::conformance
