// KIR: the linear kernel IR handed to renderers, owned on the core side.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "codegen/opt.hpp"
#include "tg/plugin_abi.h"

namespace tg::codegen {

struct KirProgram {
  std::string name;
  std::vector<tg_kir_inst> insts;
  std::vector<int32_t> src_pool;
  std::vector<tg_kir_param> params;
  std::vector<std::string> param_names;
  std::vector<std::string> strings;  // CUSTOM/CUSTOMI snippets, by arg.i
  uint32_t global_dims = 0;
  tg_launch_dims dims{{1, 1, 1}, {1, 1, 1}};
  double flops = 0;  // estimated ALU ops per launch (for DEBUG=2 GFLOP/s)
  double bytes = 0;  // buffer bytes touched per launch (for GB/s)
  Opts opts;         // the optimization actions lowering applied (DEBUG=3 prints them; BEAM keeps the best)

  int32_t add(tg_kir_op op, uint8_t dtype, uint8_t vcount, std::vector<int32_t> src, tg_kir_arg arg = {.i = 0},
              uint8_t addrspace = TG_ADDR_GLOBAL);
  // A view valid while this object lives and is not modified.
  tg_kir_kernel view() const;
  int64_t add_string(std::string s);
  // Stable across runs: content only. Computed once and kept (the executor looks every launch up by it; copies of a
  // cached program carry it); add() and add_string() forget it, and code that edits the vectors directly must
  // do so before the first call.
  uint64_t hash() const;
  std::string dump() const;  // one instruction per line, for DEBUG=5

 private:
  mutable std::vector<const char*> string_ptrs_;  // view()'s strings array, rebuilt by each view()
  mutable uint64_t hash_ = 0;                     // hash(), 0 until computed
};

const char* kir_op_name(uint32_t op);

}  // namespace tg::codegen
