// libtg_amd_clang.so: the AMD plugin's compiler, HIP-flavoured C++ -> an AMDGPU code object (.hsaco). Clang's
// frontend and LLVM's AMDGPU backend run in process on an in-memory file (target amdgcn-amd-amdhsa, no HIP headers,
// no device libraries: the source declares what it uses); ld.lld links the object into the code object the HIP
// runtime loads. It is its own library, opened by the plugin at its first compile, so loading the plugin (or a run
// served by the disk cache) never maps LLVM.
#include "amdgpu_compiler.h"

#include "../common/in_process_clang.hpp"

#include <llvm/Support/TargetSelect.h>

#include <cctype>
#include <mutex>
#include <string>
#include <vector>

namespace {

namespace cip = tg::plugins::clang_in_process;
static_assert(TG_AMD_CLANG_OK == cip::kOk && TG_AMD_CLANG_COMPILE == cip::kCompileFailed &&
              TG_AMD_CLANG_INTERNAL == cip::kInternal);

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
std::vector<char> compile_to_object(const std::string& source, const std::string& kernel_name,
                                    const std::string& arch) {
  init_llvm();
  const std::string file = kernel_name + ".hip.cpp";
  const std::vector<std::string> args = {"-triple",
                                         "amdgcn-amd-amdhsa",
                                         "-target-cpu",
                                         arch,
                                         "-O3",
                                         "-std=c++17",
                                         "-fwrapv",
                                         "-ffp-contract=off",
                                         "-ffreestanding",
                                         "-fno-rtti",
                                         "-mrelocation-model",
                                         "pic",
                                         "-pic-level",
                                         "2",
                                         "-vectorize-loops",
                                         "-vectorize-slp",
                                         "-emit-obj",
                                         "-x",
                                         "c++",
                                         file};
  return cip::compile_to_object(args, file, source, "kernel " + kernel_name + " for " + arch);
}

// LLVM 19's lld: Debian's lld-19 package has the executable; liblld (in-process linking) is a -dev package we do
// not require. Only lld links AMDGPU code objects (GNU ld has no amdgcn target).
const std::string& linker() {
  static const std::string path = cip::find_linker({"/usr/lib/llvm-19/bin/ld.lld", "/usr/bin/ld.lld-19"}, "ld.lld-19");
  return path;
}

// The object -> a code object: a shared object whose dynamic symbol table has the kernel and its .kd descriptor.
// --no-undefined: a call the backend could not lower (a libm function, say) fails here with its name.
std::vector<char> link_code_object(const std::vector<char>& object, const std::string& kernel_name) {
  cip::ScratchDir dir("tg_amd_link_");
  dir.write("kernel.o", object);
  return cip::run_linker(dir,
                         {linker(), "-shared", "--no-undefined", "-o", dir.file("kernel.hsaco"), dir.file("kernel.o")},
                         "kernel.hsaco", kernel_name, "lld-19");
}

}  // namespace

extern "C" int tg_amd_clang_compile(const char* source, const char* kernel_name, const char* arch, void** out,
                                    size_t* out_size, char** error) {
  return cip::c_entry(
      [&] {
        const std::string name = kernel_name && *kernel_name ? kernel_name : "kernel";
        const std::string target = arch ? arch : "";
        if (!is_arch(target))
          throw cip::CompileError(cip::kInternal, "'" + target + "' is not an AMDGPU arch like gfx1100 or gfx942");
        return link_code_object(compile_to_object(source, name, target), name);
      },
      out, out_size, error);
}

extern "C" void tg_amd_clang_free(void* p) { std::free(p); }

extern "C" const char* tg_amd_clang_linker(void) { return linker().c_str(); }
