// `tg render --dev NAME <example>`: what a device's renderer produces for a named example program.
#include <boost/program_options.hpp>
#include <functional>
#include <iostream>
#include <map>

#include "codegen/lower.hpp"
#include "schedule/schedule.hpp"
#include "tg/device.hpp"
#include "tg/tensor.hpp"

namespace po = boost::program_options;

namespace {

using Example = std::function<tg::Tensor(const std::string& dev)>;

const std::map<std::string, std::pair<const char*, Example>>& examples() {
  static const std::map<std::string, std::pair<const char*, Example>> ex = {
      {"elementwise", {"relu(a * b + c) on 4x33 float32", [](const std::string& d) {
         auto t = [&](uint64_t s) { return tg::Tensor::rand({4, 33}, s, tg::dtypes::float32, d).realize(); };
         return (t(1) * t(2) + t(3)).relu();
       }}},
      {"reduce", {"row sums of 16x1000 float32", [](const std::string& d) {
         return tg::Tensor::rand({16, 1000}, 1, tg::dtypes::float32, d).realize().sum({1});
       }}},
      {"matmul", {"64x64 @ 64x64 float32", [](const std::string& d) {
         auto a = tg::Tensor::rand({64, 64}, 1, tg::dtypes::float32, d).realize(), b = tg::Tensor::rand({64, 64}, 2, tg::dtypes::float32, d).realize();
         return a.matmul(b);
       }}},
      {"softmax", {"softmax over rows of 8x100 float32 (3 kernels)", [](const std::string& d) {
         return tg::Tensor::rand({8, 100}, 1, tg::dtypes::float32, d).realize().softmax(-1);
       }}},
      {"half", {"float16 a * b + 1 (computed in float32 where the renderer lacks half math)", [](const std::string& d) {
         auto a = tg::Tensor::rand({64}, 1, tg::dtypes::float16, d).realize(), b = tg::Tensor::rand({64}, 2, tg::dtypes::float16, d).realize();
         return a * b + 1.0;
       }}},
  };
  return ex;
}

}  // namespace

int run_render(int argc, char** argv) {
  std::string dev, name;
  bool kir = false;
  po::options_description opts("tg render options");
  opts.add_options()("dev", po::value(&dev), "device (default: DEV or the default device)")("kir", po::bool_switch(&kir), "also print the KIR")(
      "example", po::value(&name), "example name");
  po::positional_options_description pos;
  pos.add("example", 1);
  po::variables_map vm;
  po::store(po::command_line_parser(argc, argv).options(opts).positional(pos).run(), vm);
  po::notify(vm);
  auto it = examples().find(name);
  if (it == examples().end()) {
    std::cerr << (name.empty() ? "tg render: name an example" : "tg render: unknown example '" + name + "'") << "; examples:\n";
    for (const auto& [n, e] : examples()) std::cerr << "  " << n << ": " << e.first << "\n";
    return 2;
  }
  dev = dev.empty() ? tg::default_device() : tg::canonical_device(dev);
  tg::Tensor out = it->second.second(dev);
  std::vector<std::shared_ptr<tg::rt::Buffer>> bufs;
  auto items = tg::sched::create_schedule({out.node()}, dev, bufs);
  for (auto& item : items) {
    if (item.kind != tg::sched::ScheduleItem::Kind::KERNEL) continue;
    tg::rt::Device& d = item.bufs[0]->device();
    auto k = tg::codegen::lower_kernel(item.kernel, item.bufs, d.caps());
    std::cout << "// ---- " << k.name << " on " << d.name() << " (" << d.arch() << ")\n";
    if (kir) std::cout << k.dump();
    std::cout << d.render(k.view()) << "\n";
  }
  return 0;
}
