// The benches' command lines (Boost.Program_options), read one way: --help prints the options, and an unknown or
// malformed option (a count that is not a number) is one line on stderr and exit status 2, never a crash or a run
// with a garbage value.
#pragma once

#include <iostream>
#include <optional>

#include <boost/program_options.hpp>

namespace tg::bench {

namespace po = boost::program_options;

// Parses argv into opts' bound variables (and `positional`'s names). Returns the status main should exit with (0
// after --help, 2 after an error), or nullopt to run the bench.
inline std::optional<int> parse_command_line(const char* name, int argc, char** argv, const po::options_description& opts,
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

}  // namespace tg::bench
