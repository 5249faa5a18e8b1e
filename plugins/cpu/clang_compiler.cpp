// libtg_cpu_clang.so: the CPU plugin's compiler, C source -> a loadable shared object for the host. Clang's
// frontend and LLVM's backend run in process on an in-memory file; the system linker links the object (and the
// bfloat16 helpers) into a shared object. It is its own library, opened by the plugin at its first compile, so a run whose
// kernels all come from the disk cache never maps LLVM (~90 MB of resident memory: its text and relocations).
#include "clang_compiler.h"

#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/CodeGen/CodeGenAction.h>
#include <clang/Frontend/CompilerInstance.h>
#include <clang/Frontend/CompilerInvocation.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Lex/PreprocessorOptions.h>
#include <llvm/ADT/SmallVector.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/TargetParser/Host.h>

#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace {

struct CompileError : std::runtime_error {
  int code;
  CompileError(int c, const std::string& m) : std::runtime_error(m), code(c) {}
};

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
    static const std::set<std::string> kOff = {"avx512bf16", "sse4a"};
    for (const auto& feature : llvm::sys::getHostCPUFeatures())
      features.push_back((feature.second && !kOff.count(feature.first().str()) ? "+" : "-") + feature.first().str());
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
  args.insert(args.end(),
              {"-O2", "-std=gnu17", "-ffreestanding", "-fwrapv", "-ffp-contract=off", "-mprefer-vector-width=512", "-vectorize-loops",
               "-vectorize-slp", "-mrelocation-model", "pic", "-pic-level", "2", "-emit-obj", "-x", "c", file});
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());

  // Each call has its own diagnostics, invocation, instance and LLVMContext: compiles run concurrently.
  std::string diag_text;
  llvm::raw_string_ostream diag_os(diag_text);
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> diag_opts(new clang::DiagnosticOptions());
  clang::TextDiagnosticPrinter printer(diag_os, diag_opts.get());
  clang::DiagnosticsEngine arg_diags(llvm::IntrusiveRefCntPtr<clang::DiagnosticIDs>(new clang::DiagnosticIDs()),
                                     diag_opts, &printer, /*ShouldOwnClient=*/false);
  auto invocation = std::make_shared<clang::CompilerInvocation>();
  if (!clang::CompilerInvocation::CreateFromArgs(*invocation, argv, arg_diags))
    throw CompileError(TG_CPU_CLANG_INTERNAL, "clang rejected the compile options: " + diag_os.str());
  // The preprocessor takes ownership of the remapped buffer.
  invocation->getPreprocessorOpts().addRemappedFile(file, llvm::MemoryBuffer::getMemBufferCopy(source, file).release());

  clang::CompilerInstance instance;
  instance.setInvocation(std::move(invocation));
  instance.createDiagnostics(&printer, /*ShouldOwnClient=*/false);
  instance.setVerboseOutputStream(diag_os);  // "1 error generated." joins the message, not the core's stderr
  llvm::SmallVector<char, 0> object;
  instance.setOutputStream(std::make_unique<llvm::raw_svector_ostream>(object));
  llvm::LLVMContext context;
  clang::EmitObjAction action(&context);
  const bool ok = instance.ExecuteAction(action);
  if (!ok || instance.getDiagnostics().hasErrorOccurred() || object.empty())
    throw CompileError(TG_CPU_CLANG_COMPILE, "clang cannot compile kernel " + kernel_name + ":\n" + diag_os.str());
  return std::vector<char>(object.begin(), object.end());
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

// A private scratch directory for the linker's files, removed with everything in it.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/tg_cpu_link_XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back(0);
    if (!mkdtemp(buf.data())) throw CompileError(TG_CPU_CLANG_INTERNAL, "cannot create a directory under " + templ);
    path = buf.data();
  }
  ~ScratchDir() {
    for (const char* f : {"/kernel.o", "/support.o", "/kernel.so"}) ::unlink((path + f).c_str());
    ::rmdir(path.c_str());
  }
  void write(const char* name, const std::vector<char>& bytes) const {
    std::ofstream out(path + name, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw CompileError(TG_CPU_CLANG_INTERNAL, "cannot write " + path + name + " (disk full?)");
  }
};

// GNU ld first: it starts in ~6 ms, ld.lld in ~40 (it loads libLLVM), and a link runs per compiled kernel
const std::string& linker() {
  static const std::string path = [] {
    for (const char* p : {"/usr/bin/ld.bfd", "/usr/bin/ld", "/usr/lib/llvm-19/bin/ld.lld", "/usr/bin/ld.lld-19"})
      if (::access(p, X_OK) == 0) return std::string(p);
    return std::string("ld");
  }();
  return path;
}

std::vector<char> link_shared(const std::vector<char>& object, const std::string& kernel_name) {
  static const std::vector<char> support = compile_to_object(kSupportSource, "tg_cpu_support");
  ScratchDir dir;
  dir.write("/kernel.o", object);
  dir.write("/support.o", support);
  const std::string out = dir.path + "/kernel.so", in = dir.path + "/kernel.o", sup = dir.path + "/support.o";
  std::vector<std::string> args = {linker(), "-shared", "--hash-style=gnu", "-z", "noexecstack", "-o", out, in, sup};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawnp(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0)
    throw CompileError(TG_CPU_CLANG_INTERNAL, "cannot run the linker " + linker() + " (install binutils)");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw CompileError(TG_CPU_CLANG_COMPILE, linker() + " could not link kernel " + kernel_name + " (exit status " +
                                                 std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
  std::ifstream so(out, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(so)), std::istreambuf_iterator<char>());
  if (bytes.empty()) throw CompileError(TG_CPU_CLANG_INTERNAL, "the linker wrote nothing for kernel " + kernel_name);
  return bytes;
}

char* dup_message(const std::string& m) {
  char* out = static_cast<char*>(std::malloc(m.size() + 1));
  if (out) std::memcpy(out, m.c_str(), m.size() + 1);
  return out;
}

}  // namespace

extern "C" int tg_cpu_clang_compile(const char* source, const char* kernel_name, void** out, size_t* out_size,
                                    char** error) {
  *out = nullptr, *out_size = 0, *error = nullptr;
  try {
    const std::string name = kernel_name && *kernel_name ? kernel_name : "kernel";
    std::vector<char> so = link_shared(compile_to_object(source, name), name);
    *out = std::malloc(so.size());
    if (!*out) throw CompileError(TG_CPU_CLANG_INTERNAL, "out of memory for a compiled kernel");
    std::memcpy(*out, so.data(), so.size());
    *out_size = so.size();
    return TG_CPU_CLANG_OK;
  } catch (const CompileError& e) {
    *error = dup_message(e.what());
    return e.code;
  } catch (const std::exception& e) {
    *error = dup_message(e.what());
    return TG_CPU_CLANG_INTERNAL;
  }
}

extern "C" void tg_cpu_clang_free(void* p) { std::free(p); }
