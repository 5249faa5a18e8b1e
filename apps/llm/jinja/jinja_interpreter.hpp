// Jinja interpreter: walks a parsed template with a context of variables and writes the rendered text.
#pragma once

#include <cstdint>
#include <string>

#include "jinja/jinja_ast.hpp"

namespace tg::llm::jinja {

// Bounds that keep a hostile template from hanging the process or exhausting its memory or stack.
struct RenderLimits {
  size_t max_output_bytes = size_t{64} << 20;  // also the largest string a template may build
  // An expression evaluated or a statement run counts 1, a loop iteration 4; work inside a step counts too:
  // 1 per value copied, compared or printed, per 64 bytes of string read or built, per 8 names scanned.
  int64_t max_steps = 10'000'000;
  int max_call_depth = 32;  // nested macro calls
  // Expressions and blocks being evaluated at once, counted through macro calls: it bounds the interpreter's
  // stack (a few KiB a level under ASan), where the parser's limit bounds one template's tree only.
  int max_nesting = 500;
};

// Throws tg::Error naming an unknown filter or test in `program`, at its line:column (jinja2 rejects
// those when it compiles a template, before rendering anything).
void check_names(const Body& program);

// Renders `program`; `context` must be a dict. Besides the context, templates see transformers' globals
// raise_exception(msg) and strftime_now(fmt), and jinja2's namespace(), range() and dict().
// Errors are tg::Error "chat template:LINE:COL: ...".
std::string render_program(const Body& program, const Value& context, const RenderLimits& limits);

}  // namespace tg::llm::jinja
