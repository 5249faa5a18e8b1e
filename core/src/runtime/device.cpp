// Device instances: open through the plugin table, render/compile/load programs, launch on the queue.
#include "runtime/device.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <sstream>

#include "runtime/env.hpp"
#include "runtime/program_cache.hpp"
#include "tg/device.hpp"
#include "tg/error.hpp"

namespace tg::rt {

namespace {

// Splits "NV:1" into ("NV", 1); "CPU" -> ("CPU", 0).
std::pair<std::string, uint32_t> parse_instance(const std::string& name) {
  auto colon = name.find(':');
  std::string dev = name.substr(0, colon);
  for (auto& c : dev) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (colon == std::string::npos) return {dev, 0};
  std::string rest = name.substr(colon + 1);
  if (!rest.empty() && std::all_of(rest.begin(), rest.end(), ::isdigit))
    return {dev, static_cast<uint32_t>(std::stoul(rest))};
  return {dev, 0};  // "AMD:LLVM": a renderer choice, not an index
}

// The open device instances by "NAME:index", and the lock for opening and closing them. Never destroyed: at exit
// the plugin libraries may be gone before our statics are.
std::mutex& open_mu() {
  static auto* mu = new std::mutex();
  return *mu;
}
std::map<std::string, std::unique_ptr<Device>>& open_devices() {
  static auto* open = new std::map<std::string, std::unique_ptr<Device>>();
  return *open;
}

}  // namespace

Program::~Program() {
  if (handle) device->api()->program_destroy(handle);
  if (device) --device->live_programs;
}

Device& Device::get(const std::string& name) {
  auto& open = open_devices();
  auto [dev, index] = parse_instance(name);
  std::string key = dev + ":" + std::to_string(index);
  std::lock_guard lock(open_mu());
  if (auto it = open.find(key); it != open.end()) return *it->second;
  const auto& reg = PluginRegistry::get();
  const LoadedPlugin* p = reg.find(dev);
  if (!p) {
    std::string known;
    for (const auto& d : reg.device_names()) known += (known.empty() ? "" : ", ") + d;
    throw Error("tg: unknown device '" + name + "' (available: " + (known.empty() ? "none" : known) +
                "); plugins:" + reg.summary());
  }
  uint32_t count = 0;
  check_status(p->api, p->api->device_count(&count), "device_count");
  if (index >= count)
    throw Error("tg: device " + name + " does not exist: plugin " + p->path + " has " + std::to_string(count) +
                " device(s)");
  auto d = std::unique_ptr<Device>(new Device(*p, dev + (index ? ":" + std::to_string(index) : ""), index));
  if (debug_level() >= 1) std::fprintf(stderr, "opened device %s: %s\n", d->name_.c_str(), d->description_.c_str());
  return *open.emplace(key, std::move(d)).first->second;
}

Device::Device(const LoadedPlugin& plugin, const std::string& name, uint32_t index) : name_(name), api_(plugin.api) {
  std::error_code ec;
  auto mtime = std::filesystem::last_write_time(plugin.path, ec).time_since_epoch().count();
  plugin_build_ = plugin.path + "@" + std::to_string(mtime);
  check(api_->device_open(index, &dev_), "device_open");
  tg_device_info info{};
  info.struct_size = sizeof(info);
  check(api_->device_get_info(dev_, &info), "device_get_info");
  description_ = info.description ? info.description : "";
  arch_ = info.arch ? info.arch : "";
  is_host_ = info.is_host;
  check(api_->renderer_create(dev_, nullptr, &renderer_), "renderer_create");
  caps_.struct_size = sizeof(caps_);
  check(api_->renderer_get_caps(renderer_, &caps_), "renderer_get_caps");
  check(api_->compiler_create(dev_, &compiler_), "compiler_create");
  check(api_->hwqueue_create(dev_, &queue_), "hwqueue_create");
}

Device::~Device() {
  if (queue_) api_->hwqueue_destroy(queue_);
  if (compiler_) api_->compiler_destroy(compiler_);
  if (renderer_) api_->renderer_destroy(renderer_);
  if (dev_) api_->device_close(dev_);
}

std::string Device::render(const tg_kir_kernel& k) {
  std::lock_guard lock(render_mu_);
  const char* src = nullptr;
  check(api_->renderer_render(renderer_, &k, &src), std::string("render ") + k.name);
  return src ? src : "";
}

std::vector<uint8_t> Device::compile(const std::string& source, const std::string& name) {
  void* blob = nullptr;
  size_t size = 0;
  check(api_->compiler_compile(compiler_, source.c_str(), name.c_str(), &blob, &size), "compile " + name);
  std::vector<uint8_t> out(static_cast<uint8_t*>(blob), static_cast<uint8_t*>(blob) + size);
  api_->blob_free(blob);
  return out;
}

std::shared_ptr<Program> Device::load(const std::vector<uint8_t>& blob, const tg_kir_kernel& k) {
  auto p = std::make_shared<Program>();
  p->device = this;
  ++live_programs;
  p->name = k.name;
  p->signature = sdk::Signature(k.name, k.params, k.nparams);
  check(api_->program_create(dev_, blob.data(), blob.size(), k.name, p->signature.params().data(), p->signature.size(),
                             &p->handle),
        std::string("load program ") + k.name);
  return p;
}

uint64_t Device::launch(const Program& p, const std::vector<uint8_t>& args, const tg_launch_dims& dims, bool sync) {
  std::lock_guard lock(queue_mu_);
  auto t0 = std::chrono::steady_clock::now();
  check(api_->hwqueue_exec(queue_, p.handle, args.data(), args.size(), &dims), "exec " + p.name);
  check(api_->hwqueue_signal(queue_, ++signal_), "signal");
  check(api_->hwqueue_submit(queue_), "submit");
  if (!sync) return 0;
  check(api_->hwqueue_wait(queue_, signal_, 0), "wait for " + p.name);
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count());
}

void Device::launch_batch(const std::vector<LaunchCmd>& cmds, bool sync) {
  if (cmds.empty()) return;
  std::lock_guard lock(queue_mu_);
  for (const auto& c : cmds)
    check(api_->hwqueue_exec(queue_, c.program->handle, c.args->data(), c.args->size(), &c.dims),
          "exec " + c.program->name);
  check(api_->hwqueue_signal(queue_, ++signal_), "signal");
  check(api_->hwqueue_submit(queue_), "submit");
  if (sync)
    check(api_->hwqueue_wait(queue_, signal_, 0), "wait for a batch of " + std::to_string(cmds.size()) + " launches");
}

void Device::synchronize() {
  std::lock_guard lock(queue_mu_);
  if (signal_) check(api_->hwqueue_wait(queue_, signal_, 0), "synchronize");
  if (api_->device_synchronize) check(api_->device_synchronize(dev_), "device_synchronize");
}

}  // namespace tg::rt

// --- public device API ------------------------------------------------------------------------------------------

namespace tg {

std::string default_device() {
  std::string dev = rt::getenv_str("DEV");
  if (dev == "?")
    throw Error("tg: DEV=? lists the candidates (set DEV to one of the loaded devices):\n" + explain_devices());
  if (!dev.empty()) return canonical_device(dev);
  // Real accelerators first, then the CPU. QCOM and DSP come after the CPU: on our machines they are emulations
  // (PoCL, qemu-hexagon) that would be slower and less tested than the CPU plugin; on a phone DEV=QCOM picks them.
  // Probed in this order, so only the plugins up to the first present one are loaded.
  static const char* preference[] = {"NV", "AMD", "METAL", "CPU", "QCOM", "DSP"};
  for (const char* p : preference)
    if (rt::PluginRegistry::get().find(p)) return p;
  auto names = available_devices();
  if (!names.empty()) return names.front();
  throw Error("tg: no device available; plugins:" + rt::PluginRegistry::get().summary());
}

std::string canonical_device(const std::string& name) { return rt::Device::get(name).name(); }

void unload_plugin(const std::string& device_name) {
  std::string dev = rt::parse_instance(device_name).first;
  std::lock_guard lock(rt::open_mu());
  auto& open = rt::open_devices();
  std::vector<std::map<std::string, std::unique_ptr<rt::Device>>::iterator> instances;
  for (auto it = open.begin(); it != open.end(); ++it)
    if (it->first.substr(0, it->first.find(':')) == dev) instances.push_back(it);
  // Quiesce: nothing may still run or refer to the instances once they close.
  for (auto it : instances) {
    rt::Device& d = *it->second;
    d.synchronize();
    rt::clear_program_cache(&d);
    if (d.live_buffers || d.live_programs)
      throw Error("tg: cannot unload the " + dev + " plugin: " + d.name() + " still has " +
                  std::to_string(d.live_buffers.load()) + " buffer(s) (tensors) and " +
                  std::to_string(d.live_programs.load()) + " program(s) (Jit captures) alive; release them first");
  }
  for (auto it : instances) open.erase(it);  // destroys queue, compiler, renderer, then device_close
  rt::PluginRegistry::get().unload(dev);
}

}  // namespace tg
