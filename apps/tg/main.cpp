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

// Every plugin file and standard device in one table; --explain: file by file, with the directories searched.
int run_devices(bool explain) {
  std::cout << (explain ? tg::explain_devices(true) : tg::device_table());
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
        "  devices   one table of the plugins found and the six standard devices: ready (with the devices), no device\n"
        "            (and why), shadowed by another file, failed (ABI out of range, refused, ...), not found\n"
        "  demo      run a small MLP forward + softmax on the default device (DEV=...), print kernels and times\n"
        "  render    print what a device's renderer makes of an example program: tg render --dev CPU matmul\n"
        "  devices --explain (or DEV=?)  file by file, with the directories searched\n"
        "environment: DEV=<DEVICE>[:<index>], DEBUG=1..5, TG_PLUGIN_PATH, CPU_COUNT, PARALLEL_COMPILE\n";
}

}  // namespace

int main(int argc, char** argv) {
  try {
    po::options_description opts("options");
    // clang-format off: one option per line
    opts.add_options()("help,h", "show help")("command", po::value<std::string>(), "command");
    // clang-format on
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
  } catch (const po::error& e) {  // a bad option of any command
    std::cerr << "tg" << (argc > 1 ? std::string(" ") + argv[1] : std::string()) << ": " << e.what()
              << " (see --help)\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
