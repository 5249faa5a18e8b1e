// In-process clang for the plugins' compiler libraries (libtg_cpu_clang.so, libtg_amd_clang.so): one source text ->
// an object file through clang's frontend and LLVM's backend, a private scratch directory, a linker run, and the
// C entry point's error convention. Header-only and here rather than in the SDK because it needs LLVM's and clang's
// headers (the SDK's are plain C++), and each compiler library is its own shared object that includes it once.
#pragma once

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
#include <llvm/Support/raw_ostream.h>

#include <dirent.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace tg::plugins::clang_in_process {

// The C entry points' return codes, the same in every compiler library (each names them in its own header).
inline constexpr int kOk = 0, kCompileFailed = 1, kInternal = 2;

struct CompileError : std::runtime_error {
  int code;
  CompileError(int c, const std::string& m) : std::runtime_error(m), code(c) {}
};

// `source` compiled by clang -cc1 with `cc1_args` (which name `file` as the input) into an object file. `what`
// names the kernel in messages ("kernel E_4", "kernel E_4 for gfx1100"). Each call has its own diagnostics,
// invocation, instance and LLVMContext, so compiles run concurrently.
inline std::vector<char> compile_to_object(const std::vector<std::string>& cc1_args, const std::string& file,
                                           const std::string& source, const std::string& what) {
  std::vector<const char*> argv;
  for (const std::string& arg : cc1_args) argv.push_back(arg.c_str());
  std::string diag_text;
  llvm::raw_string_ostream diag_os(diag_text);
  llvm::IntrusiveRefCntPtr<clang::DiagnosticOptions> diag_opts(new clang::DiagnosticOptions());
  clang::TextDiagnosticPrinter printer(diag_os, diag_opts.get());
  clang::DiagnosticsEngine arg_diags(llvm::IntrusiveRefCntPtr<clang::DiagnosticIDs>(new clang::DiagnosticIDs()),
                                     diag_opts, &printer, /*ShouldOwnClient=*/false);
  auto invocation = std::make_shared<clang::CompilerInvocation>();
  if (!clang::CompilerInvocation::CreateFromArgs(*invocation, argv, arg_diags))
    throw CompileError(kInternal, "clang rejected the compile options: " + diag_os.str());
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
    throw CompileError(kCompileFailed, "clang cannot compile " + what + ":\n" + diag_os.str());
  return std::vector<char>(object.begin(), object.end());
}

// A private scratch directory under $TMPDIR (or /tmp) named `prefix`XXXXXX, removed with everything in it.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& prefix) {
    const char* tmp = std::getenv("TMPDIR");
    const std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + prefix + "XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back(0);
    if (!mkdtemp(buf.data())) throw CompileError(kInternal, "cannot create a directory under " + templ);
    path_ = buf.data();
  }
  ~ScratchDir() {
    if (DIR* dir = ::opendir(path_.c_str())) {
      while (const dirent* entry = ::readdir(dir))
        if (std::strcmp(entry->d_name, ".") != 0 && std::strcmp(entry->d_name, "..") != 0)
          ::unlink((path_ + "/" + entry->d_name).c_str());
      ::closedir(dir);
    }
    ::rmdir(path_.c_str());
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  // The path of `name` ("kernel.o") in the directory.
  std::string file(const std::string& name) const { return path_ + "/" + name; }
  void write(const std::string& name, const std::vector<char>& bytes) const {
    std::ofstream out(file(name), std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw CompileError(kInternal, "cannot write " + file(name) + " (disk full?)");
  }
  std::vector<char> read(const std::string& name) const {
    std::ifstream in(file(name), std::ios::binary);
    return std::vector<char>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

 private:
  std::string path_;
};

// The first of `candidates` that is executable, else `fallback` (looked up on PATH when run).
inline std::string find_linker(std::initializer_list<const char*> candidates, const char* fallback) {
  for (const char* p : candidates)
    if (::access(p, X_OK) == 0) return p;
  return fallback;
}

// Runs the linker `args[0]` with `args` in `dir`, its stdout and stderr into the directory's ld.log, and reads
// `output` back. A linker that cannot start is kInternal (`install` says which package has it); one that fails
// is kCompileFailed with its log, naming `kernel_name`.
inline std::vector<char> run_linker(const ScratchDir& dir, std::vector<std::string> args, const std::string& output,
                                    const std::string& kernel_name, const std::string& install) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log = dir.file("ld.log");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    throw CompileError(kInternal,
                       "cannot run the linker " + args[0] + " (install " + install + "): " + std::strerror(spawned));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    const std::vector<char> text = dir.read("ld.log");
    throw CompileError(kCompileFailed, args[0] + " cannot link kernel " + kernel_name + " (exit status " +
                                           std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")" +
                                           (text.empty() ? "" : ":\n" + std::string(text.begin(), text.end())));
  }
  std::vector<char> bytes = dir.read(output);
  if (bytes.empty()) throw CompileError(kInternal, "the linker wrote nothing for kernel " + kernel_name);
  return bytes;
}

// The body of a C entry point: `make` returns the bytes, copied into malloc'ed *out; an exception becomes its code
// and a malloc'ed message in *error.
template <class Make>
int c_entry(Make&& make, void** out, size_t* out_size, char** error) noexcept {
  *out = nullptr, *out_size = 0, *error = nullptr;
  const auto dup_message = [](const std::string& m) {
    char* copy = static_cast<char*>(std::malloc(m.size() + 1));
    if (copy) std::memcpy(copy, m.c_str(), m.size() + 1);
    return copy;
  };
  try {
    const std::vector<char> bytes = make();
    *out = std::malloc(bytes.size());
    if (!*out) throw CompileError(kInternal, "out of memory for a compiled kernel");
    std::memcpy(*out, bytes.data(), bytes.size());
    *out_size = bytes.size();
    return kOk;
  } catch (const CompileError& e) {
    *error = dup_message(e.what());
    return e.code;
  } catch (const std::exception& e) {
    *error = dup_message(e.what());
    return kInternal;
  }
}

}  // namespace tg::plugins::clang_in_process
