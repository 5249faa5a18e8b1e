// The program cache: a lowered kernel's compiled program is found in memory (by KIR hash and device), else on disk
// (by rendered source and exact target), else compiled; one schedule's misses compile in parallel.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "codegen/kir.hpp"
#include "runtime/device.hpp"

namespace tg::rt {

// One lowered kernel that needs its program.
struct ProgramRequest {
  Device* device;
  codegen::KirProgram kir;
  std::shared_ptr<Program> program;  // set by fetch_programs
  std::string source;                // rendered where the memory tier missed (the shadow check shows it)
};

// Sets every request's program. Misses are rendered, looked up on disk, and compiled `parallel` at a time (0: all
// cores), each distinct source once.
void fetch_programs(std::vector<ProgramRequest>& requests, int parallel);

// Forgets the in-memory programs of one device instance, or of all together with the BEAM choices (tests and
// benchmarks use it to exercise the disk cache; unload_plugin before closing a device).
void clear_program_cache(const Device* device = nullptr);

}  // namespace tg::rt
