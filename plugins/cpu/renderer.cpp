// The CPU plugin's Renderer: KIR -> freestanding C for clang (ext_vector_type vectors, no headers), one function
// per kernel that runs a contiguous range of work-items; and the capabilities that tell the core what it takes.
#include "cpu_plugin.hpp"

#include <tg/sdk/c11_renderer.hpp>
#include <tg/sdk/clang_vector_renderer.hpp>
#include <tg/sdk/host_machine.hpp>
#include <tg/sdk/op_sets.hpp>
#include <tg/sdk/plugin.hpp>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <string_view>

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace tg::cpu {
namespace {

using sdk::cat;
using sdk::op_bit;

// The standard op sets (tg/sdk/op_sets.hpp): EXP2/LOG2/SIN go to the core's polynomials, which vectorize where
// libm calls run one lane at a time (softmax 4096x4096: 28 ms against 92 ms); 16-bit floats are storage types.
// DOT4 on int32 where the host has a byte dot product (AVX512-VNNI's or AVX-VNNI's vpdpbusd): the quantized
// LLM kernels' inner product, one instruction per 4 bytes x lanes.
bool host_has_vnni() {
  static const bool has = __builtin_cpu_supports("avx512vnni") || __builtin_cpu_supports("avxvnni");
  return has;
}
// Without VNNI, AVX2's vpmaddwd still makes 4, 8 or 16 lanes of DOT4 a few instructions (kDot4Avx2Helpers) where the
// core's decomposition took 4 shifts, masks and 32-bit multiplies per byte lane: Qwen2.5-Coder-0.5B Q4_K_M's prefill
// of 512 tokens on a 2-core AVX2 EPYC went from 37 to 61 tok/s (the 16-lane tiled products had been lane by lane).
bool host_has_avx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}
// LUT16 wherever there is pshufb (SSSE3: every x86-64 this runs on): the IQ4 codebooks' bytes, 16 or 64 at once.
bool host_has_ssse3() {
  static const bool has = __builtin_cpu_supports("ssse3");
  return has;
}
// AMX (Sapphire Rapids and later): TILE_MMA on float32 (TDPBF16PS) and int32 (TDPBSSD) where the CPU has the
// unit and Linux grants the process its 8 KiB of tile state (arch_prctl ARCH_REQ_XCOMP_PERM, Linux 5.16+; a VM
// may refuse it). Asked once, when the caps are first made. AMX=0 in the environment keeps it off (tinygrad's name).
enum AmxUnit : uint32_t { kAmxBf16 = 1u << 22, kAmxTile = 1u << 24, kAmxInt8 = 1u << 25 };  // CPUID.(7,0):EDX
bool host_grants_amx(uint32_t unit) {
  static const uint32_t granted = [] {
    const char* env = std::getenv("AMX");
    unsigned a = 0, b = 0, c = 0, d = 0;
    if ((env && std::string_view(env) == "0") || !__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & kAmxTile)) return 0u;
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
    return syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0 ? d : 0u;
  }();
  return granted & unit;
}
uint64_t ops_of(uint32_t dtype) {
  if (dtype == TG_DTYPE_FLOAT32)
    return sdk::standard_ops(dtype) | (host_grants_amx(kAmxBf16) ? op_bit(TG_KIR_TILE_MMA) : 0);
  if (dtype != TG_DTYPE_INT32) return sdk::standard_ops(dtype);
  return sdk::standard_ops(dtype) | (host_has_vnni() || host_has_avx2() ? op_bit(TG_KIR_DOT4) : 0) |
         (host_has_ssse3() ? op_bit(TG_KIR_LUT16) : 0) | (host_grants_amx(kAmxInt8) ? op_bit(TG_KIR_TILE_MMA) : 0);
}

// TILE_MMA of one shape as a helper: the whole K loop on the eight tile registers. A's slabs in tiles 0-1, B's in
// 2-3, C's (mt x nt) tiles in 4-7 for the whole loop: each step loads mt + nt tiles for mt x nt products (2 x 2:
// one load a product). The tiles are not renamed by the core, so a product waits for the loads into its own
// registers only. The configuration is loaded per call (one instruction; a worker thread's first call included).
std::string tile_mma_helper(const std::string& name, bool bf16, int mt, int nt) {
  const char* ab = bf16 ? "bfloat16" : "int8_t";
  const char* c = bf16 ? "float" : "int32_t";
  const char* dp = bf16 ? "__builtin_ia32_tdpbf16ps" : "__builtin_ia32_tdpbssd";
  const int step = bf16 ? 512 : 1024;  // elements of A or B a step
  std::string s = cat("static __attribute__((target(\"amx-tile,", bf16 ? "amx-bf16" : "amx-int8", "\"))) void ", name,
                      "(", c, "* c, long long ldc, const ", ab, "* a, long long sa, const ", ab,
                      "* b, long long sb, long long steps, int acc) {\n",
                      "  struct { unsigned char palette, start, reserved[14]; unsigned short colsb[16]; unsigned char "
                      "rows[16]; } cfg = {1};\n",
                      "  for (int t = 0; t < 8; ++t) { cfg.colsb[t] = 64; cfg.rows[t] = 16; }\n",
                      "  __builtin_ia32_tile_loadconfig(&cfg);\n");
  auto ct = [&](int i, int j) { return 4 + i * 2 + j; };
  auto c_at = [&](int i, int j) { return cat("c + ", 16 * i, " * ldc + ", 16 * j); };
  for (int i = 0; i < mt; ++i)
    for (int j = 0; j < nt; ++j)
      s += cat("  if (acc) __builtin_ia32_tileloadd64(", ct(i, j), ", ", c_at(i, j), ", ldc * ", 4,
               "); else __builtin_ia32_tilezero(", ct(i, j), ");\n");
  s += "  for (long long s = 0; s < steps; ++s) {\n";
  for (int i = 0; i < mt; ++i)
    s += cat("    __builtin_ia32_tileloadd64(", i, ", a + ", i, " * sa + s * ", step, ", 64);\n");
  for (int j = 0; j < nt; ++j)
    s += cat("    __builtin_ia32_tileloadd64(", 2 + j, ", b + ", j, " * sb + s * ", step, ", 64);\n");
  for (int i = 0; i < mt; ++i)
    for (int j = 0; j < nt; ++j) s += cat("    ", dp, "(", ct(i, j), ", ", i, ", ", 2 + j, ");\n");
  s += "  }\n";
  for (int i = 0; i < mt; ++i)
    for (int j = 0; j < nt; ++j)
      s += cat("  __builtin_ia32_tilestored64(", ct(i, j), ", ", c_at(i, j), ", ldc * 4);\n");
  return s + "}\n";
}
// pshufb of 128, 256 or 512 bits for a LUT16 of 1, 4, 8 or 16 lanes (0 where the host has none): the table is
// repeated in every 128-bit lane, as the instruction looks up within its lane; one lane uses lane 0 of 128 bits
int pshufb_bits(uint32_t lanes) {
  static const bool avx2 = __builtin_cpu_supports("avx2"), avx512bw = __builtin_cpu_supports("avx512bw");
  return lanes == 1 || lanes == 4 ? 128 : lanes == 8 && avx2 ? 256 : lanes == 16 && avx512bw ? 512 : 0;
}

// DOT4 for lane counts the host's vpdpbusd does not cover: the definition, byte by byte.
const char* const kDot4Helper =
    "static inline int32_t tg_dot4(int32_t acc, int32_t a, int32_t b) {\n"
    "  unsigned int ua = (unsigned int)a, ub = (unsigned int)b, sum = (unsigned int)acc;\n"
    "  for (int i = 0; i < 32; i += 8) sum += (unsigned int)((int)((ua >> i) & 255u) * (int)(signed char)(ub >> i));\n"
    "  return (int32_t)sum;\n"
    "}\n";
// DOT4 on 4, 8 or 16 lanes with AVX2 and no VNNI, exact for every byte: the unsigned bytes split as u = l + 128 h (l
// = u & 127, h = u >> 7), so that both halves meet vpmaddubsw's int16 pair sums without saturating (|2 x 127 x -128|
// and |2 x 1 x -128| fit), and vpmaddwd adds adjacent pairs into the 32-bit lanes, by 1 for l's and by 128 for h's:
// 8 instructions per 32 bytes, no lane crossing. Widening both operands to 16 bits and vpmaddwd took ~14 (the
// zero- and sign-extensions, then the even and odd lanes gathered across 128-bit halves). Sums wrap, as vpdpbusd's.
const char* const kDot4Avx2Helpers = R"(typedef char tg_x8x16 __attribute__((vector_size(16)));
typedef char tg_x8x32 __attribute__((vector_size(32)));
typedef short tg_x16x8 __attribute__((vector_size(16)));
typedef short tg_x16x16 __attribute__((vector_size(32)));
typedef unsigned short tg_xu16x8 __attribute__((vector_size(16)));
typedef unsigned short tg_xu16x16 __attribute__((vector_size(32)));
typedef int tg_i32x4 __attribute__((ext_vector_type(4)));
typedef int tg_i32x8 __attribute__((ext_vector_type(8)));
typedef int tg_i32x16 __attribute__((ext_vector_type(16)));
typedef unsigned int tg_u32x4 __attribute__((ext_vector_type(4)));
typedef unsigned int tg_u32x8 __attribute__((ext_vector_type(8)));
static inline tg_i32x4 tg_dot4x4(tg_i32x4 acc, tg_i32x4 a, tg_i32x4 b) {
  const tg_x16x8 one = {1, 1, 1, 1, 1, 1, 1, 1}, top = {128, 128, 128, 128, 128, 128, 128, 128};
  const tg_xu16x8 u = (tg_xu16x8)a;
  tg_x16x8 lo = __builtin_ia32_pmaddubsw128((tg_x8x16)(u & 0x7f7f), (tg_x8x16)b);
  tg_x16x8 hi = __builtin_ia32_pmaddubsw128((tg_x8x16)((u >> 7) & 0x0101), (tg_x8x16)b);
  return (tg_i32x4)((tg_u32x4)acc + (tg_u32x4)__builtin_ia32_pmaddwd128(lo, one) +
                    (tg_u32x4)__builtin_ia32_pmaddwd128(hi, top));
}
static inline tg_i32x8 tg_dot4x8(tg_i32x8 acc, tg_i32x8 a, tg_i32x8 b) {
  const tg_x16x16 one = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  const tg_x16x16 top = {128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128, 128};
  const tg_xu16x16 u = (tg_xu16x16)a;
  tg_x16x16 lo = __builtin_ia32_pmaddubsw256((tg_x8x32)(u & 0x7f7f), (tg_x8x32)b);
  tg_x16x16 hi = __builtin_ia32_pmaddubsw256((tg_x8x32)((u >> 7) & 0x0101), (tg_x8x32)b);
  return (tg_i32x8)((tg_u32x8)acc + (tg_u32x8)__builtin_ia32_pmaddwd256(lo, one) +
                    (tg_u32x8)__builtin_ia32_pmaddwd256(hi, top));
}
static inline tg_i32x16 tg_dot4x16(tg_i32x16 acc, tg_i32x16 a, tg_i32x16 b) {
  tg_i32x8 lo = tg_dot4x8(acc.lo, a.lo, b.lo), hi = tg_dot4x8(acc.hi, a.hi, b.hi);
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
)";
// DOT4 under its narrow promise (TG_KIR_DOT4_NARROW: each pair of byte products fits int16) on 4, 8 or 16 lanes with
// AVX2 and no VNNI: vpmaddubsw's sums of adjacent u8 x s8 products in 16 bits (saturating, which the promise rules
// out), then vpmaddwd by ones adds adjacent pairs into the 32-bit lanes: two instructions per 32 bytes, where the
// exact helpers above take eight (about fourteen before the split). Qwen2.5-Coder-0.5B's products on one AVX2 EPYC core
// (bench_quant, CPU_COUNT=1), GMAC/s at 512 tokens and at one: Q5_0 4864 x 896 18-23 -> 52-54 and 5-7 -> 12-13; Q4_K
// 896 x 4864 20-23 -> 31-48 and 9-10 -> 17; Q6_K 16-20 -> 44 and 8 -> 13-14.
const char* const kDot4NarrowAvx2Helpers = R"(typedef char tg_n8x16 __attribute__((vector_size(16)));
typedef char tg_n8x32 __attribute__((vector_size(32)));
typedef short tg_n16x8 __attribute__((vector_size(16)));
typedef short tg_n16x16 __attribute__((vector_size(32)));
typedef int tg_n32x4 __attribute__((ext_vector_type(4)));
typedef int tg_n32x8 __attribute__((ext_vector_type(8)));
typedef int tg_n32x16 __attribute__((ext_vector_type(16)));
typedef unsigned int tg_nu32x4 __attribute__((ext_vector_type(4)));
typedef unsigned int tg_nu32x8 __attribute__((ext_vector_type(8)));
static inline tg_n32x4 tg_dot4n_x4(tg_n32x4 acc, tg_n32x4 a, tg_n32x4 b) {
  const tg_n16x8 one = {1, 1, 1, 1, 1, 1, 1, 1};
  tg_n16x8 pairs = __builtin_ia32_pmaddubsw128((tg_n8x16)a, (tg_n8x16)b);
  return (tg_n32x4)((tg_nu32x4)acc + (tg_nu32x4)__builtin_ia32_pmaddwd128(pairs, one));
}
static inline tg_n32x8 tg_dot4n_x8(tg_n32x8 acc, tg_n32x8 a, tg_n32x8 b) {
  const tg_n16x16 one = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  tg_n16x16 pairs = __builtin_ia32_pmaddubsw256((tg_n8x32)a, (tg_n8x32)b);
  return (tg_n32x8)((tg_nu32x8)acc + (tg_nu32x8)__builtin_ia32_pmaddwd256(pairs, one));
}
static inline tg_n32x16 tg_dot4n_x16(tg_n32x16 acc, tg_n32x16 a, tg_n32x16 b) {
  tg_n32x8 lo = tg_dot4n_x8(acc.lo, a.lo, b.lo), hi = tg_dot4n_x8(acc.hi, a.hi, b.hi);
  return __builtin_shufflevector(lo, hi, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}
)";
// LUT16 for scalars and the lane counts pshufb does not cover: the definition, byte by byte.
const char* const kLut16Helper =
    "static inline int32_t tg_lut16(int32_t idx, int32_t t0, int32_t t1, int32_t t2, int32_t t3) {\n"
    "  const unsigned int t[4] = {(unsigned int)t0, (unsigned int)t1, (unsigned int)t2, (unsigned int)t3};\n"
    "  unsigned int out = 0;\n"
    "  for (int i = 0; i < 32; i += 8) {\n"
    "    unsigned int n = ((unsigned int)idx >> i) & 15u;\n"
    "    out |= ((t[n >> 2] >> ((n & 3u) * 8u)) & 255u) << i;\n"
    "  }\n"
    "  return (int32_t)out;\n"
    "}\n";

tg_renderer_caps cpu_caps() {
  tg_renderer_caps caps = sdk::ClangVectorRenderer::preset_caps((1u << 2) | (1u << 4) | (1u << 8) | (1u << 16));
  for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d) caps.ops[d] = ops_of(d);
  caps.language = "c";  // CUSTOM snippets are pasted into the source as written
  caps.has_threads = 1;
  caps.packed_loads = sdk::kPackableDtypes;  // x86 loads at any alignment
  sdk::describe_host_machine(caps, /*native: kernels are compiled for this CPU*/ true);
  return caps;
}

// Helper functions the kernels may call, emitted into the preamble only when used.

// float16/bfloat16 conversions done with integer ops (the SDK's C11 helpers): exact round-to-nearest-even from double
// (so every source type rounds once), NaN stays NaN, and no compiler-rt call is needed (libgcc has no __truncsfbf2 to
// resolve). The CPU's half/bfloat16 are native types (_Float16, __bf16) holding those bits.
const std::string kHalfHelpers = std::string(sdk::kSmallFloatHelpersC) +
                                 R"(static inline half tg_to_half(double d) {
  return __builtin_bit_cast(half, (unsigned short)tg_round_small_float(d, 5, 10));
}
static inline bfloat16 tg_to_bf16(double d) {
  return __builtin_bit_cast(bfloat16, (unsigned short)tg_round_small_float(d, 8, 7));
}
static inline float tg_half_to_float(half h) { return tg_f16_bits_to_float(__builtin_bit_cast(unsigned short, h)); }
static inline float tg_bf16_to_float(bfloat16 h) { return tg_bf16_bits_to_float(__builtin_bit_cast(unsigned short, h)); }
)";

class CpuRenderer final : public sdk::ClangVectorRenderer {
 protected:
  uint64_t claimed_ops(uint32_t dtype) override { return ops_of(dtype); }
  std::string renderer_name() override { return "CPU"; }

  std::string preamble_comment() override {
    return cat("/* tg CPU kernel ", kernel().name,
               ": freestanding C for clang; every type and helper is defined here */\n");
  }
  std::string small_float_typedefs() override { return "typedef _Float16 half;\ntypedef __bf16 bfloat16;\n"; }
  const SmallFloatCalls& small_float_calls() override {
    static const SmallFloatCalls calls{"tg_half_to_float", "tg_bf16_to_float", "tg_to_half", "tg_to_bf16",
                                       kHalfHelpers};
    return calls;
  }

  // The core already unrolled what pays (output vectors, register tiles); clang's partial unrolling of a long
  // loop around a register tile doubles its live vectors and spills them (a 4x3 AVX2 matmul tile: 35 -> 89
  // GFLOP/s on one core). Short constant loops are still unrolled whole (register arrays become registers).
  std::string range_header(const std::string& type, const std::string& name, const std::string& end) override {
    const bool short_loop = !end.empty() && std::all_of(end.begin(), end.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) || c == 'L';
    }) && std::stoll(end) <= 64;
    return (short_loop ? "" : "_Pragma(\"clang loop unroll(disable)\") ") + CRenderer::range_header(type, name, end);
  }

  // DOT4 and LUT16 where the host has no instruction for them: the helpers' byte-by-byte definitions.
  std::string op_template(uint32_t op, uint32_t dtype, uint32_t src_dtype) override {
    if (op == TG_KIR_DOT4) {
      use_helper("dot4", kDot4Helper);
      return "tg_dot4({0},{1},{2})";
    }
    if (op == TG_KIR_LUT16) {
      use_helper("lut16", kLut16Helper);
      return "tg_lut16({0},{1},{2},{3},{4})";
    }
    return ClangVectorRenderer::op_template(op, dtype, src_dtype);
  }

  // DOT4 and LUT16 vectors as one x86 instruction where the host has it; the rest is the preset's.
  std::string alu(uint32_t i, const std::vector<std::string>& srcs) override {
    const tg_kir_inst& in = inst(i);
    // vpdpbusd on 4, 8 or 16 int32 lanes (4 and 8 need AVX512VL's or AVX-VNNI's forms, which the target has
    // whenever it has VNNI with 128- and 256-bit registers)
    if (in.op == TG_KIR_DOT4 && host_has_vnni() && (in.vcount == 4 || in.vcount == 8 || in.vcount == 16))
      return cat("((", type(in.dtype, in.vcount), ")__builtin_ia32_vpdpbusd", 32 * in.vcount, "(", srcs[0], ",",
                 srcs[1], ",", srcs[2], "))");
    if (in.op == TG_KIR_DOT4 && host_has_avx2() && (in.vcount == 4 || in.vcount == 8 || in.vcount == 16)) {
      const bool narrow = in.arg.i & TG_KIR_DOT4_NARROW;
      use_helper(narrow ? "dot4_narrow_avx2" : "dot4_avx2", narrow ? kDot4NarrowAvx2Helpers : kDot4Avx2Helpers);
      const int lanes = static_cast<int>(in.vcount);
      const std::string v = cat(narrow ? "tg_n32x" : "tg_i32x", lanes);
      return cat("((", type(in.dtype, in.vcount), ")", narrow ? "tg_dot4n_x" : "tg_dot4x", lanes, "((", v, ")(",
                 srcs[0], "),(", v, ")(", srcs[1], "),(", v, ")(", srcs[2], ")))");
    }
    if (in.op == TG_KIR_LUT16 && pshufb_bits(in.vcount) && uniform_operands(i, 1, 5)) {
      // a scalar (the tiled int8 product's weight words, broadcast afterwards) goes through lane 0 of a 4-lane one
      const bool scalar = in.vcount == 1;
      const uint32_t lanes = scalar ? 4 : in.vcount;
      const int bits = pshufb_bits(in.vcount);
      std::string table;  // the table's 4 words (lane 0 of operands 1..4), once per 128 bits
      for (uint32_t lane = 0; lane < lanes; ++lane)
        table += cat(lane ? "," : "", scalar ? srcs[1 + lane % 4] : cat("(", srcs[1 + lane % 4], ")[0]"));
      const std::string vec = type(in.dtype, lanes), bytes = cat("tg_bytes", bits / 8);
      const std::string idx =
          scalar ? cat("(", vec, "){", srcs[0], "&0x0F0F0F0F,0,0,0}") : cat("(", srcs[0], "&0x0F0F0F0F)");
      use_helper(bytes, cat("typedef char ", bytes, " __attribute__((ext_vector_type(", bits / 8, ")));\n"));
      return cat("((", vec, ")__builtin_ia32_pshufb", bits, "((", bytes, ")(", vec, "){", table, "},(", bytes, ")", idx,
                 "))", scalar ? "[0]" : "");
    }
    return ClangVectorRenderer::alu(i, srcs);
  }

  // TILE_MMA as a call of its shape's helper (the pointers offset by their indices).
  std::string tile_mma(uint32_t i, const std::vector<std::string>& o) override {
    const tg_kir_inst& in = inst(i);
    const bool bf16 = in.dtype == TG_DTYPE_FLOAT32;
    const int mt = static_cast<int>(in.arg.i & 15), nt = static_cast<int>((in.arg.i >> 4) & 15);
    const std::string name = cat("tg_tile_mma_", bf16 ? "bf16_" : "int8_", mt, nt);
    use_helper(name, tile_mma_helper(name, bf16, mt, nt));
    return cat(name, "(", o[0], " + ", o[1], ", ", o[2], ", ", o[3], " + ", o[4], ", ", o[5], ", ", o[6], " + ", o[7],
               ", ", o[8], ", ", o[9], ", ", (in.arg.i & 256) ? 1 : 0, ");");
  }

  // Whether operands [first, end) of instruction i hold one value in every lane (a scalar broadcast): pshufb
  // looks LUT16's table up in a register shared by the lanes, so a table that differs per lane goes lane by lane.
  bool uniform_operands(uint32_t i, uint32_t first, uint32_t end) const {
    for (uint32_t j = first; j < end; ++j) {
      const uint32_t v = src(i, j);
      const tg_kir_inst& s = inst(v);
      if (s.vcount == 1) continue;
      if (s.op != TG_KIR_VECTORIZE) return false;
      for (uint32_t lane = 1; lane < s.nsrc; ++lane)
        if (src(v, lane) != src(v, 0)) return false;
    }
    return true;
  }

  // The kernels are compiled for this host, so the host's F16C decides whether half conversions are native.
  static bool host_has_f16c() {
    static const bool has = __builtin_cpu_supports("f16c");
    return has;
  }

  // With F16C, half <-> float converts natively (one vcvtph2ps / vcvtps2ph, rounding to nearest even once as the
  // helper does); every other conversion is the preset's.
  std::string cast(uint32_t to, uint32_t vcount, uint32_t from, const std::string& x) override {
    if (!host_has_f16c()) return ClangVectorRenderer::cast(to, vcount, from, x);
    // half -> float widening is exact: one vcvtph2ps per vector (the LLM's fp16 weights)
    if (vcount > 1 && from == TG_DTYPE_FLOAT16 && to == TG_DTYPE_FLOAT32)
      return cat("__builtin_convertvector(", x, ", ", type(to, vcount), ")");
    // and for a scalar too (a quantized block's scale): the helper's branches cost more than the block's arithmetic
    if (vcount == 1 && from == TG_DTYPE_FLOAT16 && (to == TG_DTYPE_FLOAT32 || to == TG_DTYPE_FLOAT64))
      return cat("((", scalar_type(to), ")(", x, "))");
    // an f16 KV cache row is written without the helper's branches per value
    if (vcount == 1 && from == TG_DTYPE_FLOAT32 && to == TG_DTYPE_FLOAT16) return cat("((half)(", x, "))");
    return ClangVectorRenderer::cast(to, vcount, from, x);
  }
};

}  // namespace
}  // namespace tg::cpu

struct tg_renderer_s {
  std::shared_ptr<tg::cpu::Device> device;
  tg::cpu::CpuRenderer renderer;
  std::string source;  // the last render's text, returned borrowed
};

namespace tg::cpu {

// The renderer slots' hooks (tg/sdk/plugin_slots.hpp). Targets: none given, or the C renderer by name.
struct RendererHooks {
  using Renderer = tg_renderer_s;
  static constexpr std::string_view plugin = "cpu";
  static constexpr std::string_view device_label = "CPU";
  static constexpr std::string_view targets = "C (alias CLANG)";

  static bool is_target(std::string_view upper) { return upper.empty() || upper == "C" || upper == "CLANG"; }
  static std::unique_ptr<Renderer> create(tg_device device) {
    return std::unique_ptr<Renderer>(new Renderer{device_of(device), {}, {}});
  }
  static tg_renderer_caps caps(const Renderer& /*renderer*/) { return cpu_caps(); }
  static std::string render(Renderer& renderer, const tg_kir_kernel& kernel) {
    return renderer.renderer.render_kernel(kernel);
  }
};

}  // namespace tg::cpu

template struct tg::sdk::RendererSlots<tg::cpu::RendererHooks>;
