// Global functions a chat template can call: jinja2's range/namespace/dict and transformers' additions.
#pragma once

#include "jinja/jinja_value.hpp"

namespace tg::llm::jinja {

// range(), namespace(), dict(), raise_exception(msg) and strftime_now(fmt).
Dict make_globals();

}  // namespace tg::llm::jinja
