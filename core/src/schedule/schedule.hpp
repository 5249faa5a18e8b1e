// Scheduling: cut a tensor graph into kernels at realize points; movement ops become index arithmetic.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/uop.hpp"

namespace tg::sched {

// A kernel's buffer parameter as codegen sees it: the element type and length of the buffer bound to it.
struct BufferParam {
  DType dtype;
  int64_t numel = 0;
  bool operator==(const BufferParam&) const = default;
};

// One kernel's graph: SINK(STORE(PARAM 0, index, value)) over RANGE nodes for the output dims.
struct Kernel {
  ir::UOpPtr sink;
  std::vector<ir::UOpPtr> out_ranges;    // outermost first
  std::vector<ir::UOpPtr> local_ranges;  // custom kernels: work-item ids inside a work-group, dim 0 first
  std::string name;                      // "E_4_16", "r_64_32" (E: elementwise, r: has a reduction)
  std::vector<ir::UOpPtr> vars;          // DEFINE_VARs it reads, sorted by name: kernel params after the buffers
  int n_outputs = 1;                     // the first n buffers are written
  std::vector<int> written_inputs;       // custom kernels: input buffers it also stores into (in-place updates)
  bool custom = false;                   // hand-written (SINK of statements): lowered as written, no upcast
  bool parallel = true;                  // the first output range may be spread over cores / the grid
  std::vector<BufferParam> params;       // one per buffer in call order (describe_params): all codegen reads of them
};

// A buffer of a schedule, by number. The INPUT slots come first: the graph's realized buffers in the order
// input_buffers() lists them. OUTPUT (a root's) and TEMP slots are written by the schedule's kernels; the runtime's
// memory planner (runtime/memory_plan.hpp) binds them to buffers, so a schedule holds no buffer and can be cached.
struct BufferSlot {
  enum class Kind : uint8_t { INPUT, OUTPUT, TEMP } kind = Kind::TEMP;
  DType dtype;
  int64_t numel = 0;
  std::string device;  // canonical name
  bool operator==(const BufferSlot&) const = default;
};

struct ScheduleItem {
  // COLLECTIVE: dst = src combined with the other ranks' values; kernel.name is the collective's registered name
  // (runtime/collectives.hpp)
  enum class Kind { KERNEL, COPY, COLLECTIVE } kind = Kind::KERNEL;
  Kernel kernel;                  // for KERNEL
  std::vector<int> slots;         // KERNEL: params in order (outputs first); COPY, COLLECTIVE: {dst, src}
  std::vector<int64_t> var_vals;  // values of kernel.vars for this launch
};

struct Schedule {
  std::vector<BufferSlot> slots;
  std::vector<ScheduleItem> items;  // in execution order
  std::vector<int> roots;           // the slot holding each root (an input slot for a root already realized)
  size_t n_inputs() const;
};

// Sets a KERNEL item's kernel.params from its slots (what codegen reads of its buffers).
void describe_params(ScheduleItem& item, const std::vector<BufferSlot>& slots);

// The realized buffers a graph reads, numbered as a schedule's input slots: by first use in toposort order (the
// second form takes that order, toposort(roots), where the caller has it).
std::vector<std::shared_ptr<ir::Payload>> input_buffers(const std::vector<ir::UOpPtr>& roots);
std::vector<std::shared_ptr<ir::Payload>> input_buffers(const std::vector<const ir::UOp*>& order);

// The items, in execution order, that realize every root (roots are tensor-level nodes on `device`).
Schedule create_schedule(const std::vector<ir::UOpPtr>& roots, const std::string& device);

}  // namespace tg::sched
