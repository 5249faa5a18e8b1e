// The DSP plugin's Renderer: KIR -> freestanding C for clang's hexagon target (hexagonv67, 128-byte HVX), one function
// per kernel that runs a range of work-items, plus the entry the mock runtime calls; and the capabilities.
//
// What Hexagon changes against a host C renderer: pointers are 32 bits (a buffer's 8-byte address is truncated on
// unpacking); clang has no _Float16 or __bf16 for hexagonv67, so both 16-bit floats are bit patterns (unsigned
// short) converted by the runtime's helpers; float64 FMA is not claimed (it would need a soft fma); and scalar
// loads must be aligned, so any access that may not be goes through a type aligned like its element (or bytes).
#include "dsp_plugin.hpp"

#include <tg/sdk/c_renderer.hpp>
#include <tg/sdk/op_sets.hpp>
#include <tg/sdk/plugin.hpp>

#include <algorithm>
#include <cctype>
#include <set>
#include <utility>

namespace tg::dsp {
namespace {

using sdk::cat;
using sdk::Error;
using sdk::op_bit;

// The standard op sets, except float64 FMA: Hexagon has a fused float32 multiply-add (sffma) but float64's would
// be a libcall (fma) the freestanding runtime does not have; the core uses MULACC there instead.
uint64_t ops_of(uint32_t dtype) {
  const uint64_t ops = sdk::standard_ops(dtype);
  return dtype == TG_DTYPE_FLOAT64 ? ops & ~op_bit(TG_KIR_FMA) : ops;
}

// Lanes per dtype: 2..16 (the caps' mask stops at 31 lanes, so a whole 128-byte HVX register of 32 floats cannot be
// claimed; 16 x float32 is half of one). bool stays scalar: clang's hexagon backend cannot pass bool vectors.
constexpr uint32_t kLanes = (1u << 2) | (1u << 4) | (1u << 8) | (1u << 16);

tg_renderer_caps dsp_caps() {
  tg_renderer_caps caps{};
  caps.struct_size = sizeof(caps);
  caps.language = "c";
  caps.dtypes = (1u << TG_DTYPE_COUNT) - 1;
  for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d) {
    caps.ops[d] = ops_of(d);
    caps.vector_widths[d] = d == TG_DTYPE_BOOL ? 1u << 1 : (1u << 1) | kLanes;
  }
  caps.has_local = 0;
  caps.has_threads = 0;
  caps.max_global_dims = 1;
  caps.max_global[0] = UINT32_MAX;
  caps.max_global[1] = caps.max_global[2] = 1;
  caps.max_local[0] = caps.max_local[1] = caps.max_local[2] = 1;
  caps.max_local_threads = 1;
  caps.max_params = 256;
  caps.packed_loads = sdk::kPackableDtypes;  // read through byte-aligned types: clang splits what Hexagon cannot load
  return caps;
}

// The runtime's conversions (runtime/dsp_libcalls.c), declared for the kernels that use 16-bit floats.
const char* const kHalfDecls =
    "float tg_dsp_f16_to_f32(unsigned short);\nfloat tg_dsp_bf16_to_f32(unsigned short);\n"
    "unsigned short tg_dsp_f64_to_f16(double);\nunsigned short tg_dsp_f64_to_bf16(double);\n";

// IDIV/MOD: dividing by zero gives 0 and INT_MIN / -1 wraps, where C would trap or be undefined.
std::string division_helpers(const std::string& t, const std::string& name, bool is_signed) {
  if (!is_signed)
    return cat("static inline ", t, " tg_idiv_", name, "(", t, " a, ", t, " b) { return b == 0 ? 0 : a / b; }\n",
               "static inline ", t, " tg_mod_", name, "(", t, " a, ", t, " b) { return b == 0 ? 0 : a % b; }\n");
  return cat("static inline ", t, " tg_idiv_", name, "(", t, " a, ", t,
             " b) { return b == 0 ? 0 : b == -1 ? -a : a / b; }\n", "static inline ", t, " tg_mod_", name, "(", t,
             " a, ", t, " b) { return b == 0 || b == -1 ? 0 : a % b; }\n");
}

// float MAX propagates NaN (a + b is NaN when either is), which `a > b ? a : b` does not. The comparison is on
// integer keys (the bits, negative values' magnitudes flipped, so -0 < +0): written as float selects, clang's
// hexagon backend turns the whole helper into one sfmax, which returns the number, not the NaN (LLVM 19).
std::string max_helper(uint32_t dtype, const std::string& t, const std::string& name) {
  const bool wide = dtype == TG_DTYPE_FLOAT64;
  const std::string it = wide ? "long long" : "int", flip = wide ? "0x7fffffffffffffffLL" : "0x7fffffff";
  return cat("static inline ", t, " tg_max_", name, "(", t, " a, ", t, " b) {\n",
             "  const ", it, " ia = __builtin_bit_cast(", it, ", a), ib = __builtin_bit_cast(", it, ", b);\n",
             "  const ", it, " ka = ia < 0 ? ia ^ ", flip, " : ia, kb = ib < 0 ? ib ^ ", flip, " : ib;\n",
             "  return (a != a || b != b) ? a + b : (ka > kb ? a : b);\n}\n");
}

bool is_small_float(uint32_t d) { return d == TG_DTYPE_FLOAT16 || d == TG_DTYPE_BFLOAT16; }

class DspRenderer final : public sdk::CRenderer {
 public:
  std::string render_kernel(const tg_kir_kernel& kernel) {
    vector_types_.clear();
    packed_types_.clear();
    helpers_.clear();
    helper_names_.clear();
    gidx_loop_open_ = false;
    std::string source = render(kernel);
    // the mock runtime calls tg_dsp_kernel (a kernel of that very name is the entry itself)
    if (std::string_view(kernel.name) != "tg_dsp_kernel")
      source += cat("void tg_dsp_kernel(const unsigned char* args, long long gidx0_start, long long gidx0_end) { ",
                    kernel.name, "(args, gidx0_start, gidx0_end); }\n");
    return source;
  }

 protected:
  std::string scalar_type(uint32_t dtype) override {
    static const char* const names[TG_DTYPE_COUNT] = {"bool",     "int8_t",   "int16_t",  "int32_t",  "int64_t",
                                                      "uint8_t",  "uint16_t", "uint32_t", "uint64_t", "half",
                                                      "bfloat16", "float",    "double"};
    return names[dtype];
  }
  std::string vector_type(uint32_t dtype, uint32_t vcount) override {
    vector_types_.insert({dtype, vcount});
    return CRenderer::vector_type(dtype, vcount);
  }

  std::string preamble() override {
    std::string out = cat(
        "/* tg DSP kernel ", kernel().name, ": freestanding C for clang --target=hexagon -mcpu=", kArch,
        " -mhvx -mhvx-length=128b -O1 */\n",
        "typedef _Bool bool;\n"
        "typedef signed char int8_t;\ntypedef short int16_t;\ntypedef int int32_t;\ntypedef long long int64_t;\n"
        "typedef unsigned char uint8_t;\ntypedef unsigned short uint16_t;\ntypedef unsigned int uint32_t;\n"
        "typedef unsigned long long uint64_t;\n"
        "typedef unsigned short half;     /* float16 bits: no _Float16 on hexagonv67 */\n"
        "typedef unsigned short bfloat16; /* bfloat16 bits */\n");
    // Each vector type has an `_u` twin aligned like its element (a vector at any element index) ...
    for (const auto& [dtype, vcount] : vector_types_) {
      const std::string scalar = scalar_type(dtype), vec = CRenderer::vector_type(dtype, vcount);
      out += cat("typedef ", scalar, " ", vec, " __attribute__((ext_vector_type(", vcount, ")));\n", "typedef ", scalar,
                 " ", vec, "_u __attribute__((ext_vector_type(", vcount, "), aligned(", tg_dtype_size(dtype), ")));\n");
    }
    // ... and packed loads read through a byte-aligned `_p` twin
    for (const auto& [dtype, vcount] : packed_types_)
      out += cat("typedef ", scalar_type(dtype), " ", type(dtype, vcount), "_p __attribute__((",
                 vcount > 1 ? cat("ext_vector_type(", vcount, "), ") : std::string(), "aligned(1)));\n");
    for (const std::string& helper : helpers_) out += helper;
    return out;
  }

  std::string signature() override {
    return cat("void ", kernel().name,
               "(const unsigned char* restrict args, long long gidx0_start, long long gidx0_end)");
  }

  // Parameters come from the packed blob at their tg_param_layout offsets (the runtime keeps it 8-byte aligned);
  // a buffer's 64-bit address holds a 32-bit Hexagon pointer.
  void emit_prologue() override {
    const tg_kir_kernel& k = kernel();
    std::vector<size_t> offsets(k.nparams);
    tg_param_layout(k.params, k.nparams, offsets.data());
    for (uint32_t p = 0; p < k.nparams; ++p) {
      const tg_kir_param& param = k.params[p];
      const std::string t = scalar_type(param.dtype), at = cat("(args + ", offsets[p], ")");
      if (param.kind == TG_PARAM_BUFFER) {
        const std::string ptr = cat(param.writable ? "" : "const ", t, "*");
        line(cat(ptr, " ", param_name(p), " = (", ptr, ")(uint32_t)*(const uint64_t*)", at, ";"));
      } else {
        line(cat("const ", t, " ", param_name(p), " = *(const ", t, "*)", at, ";"));
      }
    }
    const bool has_work_items =
        std::any_of(k.insts, k.insts + k.ninsts, [](const tg_kir_inst& in) { return in.op == TG_KIR_SPECIAL; });
    if (!has_work_items) line("if (gidx0_start != 0) return; /* no work-item id: the body runs once per launch */");
  }

  // The one work-item id, global dim 0, is a loop over the launch's range that encloses the rest of the body.
  void emit_special(uint32_t i, uint32_t kind, uint32_t dim) override {
    if (kind != TG_SPECIAL_GLOBAL || dim != 0)
      throw Error(TG_ERR_UNSUPPORTED,
                  cat("kernel ", kernel().name, ": the DSP renderer has only global dim 0 (inst ", i, ")"));
    if (gidx_loop_open_) return;
    if (open_blocks() != 0)
      throw Error(TG_ERR_UNSUPPORTED,
                  cat("kernel ", kernel().name, ": work-item id inside a loop or if (inst ", i, ")"));
    open_block("for (long long gidx0 = gidx0_start; gidx0 < gidx0_end; ++gidx0)", i, true);
    gidx_loop_open_ = true;
  }

  bool is_reserved_name(const std::string& name) override {
    if (CRenderer::is_reserved_name(name) || name == "args" || name == "gidx0_start" || name == "gidx0_end")
      return true;
    for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d) {
      const std::string base = CRenderer::vector_type(d, 1);
      const std::string stem = base.substr(0, base.size() - 1);
      if (name == scalar_type(d) || (name.rfind(stem, 0) == 0 && name.size() > stem.size() &&
                                     std::isdigit(static_cast<unsigned char>(name[stem.size()]))))
        return true;
    }
    return false;
  }

  // The base refuses an ALU op the caps do not claim, naming this renderer.
  uint64_t claimed_ops(uint32_t dtype) override { return ops_of(dtype); }
  std::string renderer_name() override { return "DSP"; }

  std::string op_template(uint32_t op, uint32_t dtype, uint32_t src_dtype) override {
    const bool f32 = src_dtype == TG_DTYPE_FLOAT32;
    const std::string type = scalar_type(src_dtype), name = sdk::dtype_name(src_dtype);
    if (op == TG_KIR_SQRT) return f32 ? "__builtin_sqrtf({0})" : "__builtin_sqrt({0})";   // the runtime's roots
    if (op == TG_KIR_TRUNC) return f32 ? "__builtin_truncf({0})" : "__builtin_trunc({0})";  // and truncs
    if (op == TG_KIR_RECIP) return f32 ? "(1.0f/{0})" : "(1.0/{0})";
    if (op == TG_KIR_FMA) return "__builtin_elementwise_fma({0},{1},{2})";
    if (op == TG_KIR_MAX && sdk::is_float(src_dtype)) {
      use_helper("max_" + name, max_helper(src_dtype, type, name));
      return cat("tg_max_", name, "({0},{1})");
    }
    if (op == TG_KIR_MAX) return "({0}>{1}?{0}:{1})";
    if (op == TG_KIR_IDIV || op == TG_KIR_MOD) {
      use_helper("div_" + name, division_helpers(type, name, sdk::is_signed_int(src_dtype)));
      return cat(op == TG_KIR_IDIV ? "tg_idiv_" : "tg_mod_", name, "({0},{1})");
    }
    // shift counts modulo the promoted width (C leaves larger ones undefined); left shifts through unsigned
    const bool wide = tg_dtype_size(src_dtype) == 8;
    if (op == TG_KIR_SHL)
      return cat("((", type, ")((", wide ? "uint64_t" : "uint32_t", "){0}<<({1}&", wide ? 63 : 31, ")))");
    if (op == TG_KIR_SHR) return cat("({0}>>({1}&", wide ? 63 : 31, "))");
    return CRenderer::op_template(op, dtype, src_dtype);
  }

  // Vectors: ops whose C vector form means the same as per lane stay whole; the rest render lane by lane.
  std::string alu(uint32_t i, const std::vector<std::string>& srcs) override {
    const tg_kir_inst& in = inst(i);
    const uint32_t src_dtype = alu_src_dtype(i);
    const uint64_t whole = op_bit(TG_KIR_NEG) | op_bit(TG_KIR_ADD) | op_bit(TG_KIR_SUB) | op_bit(TG_KIR_MUL) |
                           op_bit(TG_KIR_FDIV) | op_bit(TG_KIR_AND) | op_bit(TG_KIR_OR) | op_bit(TG_KIR_XOR) |
                           op_bit(TG_KIR_MULACC) | op_bit(TG_KIR_FMA);
    const std::string tmpl = op_template(in.op, in.dtype, src_dtype);
    if (in.vcount == 1 || (whole & op_bit(in.op))) return sdk::fill(tmpl, srcs);
    std::vector<std::string> lanes;
    for (uint32_t lane = 0; lane < in.vcount; ++lane) {
      std::vector<std::string> lane_srcs;
      for (uint32_t j = 0; j < in.nsrc; ++j)
        lane_srcs.push_back(operand_inst(i, j).vcount == 1 ? srcs[j] : gep(srcs[j], lane));
      lanes.push_back(sdk::fill(tmpl, lane_srcs));
    }
    return vectorize(in.dtype, in.vcount, lanes);
  }

  // 16-bit floats convert through the runtime's helpers (exact widening, one rounding from double); to bool is `!= 0`.
  std::string cast(uint32_t to, uint32_t vcount, uint32_t from, const std::string& x) override {
    const bool special = to == TG_DTYPE_BOOL || from == TG_DTYPE_BOOL || is_small_float(to) || is_small_float(from);
    if (vcount > 1 && !special) return cat("__builtin_convertvector(", x, ", ", type(to, vcount), ")");
    if (vcount > 1) {
      std::vector<std::string> lanes;
      for (uint32_t lane = 0; lane < vcount; ++lane) lanes.push_back(cast(to, 1, from, gep(x, lane)));
      return vectorize(to, vcount, lanes);
    }
    if (from == to) return x;
    if (is_small_float(from) || is_small_float(to)) use_helper("half", kHalfDecls);
    const std::string wide = from == TG_DTYPE_FLOAT16    ? cat("tg_dsp_f16_to_f32(", x, ")")
                             : from == TG_DTYPE_BFLOAT16 ? cat("tg_dsp_bf16_to_f32(", x, ")")
                                                         : x;
    if (to == TG_DTYPE_BOOL) return cat("(", wide, "!=0)");
    if (to == TG_DTYPE_FLOAT16) return cat("tg_dsp_f64_to_f16((double)(", wide, "))");
    if (to == TG_DTYPE_BFLOAT16) return cat("tg_dsp_f64_to_bf16((double)(", wide, "))");
    return cat("((", scalar_type(to), ")(", wide, "))");
  }

  std::string inf_literal(uint32_t dtype, bool negative) override {
    const std::string inf =
        cat(negative ? "(-" : "(", dtype == TG_DTYPE_FLOAT32 ? "__builtin_inff()" : "__builtin_inf()", ")");
    return dtype == TG_DTYPE_FLOAT32 || dtype == TG_DTYPE_FLOAT64 ? inf : cast(dtype, 1, TG_DTYPE_FLOAT64, inf);
  }
  std::string nan_literal(uint32_t dtype) override {
    if (dtype == TG_DTYPE_FLOAT32) return "__builtin_nanf(\"\")";
    return dtype == TG_DTYPE_FLOAT64 ? "__builtin_nan(\"\")" : cast(dtype, 1, TG_DTYPE_FLOAT64, "__builtin_nan(\"\")");
  }

  // A vector access into scalar memory goes through the element-aligned `_u` type: any element index is fine.
  std::string lvalue(const Access& a) override {
    if (a.vcount == a.ptr_vcount) return CRenderer::lvalue(a);
    return cat("(*(", type(a.dtype, a.vcount), "_u*)(", a.ptr, "+", a.index, "))");
  }
  std::string packed_load(const Access& a, uint32_t dtype) override {
    packed_types_.insert({dtype, a.vcount});
    return cat("(*(const ", type(dtype, a.vcount), "_p*)(", a.ptr, "+", a.index, "))");
  }

 private:
  void use_helper(const std::string& key, const std::string& text) {
    if (helper_names_.insert(key).second) helpers_.push_back(text);
  }

  std::set<std::pair<uint32_t, uint32_t>> vector_types_;  // (dtype, vcount) pairs the body used, sorted
  std::set<std::pair<uint32_t, uint32_t>> packed_types_;  // ... and read by packed loads
  std::vector<std::string> helpers_;                      // in first-use order: the same kernel, the same text
  std::set<std::string> helper_names_;
  bool gidx_loop_open_ = false;
};

}  // namespace
}  // namespace tg::dsp

struct tg_renderer_s {
  std::shared_ptr<tg::dsp::Device> device;
  tg::dsp::DspRenderer renderer;
  std::string source;
};

namespace tg::dsp {

struct RendererHooks {
  using Renderer = tg_renderer_s;
  static constexpr std::string_view plugin = "dsp";
  static constexpr std::string_view device_label = "DSP";
  static constexpr std::string_view targets = "C (Hexagon C with HVX)";

  static bool is_target(std::string_view upper) { return upper.empty() || upper == "C" || upper == "HEXAGON"; }
  static std::unique_ptr<Renderer> create(tg_device device) {
    return std::unique_ptr<Renderer>(new Renderer{device_of(device), {}, {}});
  }
  static tg_renderer_caps caps(const Renderer& /*renderer*/) { return dsp_caps(); }
  static std::string render(Renderer& renderer, const tg_kir_kernel& kernel) {
    return renderer.renderer.render_kernel(kernel);
  }
};

}  // namespace tg::dsp

template struct tg::sdk::RendererSlots<tg::dsp::RendererHooks>;
