// The decoders, one row each, following ggml's block layouts (ggml-common.h): offsets are bytes from the
// block start, element e counts along the row inside the block.
#include "quant/quant_formats.hpp"

#include <array>

#include "iq_grids.inc"

namespace tg::llm {

KExpr GroupReader::c(int64_t v) const { return k.constant(static_cast<double>(v), dtypes::int64); }
KExpr GroupReader::i(int64_t v) const { return k.constant(static_cast<double>(v), dtypes::int32); }
KExpr GroupReader::byte(const KExpr& off) const { return k.load(words, base + off).cast(dtypes::int32); }
KExpr GroupReader::byte(int64_t off) const { return byte(c(off)); }
KExpr GroupReader::word(const KExpr& off) const { return byte(off) | (byte(off + c(1)) << 8); }
KExpr GroupReader::u32(int64_t off) const {
  KExpr v = byte(off).cast(dtypes::uint32);
  for (int64_t i = 1; i < 4; ++i) v = v | (byte(off + i).cast(dtypes::uint32) << static_cast<int64_t>(8 * i));
  return v;
}
KExpr GroupReader::sbyte(const KExpr& off) const {
  return k.load(words, base + off).bitcast(dtypes::int8).cast(dtypes::int32);
}
KExpr GroupReader::packed(const KExpr& off) const { return k.load_packed(words, base + off, dtypes::int32); }
KExpr GroupReader::packed(int64_t off) const { return packed(c(off)); }
KExpr GroupReader::grid(const KExpr& entry, const KExpr& j, int64_t width, bool is_signed) const {
  if (!table.node) throw std::logic_error("tg-llm: a grid format's kernel did not say where its grid is");
  KExpr v = k.load(words, table + entry.cast(dtypes::int64) * c(width) + j);
  return is_signed ? v.bitcast(dtypes::int8).cast(dtypes::int32) : v.cast(dtypes::int32);
}
KExpr GroupReader::half(int64_t off) const {  // one 2-byte load where the renderer takes packed loads
  return k.load_packed(words, base + c(off), dtypes::uint16).bitcast(dtypes::float16).cast(dtypes::float32);
}

namespace {

KExpr f32(const KExpr& x) { return x.cast(dtypes::float32); }

// The 4-bit nibble of element e in a 32-element run of 16 bytes at `off`: low nibbles first, then high ones.
KExpr nibble32(const GroupReader& r, int64_t off, const KExpr& e) {
  KExpr b = r.byte(r.c(off) + e % r.c(16));
  return (b >> ((e / r.c(16)).cast(dtypes::int32) << 2)) & 15;
}

// Q4_K / Q5_K: 8 sub-blocks of 32 share a 6-bit scale and min, packed into 12 bytes at offset 4.
KExpr k_scale(const GroupReader& r, const KExpr& is, bool min) {
  KExpr lo = r.byte(r.c(4) + is + r.c(min ? 4 : 0)) & 63;
  KExpr hi = min ? (r.byte(r.c(4) + is + r.c(4)) >> 4) | ((r.byte(r.c(4) + is) >> 6) << 4)
                 : (r.byte(r.c(4) + is + r.c(4)) & 15) | ((r.byte(r.c(4) + is - r.c(4)) >> 6) << 4);
  return KExpr::where(is < 4, lo, hi);
}

// ---- byte forms: 4 elements per int32 word, as unsigned bytes ----

constexpr int32_t kLowNibbles = 0x0F0F0F0F;

// Word j of 32 nibbles in the 16 bytes at `off`: elements 0..15 are the low nibbles, 16..31 the high ones (each
// lane's choice folds away once j is a lane number: lanes 0-3 and 4-7 are two vectors of one load).
KExpr nibble_word(const GroupReader& r, const KExpr& off, const KExpr& j) {
  KExpr w = r.packed(off + (j % r.c(4)) * r.c(4));
  return KExpr::where(j < 4, w, w >> 4) & kLowNibbles;
}

// Bit 4 of each byte from 4 bits (bit i of `bits4` -> byte i): the multiply puts copies 7 bits apart (they do not
// overlap, so nothing carries), the mask keeps one bit per byte.
KExpr spread_bits(const KExpr& bits4) { return ((bits4 & 15) * 0x204081 & 0x01010101) << 4; }

std::pair<KExpr, KExpr> d_scale(const GroupReader& r) { return {r.half(0), KExpr()}; }
std::pair<KExpr, KExpr> min_scale(const GroupReader& r) { return {r.half(0), r.half(2)}; }

// Q4_K / Q5_K: sub-block s has scale d * sc[s] and min -dmin * m[s].
std::pair<KExpr, KExpr> k_scales(const GroupReader& r, const KExpr& sub) {
  return {r.half(0) * f32(k_scale(r, sub, false)), r.half(2) * f32(k_scale(r, sub, true) * r.i(-1))};
}

KExpr q8_word(const GroupReader& r, const KExpr& j) { return r.packed(r.c(2) + j * r.c(4)); }
const ByteForm kQ8_0Bytes{[](const GroupReader& r, const KExpr&, const KExpr& j) {
                            return q8_word(r, j) ^ r.i(static_cast<int32_t>(0x80808080u));
                          },  // q + 128
                          [](const GroupReader& r, const KExpr&, const KExpr&) { return d_scale(r); },
                          128,
                          0,
                          255,
                          false,
                          false,
                          [](const GroupReader& r, const KExpr&, const KExpr& j) { return q8_word(r, j); }};
const ByteForm kQ4_0Bytes{[](const GroupReader& r, const KExpr&, const KExpr& j) { return nibble_word(r, r.c(2), j); },
                          [](const GroupReader& r, const KExpr&, const KExpr&) { return d_scale(r); }, 8, 0, 15};
const ByteForm kQ4_1Bytes{[](const GroupReader& r, const KExpr&, const KExpr& j) { return nibble_word(r, r.c(4), j); },
                          [](const GroupReader& r, const KExpr&, const KExpr&) { return min_scale(r); },
                          0,
                          0,
                          15,
                          true};
// Q5_0 / Q5_1: the fifth bit of element e is bit e of the 32-bit qh
KExpr q5_word(const GroupReader& r, int64_t qh, int64_t qs, const KExpr& j) {
  return nibble_word(r, r.c(qs), j) | spread_bits(r.packed(qh) >> (j * r.c(4)).cast(dtypes::int32));
}
const ByteForm kQ5_0Bytes{[](const GroupReader& r, const KExpr&, const KExpr& j) { return q5_word(r, 2, 6, j); },
                          [](const GroupReader& r, const KExpr&, const KExpr&) { return d_scale(r); }, 16, 0, 31};
const ByteForm kQ5_1Bytes{[](const GroupReader& r, const KExpr&, const KExpr& j) { return q5_word(r, 4, 8, j); },
                          [](const GroupReader& r, const KExpr&, const KExpr&) { return min_scale(r); },
                          0,
                          0,
                          31,
                          true};
// Q4_K / Q5_K: sub-blocks 2g and 2g + 1 are the low and high nibbles of the 32 bytes of group g
KExpr k_nibbles(const GroupReader& r, int64_t qs, const KExpr& sub, const KExpr& j) {
  KExpr w = r.packed(r.c(qs) + (sub / r.c(2)) * r.c(32) + j * r.c(4));
  return (w >> ((sub % r.c(2)).cast(dtypes::int32) << 2)) & kLowNibbles;
}
const ByteForm kQ4_KBytes{
    [](const GroupReader& r, const KExpr& sub, const KExpr& j) { return k_nibbles(r, 16, sub, j); },
    [](const GroupReader& r, const KExpr& sub, const KExpr&) { return k_scales(r, sub); },
    0,
    0,
    15,
    true};
const ByteForm kQ5_KBytes{[](const GroupReader& r, const KExpr& sub, const KExpr& j) {
                            KExpr hb = (r.packed(r.c(16) + j * r.c(4)) >> sub.cast(dtypes::int32)) &
                                       0x01010101;  // bit sub of qh[l]
                            return k_nibbles(r, 48, sub, j) | (hb << 4);
                          },
                          [](const GroupReader& r, const KExpr& sub, const KExpr&) { return k_scales(r, sub); },
                          0,
                          0,
                          31,
                          true};
// Q6_K: sub-block s is quarter s % 4 of half s / 4 (as in the decoder below); its halves have scales of their own
const ByteForm kQ6_KBytes{
    [](const GroupReader& r, const KExpr& sub, const KExpr& j) {
      KExpr n = sub / r.c(4), qt = sub % r.c(4), l = j * r.c(4);
      KExpr ql = r.packed(n * r.c(64) + (qt % r.c(2)) * r.c(32) + l) >> ((qt / r.c(2)).cast(dtypes::int32) << 2);
      KExpr qh = r.packed(r.c(128) + n * r.c(32) + l) >> (qt.cast(dtypes::int32) << 1);
      return (ql & kLowNibbles) | ((qh & 0x03030303) << 4);
    },
    [](const GroupReader& r, const KExpr& sub, const KExpr& half) {
      return std::pair{r.half(208) * f32(r.sbyte(r.c(192) + half + (sub / r.c(4)) * r.c(8) + (sub % r.c(4)) * r.c(2))),
                       KExpr()};
    },
    32,
    0,
    63,
    false,
    true};

// Q2_K / Q3_K / TQ2_0: 2-bit fields; sub-block s (32 elements) is bit pair s % 4 of the 32 bytes of half s / 4, at
// byte offset `qs`: word j holds elements 4j .. 4j + 3 of it
KExpr crumb_word(const GroupReader& r, int64_t qs, const KExpr& sub, const KExpr& j) {
  KExpr w = r.packed(r.c(qs) + (sub / r.c(4)) * r.c(32) + j * r.c(4));
  return (w >> ((sub % r.c(4)).cast(dtypes::int32) << 1)) & 0x03030303;
}
// the same field of element e (int32 in [0, 3])
KExpr crumb(const GroupReader& r, int64_t qs, const KExpr& e) {
  KExpr b = r.byte(r.c(qs) + (e / r.c(128)) * r.c(32) + e % r.c(32));
  return (b >> (((e / r.c(32)) % r.c(4)).cast(dtypes::int32) << 1)) & 3;
}
// Q2_K: 16 scales of 16 elements, a 4-bit scale (low nibble) and min (high nibble) in byte s; d at 80, dmin at 82
std::pair<KExpr, KExpr> q2k_scales(const GroupReader& r, const KExpr& s16) {
  KExpr sc = r.byte(s16);
  return {r.half(80) * f32(sc & 15), r.half(82) * f32((sc >> 4) * r.i(-1))};
}
const ByteForm kQ2_KBytes{
    [](const GroupReader& r, const KExpr& sub, const KExpr& j) { return crumb_word(r, 16, sub, j); },
    [](const GroupReader& r, const KExpr& sub, const KExpr& half) { return q2k_scales(r, sub * r.c(2) + half); },
    0,
    0,
    3,
    true,
    true};
// Q3_K: 16 6-bit scales (minus 32) in 12 bytes at 96: the low 4 bits in the nibbles of bytes 0-7 (scales 8-15 the
// high nibbles), the high 2 bits of scale s in bits 2 (s / 4) of byte 8 + s % 4
KExpr q3k_scale(const GroupReader& r, const KExpr& s16) {
  KExpr lo = KExpr::where(s16 < 8, r.byte(r.c(96) + s16) & 15, r.byte(r.c(88) + s16) >> 4);
  KExpr hi = (r.byte(r.c(104) + s16 % r.c(4)) >> ((s16 / r.c(4)).cast(dtypes::int32) << 1)) & 3;
  return (lo | (hi << 4)) - r.i(32);
}
// Q3_K's third bit of sub-block s: bit s of the hmask byte of its element (32 bytes at 0, one per position l); a
// clear bit subtracts 4
const ByteForm kQ3_KBytes{[](const GroupReader& r, const KExpr& sub, const KExpr& j) {
                            KExpr hb = (r.packed(j * r.c(4)) >> sub.cast(dtypes::int32)) & 0x01010101;
                            return crumb_word(r, 32, sub, j) | (hb << 2);
                          },
                          [](const GroupReader& r, const KExpr& sub, const KExpr& half) {
                            return std::pair{r.half(108) * f32(q3k_scale(r, sub * r.c(2) + half)), KExpr()};
                          },
                          4,
                          0,
                          7,
                          false,
                          true};
// TQ2_0: ternary, a 2-bit field q per element (value q - 1), d at 64
const ByteForm kTQ2_0Bytes{
    [](const GroupReader& r, const KExpr& sub, const KExpr& j) { return crumb_word(r, 0, sub, j); },
    [](const GroupReader& r, const KExpr&, const KExpr&) { return std::pair{r.half(64), KExpr()}; }, 1, 0, 3};
// TQ1_0: ternary, 5 elements a byte in base 3 (the byte x 3^n, modulo 256, times 3, over 256 is digit n), 48 bytes:
// elements 0-159 are digits e / 32 of bytes e % 32, 160-239 digits e' / 16 of bytes 32 + e' % 16 (e' = e - 160);
// then 4 digits of each of the 4 bytes at 48 (e'' / 4 of byte e'' % 4); d at 52
KExpr tq1_digit(const GroupReader& r, const KExpr& e) {
  KExpr e1 = e - r.c(160), e2 = e - r.c(240);
  KExpr at = KExpr::where(e < 160, e % r.c(32), KExpr::where(e < 240, r.c(32) + e1 % r.c(16), r.c(48) + e2 % r.c(4)));
  KExpr n = KExpr::where(e < 160, e / r.c(32), KExpr::where(e < 240, e1 / r.c(16), e2 / r.c(4))).cast(dtypes::int32);
  KExpr pow3 = KExpr::where(
      n < 1, r.i(1), KExpr::where(n < 2, r.i(3), KExpr::where(n < 3, r.i(9), KExpr::where(n < 4, r.i(27), r.i(81)))));
  return (((r.byte(at) * pow3) & 255) * r.i(3)) >> 8;
}

const int8_t kIQ4[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// IQ4_XS: sub-block ib's 6-bit scale, 4 low bits in scales_l (offset 4), 2 high bits in the uint16 scales_h (2)
KExpr iq4xs_scale(const GroupReader& r, const KExpr& ib) {
  KExpr lo = (r.byte(r.c(4) + ib / r.c(2)) >> ((ib % r.c(2)).cast(dtypes::int32) << 2)) & 15;
  KExpr hi = (r.word(r.c(2)) >> (ib.cast(dtypes::int32) << 1)) & 3;
  return (lo | (hi << 4)) - r.i(32);
}

// MXFP4: 32 e2m1 values (ggml's kvalues_mxfp4, doubled to integers) times the e8m0 scale at offset 0, halved as
// ggml_e8m0_to_fp32_half: 2^(e - 128), or a subnormal for e < 2
const int8_t kMXFP4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
KExpr e8m0_half(const GroupReader& r) {
  KExpr e = r.byte(0);
  return KExpr::where(e < 2, r.i(0x00200000) << e, (e - 1) << 23).bitcast(dtypes::float32);
}
// a 16-entry byte table as lut16 takes it, each entry + `bias` (wrapping)
template <class T>
std::array<uint8_t, 16> byte_table(const T (&values)[16], int bias) {
  std::array<uint8_t, 16> t{};
  for (size_t i = 0; i < 16; ++i) t[i] = static_cast<uint8_t>(static_cast<int>(values[i]) + bias);
  return t;
}
const std::array<uint8_t, 16> kMXFP4Signed = byte_table(kMXFP4, 0), kMXFP4Bytes = byte_table(kMXFP4, 128);
// codebook entry n (int32 in [0, 16)) of an int8 codebook, as float32: its table byte, sign-extended
KExpr codebook_value(const KExpr& n, const std::array<uint8_t, 16>& table) {
  return f32((KExpr::lut16(n, table) << 24) >> 24);
}
const ByteForm kMXFP4ByteForm{
    [](const GroupReader& r, const KExpr&, const KExpr& j) {
      return KExpr::lut16(nibble_word(r, r.c(1), j), kMXFP4Bytes);
    },
    [](const GroupReader& r, const KExpr&, const KExpr&) { return std::pair{e8m0_half(r), KExpr()}; }, 128, 116, 140};

// IQ4_NL / IQ4_XS as bytes: each nibble picks its codebook value + 128 (unsigned) in one byte table lookup of the
// nibble word (KExpr::lut16: pshufb on x86), the zero point 128 subtracted as Q8_0's
const std::array<uint8_t, 16> kIQ4Signed = byte_table(kIQ4, 0), kIQ4Bytes = byte_table(kIQ4, 128);
KExpr iq4_word(const GroupReader& r, const KExpr& off, const KExpr& j) {
  return KExpr::lut16(nibble_word(r, off, j), kIQ4Bytes);
}
const ByteForm kIQ4_NLBytes{[](const GroupReader& r, const KExpr&, const KExpr& j) { return iq4_word(r, r.c(2), j); },
                            [](const GroupReader& r, const KExpr&, const KExpr&) { return d_scale(r); }, 128, 1, 241};
const ByteForm kIQ4_XSBytes{
    [](const GroupReader& r, const KExpr& sub, const KExpr& j) { return iq4_word(r, r.c(8) + sub * r.c(16), j); },
    [](const GroupReader& r, const KExpr& sub, const KExpr&) {
      return std::pair{r.half(0) * f32(iq4xs_scale(r, sub)), KExpr()};
    },
    128, 1, 241};

// ---- the IQ formats: indices into a grid of lattice points (8 or 4 values an entry), with signs and scales ----

// grid bytes as std::span, for Format::grid
template <size_t N>
std::span<const uint8_t> grid_of(const uint8_t (&g)[N]) {
  return {g, N};
}

// Bit j (int32 in [0, 8)) of IQ2_XXS's sign byte for the 7-bit index s: bit j of s, and bit 7 the parity of s (the
// signs of a group of 8 are even in number).
KExpr ksign_bit(const GroupReader& r, const KExpr& s, const KExpr& j) {
  KExpr p = s ^ (s >> 4);
  p = p ^ (p >> 2);
  p = (p ^ (p >> 1)) & 1;
  return KExpr::where(j < 7, (s >> j) & 1, p);
}
// v negated where `bit` (int32 0 or 1) is set
KExpr with_sign(const GroupReader& r, const KExpr& v, const KExpr& bit) {
  return KExpr::where(bit == r.i(0), v, v * r.k.constant(-1, dtypes::float32));
}
// d x (0.5 + s) x factor, in float32 as ggml rounds it (the IQ2 and IQ3_XXS sub-block scales)
KExpr half_step_scale(const GroupReader& r, const KExpr& s, float factor) {
  return r.half(0) * (f32(s) + r.k.constant(0.5, dtypes::float32)) * r.k.constant(factor, dtypes::float32);
}
// the 4-bit scale of sub-block s (int64) in nibbles from byte offset `at`: byte s / 2, the high nibble for odd s
KExpr nibble_scale(const GroupReader& r, int64_t at, const KExpr& s) {
  return (r.byte(r.c(at) + s / r.c(2)) >> ((s % r.c(2)).cast(dtypes::int32) << 2)) & 15;
}
// IQ1_S / IQ1_M: grid value (-1, 0 or 1) plus delta (+-1/8: minus where `neg` is set) times the scale dl
KExpr iq1_value(const GroupReader& r, const KExpr& idx, const KExpr& e, const KExpr& neg, const KExpr& dl) {
  KExpr delta =
      KExpr::where(neg == r.i(0), r.k.constant(0.125, dtypes::float32), r.k.constant(-0.125, dtypes::float32));
  return dl * (f32(r.grid(idx, e % r.c(8), 8, true)) + delta);
}

const Format kFormats[] = {
    {GGMLType::F32, 32, 128,
     [](const GroupReader& r, const KExpr& e) {
       // unsigned: shifting into the sign bit of an int32 is undefined
       KExpr lo = r.word(e * r.c(4)).cast(dtypes::uint32), hi = r.word(e * r.c(4) + r.c(2)).cast(dtypes::uint32);
       return (lo | (hi << 16)).bitcast(dtypes::float32);
     }},
    {GGMLType::F16, 32, 64,
     [](const GroupReader& r, const KExpr& e) {
       return r.word(e * r.c(2)).cast(dtypes::uint16).bitcast(dtypes::float16).cast(dtypes::float32);
     }},
    {GGMLType::BF16, 32, 64,
     [](const GroupReader& r, const KExpr& e) {
       return (r.word(e * r.c(2)).cast(dtypes::uint32) << 16).bitcast(dtypes::float32);
     }},
    {GGMLType::Q8_0, 32, 34, [](const GroupReader& r, const KExpr& e) { return r.half(0) * f32(r.sbyte(r.c(2) + e)); },
     &kQ8_0Bytes},
    {GGMLType::Q4_0, 32, 18,
     [](const GroupReader& r, const KExpr& e) { return r.half(0) * f32(nibble32(r, 2, e) - r.i(8)); }, &kQ4_0Bytes},
    {GGMLType::Q4_1, 32, 20,
     [](const GroupReader& r, const KExpr& e) { return r.half(0) * f32(nibble32(r, 4, e)) + r.half(2); }, &kQ4_1Bytes},
    {GGMLType::Q5_0, 32, 22,
     [](const GroupReader& r, const KExpr& e) {
       // the fifth bit of element e is bit e of the 32-bit qh at offset 2 (one word per block, shared by the lanes)
       KExpr hb = ((r.u32(2) >> e.cast(dtypes::uint32)) & 1).cast(dtypes::int32);
       return r.half(0) * f32((nibble32(r, 6, e) | (hb << 4)) - r.i(16));
     },
     &kQ5_0Bytes},
    {GGMLType::Q5_1, 32, 24,
     [](const GroupReader& r, const KExpr& e) {
       KExpr hb = ((r.u32(4) >> e.cast(dtypes::uint32)) & 1).cast(dtypes::int32);
       return r.half(0) * f32(nibble32(r, 8, e) | (hb << 4)) + r.half(2);
     },
     &kQ5_1Bytes},
    {GGMLType::Q2_K, 256, 84,
     [](const GroupReader& r, const KExpr& e) {
       auto [a, m] = q2k_scales(r, e / r.c(16));
       return KExpr::fma(a, f32(crumb(r, 16, e)), m);
     },
     &kQ2_KBytes},
    {GGMLType::Q3_K, 256, 110,
     [](const GroupReader& r, const KExpr& e) {
       KExpr hb = (r.byte(e % r.c(32)) >> (e / r.c(32)).cast(dtypes::int32)) & 1;
       return r.half(108) * f32(q3k_scale(r, e / r.c(16)) * (crumb(r, 32, e) + (hb << 2) - r.i(4)));
     },
     &kQ3_KBytes},
    {GGMLType::Q4_K, 256, 144,
     [](const GroupReader& r, const KExpr& e) {
       // 4 groups of 64: 32 bytes of qs each, low nibbles (sub-block 2g) then high nibbles (2g+1)
       KExpr g = e / r.c(64), hi = (e / r.c(32)) % r.c(2), l = e % r.c(32), is = e / r.c(32);
       KExpr q = (r.byte(r.c(16) + g * r.c(32) + l) >> (hi.cast(dtypes::int32) << 2)) & 15;
       return r.half(0) * f32(k_scale(r, is, false) * q) - r.half(2) * f32(k_scale(r, is, true));
     },
     &kQ4_KBytes},
    {GGMLType::Q5_K, 256, 176,
     [](const GroupReader& r, const KExpr& e) {
       KExpr g = e / r.c(64), hi = (e / r.c(32)) % r.c(2), l = e % r.c(32), is = e / r.c(32);
       KExpr q = (r.byte(r.c(48) + g * r.c(32) + l) >> (hi.cast(dtypes::int32) << 2)) & 15;
       KExpr hb = (r.byte(r.c(16) + l) >> is.cast(dtypes::int32)) & 1;
       return r.half(0) * f32(k_scale(r, is, false) * (q | (hb << 4))) - r.half(2) * f32(k_scale(r, is, true));
     },
     &kQ5_KBytes},
    {GGMLType::Q6_K, 256, 210,
     [](const GroupReader& r, const KExpr& e) {
       // two halves of 128; per half, quarter qt takes ql[l + 32 (qt&1)] nibble (qt>>1) and qh[l] bits 2qt..2qt+1
       KExpr n = e / r.c(128), qt = (e / r.c(32)) % r.c(4), l = e % r.c(32);
       KExpr ql = r.byte(n * r.c(64) + l + (qt % r.c(2)) * r.c(32)) >> ((qt / r.c(2)).cast(dtypes::int32) << 2);
       KExpr qh = r.byte(r.c(128) + n * r.c(32) + l) >> (qt.cast(dtypes::int32) << 1);
       KExpr q = ((ql & 15) | ((qh & 3) << 4)) - r.i(32);
       KExpr sc = r.sbyte(r.c(192) + n * r.c(8) + l / r.c(16) + qt * r.c(2));
       return r.half(208) * f32(sc * q);
     },
     &kQ6_KBytes},
    {GGMLType::TQ1_0, 256, 54,
     [](const GroupReader& r, const KExpr& e) { return r.half(52) * f32(tq1_digit(r, e) - r.i(1)); }},
    {GGMLType::TQ2_0, 256, 66,
     [](const GroupReader& r, const KExpr& e) { return r.half(64) * f32(crumb(r, 0, e) - r.i(1)); }, &kTQ2_0Bytes},
    {GGMLType::IQ2_XXS, 256, 66,
     [](const GroupReader& r, const KExpr& e) {
       // per 32 elements 8 bytes at 2 + 8 ib: 4 grid indices, then a uint32 of four 7-bit sign indices and a 4-bit
       // scale
       KExpr ib = e / r.c(32), l = ((e % r.c(32)) / r.c(8)).cast(dtypes::int32), j = (e % r.c(8)).cast(dtypes::int32);
       KExpr aux = r.packed(r.c(6) + ib * r.c(8)).bitcast(dtypes::uint32);
       KExpr signs = ((aux >> (l * 7).cast(dtypes::uint32)) & 127).cast(dtypes::int32);
       KExpr v = half_step_scale(r, (aux >> 28).cast(dtypes::int32), 0.25f) *
                 f32(r.grid(r.byte(r.c(2) + ib * r.c(8) + l.cast(dtypes::int64)), j.cast(dtypes::int64), 8));
       return with_sign(r, v, ksign_bit(r, signs, j));
     },
     nullptr, grid_of(kIQ2XXSGrid)},
    {GGMLType::IQ2_XS, 256, 74,
     [](const GroupReader& r, const KExpr& e) {
       // per 8 elements a uint16 at 2: a 9-bit grid index and a 7-bit sign index; 4-bit scales per 16 at 66
       KExpr q = r.word(r.c(2) + (e / r.c(8)) * r.c(2)), j = (e % r.c(8)).cast(dtypes::int32);
       KExpr v = half_step_scale(r, nibble_scale(r, 66, e / r.c(16)), 0.25f) * f32(r.grid(q & 511, e % r.c(8), 8));
       return with_sign(r, v, ksign_bit(r, q >> 9, j));
     },
     nullptr, grid_of(kIQ2XSGrid)},
    {GGMLType::IQ2_S, 256, 82,
     [](const GroupReader& r, const KExpr& e) {
       // per 8 elements: the index's low 8 bits at 2, 8 sign bits at 34; the index's high 2 bits in qh at 66 (4 a
       // byte); 4-bit scales per 16 at 74
       KExpr g = e / r.c(8);
       KExpr idx =
           r.byte(r.c(2) + g) | (((r.byte(r.c(66) + g / r.c(4)) >> ((g % r.c(4)).cast(dtypes::int32) << 1)) & 3) << 8);
       KExpr sign = (r.byte(r.c(34) + g) >> (e % r.c(8)).cast(dtypes::int32)) & 1;
       return with_sign(
           r, half_step_scale(r, nibble_scale(r, 74, e / r.c(16)), 0.25f) * f32(r.grid(idx, e % r.c(8), 8)), sign);
     },
     nullptr, grid_of(kIQ2SGrid)},
    {GGMLType::IQ3_XXS, 256, 98,
     [](const GroupReader& r, const KExpr& e) {
       // per 4 elements a grid index at 2; per 32 a uint32 at 66 + 4 ib: four 7-bit sign indices and a 4-bit scale
       KExpr ib = e / r.c(32), l = ((e % r.c(32)) / r.c(8)).cast(dtypes::int32);
       KExpr aux = r.packed(r.c(66) + ib * r.c(4)).bitcast(dtypes::uint32);
       KExpr signs = ((aux >> (l * 7).cast(dtypes::uint32)) & 127).cast(dtypes::int32);
       KExpr v = half_step_scale(r, (aux >> 28).cast(dtypes::int32), 0.5f) *
                 f32(r.grid(r.byte(r.c(2) + e / r.c(4)), e % r.c(4), 4));
       return with_sign(r, v, ksign_bit(r, signs, (e % r.c(8)).cast(dtypes::int32)));
     },
     nullptr, grid_of(kIQ3XXSGrid)},
    {GGMLType::IQ3_S, 256, 110,
     [](const GroupReader& r, const KExpr& e) {
       // per 4 elements the index's low 8 bits at 2, its ninth bit in qh at 66 (8 a byte); sign bits at 74; 4-bit
       // scales per 32 at 106, scale d (1 + 2 s)
       KExpr g = e / r.c(4);
       KExpr idx = r.byte(r.c(2) + g) | (((r.byte(r.c(66) + g / r.c(8)) >> (g % r.c(8)).cast(dtypes::int32)) & 1) << 8);
       KExpr sign = (r.byte(r.c(74) + e / r.c(8)) >> (e % r.c(8)).cast(dtypes::int32)) & 1;
       KExpr d = r.half(0) * f32(nibble_scale(r, 106, e / r.c(32)) * 2 + 1);
       return with_sign(r, d * f32(r.grid(idx, e % r.c(4), 4)), sign);
     },
     nullptr, grid_of(kIQ3SGrid)},
    {GGMLType::IQ1_S, 256, 50,
     [](const GroupReader& r, const KExpr& e) {
       // per 8 elements the index's low 8 bits at 2; per 32 a uint16 at 34: the index's high 3 bits for each 8, a
       // 3-bit scale (bits 12-14) and the delta's sign (bit 15)
       KExpr ib = e / r.c(32), l = ((e % r.c(32)) / r.c(8)).cast(dtypes::int32);
       KExpr h = r.word(r.c(34) + ib * r.c(2));
       KExpr idx = r.byte(r.c(2) + e / r.c(8)) | (((h >> (l * 3)) & 7) << 8);
       return iq1_value(r, idx, e, h & 0x8000, r.half(0) * f32(((h >> 12) & 7) * 2 + 1));
     },
     nullptr, grid_of(kIQ1SGrid)},
    {GGMLType::IQ1_M, 256, 56,
     [](const GroupReader& r, const KExpr& e) {
       // per 8 elements the index's low 8 bits at 0 and a nibble of qh at 32 (the index's high 3 bits, the delta's
       // sign); 3-bit scales per 16 in the uint16s at 48, whose top nibbles spell the float16 d
       KExpr d = (r.word(r.c(48)) >> 12) | ((r.word(r.c(50)) >> 12) << 4) | ((r.word(r.c(52)) >> 12) << 8) |
                 ((r.word(r.c(54)) >> 12) << 12);
       KExpr g = e / r.c(8), s = e / r.c(16);
       KExpr qh = r.byte(r.c(32) + g / r.c(2)) >> ((g % r.c(2)).cast(dtypes::int32) << 2);
       KExpr sc = (r.word(r.c(48) + (s / r.c(4)) * r.c(2)) >> ((s % r.c(4)).cast(dtypes::int32) * 3)) & 7;
       KExpr dl = d.cast(dtypes::uint16).bitcast(dtypes::float16).cast(dtypes::float32) * f32(sc * 2 + 1);
       return iq1_value(r, r.byte(g) | ((qh & 7) << 8), e, qh & 8, dl);
     },
     nullptr, grid_of(kIQ1SGrid)},
    {GGMLType::MXFP4, 32, 17,
     [](const GroupReader& r, const KExpr& e) {
       return e8m0_half(r) * codebook_value(nibble32(r, 1, e), kMXFP4Signed);
     },
     &kMXFP4ByteForm},
    {GGMLType::IQ4_NL, 32, 18,
     [](const GroupReader& r, const KExpr& e) { return r.half(0) * codebook_value(nibble32(r, 2, e), kIQ4Signed); },
     &kIQ4_NLBytes},
    {GGMLType::IQ4_XS, 256, 136,
     [](const GroupReader& r, const KExpr& e) {
       // 8 sub-blocks of 32, each with a 6-bit scale
       KExpr ib = e / r.c(32), j = e % r.c(32);
       KExpr q = (r.byte(r.c(8) + ib * r.c(16) + j % r.c(16)) >> ((j / r.c(16)).cast(dtypes::int32) << 2)) & 15;
       return r.half(0) * f32(iq4xs_scale(r, ib)) * codebook_value(q, kIQ4Signed);
     },
     &kIQ4_XSBytes},
};

}  // namespace

const Format* find_format(GGMLType t) {
  for (const auto& f : kFormats)
    if (f.type == t) return &f;
  return nullptr;
}

std::vector<GGMLType> format_types() {
  std::vector<GGMLType> out;
  for (const auto& f : kFormats) out.push_back(f.type);
  return out;
}

}  // namespace tg::llm
