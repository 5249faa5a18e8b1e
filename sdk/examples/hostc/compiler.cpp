// The HOSTC plugin's Compiler: C11 source -> a shared object, by the system's C compiler in a subprocess
// (`cc -std=c11 -O2 -ffp-contract=off -fPIC -shared -lm`; $HOSTC_CC names another compiler, $HOSTC_CFLAGS adds flags,
// e.g. -fsanitize=undefined to prove the C preset's output free of undefined behaviour). Every call keeps its state on
// the stack and in its own files, so the core may compile on several threads at once.
#include "hostc_plugin.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <vector>

extern char** environ;

struct tg_compiler_s {
  std::string cc;                  // the compiler's command name or path
  std::vector<std::string> flags;  // $HOSTC_CFLAGS, split at spaces
};

namespace tg::hostc {

using sdk::cat;
using sdk::Error;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Runs argv with stdout and stderr into `log`; returns the exit status (or 128 + the signal that ended it).
int run(const std::vector<std::string>& argv, const std::string& log) {
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int err = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (err != 0) throw Error(TG_ERR_UNAVAILABLE, cat("cannot run the C compiler ", argv[0], ": ", std::strerror(err)));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw Error(TG_ERR_INTERNAL, cat("waiting for ", argv[0], ": ", std::strerror(errno)));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

struct CompilerHooks {
  using Compiler = tg_compiler_s;
  static constexpr std::string_view plugin = "hostc";

  static std::unique_ptr<Compiler> create(tg_device) {
    auto compiler = std::make_unique<Compiler>();
    const char* cc = std::getenv("HOSTC_CC");
    compiler->cc = cc && *cc ? cc : "cc";
    std::istringstream flags(std::getenv("HOSTC_CFLAGS") ? std::getenv("HOSTC_CFLAGS") : "");
    for (std::string flag; flags >> flag;) compiler->flags.push_back(flag);
    return compiler;
  }

  static sdk::Blob compile(Compiler& compiler, const char* source, const char* kernel_name) {
    const std::string name = kernel_name ? kernel_name : "kernel";
    const std::string c_file = sdk::write_private_file(source, std::strlen(source), "tg_hostc", name + ".c", 0600);
    const std::string so_file = c_file.substr(0, c_file.size() - 2) + ".so", log = c_file + ".log";
    // ISO C11 and -ffp-contract=off: GCC contracts a MUL and a separate ADD into an FMA in its GNU modes (and
    // ignores the preset's FP_CONTRACT pragma), which KIR forbids; -fwrapv is not needed, the preset has no UB
    std::vector<std::string> argv = {compiler.cc, "-std=c11", "-O2", "-ffp-contract=off", "-fPIC", "-shared", "-w"};
    argv.insert(argv.end(), compiler.flags.begin(), compiler.flags.end());
    argv.insert(argv.end(), {c_file, "-o", so_file, "-lm"});
    int status = 0;
    try {
      status = run(argv, log);
    } catch (...) {
      ::unlink(c_file.c_str()), ::unlink(log.c_str());
      throw;
    }
    const std::string diagnostics = slurp(log), object = slurp(so_file);
    ::unlink(c_file.c_str()), ::unlink(log.c_str()), ::unlink(so_file.c_str());
    if (status != 0 || object.empty())
      throw Error(TG_ERR_COMPILE, cat("kernel ", name, ": ", compiler.cc, " exited with ", status, ":\n", diagnostics));
    return sdk::Blob::copy_of(std::vector<char>(object.begin(), object.end()));
  }
};

}  // namespace tg::hostc

template struct tg::sdk::CompilerSlots<tg::hostc::CompilerHooks>;
