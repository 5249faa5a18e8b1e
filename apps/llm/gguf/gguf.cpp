// GGUF reader: a bounds-checked cursor over the mapped bytes; every malformed field is a tg::Error with its offset.
#include "gguf/gguf.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace tg::llm {

namespace {

constexpr TypeTraits kTraits[] = {
    {"F32", 1, 4},      {"F16", 1, 2},        {"Q4_0", 32, 18},    {"Q4_1", 32, 20},     {nullptr, 0, 0},
    {nullptr, 0, 0},    {"Q5_0", 32, 22},     {"Q5_1", 32, 24},    {"Q8_0", 32, 34},     {"Q8_1", 32, 36},
    {"Q2_K", 256, 84},  {"Q3_K", 256, 110},   {"Q4_K", 256, 144},  {"Q5_K", 256, 176},   {"Q6_K", 256, 210},
    {"Q8_K", 256, 292}, {"IQ2_XXS", 256, 66}, {"IQ2_XS", 256, 74}, {"IQ3_XXS", 256, 98}, {"IQ1_S", 256, 50},
    {"IQ4_NL", 32, 18}, {"IQ3_S", 256, 110},  {"IQ2_S", 256, 82},  {"IQ4_XS", 256, 136}, {"I8", 1, 1},
    {"I16", 1, 2},      {"I32", 1, 4},        {"I64", 1, 8},       {"F64", 1, 8},        {"IQ1_M", 256, 56},
    {"BF16", 1, 2},     {nullptr, 0, 0},      {nullptr, 0, 0},     {nullptr, 0, 0},      {"TQ1_0", 256, 54},
    {"TQ2_0", 256, 66}, {nullptr, 0, 0},      {nullptr, 0, 0},     {nullptr, 0, 0},      {"MXFP4", 32, 17},
};

// Limits that keep a hostile header from allocating without bound (real files are far below them).
constexpr uint64_t kMaxString = 1ull << 30, kMaxArray = 1ull << 28, kMaxCount = 1ull << 24, kMaxDims = 8;
constexpr int kMaxNesting = 4;
constexpr uint64_t kPackFrom = 64;  // arrays this long stay packed in the file's bytes

class Cursor {
 public:
  Cursor(const uint8_t* d, size_t n, const std::string& file) : d_(d), n_(n), file_(file) {}
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("gguf: " + file_ + ": at byte " + std::to_string(pos_) + ": " + what);
  }
  const uint8_t* take(uint64_t k, const char* what) {
    if (k > n_ - pos_)
      fail(std::string("truncated file: ") + what + " needs " + std::to_string(k) + " bytes, " +
           std::to_string(n_ - pos_) + " left");
    const uint8_t* p = d_ + pos_;
    pos_ += k;
    return p;
  }
  template <typename T>
  T get(const char* what) {
    T v;
    std::memcpy(&v, take(sizeof(T), what), sizeof(T));
    return v;
  }
  std::string str(const char* what) {
    uint64_t len = get<uint64_t>(what);
    if (len > kMaxString) fail(std::string(what) + " claims " + std::to_string(len) + " bytes");
    const uint8_t* p = take(len, what);
    return std::string(reinterpret_cast<const char*>(p), len);
  }
  size_t pos() const { return pos_; }
  const uint8_t* data() const { return d_; }
  void seek(size_t p) { pos_ = p; }
  size_t size() const { return n_; }

 private:
  const uint8_t* d_;
  size_t n_;
  size_t pos_ = 0;
  const std::string& file_;
};

GGUFValue read_value(Cursor& c, GGUFValue::Type t, int depth) {
  using T = GGUFValue::Type;
  GGUFValue v;
  v.type = t;
  switch (t) {
    case T::U8: v.value = uint64_t{c.get<uint8_t>("u8")}; break;
    case T::I8: v.value = int64_t{c.get<int8_t>("i8")}; break;
    case T::U16: v.value = uint64_t{c.get<uint16_t>("u16")}; break;
    case T::I16: v.value = int64_t{c.get<int16_t>("i16")}; break;
    case T::U32: v.value = uint64_t{c.get<uint32_t>("u32")}; break;
    case T::I32: v.value = int64_t{c.get<int32_t>("i32")}; break;
    case T::U64: v.value = c.get<uint64_t>("u64"); break;
    case T::I64: v.value = c.get<int64_t>("i64"); break;
    case T::F32: v.value = double{c.get<float>("f32")}; break;
    case T::F64: v.value = c.get<double>("f64"); break;
    case T::BOOL: {
      uint8_t b = c.get<uint8_t>("bool");
      if (b > 1) c.fail("bool value " + std::to_string(b) + " is neither 0 nor 1");
      v.value = b == 1;
      break;
    }
    case T::STRING: v.value = c.str("string"); break;
    case T::ARRAY: {
      if (depth >= kMaxNesting) c.fail("arrays nested deeper than " + std::to_string(kMaxNesting));
      uint32_t et = c.get<uint32_t>("array type");
      if (et > static_cast<uint32_t>(T::F64)) c.fail("unknown array element type " + std::to_string(et));
      uint64_t n = c.get<uint64_t>("array length");
      if (n > kMaxArray || n > c.size() - c.pos()) c.fail("array claims " + std::to_string(n) + " elements");
      v.elem_type = static_cast<T>(et);
      if (v.elem_type != T::ARRAY && n >= kPackFrom) {  // checked element by element, kept as the bytes
        const size_t start = c.pos();
        for (uint64_t i = 0; i < n; ++i) read_value(c, v.elem_type, depth + 1);
        v.value = GGUFValue::Packed{n, c.data() + start, c.pos() - start};
        break;
      }
      std::vector<GGUFValue> items;  // no reserve(n): a hostile length must fail on the bytes, not on memory
      for (uint64_t i = 0; i < n; ++i) items.push_back(read_value(c, v.elem_type, depth + 1));
      v.value = std::move(items);
      break;
    }
    default: c.fail("unknown metadata value type " + std::to_string(static_cast<uint32_t>(t)));
  }
  return v;
}

std::string five_digits(int64_t v) {
  std::string s = std::to_string(v);
  return std::string(s.size() < 5 ? 5 - s.size() : 0, '0') + s;
}

[[noreturn]] void wrong(const GGUFValue& v, const char* want) {
  throw Error("gguf: metadata value " + v.str() + " is not " + want);
}

}  // namespace

TypeTraits type_traits(GGMLType t) {
  auto i = static_cast<uint32_t>(t);
  if (i >= std::size(kTraits) || !kTraits[i].name) return {nullptr, 0, 0};
  return kTraits[i];
}

std::string type_name(GGMLType t) {
  TypeTraits tr = type_traits(t);
  return tr.name ? tr.name : "type " + std::to_string(static_cast<uint32_t>(t));
}

bool GGUFValue::is_int() const {
  return std::holds_alternative<uint64_t>(value) || std::holds_alternative<int64_t>(value);
}
int64_t GGUFValue::as_int() const {
  if (auto* u = std::get_if<uint64_t>(&value)) return static_cast<int64_t>(*u);
  if (auto* s = std::get_if<int64_t>(&value)) return *s;
  if (auto* b = std::get_if<bool>(&value)) return *b;
  wrong(*this, "an integer");
}
double GGUFValue::as_float() const {
  if (auto* d = std::get_if<double>(&value)) return *d;
  return static_cast<double>(as_int());
}
bool GGUFValue::as_bool() const {
  if (auto* b = std::get_if<bool>(&value)) return *b;
  return as_int() != 0;
}
const std::string& GGUFValue::as_string() const {
  if (auto* s = std::get_if<std::string>(&value)) return *s;
  wrong(*this, "a string");
}
size_t GGUFValue::array_size() const {
  if (auto* a = std::get_if<std::vector<GGUFValue>>(&value)) return a->size();
  if (auto* p = std::get_if<Packed>(&value)) return static_cast<size_t>(p->count);
  wrong(*this, "an array");
}
void GGUFValue::for_each_element(const std::function<void(const GGUFValue&)>& f) const {
  if (auto* a = std::get_if<std::vector<GGUFValue>>(&value)) {
    for (const GGUFValue& e : *a) f(e);
    return;
  }
  auto* p = std::get_if<Packed>(&value);
  if (!p) wrong(*this, "an array");
  Cursor c(p->bytes, p->size, "packed array");  // checked when parsed: cannot fail here
  for (uint64_t i = 0; i < p->count; ++i) f(read_value(c, elem_type, 1));
}
std::vector<GGUFValue> GGUFValue::as_array() const {
  if (auto* a = std::get_if<std::vector<GGUFValue>>(&value)) return *a;
  std::vector<GGUFValue> out;
  out.reserve(array_size());
  for_each_element([&](const GGUFValue& e) { out.push_back(e); });
  return out;
}
std::string GGUFValue::str() const {
  std::ostringstream o;
  if (auto* u = std::get_if<uint64_t>(&value))
    o << *u;
  else if (auto* s = std::get_if<int64_t>(&value))
    o << *s;
  else if (auto* d = std::get_if<double>(&value))
    o << *d;
  else if (auto* b = std::get_if<bool>(&value))
    o << (*b ? "true" : "false");
  else if (auto* t = std::get_if<std::string>(&value))
    o << '"' << (t->size() > 60 ? t->substr(0, 60) + "..." : *t) << '"';
  else {
    o << '[';
    size_t i = 0;
    for_each_element([&](const GGUFValue& e) {
      if (i < 4) o << (i ? ", " : "") << e.str();
      ++i;
    });
    if (i > 4) o << ", ... (" << i << " items)";
    o << ']';
  }
  return o.str();
}

int64_t GGUFTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : ne) n *= d;
  return n;
}

struct GGUFFile::Mapping {
  void* addr = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (addr) munmap(addr, size);
  }
};

GGUFFile GGUFFile::parse(const uint8_t* data, size_t size, const std::string& name) {
  GGUFFile f;
  f.path_ = name;
  f.parse_part(data, size, name, true);
  return f;
}

void GGUFFile::parse_part(const uint8_t* data, size_t size, const std::string& name, bool first) {
  Cursor c(data, size, name);
  const uint8_t* magic = c.take(4, "magic");
  if (std::memcmp(magic, "GGUF", 4) != 0) c.fail("not a GGUF file (the magic is not 'GGUF')");
  uint32_t version = c.get<uint32_t>("version");
  if (version != 2 && version != 3) c.fail("GGUF version " + std::to_string(version) + " (supported: 2, 3)");
  if (first) version_ = version;
  uint64_t n_tensors = c.get<uint64_t>("tensor count"), n_kv = c.get<uint64_t>("metadata count");
  if (n_tensors > kMaxCount) c.fail("tensor count " + std::to_string(n_tensors) + " is absurd");
  if (n_kv > kMaxCount) c.fail("metadata count " + std::to_string(n_kv) + " is absurd");
  for (uint64_t i = 0; i < n_kv; ++i) {
    std::string key = c.str("metadata key");
    uint32_t t = c.get<uint32_t>("metadata type");
    if (t > static_cast<uint32_t>(GGUFValue::Type::F64))
      c.fail("key '" + key + "' has unknown value type " + std::to_string(t));
    GGUFValue v = read_value(c, static_cast<GGUFValue::Type>(t), 0);
    if (first || !kv_.count(key)) kv_[key] = std::move(v);
  }
  uint64_t alignment = 32;
  if (auto it = kv_.find("general.alignment"); it != kv_.end()) {
    int64_t a = it->second.is_int() ? it->second.as_int() : 0;
    // the spec asks for a multiple of 8: tensor data is read in place as floats and vectors
    if (a < 8 || (a & (a - 1)) != 0 || a > (1 << 20))
      c.fail("general.alignment " + it->second.str() + " is not a power of two of at least 8");
    alignment = static_cast<uint64_t>(a);
  }
  struct Info {
    GGUFTensor t;
    uint64_t offset;
  };
  std::vector<Info> infos;
  infos.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    Info in;
    in.t.name = c.str("tensor name");
    uint32_t nd = c.get<uint32_t>("tensor dims");
    if (nd == 0 || nd > kMaxDims) c.fail("tensor '" + in.t.name + "' has " + std::to_string(nd) + " dims");
    uint64_t numel = 1;
    for (uint32_t d = 0; d < nd; ++d) {
      uint64_t e = c.get<uint64_t>("tensor dim");
      if (e == 0 || e > (1ull << 40) || numel > (1ull << 48) / e)
        c.fail("tensor '" + in.t.name + "' dim " + std::to_string(e) + " is absurd");
      numel *= e;
      in.t.ne.push_back(static_cast<int64_t>(e));
    }
    in.t.type = static_cast<GGMLType>(c.get<uint32_t>("tensor type"));
    TypeTraits tr = type_traits(in.t.type);
    if (!tr.name)
      c.fail("tensor '" + in.t.name + "' has unknown type " + std::to_string(static_cast<uint32_t>(in.t.type)));
    if (in.t.ne[0] % tr.block_elems != 0)
      c.fail("tensor '" + in.t.name + "' row of " + std::to_string(in.t.ne[0]) + " is not a multiple of " + tr.name +
             "'s block of " + std::to_string(tr.block_elems));
    in.t.nbytes = numel / tr.block_elems * tr.block_bytes;
    in.offset = c.get<uint64_t>("tensor offset");
    if (in.offset % alignment != 0)
      c.fail("tensor '" + in.t.name + "' offset " + std::to_string(in.offset) + " is not aligned to " +
             std::to_string(alignment));
    infos.push_back(std::move(in));
  }
  uint64_t base = (c.pos() + alignment - 1) / alignment * alignment;
  for (auto& in : infos) {
    if (base > size || in.offset > size - base || in.t.nbytes > size - base - in.offset)
      c.fail("tensor '" + in.t.name + "' data [" + std::to_string(base + in.offset) + ", +" +
             std::to_string(in.t.nbytes) + ") lies past the end of the file (" + std::to_string(size) + " bytes)");
    in.t.data = data + base + in.offset;
    if (by_name_.count(in.t.name)) c.fail("tensor '" + in.t.name + "' appears twice");
    by_name_[in.t.name] = tensors_.size();
    tensors_.push_back(std::move(in.t));
  }
}

GGUFFile GGUFFile::open(const std::string& path) {
  GGUFFile f;
  f.path_ = path;
  auto map_one = [&f](const std::string& p) -> std::pair<const uint8_t*, size_t> {
    int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error("gguf: cannot open " + p + ": " + std::strerror(errno));
    struct stat st{};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      throw Error("gguf: " + p + " is not a regular file");
    }
    auto m = std::make_shared<Mapping>();
    m->size = static_cast<size_t>(st.st_size);
    if (m->size > 0) {
      m->addr = mmap(nullptr, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (m->addr == MAP_FAILED) {
        m->addr = nullptr;
        ::close(fd);
        throw Error("gguf: cannot map " + p + ": " + std::strerror(errno));
      }
    }
    ::close(fd);
    f.maps_.push_back(m);
    return {static_cast<const uint8_t*>(m->addr), m->size};
  };
  auto [d, n] = map_one(path);
  f.parse_part(d, n, path, true);
  int64_t parts = f.get_int("split.count", 1);
  if (parts > 1) {
    // name-00001-of-00003.gguf: the other parts sit beside it with the same prefix
    const std::string tail = "-00001-of-" + five_digits(parts) + ".gguf";
    if (parts > 99999 || path.size() < tail.size() || path.compare(path.size() - tail.size(), tail.size(), tail) != 0)
      throw Error("gguf: " + path + " is the first of a " + std::to_string(parts) +
                  "-part split only if it is named <prefix>" + tail);
    const std::string prefix = path.substr(0, path.size() - tail.size());
    for (int64_t i = 2; i <= parts; ++i) {
      std::string p = prefix + "-" + five_digits(i) + "-of-" + five_digits(parts) + ".gguf";
      auto [pd, pn] = map_one(p);
      f.parse_part(pd, pn, p, false);
    }
  }
  if (auto* want = f.find("split.tensors.count"); want && want->as_int() != static_cast<int64_t>(f.tensors_.size()))
    throw Error("gguf: " + path + ": split.tensors.count says " + want->str() + " tensors, the parts hold " +
                std::to_string(f.tensors_.size()));
  return f;
}

const GGUFValue* GGUFFile::find(const std::string& key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

const GGUFValue& GGUFFile::at(const std::string& key) const {
  if (auto* v = find(key)) return *v;
  throw Error("gguf: " + path_ + " has no metadata key '" + key + "'");
}

namespace {
// A key's value converted by `as`, the fallback when the key is absent, else the missing-key error.
template <typename T, typename As>
T lookup(const GGUFFile& f, const std::string& key, const std::optional<T>& fallback, As as) {
  if (auto* v = f.find(key)) return as(*v);
  if (fallback) return *fallback;
  return as(f.at(key));
}
}  // namespace

int64_t GGUFFile::get_int(const std::string& key, std::optional<int64_t> fallback) const {
  return lookup(*this, key, fallback, [](const GGUFValue& v) { return v.as_int(); });
}
double GGUFFile::get_float(const std::string& key, std::optional<double> fallback) const {
  return lookup(*this, key, fallback, [](const GGUFValue& v) { return v.as_float(); });
}
std::string GGUFFile::get_string(const std::string& key, std::optional<std::string> fallback) const {
  return lookup(*this, key, fallback, [](const GGUFValue& v) { return v.as_string(); });
}
bool GGUFFile::get_bool(const std::string& key, std::optional<bool> fallback) const {
  return lookup(*this, key, fallback, [](const GGUFValue& v) { return v.as_bool(); });
}

const GGUFTensor* GGUFFile::tensor(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

const GGUFTensor& GGUFFile::need_tensor(const std::string& name) const {
  if (auto* t = tensor(name)) return *t;
  throw Error("gguf: " + path_ + " has no tensor '" + name + "'");
}

uint64_t GGUFFile::file_bytes() const {
  uint64_t n = 0;
  for (const auto& m : maps_) n += m->size;
  return n;
}

}  // namespace tg::llm
