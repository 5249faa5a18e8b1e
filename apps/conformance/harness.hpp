// tg-conformance's harness: the loaded plugin, the Session (device, renderer, compiler, queue) the battery runs
// on, Failure/Skip, the TGC_OK/TGC_STATUS macros that name the ABI call in every message, Kernel (render,
// compile, load, launch, with the KIR and source in its failure messages) and the test registry.
#pragma once

#include <tg/sdk/kir_builder.hpp>

#include <tg/plugin_abi.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tg::conformance {

using sdk::cat;
using sdk::dump_kir;
using sdk::Kir;
using sdk::pack_args;

// A test's verdicts, thrown out of its body.
struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct Skip : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A status's code and message, taken from the plugin (and freed with its status_free).
struct Status {
  int code = TG_OK;
  std::string message;
  bool ok() const { return code == TG_OK; }
};

const char* code_name(int code);

// What the command line chose: the plugin file and its device index.
struct Options {
  std::string plugin_path;
  uint32_t device = 0;
};
Options& options();

// The plugin file: dlopen'ed once and never unloaded (its threads may outlive any one test).
struct Plugin {
  std::string path;
  void* handle = nullptr;
  tg_plugin_get_api_fn entry = nullptr;
  const tg_plugin_api* api = nullptr;  // from entry(TG_ABI_VERSION_MAJOR, TG_ABI_VERSION_MINOR), if it answered
  std::string error;                   // why handle, entry or api is missing
};
Plugin& plugin();
const tg_plugin_api& api();  // throws Failure when the handshake failed

// The ABI call in flight, for the crash and timeout handlers: they print it so a crash is still a diagnosis.
extern const char* volatile current_call;

Status take(tg_status_t status);
// Runs `call` (whose text is `what`) and returns its status; the macro versions pass the call's own text.
Status call_status(const char* what, const std::function<tg_status_t()>& call);
void call_ok(const char* what, const std::function<tg_status_t()>& call);
#define TGC_STATUS(expr) ::tg::conformance::call_status(#expr, [&]() -> tg_status_t { return (expr); })
#define TGC_OK(expr) ::tg::conformance::call_ok(#expr, [&]() -> tg_status_t { return (expr); })

// Throws Failure(message) unless cond.
inline void expect(bool cond, const std::string& message) {
  if (!cond) throw Failure(message);
}

// What the battery runs on: device --device N of the plugin, with one renderer, compiler and queue.
struct Session {
  uint32_t index = 0;
  uint32_t device_count = 0;
  tg_device device = nullptr;
  tg_renderer renderer = nullptr;
  tg_compiler compiler = nullptr;
  tg_hwqueue queue = nullptr;
  tg_device_info info{};
  tg_renderer_caps caps{};
  uint64_t signal = 0;    // the queue's last signal value
  std::string error;      // why the session could not open (then every test that needs it fails)
  std::string no_device;  // device_count() is 0, and why (then every test that needs a device skips)

  bool claims_dtype(uint32_t dtype) const { return (caps.dtypes >> dtype) & 1u; }
  bool claims_op(uint32_t dtype, uint32_t op) const {
    return claims_dtype(dtype) && ((caps.ops[dtype] >> op) & uint64_t{1});
  }
  bool claims_width(uint32_t dtype, uint32_t width) const {
    return width == 1 || (width < 32 && ((caps.vector_widths[dtype] >> width) & 1u));
  }
};
Session& session();  // opens on first use; throws Failure naming the call that failed

// A host copy in a fresh device buffer, released when the owner goes (RAII so a failing test leaks nothing).
class Buffer {
 public:
  explicit Buffer(uint64_t size);
  Buffer(const void* data, uint64_t size);
  template <class T>
  explicit Buffer(const std::vector<T>& data) : Buffer(data.data(), data.size() * sizeof(T)) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();
  const tg_buffer_desc& desc() const { return desc_; }
  uint64_t addr() const { return desc_.addr; }
  std::vector<unsigned char> read() const;
  template <class T>
  std::vector<T> read_as() const {
    const std::vector<unsigned char> bytes = read();
    std::vector<T> out(bytes.size() / sizeof(T));
    std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
    return out;
  }

 private:
  tg_buffer_desc desc_{};
};

// One kernel through the plugin: render, compile and load in the constructor; every failure afterwards (a
// launch error or a wrong result) names the kernel and carries its KIR and rendered source.
class Kernel {
 public:
  Kernel(Kir& kir, const std::string& name);
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;
  ~Kernel();
  // exec + signal + submit + wait on the session's queue. `global` counts work-groups, `local` work-items per
  // group (the HWQueue convention tinygrad uses), so SPECIAL global = group * local + local id.
  void launch(const std::vector<uint64_t>& args, tg_launch_dims dims = {{1, 1, 1}, {1, 1, 1}});
  tg_program program() const { return program_; }
  const std::vector<tg_kir_param>& params() const { return kir_.params(); }
  const std::string& source() const { return source_; }
  // Throws Failure: `what`, then the KIR dump and the rendered source.
  [[noreturn]] void fail(const std::string& what) const;
  std::string dump() const;

 private:
  Kir& kir_;
  tg_kir_kernel kernel_;
  std::string name_, source_;
  tg_program program_ = nullptr;
};

// "" unless every byte of an output buffer still holds the byte it was filled with before the launch; then a hint
// that opens the failure message: the kernel wrote nothing, so the op is not what failed.
std::string wrote_nothing(const std::vector<unsigned char>& got, unsigned char fill);

// The rendered source, at most `max_lines` lines of it, indented for a failure message.
std::string excerpt(const std::string& source, size_t max_lines = 60);

// ---- the registry --------------------------------------------------------------------------------------------

enum class Tier { Core, Queues, MultiDevice };
const char* tier_name(Tier tier);

struct Test {
  std::string name;  // "suite.case": "memory.round_trip_odd_sizes"
  Tier tier;
  std::function<void()> body;  // returns to pass; throws Failure or Skip
};
using Tests = std::vector<Test>;

// Each battery file adds its tests. The op battery reads the session's capabilities to decide which exist.
void add_abi_tests(Tests& tests);
void add_memory_tests(Tests& tests);
void add_op_tests(Tests& tests);
void add_param_tests(Tests& tests);
void add_control_tests(Tests& tests);
void add_semantics_tests(Tests& tests);
void add_queue_tests(Tests& tests);
void add_compile_tests(Tests& tests);
void add_device_tests(Tests& tests);

}  // namespace tg::conformance
