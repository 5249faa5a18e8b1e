// An opened device instance: its plugin table, renderer, compiler, queue and the program cache.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/plugin_registry.hpp"
#include "tg/plugin_abi.h"
#include "tg/sdk/program_signature.hpp"

namespace tg::rt {

class Device;

// A compiled, loaded kernel and what launching it needs.
struct Program {
  Device* device = nullptr;
  tg_program handle = nullptr;
  std::string name;
  sdk::Signature signature;  // the kernel's parameters and their packed layout, as the plugin also lays them out
  ~Program();
};

class Device {
 public:
  // Opens (once) and returns the device named "CPU" or "CPU:0"; throws tg::Error if unknown.
  static Device& get(const std::string& name);

  const std::string& name() const { return name_; }
  const tg_plugin_api* api() const { return api_; }
  tg_device handle() const { return dev_; }
  const tg_renderer_caps& caps() const { return caps_; }
  const std::string& description() const { return description_; }
  const std::string& arch() const { return arch_; }
  bool is_host() const { return is_host_; }
  // Identifies the plugin build (file and modification time): binaries cached on disk are only valid for it.
  const std::string& plugin_build() const { return plugin_build_; }

  std::string render(const tg_kir_kernel& k);  // serialized: renderer output is valid until the next call
  std::vector<uint8_t> compile(const std::string& source, const std::string& name);  // thread-safe
  std::shared_ptr<Program> load(const std::vector<uint8_t>& blob, const tg_kir_kernel& k);

  // Launch on the device's queue; `sync` waits for completion and returns elapsed ns (else 0).
  uint64_t launch(const Program& p, const std::vector<uint8_t>& args, const tg_launch_dims& dims, bool sync);

  // Several launches recorded on the queue and submitted as one batch (the JIT's replay path).
  struct LaunchCmd {
    const Program* program;
    const std::vector<uint8_t>* args;
    tg_launch_dims dims;
  };
  void launch_batch(const std::vector<LaunchCmd>& cmds, bool sync);
  // Waits for everything submitted on this instance's queue (and, with the 1.1 slot, on all of the device's).
  void synchronize();

  // What still refers to this instance; unload_plugin refuses while either is nonzero.
  std::atomic<int64_t> live_buffers{0}, live_programs{0};

  void check(tg_status_t st, const std::string& context) const { check_status(api_, st, name_ + ": " + context); }
  ~Device();

 private:
  Device(const LoadedPlugin& plugin, const std::string& name, uint32_t index);
  std::string name_, description_, arch_, plugin_build_;
  const tg_plugin_api* api_;
  tg_device dev_ = nullptr;
  tg_renderer renderer_ = nullptr;
  tg_compiler compiler_ = nullptr;
  tg_hwqueue queue_ = nullptr;
  tg_renderer_caps caps_{};
  bool is_host_ = false;
  uint64_t signal_ = 0;
  std::mutex render_mu_, queue_mu_;
};

}  // namespace tg::rt
