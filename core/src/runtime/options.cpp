// Options from the environment (see options.hpp; the README lists the switches).
#include "runtime/options.hpp"

#include <cstdlib>
#include <cstring>

#include "runtime/env.hpp"
#include "tg/error.hpp"

namespace tg::rt {

namespace {

bool flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

}  // namespace

Options read_options() {
  Options o;
  o.beam = getenv_int("BEAM", 0);
  o.noopt = getenv_int("NOOPT", 0) != 0;
  o.images = getenv_int("IMAGE", 0) != 0;
  o.tensor_cores = getenv_int("TC", 1) != 0;
  o.schedule_cache = getenv_int("SCACHE", 1) != 0;
  o.check_ir = kChecksIrAlways || flag("TG_CHECK_IR");
  o.parallel_compile = getenv_int("PARALLEL_COMPILE", 0);
  o.jit = getenv_int("JIT", 1) != 0;
  o.time_passes = flag("TG_TIME_PASSES");
  o.ring = getenv_int("RING", 1);
  if (const std::string t = getenv_str("TG_COMM_TIMEOUT_S"); !t.empty()) {
    char* end = nullptr;
    o.comm_timeout_s = std::strtod(t.c_str(), &end);
    if (*end != '\0' || !(o.comm_timeout_s > 0))
      throw Error("tg: TG_COMM_TIMEOUT_S=" + t + " is not a positive number of seconds");
  }
  return o;
}

}  // namespace tg::rt
