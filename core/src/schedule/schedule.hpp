// Scheduling: cut a tensor graph into kernels at realize points; movement ops become index arithmetic.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ir/uop.hpp"
#include "runtime/buffer.hpp"

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
  std::vector<ir::UOpPtr> out_ranges;  // outermost first
  std::vector<ir::UOpPtr> local_ranges;  // custom kernels: work-item ids inside a work-group, dim 0 first
  std::string name;                    // "E_4_16", "r_64_32" (E: elementwise, r: has a reduction)
  std::vector<ir::UOpPtr> vars;        // DEFINE_VARs it reads, sorted by name: kernel params after the buffers
  int n_outputs = 1;                   // the first n buffers are written
  std::vector<int> written_inputs;     // custom kernels: input buffers it also stores into (in-place updates)
  bool custom = false;                 // hand-written (SINK of statements): lowered as written, no upcast
  bool parallel = true;                // the first output range may be spread over cores / the grid
  std::vector<BufferParam> params;     // one per buffer in call order (describe_buffers): all codegen reads of them
};

struct ScheduleItem {
  enum class Kind { KERNEL, COPY } kind = Kind::KERNEL;
  Kernel kernel;                                 // for KERNEL
  std::vector<std::shared_ptr<rt::Buffer>> bufs; // KERNEL: params in order (output first); COPY: {dst, src}
  std::vector<int64_t> var_vals;                 // values of kernel.vars for this launch
};

// Sets a KERNEL item's kernel.params from the buffers bound to it: create_schedule's items come out described, and
// the executor describes every item it runs (the schedule cache and custom kernels bind buffers of their own).
void describe_buffers(ScheduleItem& item);

// Items in execution order that realize every root (roots are tensor-level nodes on `device`).
// Returns one buffer per root in `out`.
std::vector<ScheduleItem> create_schedule(const std::vector<ir::UOpPtr>& roots, const std::string& device,
                                          std::vector<std::shared_ptr<rt::Buffer>>& out);

// A buffer node for a realized tensor of this shape (the front end swaps a realized tensor's graph for it).
// A symbolic shape (sym_shape) keeps its dims: the buffer holds the max, the data its bound extent.
ir::UOpPtr buffer_node(const std::shared_ptr<rt::Buffer>& buf, const ir::Shape& shape, const std::vector<ir::UOpPtr>& sym_shape = {});

}  // namespace tg::sched
