// The error battery: source the compiler must refuse (a rendered kernel with garbage appended, and garbage
// alone) comes back as TG_ERR_COMPILE with the compiler's message; malformed KIR and a bogus program blob come
// back as statuses, never as a crash.
#include "harness.hpp"

namespace tg::conformance {
namespace {

// out[0] = in[0] + 1 in whatever dtype the renderer computes in: the smallest valid kernel to corrupt.
struct ValidKernel {
  Kir kir;
  tg_kir_kernel kernel;
  std::string source;
  ValidKernel() {
    const Session& s = session();
    const uint32_t d = s.claims_op(TG_DTYPE_INT32, TG_KIR_ADD) ? TG_DTYPE_INT32 : TG_DTYPE_FLOAT32;
    if (!s.claims_op(d, TG_KIR_ADD)) throw Skip("the renderer claims ADD on neither int32 nor float32");
    const int out = kir.buffer(d, true), in = kir.buffer(d);
    const int zero = kir.i32(0);
    kir.store(out, zero, kir.alu(TG_KIR_ADD, d, {kir.load(d, in, zero), kir.constant(d, 1)}));
    kernel = kir.kernel("conf_to_corrupt");
    const char* text = nullptr;
    TGC_OK(api().renderer_render(s.renderer, &kernel, &text));
    expect(text != nullptr, "renderer_render returned success but no source");
    source = text;
  }
};

// Compiles `source`; returns the status and frees any blob.
Status compile(const std::string& source, const char* name) {
  void* blob = nullptr;
  size_t size = 0;
  const Status s = TGC_STATUS(api().compiler_compile(session().compiler, source.c_str(), name, &blob, &size));
  if (blob != nullptr) api().blob_free(blob);
  return s;
}

void corrupted_source_is_a_compile_error() {
  ValidKernel valid;
  const Status ok = compile(valid.source, "conf_to_corrupt");
  if (!ok.ok())
    throw Failure(cat("compiler_compile refused the renderer's own source with ", code_name(ok.code), ": ", ok.message,
                      "\n", dump_kir(valid.kernel), "rendered source:\n", excerpt(valid.source)));
  // Garbage after the kernel (an unbalanced brace and tokens no language accepts) must not be ignored.
  const std::string corrupted = valid.source + "\n} @@ tg-conformance corrupted this source ` $$ {\n";
  const Status s = compile(corrupted, "conf_to_corrupt");
  const std::string context =
      cat("\n", dump_kir(valid.kernel), "source given to compiler_compile:\n", excerpt(corrupted));
  if (s.code != TG_ERR_COMPILE)
    throw Failure(cat("compiler_compile of the rendered source with garbage appended returned ", code_name(s.code),
                      s.message.empty() ? "" : ": " + s.message, "; expected TG_ERR_COMPILE", context));
  expect(!s.message.empty(),
         "compiler_compile returned TG_ERR_COMPILE with an empty message; the message should "
         "carry the compiler's diagnostics" +
             context);
}

void garbage_source_is_a_compile_error() {
  session();
  const std::string garbage = "this is not a kernel \x01\x02 {{{ ))) @@ ;;;";
  const Status s = compile(garbage, "conf_garbage");
  expect(s.code == TG_ERR_COMPILE,
         cat("compiler_compile(\"", "this is not a kernel ...", "\") returned ", code_name(s.code),
             s.message.empty() ? "" : ": " + s.message, "; expected TG_ERR_COMPILE"));
  expect(!s.message.empty(), "compiler_compile of garbage returned TG_ERR_COMPILE with an empty message");
}

// An empty source has no kernel in it: the compiler may refuse it (TG_ERR_COMPILE), or leave that to
// program_create, which cannot find the kernel; either way it must never become a program.
void empty_source_makes_no_program() {
  const Session& s = session();
  void* blob = nullptr;
  size_t size = 0;
  const Status compiled = TGC_STATUS(api().compiler_compile(s.compiler, "", "conf_empty", &blob, &size));
  if (!compiled.ok()) {
    expect(compiled.code == TG_ERR_COMPILE, cat("compiler_compile(\"\") returned ", code_name(compiled.code), ": ",
                                                compiled.message, "; expected TG_ERR_COMPILE"));
    return;
  }
  tg_program program = nullptr;
  const Status loaded = TGC_STATUS(api().program_create(s.device, blob, size, "conf_empty", nullptr, 0, &program));
  api().blob_free(blob);
  if (loaded.ok() && program != nullptr) api().program_destroy(program);
  expect(!loaded.ok(), "compiler_compile(\"\") succeeded and program_create found a kernel conf_empty in its blob");
}

// KIR whose STORE names an instruction that does not exist: the renderer must say so, not read past the array.
void malformed_kir_is_refused() {
  const Session& s = session();
  Kir k;
  const int out = k.buffer(TG_DTYPE_INT32, true);
  k.op(TG_KIR_STORE, TG_DTYPE_INT32, {out, k.i32(0), 99});
  const tg_kir_kernel kernel = k.kernel("conf_malformed");
  const char* source = nullptr;
  const Status st = TGC_STATUS(api().renderer_render(s.renderer, &kernel, &source));
  expect(st.code == TG_ERR_INVALID_ARGUMENT,
         cat("renderer_render of KIR whose inst 2 uses operand %99 (there are 3 instructions) returned ",
             code_name(st.code), st.message.empty() ? "" : ": " + st.message, "; expected TG_ERR_INVALID_ARGUMENT\n",
             dump_kir(kernel)));
}

void bogus_blob_is_refused() {
  const Session& s = session();
  const unsigned char blob[64] = {'n', 'o', 't', ' ', 'a', ' ', 'b', 'l', 'o', 'b'};
  const tg_kir_param param{TG_PARAM_BUFFER, TG_DTYPE_INT32, 1, 0, "data0"};
  tg_program program = nullptr;
  const Status st = TGC_STATUS(api().program_create(s.device, blob, sizeof blob, "conf_bogus", &param, 1, &program));
  if (st.ok() && program != nullptr) api().program_destroy(program);
  expect(!st.ok(), "program_create accepted 64 bytes that no compiler produced");
  expect(!st.message.empty(), cat("program_create refused a bogus blob with ", code_name(st.code), " but no message"));
}

}  // namespace

void add_compile_tests(Tests& tests) {
  tests.push_back({"errors.corrupted_source_is_a_compile_error", Tier::Core, corrupted_source_is_a_compile_error});
  tests.push_back({"errors.garbage_source_is_a_compile_error", Tier::Core, garbage_source_is_a_compile_error});
  tests.push_back({"errors.empty_source_makes_no_program", Tier::Core, empty_source_makes_no_program});
  tests.push_back({"errors.malformed_kir_is_refused", Tier::Core, malformed_kir_is_refused});
  tests.push_back({"errors.bogus_blob_is_refused", Tier::Core, bogus_blob_is_refused});
}

}  // namespace tg::conformance
