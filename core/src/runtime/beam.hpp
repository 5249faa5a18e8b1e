// BEAM=n: the action lists of a kernel (codegen/search.hpp) timed on its device, the fastest kept per kernel and
// device build, in memory and in the disk cache.
#pragma once

#include "codegen/lower.hpp"
#include "runtime/buffer.hpp"
#include "schedule/schedule.hpp"

namespace tg::rt {

class Device;

// The fastest action list for the kernel of `it` (its parameters bound to `bufs`) (lowered by the heuristic as `base`),
// each candidate timed `runs` times; searched once, then remembered (the disk cache's table "beam_opts"; an entry that
// does not decode is searched again).
codegen::Opts beam_choice(const sched::ScheduleItem& it, const std::vector<std::shared_ptr<Buffer>>& bufs, Device& dev,
                          const codegen::KirProgram& base, int runs, const codegen::LowerSwitches& switches);

// Forgets the remembered choices (clear_program_cache with no device).
void clear_beam_choices();

}  // namespace tg::rt
