// `tg render --dev NAME <example>`: what a device's renderer produces for a named example program. A device that
// cannot be opened here (METAL off macOS, NV without a GPU) is rendered for anyway: the tensors live on the CPU,
// and the kernels are lowered with the caps of, and rendered by, a renderer its plugin makes without a device.
#include <boost/program_options.hpp>
#include <cctype>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <map>
#include <memory>

#include "codegen/lower.hpp"
#include "runtime/device.hpp"
#include "runtime/plugin_registry.hpp"
#include "schedule/schedule.hpp"
#include "tg/device.hpp"
#include "tg/error.hpp"
#include "tg/tensor.hpp"

namespace po = boost::program_options;

namespace {

using Example = std::function<tg::Tensor(const std::string& dev)>;

const std::map<std::string, std::pair<const char*, Example>>& examples() {
  static const std::map<std::string, std::pair<const char*, Example>> ex = {
      {"elementwise",
       {"relu(a * b + c) on 4x33 float32",
        [](const std::string& d) {
          auto t = [&](uint64_t s) { return tg::Tensor::rand({4, 33}, s, tg::dtypes::float32, d).realize(); };
          return (t(1) * t(2) + t(3)).relu();
        }}},
      {"reduce",
       {"row sums of 16x1000 float32",
        [](const std::string& d) {
          return tg::Tensor::rand({16, 1000}, 1, tg::dtypes::float32, d).realize().sum({1});
        }}},
      {"matmul",
       {"64x64 @ 64x64 float32",
        [](const std::string& d) {
          auto a = tg::Tensor::rand({64, 64}, 1, tg::dtypes::float32, d).realize(),
               b = tg::Tensor::rand({64, 64}, 2, tg::dtypes::float32, d).realize();
          return a.matmul(b);
        }}},
      {"softmax",
       {"softmax over rows of 8x100 float32 (3 kernels)",
        [](const std::string& d) {
          return tg::Tensor::rand({8, 100}, 1, tg::dtypes::float32, d).realize().softmax(-1);
        }}},
      {"half",
       {"float16 a * b + 1 (computed in float32 where the renderer lacks half math)",
        [](const std::string& d) {
          auto a = tg::Tensor::rand({64}, 1, tg::dtypes::float16, d).realize(),
               b = tg::Tensor::rand({64}, 2, tg::dtypes::float16, d).realize();
          return a * b + 1.0;
        }}},
  };
  return ex;
}

// A renderer made by a plugin with a NULL device (renderer_create(nullptr, target)), with its caps.
class DevicelessRenderer {
 public:
  DevicelessRenderer(const tg::rt::LoadedPlugin& plugin, const std::string& target) : api_(plugin.api) {
    const std::string where = std::string(api_->device_name) + " (" + plugin.path + ", no device)";
    tg::rt::check_status(api_, api_->renderer_create(nullptr, target.empty() ? nullptr : target.c_str(), &renderer_),
                         where + ": renderer_create");
    caps_.struct_size = sizeof(caps_);
    tg::rt::check_status(api_, api_->renderer_get_caps(renderer_, &caps_), where + ": renderer_get_caps");
  }
  DevicelessRenderer(const DevicelessRenderer&) = delete;
  DevicelessRenderer& operator=(const DevicelessRenderer&) = delete;
  ~DevicelessRenderer() {
    if (renderer_) api_->renderer_destroy(renderer_);
  }

  const tg_renderer_caps& caps() const { return caps_; }
  std::string render(const tg_kir_kernel& k) {
    const char* source = nullptr;
    tg::rt::check_status(api_, api_->renderer_render(renderer_, &k, &source),
                         std::string(api_->device_name) + ": render " + k.name);
    return source ? source : "";
  }

 private:
  const tg_plugin_api* api_;
  tg_renderer renderer_ = nullptr;
  tg_renderer_caps caps_{};
};

// "METAL" -> ("METAL", ""), "nv:1" -> ("NV", ""), "AMD:LLVM" -> ("AMD", "LLVM"): the DEV name and a renderer.
std::pair<std::string, std::string> split_device(const std::string& name) {
  const size_t colon = name.find(':');
  std::string dev = name.substr(0, colon), rest = colon == std::string::npos ? "" : name.substr(colon + 1);
  for (char& c : dev) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const bool is_index = !rest.empty() && rest.find_first_not_of("0123456789") == std::string::npos;
  return {dev, is_index ? "" : rest.substr(0, rest.find(':'))};
}

// Every kernel of the example's schedule, lowered with `caps` and rendered by `render`.
void print_kernels(const tg::Tensor& out, const std::string& dev, const tg_renderer_caps& caps,
                   const std::string& label, bool kir, const std::function<std::string(const tg_kir_kernel&)>& render) {
  auto items = tg::sched::create_schedule({out.node()}, dev).items;
  for (auto& item : items) {
    if (item.kind != tg::sched::ScheduleItem::Kind::KERNEL) continue;
    auto k = tg::codegen::lower_kernel(item.kernel, caps);
    std::cout << "// ---- " << k.name << " on " << label << "\n";
    if (kir) std::cout << k.dump();
    std::cout << render(k.view()) << "\n";
  }
}

}  // namespace

int run_render(int argc, char** argv) {
  std::string dev, name;
  bool kir = false;
  po::options_description opts(
      "tg render [--dev DEVICE] [--kir] EXAMPLE: what a device's renderer makes of an example program");
  // clang-format off: one option per line
  opts.add_options()("help,h", "this help, and the examples")("dev", po::value(&dev), "device (default: DEV or the default device)")(
      "kir", po::bool_switch(&kir), "also print the KIR")("example", po::value(&name), "example name");
  // clang-format on
  po::positional_options_description pos;
  pos.add("example", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(opts).positional(pos).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << opts << "examples:\n";
    for (const auto& [n, e] : examples()) std::cout << "  " << n << ": " << e.first << "\n";
    return 0;
  }
  auto it = examples().find(name);
  if (it == examples().end()) {
    std::cerr << (name.empty() ? "tg render: name an example" : "tg render: unknown example '" + name + "'")
              << "; examples:\n";
    for (const auto& [n, e] : examples()) std::cerr << "  " << n << ": " << e.first << "\n";
    return 2;
  }
  if (dev.empty()) {  // DEV names a device even where it cannot be opened (then default_device() would throw)
    const char* env = std::getenv("DEV");
    dev = env != nullptr && *env != '\0' && std::string(env) != "?" ? env : tg::default_device();
  }
  std::string open_error;
  try {
    dev = tg::canonical_device(dev);
  } catch (const tg::Error& e) {
    open_error = e.what();
  }
  if (open_error.empty()) {
    tg::rt::Device& d = tg::rt::Device::get(dev);
    print_kernels(it->second.second(dev), dev, d.caps(), d.name() + " (" + d.arch() + ")", kir,
                  [&](const tg_kir_kernel& k) { return d.render(k); });
    return 0;
  }
  // The device cannot be opened: render with its plugin's device-less renderer, the tensors on the host.
  const auto [device_name, target] = split_device(dev);
  std::string why;
  const tg::rt::LoadedPlugin* plugin = tg::rt::PluginRegistry::get().load_for_rendering(device_name, why);
  if (plugin == nullptr) {  // no plugin for it at all, or one that does not load: the open error says most
    std::cerr << open_error << (why.find(" provides ") != std::string::npos ? "" : "\n  (device-less: " + why + ")")
              << "\n";
    return 1;
  }
  DevicelessRenderer renderer(*plugin, target);
  const std::string host = "CPU";
  std::cerr << "tg render: " << device_name
            << " cannot be opened here; rendering with its plugin's device-less renderer, "
            << "the tensors on " << host << "\n";
  print_kernels(it->second.second(host), host, renderer.caps(), device_name + " (no device)", kir,
                [&](const tg_kir_kernel& k) { return renderer.render(k); });
  return 0;
}
