// The op list: the IR's table of contents, shared by tensor graphs and kernel graphs.
#pragma once

#include <cstdint>

namespace tg::ir {

// clang-format off: several values a line, as the list is read
enum class Op : uint8_t {
  // tensor graph: sources of data
  BUFFER,      // arg: Payload (rt::Buffer); a realized tensor
  CONST,       // arg: int64_t or double; a scalar (tensor level: shape () then reshaped/expanded)
  COPY,        // arg: target device name; src[0] realized on another device
  CONTIGUOUS,  // forces src[0] to be realized into its own buffer
  MULTI,       // arg: the sharding (tensor/sharding.hpp); src: one graph per device, each its shard. Its shape is
               // the whole tensor's; realize rewrites ops over it into per-device graphs (tensor/multi.cpp)
  COLLECTIVE,  // arg: a collective's registered name (runtime/collectives.hpp); src[0] on this device, combined with
               // the other ranks' values over a communicator: its own schedule item, waiting for them
  BIND,        // arg: the value; src[0]: DEFINE_VAR. A variable with its value for this call
  // tensor graph: movement (arg: vector<int64_t>; a node's symbolic dims are in UOp::sym_shape)
  RESHAPE,     // new shape
  PERMUTE,     // axis order
  EXPAND,      // new shape (broadcast size-1 dims)
  PAD,         // [before0, after0, before1, after1, ...]
  SHRINK,      // [start0, end0, start1, end1, ...]
  FLIP,        // 0/1 per axis
  SHRINK_VAR,  // arg: [axis]; src[1]: the start (a dim expression of BINDs). [start, start+length), length = dim
  PAD_VAR,     // arg: [axis]; src[1]: zeros before (a dim expression of BINDs); the dim is the total
  // tensor graph: reduction
  REDUCE_AXIS, // arg: [reduce op, axis...]; keeps reduced dims as size 1
  // kernel graph
  SINK,        // groups the stores of a kernel
  PARAM,       // arg: parameter index; dtype: element dtype (buffers) or value dtype (vars)
  DEFINE_VAR,  // arg: VarInfo (name, min, max); a symbolic integer bound at launch
  RANGE,       // arg: RangeInfo (id, axis type); src[0]: end; loop index in [0, end)
  REDUCE,      // arg: reduce op; src[0]: value, src[1..]: the RANGEs it reduces over
  LOAD,        // src[0]: PARAM, src[1]: element index, src[2] (optional): gate
  STORE,       // src[0]: PARAM, src[1]: element index, src[2]: value
  VECTORIZE,   // lanes -> vector
  GEP,         // arg: lane
  // kernel graph: statements of hand-written kernels
  DEFINE_REG,  // arg: element count; a private array
  DEFINE_LOCAL,// arg: element count; an array shared by a work-group
  END,         // arg: n; src[0..n): statements, src[n..]: RANGEs. "for ranges: statements"
  AFTER,       // src[0]: a buffer, src[1..]: statements. the buffer once those statements ran
  BARRIER,     // src: statements. they run, then the work-group synchronizes
  CUSTOM,      // arg: code per language ("lang\0code\0lang\0code"); src: operands {0}.. an inline statement
  CUSTOMI,     // like CUSTOM, an inline expression of dtype
  TILE_MMA,    // arg: shape bits (KIR's TILE_MMA); src: C, its index, row stride, A, index, slab stride, B, index,
               // slab stride, steps. C (dtype) = or += A . B on the matrix unit; elsewhere the loops it means
  WMMA,        // arg: the renderer's tensor core (an index into caps.tensor_cores); src: the A, B and C fragments
               // (vectors). D = A . B + C for one warp (KIR's WMMA); dtype: C's
  // ALU: unary
  NEG, EXP2, LOG2, SIN, SQRT, RECIP, TRUNC, CAST, BITCAST,
  // ALU: binary
  ADD, SUB, MUL, IDIV, MOD, FDIV, MAX, CMPLT, CMPNE, CMPEQ, AND, OR, XOR, SHL, SHR,
  // ALU: ternary
  WHERE, MULACC, FMA,  // FMA: a*b+c rounded once; made only for renderers that take it
  DOT4,                // int32: src[0] + sum over bytes i of ubyte_i(src[1]) * sbyte_i(src[2]) (KIR's DOT4)
  // ALU: five operands
  LUT16,               // int32: byte i = entry (byte i of src[0]) & 15 of the 16 bytes of src[1..4] (KIR's LUT16)
  COUNT_,
};
// clang-format on

inline constexpr bool is_unary(Op op) { return op >= Op::NEG && op <= Op::BITCAST; }
inline constexpr bool is_binary(Op op) { return op >= Op::ADD && op <= Op::SHR; }
inline constexpr bool is_ternary(Op op) {
  return op == Op::WHERE || op == Op::MULACC || op == Op::FMA || op == Op::DOT4;
}
inline constexpr bool is_alu(Op op) { return op >= Op::NEG && op <= Op::LUT16; }
inline constexpr bool is_movement(Op op) { return op >= Op::RESHAPE && op <= Op::PAD_VAR; }
inline constexpr bool is_comparison(Op op) { return op == Op::CMPLT || op == Op::CMPNE || op == Op::CMPEQ; }
inline constexpr bool is_commutative(Op op) {
  return op == Op::ADD || op == Op::MUL || op == Op::MAX || op == Op::CMPNE || op == Op::CMPEQ || op == Op::AND ||
         op == Op::OR || op == Op::XOR;
}

const char* op_name(Op op);

// What a REDUCE_AXIS / REDUCE combines with (stored as int64 in arg).
enum class ReduceOp : int64_t { SUM = 0, MAX = 1, MIN = 2 };

// Axis types of a RANGE in a kernel (what the optimizer decided for it).
enum class AxisType : uint8_t { GLOBAL, LOOP, REDUCE, UPCAST, UNROLL, LOCAL };

}  // namespace tg::ir
