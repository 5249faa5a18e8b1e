// The benches' command lines (Boost.Program_options), read one way: --help prints the options, and an unknown or
// malformed option (a count that is not a number) is one line on stderr and exit status 2, never a crash or a run
// with a garbage value.
#pragma once

#include <iostream>
#include <optional>
#include <string>

#include <boost/program_options.hpp>

namespace tg::bench {

namespace po = boost::program_options;

// Parses argv into opts' bound variables (and `positional`'s names). Returns the status main should exit with (0
// after --help, 2 after an error), or nullopt to run the bench.
inline std::optional<int> parse_command_line(const char* name, int argc, char** argv,
                                             const po::options_description& opts,
                                             const po::positional_options_description& positional = {}) {
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(argc, argv).options(opts).positional(positional).run(), vm);
    if (vm.count("help")) {
      std::cout << opts;
      return 0;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << name << ": " << e.what() << " (see --help)\n";
    return 2;
  }
  return std::nullopt;
}

// A bench whose command line is one count (`--reps 50`, or just `50`), at least 1; `about` is its --help line.
inline std::optional<int> parse_count(const char* name, const std::string& about, const char* option, const char* what,
                                      int& count, int argc, char** argv) {
  po::options_description opts(about);
  // clang-format off: one option per line
  opts.add_options()("help,h", "this help")(option, po::value(&count)->default_value(count), what);
  // clang-format on
  po::positional_options_description positional;
  positional.add(option, 1);
  if (std::optional<int> status = parse_command_line(name, argc, argv, opts, positional)) return status;
  if (count < 1) {
    std::cerr << name << ": --" << option << " must be at least 1 (got " << count << ")\n";
    return 2;
  }
  return std::nullopt;
}

}  // namespace tg::bench
