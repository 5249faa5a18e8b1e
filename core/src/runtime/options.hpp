// The environment switches the core obeys, read in one place. The runtime reads them where work starts (a realize,
// a schedule run) and hands the values down: ir, schedule and codegen read no environment. Read afresh on each
// call (tests and tools change them in-process); DEBUG alone is read once (debug_level(), env.hpp).
#pragma once

namespace tg::rt {

// Debug and sanitizer builds check the IR whatever TG_CHECK_IR says.
#if !defined(NDEBUG) || defined(__SANITIZE_ADDRESS__)
inline constexpr bool kChecksIrAlways = true;
#else
inline constexpr bool kChecksIrAlways = false;
#endif

struct Options {
  int beam = 0;                 // BEAM=n: search the lowering choices per kernel, n timed runs each
  bool noopt = false;           // NOOPT=1: plain loop nests (no vectors, register tiles or work-group plans)
  bool images = false;          // IMAGE=1: read-only float32 buffers through image2d views, where the renderer has them
  bool tensor_cores = true;     // TC=0: matmuls off the renderer's tensor cores
  bool schedule_cache = true;   // SCACHE=0: schedule every realize afresh
  bool check_ir = false;        // TG_CHECK_IR=1, and always in debug and sanitizer builds: verify kernel IR and KIR
  int parallel_compile = 0;     // PARALLEL_COMPILE=n: compile a schedule's new kernels on n threads (0: the cores)
  bool jit = true;              // JIT=0: a Jit runs its function every call instead of replaying
  bool time_passes = false;     // TG_TIME_PASSES=1: each lowering step's time, per kernel and summed at exit
  int ring = 1;                 // RING=0: allreduce by naive copies always; 1: ring above 256K elements on 3+ devices;
                                // 2: ring always (tinygrad's switch)
  double comm_timeout_s = 300;  // TG_COMM_TIMEOUT_S: how long a collective across processes waits for the other ranks
};

Options read_options();

}  // namespace tg::rt
