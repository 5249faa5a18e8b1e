/* The C interface between the CPU plugin and libtg_cpu_clang.so, its compiler (clang_compiler.cpp), which the
   plugin opens with dlopen at its first compile. */
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { TG_CPU_CLANG_OK = 0, TG_CPU_CLANG_COMPILE = 1, TG_CPU_CLANG_INTERNAL = 2 };

/* C source -> the bytes of a shared object defining `kernel_name` (malloc'ed into *out, freed with
   tg_cpu_clang_free). On failure returns TG_CPU_CLANG_COMPILE (the source or the link) or TG_CPU_CLANG_INTERNAL,
   with a malloc'ed message in *error. Safe to call from several threads at once. */
__attribute__((visibility("default"))) int tg_cpu_clang_compile(const char* source, const char* kernel_name, void** out,
                                                                size_t* out_size, char** error);
__attribute__((visibility("default"))) void tg_cpu_clang_free(void* p);

#define TG_CPU_CLANG_LIBRARY "libtg_cpu_clang.so"

#ifdef __cplusplus
}
#endif
