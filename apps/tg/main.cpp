// `tg`: the command line entry point (devices, demo).
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "tg/device.hpp"
#include "tg/error.hpp"

namespace po = boost::program_options;

int run_demo(int argc, char** argv);
int run_render(int argc, char** argv);

namespace {

int run_devices(bool explain) {
  if (explain) {
    std::cout << tg::explain_devices();
    return 0;
  }
  auto reports = tg::plugin_reports();
  if (reports.empty()) {
    std::cout << "no plugins found; set TG_PLUGIN_PATH to a directory holding libtg_plugin_<name>.so\n";
    return 1;
  }
  for (const auto& r : reports) {
    std::cout << r.path << "\n";
    if (r.loaded) {
      std::cout << "  plugin " << r.plugin_name << ", ABI " << r.abi_version << ", device " << r.device_name
                << (r.shadowed ? " (shadowed by an earlier plugin)" : "") << "\n";
      for (const auto& d : r.devices) std::cout << "  " << d << "\n";
      if (!r.error.empty()) std::cout << "  error: " << r.error << "\n";
    } else {
      std::cout << "  not loaded: " << r.error << "\n";
    }
  }
  try {
    std::cout << "default device: " << tg::default_device() << "\n";
  } catch (const std::exception& e) {
    std::cout << "default device: none (" << e.what() << ")\n";
    return 1;
  }
  return 0;
}

void usage(std::ostream& os) {
  os << "usage: tg <command> [options]\n"
        "commands:\n"
        "  devices   list plugin files found, their ABI version, devices and load errors\n"
        "  demo      run a small MLP forward + softmax on the default device (DEV=...), print kernels and times\n"
        "  render    print what a device's renderer makes of an example program: tg render --dev CPU matmul\n"
        "  devices --explain (or DEV=?)  every candidate plugin file with its verdict\n"
        "environment: DEV=<DEVICE>[:<index>], DEBUG=1..5, TG_PLUGIN_PATH, CPU_COUNT, PARALLEL_COMPILE\n";
}

}  // namespace

int main(int argc, char** argv) {
  try {
    po::options_description opts("options");
    opts.add_options()("help,h", "show help")("command", po::value<std::string>(), "command");
    po::positional_options_description pos;
    pos.add("command", 1);
    po::variables_map vm;
    po::store(po::command_line_parser(std::min(argc, 2), argv).options(opts).positional(pos).run(), vm);
    po::notify(vm);
    if (vm.count("help") || !vm.count("command")) {
      usage(vm.count("help") ? std::cout : std::cerr);
      return vm.count("help") ? 0 : 2;
    }
    std::string cmd = vm["command"].as<std::string>();
    if (cmd == "devices") return run_devices(argc > 2 && std::string(argv[2]) == "--explain");
    if (cmd == "render") return run_render(argc - 1, argv + 1);
    if (cmd == "demo") return run_demo(argc - 1, argv + 1);
    std::cerr << "tg: unknown command '" << cmd << "'\n";
    usage(std::cerr);
    return 2;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
