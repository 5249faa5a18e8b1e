// The DSP plugin's Compiler: Hexagon C -> a static, freestanding Hexagon ELF executable. clang-19 (its hexagon
// target) compiles the kernel and ld.lld-19 links it with the mock runtime (runtime/*.c, built into this plugin as
// text and compiled once per compiler object). Both run as subprocesses, each compile in a scratch directory of its
// own that is removed when it is done: the in-process route the CPU plugin takes (libclang-cpp) would need its own
// copy of the CPU's compiler library for a second target.
#include "dsp_plugin.hpp"
#include "subprocess.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <mutex>

namespace tg::dsp {
namespace {

// The mock runtime's C source (generated from runtime/dsp_runtime.c and runtime/dsp_libcalls.c).
const char* const kRuntimeSource =
#include "dsp_runtime_source.inc"
    ;

constexpr double kToolTimeoutS = 300;  // clang on one kernel; a wedged compiler must not hang tg

}  // namespace
}  // namespace tg::dsp

struct tg_compiler_s {
  std::shared_ptr<tg::dsp::Device> device;
  std::string clang, lld;
  std::mutex runtime_mu;
  std::vector<char> runtime_object;  // the runtime compiled, on the first compile
};

namespace tg::dsp {

using sdk::cat;
using sdk::Error;

namespace {

// The flags both the kernel and the runtime compile with: no libc; no small-data section (nothing sets up the
// global pointer); math calls that never set errno (sqrt becomes __hexagon_sqrtf, which the runtime defines);
// -fwrapv for KIR's wrapping integers; -ffp-contract=off so a*b+c is never fused behind the core's back (Hexagon has
// sffma); no crash reproducers left in /tmp when clang's hexagon backend gives up on a kernel. -O1, not -O2: the
// core already unrolled and vectorized what it wanted, and -O2's full unrolling made clang take 15 s (against
// 0.15 s) on the conformance kernel of 16-lane int64 packed loads.
std::vector<std::string> compile_args(const std::string& clang, const std::string& src, const std::string& obj) {
  return {clang,
          "--target=hexagon",
          cat("-mcpu=", kArch),
          "-mhvx",
          "-mhvx-length=128b",
          "-O1",
          "-std=gnu17",
          "-ffreestanding",
          "-fwrapv",
          "-ffp-contract=off",
          "-fno-math-errno",
          "-G0",
          "-fno-color-diagnostics",
          "-fno-crash-diagnostics",
          "-c",
          src,
          "-o",
          obj};
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out.flush()) throw Error(TG_ERR_INTERNAL, cat("cannot write ", path));
}

void write_bytes(const std::string& path, const std::vector<char>& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out.flush()) throw Error(TG_ERR_INTERNAL, cat("cannot write ", path));
}

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(TG_ERR_INTERNAL, cat("cannot read ", path));
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

// Runs a tool; a failure is a TG_ERR_COMPILE naming `what` with the tool's diagnostics.
void run_tool(const std::vector<std::string>& argv, const std::string& what) {
  const ProcessResult r = run_process(argv, {}, {}, kToolTimeoutS);
  if (r.succeeded()) return;
  throw Error(TG_ERR_COMPILE,
              cat(what, ": ", argv[0], " ", r.describe(), r.stderr_text.empty() ? "" : ":\n", r.stderr_text));
}

std::string find_tool(const char* const* names, const char* debian) {
  for (const char* const* n = names; *n; ++n)
    if (std::string found = find_executable(*n); !found.empty()) return found;
  throw Error(TG_ERR_UNAVAILABLE,
              cat(names[0], " is not on PATH (Debian: ", debian, "); the DSP compiles kernels with it"));
}

// A private scratch directory, removed with everything in it when the compile is done (so nothing is left in
// TMPDIR even when the core never destroys the compiler).
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    path_ = cat(tmp && *tmp ? tmp : "/tmp", "/tg_dsp_cc_XXXXXX");
    if (::mkdtemp(path_.data()) == nullptr)
      throw Error(TG_ERR_INTERNAL, cat("cannot create a directory like ", path_, ": ", std::strerror(errno)));
  }
  ~ScratchDir() {
    for (const std::string& f : files_) ::unlink(f.c_str());
    ::rmdir(path_.c_str());
  }
  std::string file(const std::string& name) { return files_.emplace_back(path_ + "/" + name); }

 private:
  std::string path_;
  std::vector<std::string> files_;
};

void build_runtime(tg_compiler_s& c) {
  std::lock_guard lock(c.runtime_mu);
  if (!c.runtime_object.empty()) return;
  ScratchDir dir;
  const std::string src = dir.file("runtime.c"), obj = dir.file("runtime.o");
  write_text(src, kRuntimeSource);
  run_tool(compile_args(c.clang, src, obj), "compiling the DSP mock runtime");
  c.runtime_object = read_bytes(obj);
}

}  // namespace

struct CompilerHooks {
  using Compiler = tg_compiler_s;
  static constexpr std::string_view plugin = "dsp";

  static std::unique_ptr<Compiler> create(tg_device device) {
    auto c = std::make_unique<Compiler>();
    c->device = device_of(device);
    return c;
  }

  static sdk::Blob compile(Compiler& c, const char* source, const char* kernel_name) {
    static const char* const clangs[] = {"clang-19", "clang", nullptr};
    static const char* const llds[] = {"ld.lld-19", "ld.lld", nullptr};
    {
      std::lock_guard lock(c.runtime_mu);
      if (c.clang.empty()) c.clang = find_tool(clangs, "clang-19");
      if (c.lld.empty()) c.lld = find_tool(llds, "lld-19");
    }
    build_runtime(c);
    const std::string kernel = kernel_name && *kernel_name ? kernel_name : "kernel";
    ScratchDir dir;
    const std::string src = dir.file("kernel.c"), obj = dir.file("kernel.o"), rt = dir.file("runtime.o"),
                      elf = dir.file("kernel.elf");
    write_text(src, source);
    write_bytes(rt, c.runtime_object);
    run_tool(compile_args(c.clang, src, obj), cat("compiling DSP kernel ", kernel));
    run_tool({c.lld, "-static", "-nostdlib", "-G0", "-e", "_start", obj, rt, "-o", elf},
             cat("linking DSP kernel ", kernel));
    return sdk::Blob::copy_of(read_bytes(elf));
  }
};

}  // namespace tg::dsp

template struct tg::sdk::CompilerSlots<tg::dsp::CompilerHooks>;
