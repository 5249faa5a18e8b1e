// KIR as text, the INTERP Renderer's "source" and its Compiler's input; and KirCopy, a kernel that owns its arrays.
//
//   # tg KIR v1 for INTERP: one line per instruction; the INTERP compiler parses this text
//   kernel E_4 global_dims 1
//   param 0 buffer float32 rw data0
//   param 1 buffer float32 ro data1
//      0: PARAM       float32     global arg=0                        ; data0
//      3: CONST       float32            arg=0x3ff0000000000000       ; 1
//      5: ADD         float32x4          %2 %4
//
// Every field of every instruction is there (float constants as their exact double bits), so parsing the text
// gives back the very kernel that was rendered; what follows ';' is for people and is ignored.
#include "interp_plugin.hpp"

#include <tg/sdk/c_renderer.hpp>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

namespace tg::interp {

using sdk::cat;
using sdk::Error;

KirCopy KirCopy::of(const tg_kir_kernel& k) {
  KirCopy c;
  c.name = k.name ? k.name : "";
  c.insts.assign(k.insts, k.insts + k.ninsts);
  c.src_pool.assign(k.src_pool, k.src_pool + k.nsrc_pool);
  c.params.assign(k.params, k.params + k.nparams);
  for (uint32_t p = 0; p < k.nparams; ++p) c.param_names.push_back(k.params[p].name ? k.params[p].name : "");
  c.global_dims = k.global_dims;
  c.fix_names();
  return c;
}

void KirCopy::fix_names() {
  for (size_t p = 0; p < params.size(); ++p) params[p].name = param_names[p].c_str();
}

tg_kir_kernel KirCopy::view() const {
  return tg_kir_kernel{sizeof(tg_kir_kernel),
                       name.c_str(),
                       insts.data(),
                       static_cast<uint32_t>(insts.size()),
                       static_cast<uint32_t>(src_pool.size()),
                       src_pool.data(),
                       params.data(),
                       static_cast<uint32_t>(params.size()),
                       global_dims};
}

namespace {

const char* const kAddrspaces[] = {"global", "local", "reg"};

bool is_pointer_op(uint32_t op) { return op == TG_KIR_PARAM || op == TG_KIR_DEFINE_REG || op == TG_KIR_DEFINE_LOCAL; }
bool has_arg(uint32_t op) {
  return op == TG_KIR_PARAM || op == TG_KIR_CONST || op == TG_KIR_SPECIAL || op == TG_KIR_DEFINE_REG ||
         op == TG_KIR_DEFINE_LOCAL || op == TG_KIR_RANGE || op == TG_KIR_GEP;
}

// A parameter name as one token: its own when it has no space or ';', else "-".
std::string name_token(const char* name) {
  const std::string s = name ? name : "";
  return s.empty() || s.find_first_of(" \t\r\n;") != std::string::npos ? "-" : s;
}

// What a person wants to read after ';'.
std::string comment(const tg_kir_kernel& k, const tg_kir_inst& in) {
  if (in.op == TG_KIR_PARAM && in.arg.i >= 0 && static_cast<uint64_t>(in.arg.i) < k.nparams)
    return name_token(k.params[in.arg.i].name);
  if (in.op == TG_KIR_CONST && sdk::is_float(in.dtype)) {
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", in.arg.f);
    return text;
  }
  if (in.op == TG_KIR_SPECIAL) return cat("gidx", in.arg.i % 4);
  return "";
}

[[noreturn]] void bad_line(size_t line, const std::string& text, const std::string& why) {
  throw Error(TG_ERR_COMPILE, cat("KIR text line ", line, ": ", why, ": '", text, "'"));
}

uint32_t parse_dtype(const std::string& word, size_t line, const std::string& text) {
  for (uint32_t d = 0; d < TG_DTYPE_COUNT; ++d)
    if (word == sdk::dtype_name(d)) return d;
  bad_line(line, text, cat("unknown dtype '", word, "'"));
}

uint32_t parse_op(const std::string& word, size_t line, const std::string& text) {
  for (uint32_t op = 0; op < TG_KIR_OP_COUNT; ++op)
    if (word == sdk::op_name(op)) return op;
  bad_line(line, text, cat("unknown op '", word, "'"));
}

// A whole token as an integer (decimal, or 0x hex for bit patterns).
int64_t parse_int(const std::string& word, size_t line, const std::string& text) {
  if (word.empty()) bad_line(line, text, "missing number");
  char* end = nullptr;
  errno = 0;
  const int64_t value =
      word[0] == '-' ? std::strtoll(word.c_str(), &end, 0) : static_cast<int64_t>(std::strtoull(word.c_str(), &end, 0));
  if (*end != '\0' || errno != 0) bad_line(line, text, cat("'", word, "' is not a number"));
  return value;
}

}  // namespace

std::string kir_to_text(const tg_kir_kernel& k) {
  std::ostringstream os;
  os << "# tg KIR v" << TG_ABI_VERSION_MAJOR << " for INTERP: one line per instruction; the INTERP compiler parses "
     << "this text\n";
  os << "kernel " << k.name << " global_dims " << k.global_dims << "\n";
  for (uint32_t p = 0; p < k.nparams; ++p) {
    const tg_kir_param& param = k.params[p];
    os << "param " << p << " " << (param.kind == TG_PARAM_BUFFER ? "buffer" : "var") << " "
       << sdk::dtype_name(param.dtype) << " " << (param.writable ? "rw" : "ro") << " " << name_token(param.name)
       << "\n";
  }
  for (uint32_t i = 0; i < k.ninsts; ++i) {
    const tg_kir_inst& in = k.insts[i];
    std::string type = sdk::dtype_name(in.dtype);
    if (in.vcount != 1) type += cat("x", +in.vcount);
    std::string fields;
    if (is_pointer_op(in.op) || in.addrspace != 0)
      fields += in.addrspace < 3 ? kAddrspaces[in.addrspace] : cat("addrspace", +in.addrspace);
    if (has_arg(in.op) || in.arg.i != 0) {
      char arg[40];
      if (in.op == TG_KIR_CONST && sdk::is_float(in.dtype))
        std::snprintf(arg, sizeof arg, "arg=0x%016" PRIx64, static_cast<uint64_t>(in.arg.i));
      else
        std::snprintf(arg, sizeof arg, "arg=%" PRId64, in.arg.i);
      if (!fields.empty()) fields += ' ';  // (not "" or " " + std::string: GCC 12 -O3 warns a false -Wrestrict there)
      fields += arg;
    }
    for (uint32_t j = 0; j < in.nsrc; ++j) fields += cat(fields.empty() ? "" : " ", "%", k.src_pool[in.src_start + j]);
    char head[64];
    std::snprintf(head, sizeof head, "%5u: %-11s %-11s ", i, sdk::op_name(in.op), type.c_str());
    std::string text = head + fields;
    const std::string note = comment(k, in);
    if (!note.empty()) text += std::string(text.size() < 64 ? 64 - text.size() : 1, ' ') + "; " + note;
    os << text << "\n";
  }
  return os.str();
}

KirCopy kir_from_text(const std::string& source) {
  KirCopy k;
  bool have_kernel = false;
  std::istringstream lines(source);
  std::string text;
  for (size_t line = 1; std::getline(lines, text); ++line) {
    const std::string code = text.substr(0, text.find_first_of("#;"));
    std::istringstream words(code);
    std::string first;
    if (!(words >> first)) continue;  // blank or comment
    if (first == "kernel") {
      std::string dims_word, dims;
      if (!(words >> k.name >> dims_word >> dims) || dims_word != "global_dims")
        bad_line(line, text, "bad kernel line");
      k.global_dims = static_cast<uint32_t>(parse_int(dims, line, text));
      have_kernel = true;
      continue;
    }
    if (first == "param") {
      std::string index, kind, dtype, access, name;
      if (!(words >> index >> kind >> dtype >> access >> name)) bad_line(line, text, "bad param line");
      if (parse_int(index, line, text) != static_cast<int64_t>(k.params.size()))
        bad_line(line, text, cat("expected param ", k.params.size()));
      if ((kind != "buffer" && kind != "var") || (access != "rw" && access != "ro"))
        bad_line(line, text, "a param is 'buffer' or 'var', and 'rw' or 'ro'");
      tg_kir_param param{};
      param.kind = kind == "buffer" ? TG_PARAM_BUFFER : TG_PARAM_VAR;
      param.dtype = parse_dtype(dtype, line, text);
      param.writable = access == "rw";
      k.params.push_back(param);
      k.param_names.push_back(name == "-" ? cat("param", k.params.size() - 1) : name);
      continue;
    }
    // "<i>: OP dtype[xN] [addrspace] [arg=V] [%src...]"
    if (first.back() != ':' ||
        parse_int(first.substr(0, first.size() - 1), line, text) != static_cast<int64_t>(k.insts.size()))
      bad_line(line, text, cat("expected instruction ", k.insts.size()));
    std::string op, type;
    if (!(words >> op >> type)) bad_line(line, text, "an instruction needs an op and a dtype");
    tg_kir_inst in{};
    in.op = static_cast<uint16_t>(parse_op(op, line, text));
    const size_t x = type.find('x');
    in.dtype = static_cast<uint8_t>(parse_dtype(type.substr(0, x), line, text));
    const int64_t vcount = x == std::string::npos ? 1 : parse_int(type.substr(x + 1), line, text);
    if (vcount < 1 || vcount > 255) bad_line(line, text, "lanes must be 1..255");
    in.vcount = static_cast<uint8_t>(vcount);
    in.src_start = static_cast<uint32_t>(k.src_pool.size());
    for (std::string word; words >> word;) {
      if (word[0] == '%') {
        k.src_pool.push_back(static_cast<int32_t>(parse_int(word.substr(1), line, text)));
        if (++in.nsrc == 0) bad_line(line, text, "too many operands");
      } else if (word.rfind("arg=", 0) == 0) {
        in.arg.i = parse_int(word.substr(4), line, text);
      } else if (word == "global" || word == "local" || word == "reg") {
        in.addrspace = word == "global" ? TG_ADDR_GLOBAL : word == "local" ? TG_ADDR_LOCAL : TG_ADDR_REG;
      } else {
        bad_line(line, text, cat("unexpected '", word, "'"));
      }
    }
    k.insts.push_back(in);
  }
  if (!have_kernel) throw Error(TG_ERR_COMPILE, "KIR text has no 'kernel <name> global_dims <n>' line");
  k.fix_names();
  return k;
}

}  // namespace tg::interp
