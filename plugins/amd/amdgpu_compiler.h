/* The C interface between the AMD plugin and libtg_amd_clang.so, its compiler (amdgpu_compiler.cpp), which the
   plugin opens with dlopen at its first compile, so that loading the plugin does not map LLVM. */
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { TG_AMD_CLANG_OK = 0, TG_AMD_CLANG_COMPILE = 1, TG_AMD_CLANG_INTERNAL = 2 };

/* HIP-flavoured C++ source (no headers, no device libraries) -> the bytes of an AMDGPU code object (an ELF shared
   object, .hsaco) for `arch` ("gfx1100", "gfx942") defining `kernel_name` (malloc'ed into *out, freed with
   tg_amd_clang_free). On failure returns TG_AMD_CLANG_COMPILE (the source or the link) or TG_AMD_CLANG_INTERNAL,
   with a malloc'ed message in *error. Safe to call from several threads at once. */
__attribute__((visibility("default"))) int tg_amd_clang_compile(const char* source, const char* kernel_name,
                                                                const char* arch, void** out, size_t* out_size,
                                                                char** error);
__attribute__((visibility("default"))) void tg_amd_clang_free(void* p);
/* The linker this library runs ("/usr/lib/llvm-19/bin/ld.lld"), for messages and the README. */
__attribute__((visibility("default"))) const char* tg_amd_clang_linker(void);

#define TG_AMD_CLANG_LIBRARY "libtg_amd_clang.so"

#ifdef __cplusplus
}
#endif
