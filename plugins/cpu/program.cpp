// The CPU plugin's Program: loads a compiled object into the in-process ORC JIT, one JITDylib per program (so
// equal kernel names never clash and destroying the program frees its code), and finds the kernel's entry.
#include "cpu_plugin.hpp"

#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/Support/Error.h>
#include <llvm/Support/MemoryBuffer.h>

#include <atomic>
#include <cmath>
#include <cstring>

namespace tg::cpu {

using sdk::cat;
using sdk::Error;

// One LLJIT per device; programs are JITDylibs inside it.
struct Jit {
  std::unique_ptr<llvm::orc::LLJIT> lljit;
  std::atomic<uint64_t> next_id{0};  // JITDylib names must be unique
};

namespace {

// Float -> bfloat16 conversions the kernel compiler calls as libcalls (AVX512_BF16 is off: see compiler.cpp),
// rounding to nearest even with NaNs kept quiet. The x86-64 ABI returns a bfloat16 in the low 16 bits of xmm0,
// as it returns a float, so a float whose low bits hold the result is the same value to the caller.
uint16_t bf16_bits(uint32_t u) {
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
float as_bf16_return(uint16_t b) {
  uint32_t u = b;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}
extern "C" float tg_truncsfbf2(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return as_bf16_return(bf16_bits(u));
}
extern "C" float tg_truncdfbf2(double d) {
  // double -> float rounded to odd (truncate, then set the last bit when inexact) keeps the rounding to
  // bfloat16 that follows exact: one rounding, not two
  float f = static_cast<float>(d);
  if (std::isfinite(f) && std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (std::isfinite(f) && static_cast<double>(f) != d) u |= 1u;
  return as_bf16_return(bf16_bits(u));
}


[[noreturn]] void fail(tg_status_code code, const std::string& what, llvm::Error error) {
  throw Error(code, cat(what, ": ", llvm::toString(std::move(error))));
}

std::shared_ptr<Jit> jit_of(Device& device) {
  std::lock_guard lock(device.jit_mutex);
  if (device.jit) return device.jit;
  init_llvm();
  auto lljit = llvm::orc::LLJITBuilder().create();
  if (!lljit) fail(TG_ERR_UNAVAILABLE, "cannot start the LLVM JIT", lljit.takeError());
  auto jit = std::make_shared<Jit>();
  jit->lljit = std::move(*lljit);
  device.jit = jit;
  return jit;
}

}  // namespace

Program::~Program() {
  if (dylib == nullptr) return;
  auto& session = jit->lljit->getExecutionSession();
  llvm::consumeError(session.removeJITDylib(*static_cast<llvm::orc::JITDylib*>(dylib)));
}

std::shared_ptr<Program> program_of(tg_program program) { return sdk::require(program, "program")->program; }

tg_status_t program_create(tg_device device, const void* blob, size_t size, const char* kernel_name,
                           const tg_kir_param* params, uint32_t nparams, tg_program* out_program) {
  return sdk::guard("cpu program_create", [&] {
    sdk::require(out_program, "out_program");
    sdk::require(blob, "blob");
    sdk::require(kernel_name, "kernel_name");
    if (nparams != 0) sdk::require(params, "params");
    auto program = std::make_shared<Program>();
    program->device = device_of(device);
    program->kernel_name = kernel_name;

    // Keep a copy of the signature: the exec blob's size is checked against its layout.
    for (uint32_t p = 0; p < nparams; ++p) {
      if (params[p].kind > TG_PARAM_VAR || params[p].dtype >= TG_DTYPE_COUNT)
        throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", kernel_name, ": parameter ", p, " has kind ",
                                                 params[p].kind, " and dtype ", params[p].dtype));
      program->param_names.push_back(params[p].name ? params[p].name : "");
      program->params.push_back(params[p]);
    }
    for (uint32_t p = 0; p < nparams; ++p) program->params[p].name = program->param_names[p].c_str();
    std::vector<size_t> offsets(nparams);
    program->args_size = tg_param_layout(program->params.data(), nparams, offsets.data());

    program->jit = jit_of(*program->device);
    llvm::orc::LLJIT& lljit = *program->jit->lljit;
    auto dylib = lljit.createJITDylib(cat("tg_program_", program->jit->next_id++, "_", kernel_name));
    if (!dylib) fail(TG_ERR_INTERNAL, "cannot create a JITDylib", dylib.takeError());
    program->dylib = &*dylib;
    // libm (exp2f, sinf, ...) and libc (memset, memcpy) come from this process.
    auto process =
        llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(lljit.getDataLayout().getGlobalPrefix());
    if (!process) fail(TG_ERR_INTERNAL, "cannot search this process for symbols", process.takeError());
    dylib->addGenerator(std::move(*process));
    llvm::orc::SymbolMap runtime;
    runtime[lljit.mangleAndIntern("__truncsfbf2")] = {llvm::orc::ExecutorAddr::fromPtr(&tg_truncsfbf2), llvm::JITSymbolFlags::Exported};
    runtime[lljit.mangleAndIntern("__truncdfbf2")] = {llvm::orc::ExecutorAddr::fromPtr(&tg_truncdfbf2), llvm::JITSymbolFlags::Exported};
    if (llvm::Error error = dylib->define(llvm::orc::absoluteSymbols(std::move(runtime))))
      fail(TG_ERR_INTERNAL, "cannot define the bfloat16 conversion helpers", std::move(error));

    auto object =
        llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(static_cast<const char*>(blob), size), kernel_name);
    if (llvm::Error error = lljit.addObjectFile(*dylib, std::move(object)))
      fail(TG_ERR_INVALID_ARGUMENT, cat("the blob for kernel ", kernel_name, " is not a loadable object"),
           std::move(error));
    auto entry = lljit.lookup(*dylib, kernel_name);  // links the object: unresolved symbols fail here
    if (!entry) fail(TG_ERR_INVALID_ARGUMENT, cat("cannot load kernel ", kernel_name), entry.takeError());
    program->fn = entry->toPtr<KernelFn>();
    *out_program = new tg_program_s{std::move(program)};
  });
}

void program_destroy(tg_program program) {
  sdk::guard_void("cpu program_destroy", [&] { delete program; });
}

}  // namespace tg::cpu
