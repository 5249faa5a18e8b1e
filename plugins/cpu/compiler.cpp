// The CPU plugin's Compiler: C source -> a native ELF object for the host. Clang's frontend and LLVM's backend
// run in this process on an in-memory file, with no subprocess and no temporary file.
#include "cpu_plugin.hpp"

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

#include <algorithm>
#include <cstdlib>
#include <cstring>

struct tg_compiler_s {
  std::shared_ptr<tg::cpu::Device> device;
};

namespace tg::cpu {

using sdk::cat;
using sdk::Error;

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    llvm::InitializeNativeTargetAsmParser();
  });
}

namespace {

// The host as clang -cc1 options spell it (triple, CPU, every feature on or off), computed once.
const std::vector<std::string>& host_target_args() {
  static const std::vector<std::string> args = [] {
    std::vector<std::string> out = {"-triple", llvm::sys::getProcessTriple(), "-target-cpu",
                                    llvm::sys::getHostCPUName().str()};
    std::vector<std::string> features;
    // AVX512_BF16 stays off: LLVM 19's instruction selection loops forever (and grows without bound) on a
    // store of a bfloat16 value with it on, seen on Sapphire Rapids VMs; bf16 arithmetic is done in float anyway
    for (const auto& feature : llvm::sys::getHostCPUFeatures())
      features.push_back((feature.second && feature.first() != "avx512bf16" ? "+" : "-") + feature.first().str());
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
    throw Error(TG_ERR_INTERNAL, cat("clang rejected the compile options: ", diag_os.str()));
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
    throw Error(TG_ERR_COMPILE, cat("clang cannot compile kernel ", kernel_name, ":\n", diag_os.str()));
  return std::vector<char>(object.begin(), object.end());
}

}  // namespace

// The compiler slots' hooks (tg/sdk/plugin_slots.hpp).
struct CompilerHooks {
  using Compiler = tg_compiler_s;
  static constexpr std::string_view plugin = "cpu";

  static std::unique_ptr<Compiler> create(tg_device device) {
    return std::unique_ptr<Compiler>(new Compiler{device_of(device)});
  }
  static sdk::Blob compile(Compiler& /*compiler*/, const char* source, const char* kernel_name) {
    return sdk::Blob::copy_of(compile_to_object(source, kernel_name && *kernel_name ? kernel_name : "kernel"));
  }
};

}  // namespace tg::cpu

template struct tg::sdk::CompilerSlots<tg::cpu::CompilerHooks>;
