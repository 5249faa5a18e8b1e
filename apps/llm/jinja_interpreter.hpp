// Jinja interpreter: walks a parsed template with a context of variables and writes the rendered text.
#pragma once

#include <cstdint>
#include <string>

#include "jinja_ast.hpp"

namespace tg::llm::jinja {

// Bounds that keep a hostile template from hanging the process or exhausting its memory or stack.
struct RenderLimits {
  size_t max_output_bytes = size_t{64} << 20;  // also the largest string a template may build
  int64_t max_steps = 10'000'000;              // expression evaluations and statements; a loop iteration counts 4
  int max_call_depth = 32;                     // nested macro calls
};

// Throws tg::Error naming an unknown filter or test in `program`, at its line:column (jinja2 rejects
// those when it compiles a template, before rendering anything).
void check_names(const Body& program);

// Renders `program`; `context` must be a dict. Besides the context, templates see transformers' globals
// raise_exception(msg) and strftime_now(fmt), and jinja2's namespace(), range() and dict().
// Errors are tg::Error "chat template:LINE:COL: ...".
std::string render_program(const Body& program, const Value& context, const RenderLimits& limits);

}  // namespace tg::llm::jinja
