// libtg_cpu_clang.so: the CPU plugin's compiler, C source -> a loadable shared object for the host. Clang's
// frontend and LLVM's backend run in process on an in-memory file; the system linker links the object (and the
// bfloat16 helpers) into a shared object. It is its own library, opened by the plugin at its first compile, so a run
// whose kernels all come from the disk cache never maps LLVM (~90 MB of resident memory: its text and relocations).
#include "clang_compiler.h"

#include "../common/in_process_clang.hpp"

#include <llvm/Support/TargetSelect.h>
#include <llvm/TargetParser/Host.h>

#include <algorithm>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

namespace cip = tg::plugins::clang_in_process;
static_assert(TG_CPU_CLANG_OK == cip::kOk && TG_CPU_CLANG_COMPILE == cip::kCompileFailed &&
              TG_CPU_CLANG_INTERNAL == cip::kInternal);

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

// The host as clang -cc1 options spell it (triple, CPU, every feature on or off), computed once.
const std::vector<std::string>& host_target_args() {
  static const std::vector<std::string> args = [] {
    std::vector<std::string> out = {"-triple", llvm::sys::getProcessTriple(), "-target-cpu",
                                    llvm::sys::getHostCPUName().str()};
    std::vector<std::string> features;
    // AVX512_BF16 stays off: LLVM 19's instruction selection loops forever (and grows without bound) on a
    // store of a bfloat16 value with it on, seen on Sapphire Rapids VMs; bf16 arithmetic is done in float anyway.
    // SSE4A stays off: LLVM builds byte shuffles with AMD's INSERTQ/EXTRQ, which ran a Q4_K dot product 4x
    // slower on our Zen 3 VMs (1.38 against 0.28 ms); AVX2 shuffles do the same work.
    // AVX10.1-256 stays off where AVX-512 is on: VMs that report it beside AVX-512 made clang warn "invalid feature
    // combination: +avx10.1-256; will be promoted to avx10.1-512" in every compile (and in every compile error a
    // user saw); the AVX-512 features it stands for are on by their own names.
    const llvm::StringMap<bool> host = llvm::sys::getHostCPUFeatures();
    std::set<std::string> off = {"avx512bf16", "sse4a"};
    if (host.lookup("avx512f")) off.insert("avx10.1-256");
    for (const auto& feature : host)
      features.push_back((feature.second && !off.count(feature.first().str()) ? "+" : "-") + feature.first().str());
    std::sort(features.begin(), features.end());  // StringMap order is unspecified; keep the command stable
    for (const std::string& feature : features) {
      out.push_back("-target-feature");
      out.push_back(feature);
    }
    return out;
  }();
  return args;
}

// Why these options: -fwrapv makes integer overflow wrap (KIR's semantics); -ffp-contract=off keeps a*b+c two
// roundings, so a kernel's result does not depend on whether the core sent MULACC or MUL then ADD; no fast-math
// (NaN and inf must behave); math-errno is off by default in -cc1, so __builtin_sqrtf is one instruction; PIC
// lets JITLink place the code anywhere relative to libm. -O2 in -cc1 does not imply the vectorizers: ask.
// -mprefer-vector-width=512: LLVM tunes Skylake-X and later for 256-bit vectors and then splits the renderer's
// 64-byte vectors in two, which doubles a register tile's accumulators past the 32 registers and spills them.
std::vector<char> compile_to_object(const std::string& source, const std::string& kernel_name) {
  init_llvm();
  const std::string file = kernel_name + ".c";
  std::vector<std::string> args = host_target_args();
  args.insert(args.end(), {"-O2", "-std=gnu17", "-ffreestanding", "-fwrapv", "-ffp-contract=off",
                           "-mprefer-vector-width=512", "-vectorize-loops", "-vectorize-slp", "-mrelocation-model",
                           "pic", "-pic-level", "2", "-emit-obj", "-x", "c", file});
  return cip::compile_to_object(args, file, source, "kernel " + kernel_name);
}

// Float -> bfloat16 conversions LLVM calls as libcalls (AVX512_BF16 is off: see host_target_args), rounding to
// nearest even with NaNs kept quiet; linked into every kernel (hidden), so a kernel needs nothing from the plugin.
// The x86-64 ABI returns a bfloat16 in the low 16 bits of xmm0, as it returns a float.
constexpr const char* kSupportSource = R"(
typedef unsigned int u32;
typedef unsigned short u16;
static u16 bf16_bits(u32 u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return (u16)((u >> 16) | 0x40u);
  return (u16)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
static float as_bf16_return(u16 b) { u32 u = b; float r; __builtin_memcpy(&r, &u, 4); return r; }
__attribute__((visibility("hidden"))) float __truncsfbf2(float f) {
  u32 u; __builtin_memcpy(&u, &f, 4); return as_bf16_return(bf16_bits(u));
}
/* double -> float rounded to odd (truncate, then set the last bit when inexact) keeps the rounding to bfloat16
   that follows exact: one rounding, not two */
__attribute__((visibility("hidden"))) float __truncdfbf2(double d) {
  float f = (float)d;
  int finite = __builtin_isfinite(f);
  if (finite && __builtin_fabs((double)f) > __builtin_fabs(d)) f = __builtin_nextafterf(f, 0.0f);
  u32 u; __builtin_memcpy(&u, &f, 4);
  if (finite && (double)f != d) u |= 1u;
  return as_bf16_return(bf16_bits(u));
}
)";

// GNU ld first: it starts in ~6 ms, ld.lld in ~40 (it loads libLLVM), and a link runs per compiled kernel
const std::string& linker() {
  static const std::string path =
      cip::find_linker({"/usr/bin/ld.bfd", "/usr/bin/ld", "/usr/lib/llvm-19/bin/ld.lld", "/usr/bin/ld.lld-19"}, "ld");
  return path;
}

std::vector<char> link_shared(const std::vector<char>& object, const std::string& kernel_name) {
  static const std::vector<char> support = compile_to_object(kSupportSource, "tg_cpu_support");
  cip::ScratchDir dir("tg_cpu_link_");
  dir.write("kernel.o", object);
  dir.write("support.o", support);
  return cip::run_linker(dir,
                         {linker(), "-shared", "--hash-style=gnu", "-z", "noexecstack", "-o", dir.file("kernel.so"),
                          dir.file("kernel.o"), dir.file("support.o")},
                         "kernel.so", kernel_name, "binutils");
}

}  // namespace

extern "C" int tg_cpu_clang_compile(const char* source, const char* kernel_name, void** out, size_t* out_size,
                                    char** error) {
  return cip::c_entry(
      [&] {
        const std::string name = kernel_name && *kernel_name ? kernel_name : "kernel";
        return link_shared(compile_to_object(source, name), name);
      },
      out, out_size, error);
}

extern "C" void tg_cpu_clang_free(void* p) { std::free(p); }
