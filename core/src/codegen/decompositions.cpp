// Decompositions of unsupported ops, chosen per renderer from its capability table.
#include "codegen/decompositions.hpp"

#include "codegen/transcendental.hpp"

namespace tg::codegen {

using namespace ir;

namespace {

bool is_half(DType d) { return d.scalar == ScalarType::Float16 || d.scalar == ScalarType::BFloat16; }

// DOT4 on int32: each byte of a zero-extended (shift, mask), each byte of b sign-extended (shift it to the top,
// shift back arithmetically), four products added to the accumulator. Shifts by constants only.
UOpPtr dot4_from_bytes(const UOpPtr& acc, const UOpPtr& a, const UOpPtr& b) {
  DType d = acc->dtype;
  UOpPtr sum = acc;
  for (int64_t i = 0; i < 4; ++i) {
    UOpPtr ua = alu(Op::AND, alu(Op::SHR, a, const_int(d, 8 * i)), const_int(d, 255));
    UOpPtr sb = alu(Op::SHR, alu(Op::SHL, b, const_int(d, 24 - 8 * i)), const_int(d, 24));
    sum = alu(Op::ADD, sum, alu(Op::MUL, ua, sb));
  }
  return sum;
}

// LUT16 on int32: per byte, its low nibble n picks the table word n / 4 (two levels of selects) and its byte n % 4
// (a shift by a variable amount below the width), ORed into place.
UOpPtr lut16_from_selects(const UOp& u) {
  DType d = u.dtype;
  const UOpPtr& idx = u.src[0];
  UOpPtr out;
  for (int64_t i = 0; i < 4; ++i) {
    UOpPtr n = alu(Op::AND, alu(Op::SHR, idx, const_int(d, 8 * i)), const_int(d, 15));
    UOpPtr lo = alu(Op::WHERE, alu(Op::CMPLT, n, const_int(d, 4)), u.src[1], u.src[2]);
    UOpPtr hi = alu(Op::WHERE, alu(Op::CMPLT, n, const_int(d, 12)), u.src[3], u.src[4]);
    UOpPtr word = alu(Op::WHERE, alu(Op::CMPLT, n, const_int(d, 8)), lo, hi);
    UOpPtr entry = alu(Op::AND, alu(Op::SHR, word, alu(Op::SHL, alu(Op::AND, n, const_int(d, 3)), const_int(d, 3))), const_int(d, 255));
    UOpPtr placed = alu(Op::SHL, entry, const_int(d, 8 * i));
    out = out ? alu(Op::OR, out, placed) : placed;
  }
  return out;
}

}  // namespace

UOpPtr decompose(const UOpPtr& u, const SupportsFn& supports) {
  DType d = is_comparison(u->op) ? u->src[0]->dtype : u->dtype;
  if (is_half(d) && u->op != Op::CAST && u->op != Op::BITCAST) {
    // compute in float32, round once per op back to the 16-bit type: same result as native half math
    std::vector<UOpPtr> src;
    for (const auto& s : u->src) src.push_back(s->dtype == d ? cast(s, dtypes::float32) : s);
    DType out = is_comparison(u->op) ? u->dtype : dtypes::float32;
    UOpPtr r = UOp::make(u->op, out, std::move(src), u->arg);
    return is_comparison(u->op) ? r : cast(r, u->dtype);
  }
  const UOpPtr& a = u->src[0];
  switch (u->op) {
    case Op::SUB: return alu(Op::ADD, a, alu(Op::NEG, u->src[1]));
    case Op::NEG:
      return d.is_float() ? alu(Op::MUL, a, const_like(a, -1.0)) : alu(Op::MUL, a, const_int(a->dtype, -1));
    case Op::RECIP: return alu(Op::FDIV, const_like(a, 1.0), a);
    case Op::MULACC: return alu(Op::ADD, alu(Op::MUL, a, u->src[1]), u->src[2]);
    case Op::FMA: return alu(Op::ADD, alu(Op::MUL, a, u->src[1]), u->src[2]);  // a custom kernel's fma: two roundings
    case Op::DOT4: return dot4_from_bytes(a, u->src[1], u->src[2]);
    case Op::LUT16: return lut16_from_selects(*u);
    case Op::MAX:
      if (d.is_float()) return nullptr;
      return alu(Op::WHERE, alu(Op::CMPLT, a, u->src[1]), u->src[1], a);
    case Op::EXP2: return d.is_float() ? xexp2(a) : nullptr;
    case Op::LOG2: return d.is_float() ? xlog2(a) : nullptr;
    case Op::SIN: return d.is_float() ? xsin(a) : nullptr;
    default: return nullptr;
  }
}

UOpPtr packed_load_from_bytes(const UOpPtr& load) {
  const int n = load->dtype.itemsize();
  const DType word = n == 2 ? dtypes::uint16 : n == 4 ? dtypes::uint32 : dtypes::uint64;
  UOpPtr v;
  for (int i = 0; i < n; ++i) {
    std::vector<UOpPtr> src{load->src[0], i == 0 ? load->src[1] : alu(Op::ADD, load->src[1], const_int(load->src[1]->dtype, i))};
    if (load->src.size() > 2) src.push_back(load->src[2]);  // a gated byte reads 0, like the gated word
    UOpPtr byte = cast(UOp::make(Op::LOAD, load->src[0]->dtype, std::move(src)), word);
    v = i == 0 ? byte : alu(Op::OR, v, alu(Op::SHL, byte, const_int(word, 8 * i)));
  }
  return load->dtype == word ? v : UOp::make(Op::BITCAST, load->dtype, {v});
}

}  // namespace tg::codegen
