// libtg_amd_clang.so: the AMD plugin's compiler, HIP-flavoured C++ -> an AMDGPU code object (.hsaco). Clang's
// frontend and LLVM's AMDGPU backend run in process on an in-memory file (target amdgcn-amd-amdhsa, no HIP headers,
// no device libraries: the source declares what it uses); ld.lld links the object into the code object the HIP
// runtime loads. It is its own library, opened by the plugin at its first compile, so loading the plugin (or a run
// served by the disk cache) never maps LLVM.
#include "amdgpu_compiler.h"

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

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
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
    LLVMInitializeAMDGPUTargetInfo();
    LLVMInitializeAMDGPUTarget();
    LLVMInitializeAMDGPUTargetMC();
    LLVMInitializeAMDGPUAsmPrinter();
    LLVMInitializeAMDGPUAsmParser();
  });
}

// "gfx" and hex digits, optionally with target features (":xnack-"): anything else is refused before clang sees it.
bool is_arch(const std::string& arch) {
  if (arch.rfind("gfx", 0) != 0 || arch.size() < 6) return false;
  const size_t end = arch.find(':');
  for (size_t i = 3; i < (end == std::string::npos ? arch.size() : end); ++i)
    if (!std::isxdigit(static_cast<unsigned char>(arch[i]))) return false;
  return true;
}

// Why these options: -fwrapv makes integer overflow wrap (KIR's semantics); -ffp-contract=off keeps a*b+c two
// roundings, so a kernel's result does not depend on whether the core sent MULACC; no fast-math, so division and
// sqrt are the correctly rounded expansions (not v_rcp/v_sqrt's 1-ulp approximations), NaN and inf behave, and
// float16 denormals are kept (the target's default). The code object version is LLVM's
// default (5), and nothing in the source asks for the implicit (hidden) kernel arguments, so the kernarg segment
// is exactly the kernel's parameters.
std::vector<char> compile_to_object(const std::string& source, const std::string& kernel_name, const std::string& arch) {
  init_llvm();
  const std::string file = kernel_name + ".hip.cpp";
  const std::vector<std::string> args = {"-triple", "amdgcn-amd-amdhsa", "-target-cpu", arch, "-O3", "-std=c++17",
                                         "-fwrapv", "-ffp-contract=off", "-ffreestanding", "-fno-rtti",
                                         "-mrelocation-model", "pic", "-pic-level", "2", "-vectorize-loops",
                                         "-vectorize-slp", "-emit-obj", "-x", "c++", file};
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
    throw CompileError(TG_AMD_CLANG_INTERNAL, "clang rejected the compile options: " + diag_os.str());
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
    throw CompileError(TG_AMD_CLANG_COMPILE,
                       "clang cannot compile kernel " + kernel_name + " for " + arch + ":\n" + diag_os.str());
  return std::vector<char>(object.begin(), object.end());
}

// A private scratch directory for the linker's files, removed with everything in it.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/tg_amd_link_XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back(0);
    if (!mkdtemp(buf.data())) throw CompileError(TG_AMD_CLANG_INTERNAL, "cannot create a directory under " + templ);
    path = buf.data();
  }
  ~ScratchDir() {
    for (const char* f : {"/kernel.o", "/kernel.hsaco", "/ld.log"}) ::unlink((path + f).c_str());
    ::rmdir(path.c_str());
  }
  void write(const char* name, const std::vector<char>& bytes) const {
    std::ofstream out(path + name, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw CompileError(TG_AMD_CLANG_INTERNAL, "cannot write " + path + name + " (disk full?)");
  }
  std::string read(const char* name) const {
    std::ifstream in(path + name, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
};

// LLVM 19's lld: Debian's lld-19 package has the executable; liblld (in-process linking) is a -dev package we do
// not require. Only lld links AMDGPU code objects (GNU ld has no amdgcn target).
const std::string& linker() {
  static const std::string path = [] {
    for (const char* p : {"/usr/lib/llvm-19/bin/ld.lld", "/usr/bin/ld.lld-19"})
      if (::access(p, X_OK) == 0) return std::string(p);
    return std::string("ld.lld-19");
  }();
  return path;
}

// The object -> a code object: a shared object whose dynamic symbol table has the kernel and its .kd descriptor.
// --no-undefined: a call the backend could not lower (a libm function, say) fails here with its name.
std::vector<char> link_code_object(const std::vector<char>& object, const std::string& kernel_name) {
  ScratchDir dir;
  dir.write("/kernel.o", object);
  const std::string out = dir.path + "/kernel.hsaco", in = dir.path + "/kernel.o", log = dir.path + "/ld.log";
  std::vector<std::string> args = {linker(), "-shared", "--no-undefined", "-o", out, in};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    throw CompileError(TG_AMD_CLANG_INTERNAL, "cannot run the linker " + linker() + " (install lld-19): " +
                                                  std::strerror(spawned));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw CompileError(TG_AMD_CLANG_COMPILE, linker() + " cannot link kernel " + kernel_name + " (exit status " +
                                                 std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
                                                 "):\n" + dir.read("/ld.log"));
  const std::string bytes = dir.read("/kernel.hsaco");
  if (bytes.empty()) throw CompileError(TG_AMD_CLANG_INTERNAL, "the linker wrote nothing for kernel " + kernel_name);
  return std::vector<char>(bytes.begin(), bytes.end());
}

char* dup_message(const std::string& m) {
  char* out = static_cast<char*>(std::malloc(m.size() + 1));
  if (out) std::memcpy(out, m.c_str(), m.size() + 1);
  return out;
}

}  // namespace

extern "C" int tg_amd_clang_compile(const char* source, const char* kernel_name, const char* arch, void** out,
                                    size_t* out_size, char** error) {
  *out = nullptr, *out_size = 0, *error = nullptr;
  try {
    const std::string name = kernel_name && *kernel_name ? kernel_name : "kernel";
    const std::string target = arch ? arch : "";
    if (!is_arch(target))
      throw CompileError(TG_AMD_CLANG_INTERNAL, "'" + target + "' is not an AMDGPU arch like gfx1100 or gfx942");
    std::vector<char> code = link_code_object(compile_to_object(source, name, target), name);
    *out = std::malloc(code.size());
    if (!*out) throw CompileError(TG_AMD_CLANG_INTERNAL, "out of memory for a compiled kernel");
    std::memcpy(*out, code.data(), code.size());
    *out_size = code.size();
    return TG_AMD_CLANG_OK;
  } catch (const CompileError& e) {
    *error = dup_message(e.what());
    return e.code;
  } catch (const std::exception& e) {
    *error = dup_message(e.what());
    return TG_AMD_CLANG_INTERNAL;
  }
}

extern "C" void tg_amd_clang_free(void* p) { std::free(p); }

extern "C" const char* tg_amd_clang_linker(void) { return linker().c_str(); }
