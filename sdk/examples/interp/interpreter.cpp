// The INTERP plugin's interpreter: decode() checks a KIR kernel once and turns it into Code (steps with resolved
// operand slots, jump targets and per-dtype functions); execute() runs Code for each work-item.
//
// Values: every lane of every value is one uint64_t "slot" holding the value in its dtype's canonical form:
// bool 0/1; signed ints sign-extended; unsigned ints zero-extended; float16/bfloat16 their 16 bits; float32 its 32
// bits; float64 its 64 bits. A pointer (buffer PARAM, DEFINE_REG) takes two slots: address and size in bytes, so
// every LOAD and STORE is bounds-checked. A RANGE takes two: the loop variable and its end.
//
// Semantics are the CPU plugin's, operation by operation (plugins/cpu/renderer.cpp renders them as C):
// integers wrap; IDIV/MOD truncate, x/0 = x%0 = 0, INT_MIN/-1 wraps and INT_MIN%-1 = 0; shift counts are taken
// modulo 32 (64 for 64-bit types) as C's promoted shifts do; float MAX is NaN if either operand is; MULACC rounds
// twice; float16/bfloat16 are storage types converted exactly (round to nearest even from double).
#include "interp_plugin.hpp"
#include "kir_semantics.hpp"

#include <tg/sdk/abi_names.hpp>
#include <tg/sdk/c_renderer.hpp>
#include <tg/sdk/verify_kir.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace tg::interp {

using sdk::cat;
using sdk::Error;

// ---- the decoded program --------------------------------------------------------------------------------------------

struct Step;
using StepFn = void (*)(const Step& step, uint64_t* slots);
// Memory <-> slots for `lanes` consecutive elements of one dtype.
using LoadFn = void (*)(const unsigned char* memory, uint64_t* slots, uint32_t lanes);
using StoreFn = void (*)(unsigned char* memory, const uint64_t* slots, uint32_t lanes);

struct Step {
  uint16_t op;     // tg_kir_op
  uint8_t dtype;   // the result's dtype (LOAD/STORE: the memory's)
  uint8_t vcount;  // lanes of the result (STORE: of the value stored)
  uint32_t inst;   // the KIR instruction, for error messages
  uint32_t dst;    // first slot of the result
  uint32_t nsrc;
  const uint32_t* src;      // first slot of each operand (points into Code::operands)
  const uint8_t* src_step;  // per operand: 1 if it has a slot per lane, 0 if a scalar is shared by every lane
  uint32_t jump;            // RANGE/IF: the step after the matching END; ENDRANGE: its RANGE
  uint32_t stride;          // LOAD/STORE: bytes per index step (element size x the pointer's lanes)
  int64_t arg;              // CONST: raw value; PARAM: index; DEFINE_REG: byte offset in scratch; GEP: lane
  uint64_t size;            // DEFINE_REG: bytes; BITCAST: source lanes; LOAD/STORE/RANGE: 1 if unsigned index
  StepFn fn = nullptr;      // ALU, CAST, BITCAST
  LoadFn load = nullptr;    // LOAD, BITCAST (from bytes)
  StoreFn store = nullptr;  // STORE, BITCAST (to bytes)
};

struct Code {
  std::string name;
  std::vector<Step> steps;
  std::vector<uint32_t> operands;
  std::vector<uint8_t> operand_steps;
  std::vector<tg_kir_param> params;
  std::vector<std::string> param_names;
  std::vector<size_t> param_offsets;  // in the packed argument blob
  uint32_t nslots = 0;
  uint64_t scratch_bytes = 0;  // all DEFINE_REG arrays of one work-item
  bool has_special = false;    // without a work-item id the body runs once per launch
};

namespace {

template <class T>
void load_lanes(const unsigned char* memory, uint64_t* slots, uint32_t lanes) {
  for (uint32_t l = 0; l < lanes; ++l) {
    if constexpr (std::is_same_v<T, bool>) {
      slots[l] = memory[l] != 0;
    } else {
      T v;
      std::memcpy(&v, memory + l * sizeof(T), sizeof(T));
      slots[l] = to_raw(v);
    }
  }
}
template <class T>
void store_lanes(unsigned char* memory, const uint64_t* slots, uint32_t lanes) {
  for (uint32_t l = 0; l < lanes; ++l) {
    const T v = from_raw<T>(slots[l]);
    std::memcpy(memory + l * sizeof(T), &v, sizeof(T));
  }
}

LoadFn load_fn(uint32_t dtype) {
  return with_type(dtype, [](auto t) -> LoadFn { return &load_lanes<decltype(t)>; });
}
StoreFn store_fn(uint32_t dtype) {
  return with_type(dtype, [](auto t) -> StoreFn { return &store_lanes<decltype(t)>; });
}

template <uint32_t OP, class T>
void alu_step(const Step& s, uint64_t* slots) {
  const uint64_t* a = slots + s.src[0];
  const uint64_t* b = s.nsrc > 1 ? slots + s.src[1] : a;
  const uint64_t* c = s.nsrc > 2 ? slots + s.src[2] : a;
  uint64_t* out = slots + s.dst;
  for (uint32_t l = 0; l < s.vcount; ++l)
    out[l] = to_raw(apply<OP, T>(from_raw<T>(a[l]), from_raw<T>(b[l]), from_raw<T>(c[l])));
}

// LUT16 (int32 only, the caps say so): byte i of the result is entry (byte i of operand 0) & 15 of the 16 bytes of
// operands 1..4, entry j being byte j % 4 of operand 1 + j / 4.
void lut16_step(const Step& s, uint64_t* slots) {
  for (uint32_t l = 0; l < s.vcount; ++l) {
    const auto word = [&](uint32_t j) { return static_cast<uint32_t>(slots[s.src[j] + l * s.src_step[j]]); };
    uint32_t out = 0;
    for (uint32_t i = 0; i < 32; i += 8) {
      const uint32_t n = (word(0) >> i) & 15u;
      out |= ((word(1 + n / 4) >> (8 * (n % 4))) & 255u) << i;
    }
    slots[s.dst + l] = to_raw(static_cast<int32_t>(out));
  }
}

void where_step(const Step& s, uint64_t* slots) {
  const uint64_t* cond = slots + s.src[0];
  const uint64_t *a = slots + s.src[1], *b = slots + s.src[2];
  for (uint32_t l = 0; l < s.vcount; ++l) slots[s.dst + l] = cond[l * s.src_step[0]] ? a[l] : b[l];
}

template <class To, class From>
void cast_step(const Step& s, uint64_t* slots) {
  if constexpr (std::is_same_v<To, From>) {  // the CPU renders a same-type cast as the value itself
    for (uint32_t l = 0; l < s.vcount; ++l) slots[s.dst + l] = slots[s.src[0] + l];
    return;
  }
  for (uint32_t l = 0; l < s.vcount; ++l) slots[s.dst + l] = to_raw(convert<To>(from_raw<From>(slots[s.src[0] + l])));
}

template <class T>
StepFn alu_fn_for(uint32_t op) {
  switch (static_cast<tg_kir_op>(op)) {
    case TG_KIR_NEG: return &alu_step<TG_KIR_NEG, T>;
    case TG_KIR_EXP2: return &alu_step<TG_KIR_EXP2, T>;
    case TG_KIR_LOG2: return &alu_step<TG_KIR_LOG2, T>;
    case TG_KIR_SIN: return &alu_step<TG_KIR_SIN, T>;
    case TG_KIR_SQRT: return &alu_step<TG_KIR_SQRT, T>;
    case TG_KIR_RECIP: return &alu_step<TG_KIR_RECIP, T>;
    case TG_KIR_TRUNC: return &alu_step<TG_KIR_TRUNC, T>;
    case TG_KIR_ADD: return &alu_step<TG_KIR_ADD, T>;
    case TG_KIR_SUB: return &alu_step<TG_KIR_SUB, T>;
    case TG_KIR_MUL: return &alu_step<TG_KIR_MUL, T>;
    case TG_KIR_IDIV: return &alu_step<TG_KIR_IDIV, T>;
    case TG_KIR_MOD: return &alu_step<TG_KIR_MOD, T>;
    case TG_KIR_FDIV: return &alu_step<TG_KIR_FDIV, T>;
    case TG_KIR_MAX: return &alu_step<TG_KIR_MAX, T>;
    case TG_KIR_CMPLT: return &alu_step<TG_KIR_CMPLT, T>;
    case TG_KIR_CMPNE: return &alu_step<TG_KIR_CMPNE, T>;
    case TG_KIR_CMPEQ: return &alu_step<TG_KIR_CMPEQ, T>;
    case TG_KIR_AND: return &alu_step<TG_KIR_AND, T>;
    case TG_KIR_OR: return &alu_step<TG_KIR_OR, T>;
    case TG_KIR_XOR: return &alu_step<TG_KIR_XOR, T>;
    case TG_KIR_SHL: return &alu_step<TG_KIR_SHL, T>;
    case TG_KIR_SHR: return &alu_step<TG_KIR_SHR, T>;
    case TG_KIR_MULACC: return &alu_step<TG_KIR_MULACC, T>;
    case TG_KIR_FMA: return &alu_step<TG_KIR_FMA, T>;
    case TG_KIR_DOT4: return &alu_step<TG_KIR_DOT4, T>;
    case TG_KIR_LUT16: return &lut16_step;
    case TG_KIR_WHERE: return &where_step;
    case TG_KIR_PARAM:
    case TG_KIR_CONST:
    case TG_KIR_SPECIAL:
    case TG_KIR_DEFINE_REG:
    case TG_KIR_DEFINE_LOCAL:
    case TG_KIR_RANGE:
    case TG_KIR_ENDRANGE:
    case TG_KIR_IF:
    case TG_KIR_ENDIF:
    case TG_KIR_BARRIER:
    case TG_KIR_LOAD:
    case TG_KIR_STORE:
    case TG_KIR_VECTORIZE:
    case TG_KIR_GEP:
    case TG_KIR_CAST:
    case TG_KIR_BITCAST:
    case TG_KIR_CUSTOM:
    case TG_KIR_CUSTOMI:
    case TG_KIR_WMMA:
    case TG_KIR_TILE_MMA:
    case TG_KIR_OP_COUNT: break;
  }
  throw Error(TG_ERR_INTERNAL, cat(sdk::op_name(op), " is not an ALU op"));
}

// The 16-bit float storage types take no ALU op (the caps say so); only real arithmetic types get a table.
StepFn alu_fn(uint32_t op, uint32_t dtype) {
  return with_type(dtype, [&](auto t) -> StepFn {
    using T = decltype(t);
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
      return nullptr;
    else
      return alu_fn_for<T>(op);
  });
}

StepFn cast_fn(uint32_t to, uint32_t from) {
  return with_type(to, [&](auto t) {
    return with_type(from, [](auto f) -> StepFn { return &cast_step<decltype(t), decltype(f)>; });
  });
}

// ---- decode: check a kernel (sdk::check_kir's rules, then what INTERP supports), lay out its slots and jumps
// ---------

class Decoder {
 public:
  explicit Decoder(const tg_kir_kernel& k) : k_(k), caps_(interp_caps()) {}

  std::shared_ptr<const Code> run() {
    sdk::check_kir(k_);
    check_header();
    auto code = std::make_shared<Code>();
    code->name = k_.name;
    code_ = code.get();
    for (uint32_t p = 0; p < k_.nparams; ++p) {
      code->params.push_back(k_.params[p]);
      code->param_names.push_back(k_.params[p].name ? k_.params[p].name : cat("param", p));
    }
    for (uint32_t p = 0; p < k_.nparams; ++p) code->params[p].name = code->param_names[p].c_str();
    code->param_offsets.resize(k_.nparams);
    tg_param_layout(code->params.data(), k_.nparams, code->param_offsets.data());

    slot_of_.assign(k_.ninsts, 0);
    step_of_.assign(k_.ninsts, 0);
    // Operand arrays are filled first and pointed at last: the vectors must stop growing before steps use them.
    std::vector<std::pair<size_t, size_t>> operand_ranges;
    for (uint32_t i = 0; i < k_.ninsts; ++i) {
      const size_t first = code->operands.size();
      decode(i);
      operand_ranges.emplace_back(first, code->operands.size() - first);
    }
    for (size_t s = 0; s < code->steps.size(); ++s) {
      code->steps[s].src = code->operands.data() + operand_ranges[s].first;
      code->steps[s].src_step = code->operand_steps.data() + operand_ranges[s].first;
    }
    code->nslots = next_slot_;
    return code;
  }

 private:
  struct Block {
    uint32_t inst, step;
  };

  const tg_kir_inst& inst(uint32_t i) const { return k_.insts[i]; }
  const char* op(uint32_t i) const { return sdk::op_name(inst(i).op); }
  uint32_t src(uint32_t i, uint32_t j) const { return static_cast<uint32_t>(k_.src_pool[inst(i).src_start + j]); }
  const tg_kir_inst& operand_inst(uint32_t i, uint32_t j) const { return inst(src(i, j)); }

  Error invalid(uint32_t i, const std::string& what) const {
    return Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", k_.name, ": inst ", i, " (", op(i), "): ", what));
  }
  Error unsupported(uint32_t i, const std::string& what) const {
    return Error(TG_ERR_UNSUPPORTED, cat("kernel ", k_.name, ": inst ", i, " (", op(i), "): INTERP has no ", what));
  }

  // What INTERP takes beyond the ABI's rules: its parameter count, and no image parameters.
  void check_header() {
    if (k_.nparams > caps_.max_params)
      throw Error(TG_ERR_UNSUPPORTED,
                  cat("kernel ", k_.name, " has ", k_.nparams, " parameters; INTERP takes ", caps_.max_params));
    for (uint32_t p = 0; p < k_.nparams; ++p) {
      const tg_kir_param& param = k_.params[p];
      if (param.kind > TG_PARAM_VAR)
        throw Error(TG_ERR_INVALID_ARGUMENT,
                    cat("kernel ", k_.name, ": parameter ", p, " has kind ", param.kind, " and dtype ", param.dtype));
    }
  }

  // Instruction i's lanes against the caps' vector widths.
  void check_fields(uint32_t i) {
    const tg_kir_inst& in = inst(i);
    if (in.vcount > 1 && !(caps_.vector_widths[in.dtype] >> in.vcount & 1u))
      throw unsupported(i, cat(+in.vcount, "-lane ", sdk::dtype_name(in.dtype), " vectors"));
  }

  // Operand j of instruction i (check_kir made sure it is a value, or a pointer where one belongs, in scope).
  uint32_t operand(uint32_t i, uint32_t j, bool /*pointer*/ = false) const { return src(i, j); }

  uint32_t alloc_slots(uint32_t n) {
    const uint32_t first = next_slot_;
    next_slot_ += n;
    return first;
  }
  // A new step for instruction i with its operands' first slots (and whether each has a slot per lane).
  Step& add_step(uint32_t i, const std::vector<uint32_t>& operand_insts) {
    const tg_kir_inst& in = inst(i);
    Step s{};
    s.op = in.op;
    s.dtype = in.dtype;
    s.vcount = in.vcount;
    s.inst = i;
    s.nsrc = static_cast<uint32_t>(operand_insts.size());
    s.arg = in.arg.i;
    for (uint32_t o : operand_insts) {
      code_->operands.push_back(slot_of_[o]);
      code_->operand_steps.push_back(inst(o).vcount > 1 ? 1 : 0);
    }
    step_of_[i] = static_cast<uint32_t>(code_->steps.size());
    code_->steps.push_back(s);
    return code_->steps.back();
  }

  void decode(uint32_t i) {
    check_fields(i);
    const tg_kir_inst& in = inst(i);
    switch (static_cast<tg_kir_op>(in.op)) {
      case TG_KIR_PARAM: {
        if (in.vcount != 1) throw invalid(i, "a parameter is not a vector");
        slot_of_[i] = alloc_slots(2);  // a buffer: address and size; a var: its value (one slot used)
        add_step(i, {}).dst = slot_of_[i];
        return;
      }
      case TG_KIR_CONST: {
        if (in.vcount != 1) throw invalid(i, "a constant is a scalar");
        slot_of_[i] = alloc_slots(1);
        Step& s = add_step(i, {});
        s.dst = slot_of_[i];
        s.arg = static_cast<int64_t>(constant_raw(in.dtype, in.arg));
        return;
      }
      case TG_KIR_SPECIAL: {
        const uint64_t kind = static_cast<uint64_t>(in.arg.i) / 4, dim = static_cast<uint64_t>(in.arg.i) % 4;
        if (kind != TG_SPECIAL_GLOBAL || dim != 0) throw unsupported(i, "work-item id but global dim 0");
        if (!sdk::is_int(in.dtype) || in.vcount != 1) throw invalid(i, "work-item id is not a scalar integer");
        // As in the CPU plugin, the work-item loop encloses the whole body, so the id cannot be inside a block.
        if (!blocks_.empty()) throw unsupported(i, "work-item id inside a loop or if");
        code_->has_special = true;
        slot_of_[i] = alloc_slots(1);
        add_step(i, {}).dst = slot_of_[i];
        return;
      }
      case TG_KIR_DEFINE_REG: {
        if (in.arg.i > (int64_t{1} << 24)) throw invalid(i, cat("array of ", in.arg.i, " elements"));
        slot_of_[i] = alloc_slots(2);
        Step& s = add_step(i, {});
        s.dst = slot_of_[i];
        s.size = static_cast<uint64_t>(in.arg.i) * tg_dtype_size(in.dtype) * in.vcount;
        s.arg = static_cast<int64_t>(code_->scratch_bytes);
        code_->scratch_bytes += (s.size + 63) / 64 * 64;  // each array 64-byte aligned, like the allocator's
        return;
      }
      case TG_KIR_DEFINE_LOCAL:
      case TG_KIR_BARRIER: throw unsupported(i, "local memory (has_local is 0)");
      case TG_KIR_CUSTOM:
      case TG_KIR_CUSTOMI: throw unsupported(i, "inline code (an interpreter has no source language)");
      case TG_KIR_WMMA: throw unsupported(i, "tensor cores (caps.ntensor_cores is 0)");
      case TG_KIR_TILE_MMA: throw unsupported(i, "a matrix unit (the caps claim no TILE_MMA)");
      case TG_KIR_RANGE: {
        const uint32_t end = operand(i, 0);
        if (inst(end).dtype != in.dtype || inst(end).vcount != 1) throw invalid(i, "loop end is not the loop's dtype");
        slot_of_[i] = alloc_slots(2);  // the variable, then its end
        Step& s = add_step(i, {end});
        s.dst = slot_of_[i];
        s.size = sdk::is_unsigned_int(in.dtype);  // how the loop compares
        open_block(i);
        return;
      }
      case TG_KIR_IF: {
        const uint32_t cond = operand(i, 0);
        add_step(i, {cond});
        open_block(i);
        return;
      }
      case TG_KIR_ENDRANGE:
      case TG_KIR_ENDIF: {
        const uint32_t open_step = blocks_.back().step;  // check_kir: the block this instruction closes
        blocks_.pop_back();
        Step& s = add_step(i, {});
        s.jump = open_step;
        s.dst = slot_of_[src(i, 0)];
        s.size = code_->steps[open_step].size;
        code_->steps[open_step].jump = static_cast<uint32_t>(code_->steps.size());  // the step after this END
        return;
      }
      case TG_KIR_LOAD:
      case TG_KIR_STORE: return decode_memory(i);
      case TG_KIR_VECTORIZE: {
        std::vector<uint32_t> lanes;
        for (uint32_t j = 0; j < in.nsrc; ++j) lanes.push_back(operand(i, j));
        slot_of_[i] = alloc_slots(in.vcount);
        add_step(i, lanes).dst = slot_of_[i];
        return;
      }
      case TG_KIR_GEP: {
        const uint32_t v = operand(i, 0);
        slot_of_[i] = alloc_slots(1);
        add_step(i, {v}).dst = slot_of_[i];
        return;
      }
      case TG_KIR_CAST:
      case TG_KIR_BITCAST: {
        const uint32_t from = operand(i, 0);
        const tg_kir_inst& f = inst(from);
        if (!(caps_.ops[f.dtype] >> in.op & 1u)) throw unsupported(i, cat(op(i), " from ", sdk::dtype_name(f.dtype)));
        slot_of_[i] = alloc_slots(in.vcount);
        Step& s = add_step(i, {from});
        s.dst = slot_of_[i];
        if (in.op == TG_KIR_CAST) {
          s.fn = cast_fn(in.dtype, f.dtype);
        } else {
          s.store = store_fn(f.dtype);  // the source's lanes to bytes, then the bytes as the result's lanes
          s.load = load_fn(in.dtype);
          s.size = f.vcount;
        }
        return;
      }
      TG_SDK_KIR_ALU_CASES:
        return decode_alu(i);
      case TG_KIR_OP_COUNT: break;
    }
    throw invalid(i, "unknown op");
  }

  // check_kir: operands share the result's dtype and lanes, except a comparison's result (bool) and WHERE's
  // condition (bool, scalar or as wide as the result).
  void decode_alu(uint32_t i) {
    const tg_kir_inst& in = inst(i);
    const uint32_t src_dtype = operand_inst(i, in.op == TG_KIR_WHERE ? 1 : 0).dtype;
    std::vector<uint32_t> operands;
    for (uint32_t j = 0; j < in.nsrc; ++j) operands.push_back(operand(i, j));
    if (!(caps_.ops[src_dtype] >> in.op & 1u)) throw unsupported(i, cat(op(i), " on ", sdk::dtype_name(src_dtype)));
    slot_of_[i] = alloc_slots(in.vcount);
    Step& s = add_step(i, operands);
    s.dst = slot_of_[i];
    s.fn = alu_fn(in.op, src_dtype);
    if (s.fn == nullptr) throw unsupported(i, cat(op(i), " on ", sdk::dtype_name(src_dtype)));
  }

  // LOAD/STORE: `vcount` lanes at element `index` of a pointer whose elements have `ptr.vcount` lanes; either the
  // lanes match (a register accumulator) or the pointer is scalar and the access reads consecutive elements.
  void decode_memory(uint32_t i) {
    const tg_kir_inst& in = inst(i);
    const bool is_store = in.op == TG_KIR_STORE;
    const uint32_t ptr = operand(i, 0, true), index = operand(i, 1);
    const uint32_t value = is_store ? operand(i, 2) : i;
    const uint32_t gate_at = is_store ? 3 : 2;
    const tg_kir_inst &p = inst(ptr), &v = inst(value);
    // a packed load (ABI 1.3): a wider value read from a uint8 buffer at a byte index
    const bool packed = !is_store && p.dtype == TG_DTYPE_UINT8 && p.vcount == 1 && v.dtype != p.dtype &&
                        (caps_.packed_loads >> v.dtype & 1u);
    if (v.dtype != p.dtype && !packed)
      throw invalid(i, cat("accesses ", sdk::dtype_name(p.dtype), " memory as ", sdk::dtype_name(v.dtype)));
    std::vector<uint32_t> operands{ptr, index};
    if (is_store) operands.push_back(value);
    if (in.nsrc > gate_at) {
      const uint32_t gate = operand(i, gate_at);
      if (inst(gate).vcount != 1) throw invalid(i, "gate is not a bool scalar");
      operands.push_back(gate);
    }
    if (!is_store) slot_of_[i] = alloc_slots(in.vcount);
    Step& s = add_step(i, operands);
    s.dtype = v.dtype;
    s.vcount = v.vcount;
    s.dst = is_store ? 0 : slot_of_[i];
    s.stride = tg_dtype_size(p.dtype) * p.vcount;      // bytes per index step (1 for a packed load)
    s.size = sdk::is_unsigned_int(inst(index).dtype);  // how to read the index slot
    if (is_store)
      s.store = store_fn(p.dtype);
    else
      s.load = load_fn(v.dtype);
  }

  // A CONST's slot value. Floats are rounded to their dtype once here, as the C literal the CPU renders would be;
  // NaN constants become the positive quiet NaN its __builtin_nan("") literals are.
  static uint64_t constant_raw(uint32_t dtype, tg_kir_arg arg) {
    if (!sdk::is_float(dtype))
      return with_type(dtype, [&](auto t) -> uint64_t {
        using T = decltype(t);
        if constexpr (std::is_same_v<T, bool>)
          return arg.i != 0;
        else if constexpr (std::is_integral_v<T>)
          return to_raw(static_cast<T>(arg.i));
        else
          return 0;
      });
    const double f = std::isnan(arg.f) ? std::numeric_limits<double>::quiet_NaN() : arg.f;
    switch (dtype) {
      case TG_DTYPE_FLOAT16: return round_small_float(f, 5, 10);
      case TG_DTYPE_BFLOAT16: return round_small_float(f, 8, 7);
      case TG_DTYPE_FLOAT32:
        return to_raw(std::isnan(f) ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(f));
      default: return to_raw(f);
    }
  }

  void open_block(uint32_t i) { blocks_.push_back({i, step_of_[i]}); }

  const tg_kir_kernel& k_;
  const tg_renderer_caps caps_;
  Code* code_ = nullptr;
  std::vector<uint32_t> slot_of_, step_of_;
  std::vector<Block> blocks_;
  uint32_t next_slot_ = 0;
};

// ---- execute --------------------------------------------------------------------------------------------------------

[[noreturn]] void out_of_bounds(const Code& code, const Step& s, int64_t index, uint64_t size) {
  throw Error(TG_ERR_INVALID_ARGUMENT,
              cat("kernel ", code.name, ": inst ", s.inst, " (", sdk::op_name(s.op), ") accesses ", +s.vcount, " ",
                  sdk::dtype_name(s.dtype), " lane(s) at element ", index, " (", s.stride, " bytes each) of a ", size,
                  "-byte array"));
}

// The address of `s`'s access, after checking that all of it lies inside the pointer's [address, address+size).
unsigned char* checked_address(const Code& code, const Step& s, const uint64_t* slots) {
  const uint64_t base = slots[s.src[0]], size = slots[s.src[0] + 1], raw_index = slots[s.src[1]];
  const int64_t index = static_cast<int64_t>(raw_index);
  const uint64_t bytes = uint64_t{tg_dtype_size(s.dtype)} * s.vcount;
  const bool negative = s.size == 0 && index < 0;
  if (negative || raw_index > size / s.stride || raw_index * s.stride + bytes > size)
    out_of_bounds(code, s, index, size);
  return reinterpret_cast<unsigned char*>(base + raw_index * s.stride);
}

int64_t signed_slot(uint64_t raw) { return static_cast<int64_t>(raw); }

void run_body(const Code& code, uint64_t* slots, const uint64_t* params, unsigned char* scratch, uint64_t gidx) {
  const Step* steps = code.steps.data();
  const size_t n = code.steps.size();
  for (size_t pc = 0; pc < n;) {
    const Step& s = steps[pc];
    switch (static_cast<tg_kir_op>(s.op)) {
      case TG_KIR_PARAM:
        slots[s.dst] = params[2 * s.arg];
        slots[s.dst + 1] = params[2 * s.arg + 1];
        break;
      case TG_KIR_CONST: slots[s.dst] = static_cast<uint64_t>(s.arg); break;
      case TG_KIR_SPECIAL: slots[s.dst] = gidx; break;
      case TG_KIR_DEFINE_REG:
        slots[s.dst] = reinterpret_cast<uint64_t>(scratch + s.arg);
        slots[s.dst + 1] = s.size;
        break;
      case TG_KIR_RANGE: {
        const uint64_t end = slots[s.src[0]];
        slots[s.dst] = 0;
        slots[s.dst + 1] = end;
        // The end has the variable's dtype: compare as that dtype does (size = 1 for unsigned loops).
        const bool empty = s.size ? end == 0 : signed_slot(end) <= 0;
        if (empty) {
          pc = s.jump;
          continue;
        }
        break;
      }
      case TG_KIR_ENDRANGE: {
        const uint64_t next = slots[s.dst] + 1, end = slots[s.dst + 1];
        const bool more = s.size ? next < end : signed_slot(next) < signed_slot(end);
        if (more) {
          slots[s.dst] = next;
          pc = s.jump + 1;
          continue;
        }
        break;
      }
      case TG_KIR_IF:
        if (slots[s.src[0]] == 0) {
          pc = s.jump;
          continue;
        }
        break;
      case TG_KIR_ENDIF: break;
      case TG_KIR_LOAD: {
        if (s.nsrc > 2 && slots[s.src[2]] == 0) {  // gated off: zeros, and no access at all
          for (uint32_t l = 0; l < s.vcount; ++l) slots[s.dst + l] = 0;
          break;
        }
        s.load(checked_address(code, s, slots), slots + s.dst, s.vcount);
        break;
      }
      case TG_KIR_STORE: {
        if (s.nsrc > 3 && slots[s.src[3]] == 0) break;
        s.store(checked_address(code, s, slots), slots + s.src[2], s.vcount);
        break;
      }
      case TG_KIR_VECTORIZE:
        for (uint32_t l = 0; l < s.vcount; ++l) slots[s.dst + l] = slots[s.src[l]];
        break;
      case TG_KIR_GEP: slots[s.dst] = slots[s.src[0] + s.arg]; break;
      case TG_KIR_BITCAST: {
        unsigned char bytes[16 * 8];
        s.store(bytes, slots + s.src[0], static_cast<uint32_t>(s.size));
        s.load(bytes, slots + s.dst, s.vcount);
        break;
      }
      case TG_KIR_DEFINE_LOCAL:
      case TG_KIR_BARRIER:
      case TG_KIR_CUSTOM:
      case TG_KIR_CUSTOMI:
      case TG_KIR_WMMA:
      case TG_KIR_TILE_MMA:
      case TG_KIR_OP_COUNT: throw Error(TG_ERR_INTERNAL, "undecodable step");  // decode() refuses these
      case TG_KIR_CAST:
      TG_SDK_KIR_ALU_CASES:
        s.fn(s, slots);
        break;
    }
    ++pc;
  }
}

}  // namespace

std::shared_ptr<const Code> decode(const tg_kir_kernel& kernel) { return Decoder(kernel).run(); }

void execute(const Code& code, Device& device, const unsigned char* args, uint64_t count) {
  // Parameters once per launch: a buffer's address and the size of its allocation; a var's value.
  std::vector<uint64_t> params(2 * code.params.size());
  for (size_t p = 0; p < code.params.size(); ++p) {
    const tg_kir_param& param = code.params[p];
    const unsigned char* at = args + code.param_offsets[p];
    if (param.kind == TG_PARAM_BUFFER) {
      uint64_t addr = 0;
      std::memcpy(&addr, at, sizeof addr);
      params[2 * p] = addr;
      params[2 * p + 1] =
          device.allocation_size(addr, cat("kernel ", code.name, ": buffer argument ", p, " (", param.name, ")"));
    } else {
      load_fn(param.dtype)(at, &params[2 * p], 1);
    }
  }
  std::vector<uint64_t> slots(code.nslots);
  std::vector<unsigned char> scratch(code.scratch_bytes + 64);
  // Register arrays start 64-byte aligned, as if each were its own allocation.
  auto* aligned = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) / 64 * 64);
  if (!code.has_special) {  // no work-item id: the body runs once per launch (as the CPU plugin's kernels do)
    if (count != 0) run_body(code, slots.data(), params.data(), aligned, 0);
    return;
  }
  for (uint64_t gidx = 0; gidx < count; ++gidx) run_body(code, slots.data(), params.data(), aligned, gidx);
}

}  // namespace tg::interp
