// The schedule cache: key -> schedule. A graph's key is its canonical serialization with every input buffer
// replaced by its slot number (numbered by first use, with its dtype, size and device) and every bound value
// dropped. Schedules name buffers by slot (the memory planner binds them), so a hit is the cached schedule with
// the variable values read from the new graph's BINDs.
#include "runtime/schedule_cache.hpp"

#include <dlfcn.h>
#include <sys/stat.h>

#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <unordered_map>

#include "runtime/device.hpp"
#include "runtime/disk_cache.hpp"
#include "runtime/stats.hpp"

namespace tg::rt {

using namespace ir;
using namespace sched;

namespace {

constexpr uint32_t kFormat = 6;  // bump when the key or entry layout changes (or the op numbers)

// ---- bytes -------------------------------------------------------------------------------------------------------

struct Writer {
  std::vector<uint8_t> bytes;
  void raw(const void* p, size_t n) {
    bytes.insert(bytes.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  }
  void u8(uint8_t v) { bytes.push_back(v); }
  void i64(int64_t v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  void str(const std::string& s) { i64(static_cast<int64_t>(s.size())), raw(s.data(), s.size()); }
  void dtype(DType d) { u8(static_cast<uint8_t>(d.scalar)), u8(d.count); }
};

struct Corrupt : std::runtime_error {
  Corrupt() : std::runtime_error("corrupt schedule cache entry") {}
};

// Reads what Writer wrote; running past the end (a truncated or foreign entry) throws Corrupt.
struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  void raw(void* out, size_t n) {
    if (static_cast<size_t>(end - p) < n) throw Corrupt();
    std::memcpy(out, p, n), p += n;
  }
  uint8_t u8() {
    uint8_t v;
    raw(&v, 1);
    return v;
  }
  int64_t i64() {
    int64_t v;
    raw(&v, sizeof v);
    return v;
  }
  double f64() {
    double v;
    raw(&v, sizeof v);
    return v;
  }
  // an element count: each element takes at least a byte, so more than the bytes left is a corrupt entry
  int64_t count(int64_t limit) {
    int64_t n = i64();
    if (n < 0 || n > limit || n > end - p) throw Corrupt();
    return n;
  }
  std::string str() {
    int64_t n = count(end - p);
    std::string s(reinterpret_cast<const char*>(p), static_cast<size_t>(n));
    p += n;
    return s;
  }
  DType dtype() {
    uint8_t s = u8(), c = u8();
    if (s >= kScalarTypeCount || c == 0) throw Corrupt();
    return DType(static_cast<ScalarType>(s), c);
  }
};

// ---- graphs ------------------------------------------------------------------------------------------------------

enum ArgTag : uint8_t { kNone, kInt, kFloat, kStr, kInts, kVar, kRange, kPayload };

// Writes a node's arg; false for a payload, which only the key writer knows how to name.
bool write_arg(Writer& w, const Arg& arg) {
  switch (arg.index()) {
    case 0: w.u8(kNone); return true;
    case 1: w.u8(kInt), w.i64(std::get<int64_t>(arg)); return true;
    case 2: w.u8(kFloat), w.f64(std::get<double>(arg)); return true;
    case 3: w.u8(kStr), w.str(std::get<std::string>(arg)); return true;
    case 4: {
      const auto& v = std::get<std::vector<int64_t>>(arg);
      w.u8(kInts), w.i64(static_cast<int64_t>(v.size()));
      for (int64_t x : v) w.i64(x);
      return true;
    }
    case 5: {
      const auto& v = std::get<VarInfo>(arg);
      w.u8(kVar), w.str(v.name), w.i64(v.min), w.i64(v.max);
      return true;
    }
    case 6: {
      const auto& r = std::get<RangeInfo>(arg);
      w.u8(kRange), w.i64(r.id), w.u8(static_cast<uint8_t>(r.type));
      return true;
    }
    default: return false;
  }
}

Arg read_arg(Reader& r) {
  switch (r.u8()) {
    case kNone: return {};
    case kInt: return r.i64();
    case kFloat: return r.f64();
    case kStr: return r.str();
    case kInts: {
      std::vector<int64_t> v(static_cast<size_t>(r.count(1 << 20)));
      for (auto& x : v) x = r.i64();
      return v;
    }
    case kVar: {
      VarInfo v;
      v.name = r.str(), v.min = r.i64(), v.max = r.i64();
      return v;
    }
    case kRange: {
      int64_t id = r.i64();
      uint8_t type = r.u8();
      if (type > static_cast<uint8_t>(AxisType::LOCAL)) throw Corrupt();
      return RangeInfo{id, static_cast<AxisType>(type)};
    }
    default: throw Corrupt();
  }
}

void write_node_head(Writer& w, const UOp& n, const std::unordered_map<const UOp*, int64_t>& index) {
  w.u8(static_cast<uint8_t>(n.op)), w.dtype(n.dtype);
  w.i64(static_cast<int64_t>(n.shape.size()));
  for (int64_t d : n.shape) w.i64(d);
  w.i64(static_cast<int64_t>(n.src.size()));
  for (const auto& s : n.src) w.i64(index.at(s.get()));
}

// A kernel graph (no payloads, no symbolic shapes) as a node list; roots are named by index. False when the
// graph has something this format does not carry.
bool write_graph(Writer& w, const std::vector<UOpPtr>& roots) {
  std::unordered_map<const UOp*, int64_t> index;
  std::vector<const UOp*> order = toposort(roots);
  w.i64(static_cast<int64_t>(order.size()));
  for (const UOp* n : order) {
    if (!n->sym_shape.empty()) return false;
    write_node_head(w, *n, index);
    if (!write_arg(w, n->arg)) return false;
    index.emplace(n, static_cast<int64_t>(index.size()));
  }
  w.i64(static_cast<int64_t>(roots.size()));
  for (const auto& r : roots) w.i64(index.at(r.get()));
  return true;
}

std::vector<UOpPtr> read_graph(Reader& r) {
  std::vector<UOpPtr> nodes(static_cast<size_t>(r.count(1 << 24)));
  for (size_t i = 0; i < nodes.size(); ++i) {
    uint8_t op = r.u8();
    if (op >= static_cast<uint8_t>(Op::COUNT_)) throw Corrupt();
    DType dtype = r.dtype();
    Shape shape(static_cast<size_t>(r.count(64)));
    for (auto& d : shape) d = r.i64();
    std::vector<UOpPtr> src(static_cast<size_t>(r.count(1 << 16)));
    for (auto& s : src) s = nodes.at(static_cast<size_t>(r.count(static_cast<int64_t>(i) - 1)));
    nodes[i] = UOp::make(static_cast<Op>(op), dtype, std::move(src), read_arg(r), std::move(shape));
  }
  std::vector<UOpPtr> roots(static_cast<size_t>(r.count(1 << 24)));
  for (auto& root : roots) root = nodes.at(static_cast<size_t>(r.count(static_cast<int64_t>(nodes.size()) - 1)));
  return roots;
}

// ---- keys --------------------------------------------------------------------------------------------------------

// What identifies this build of tg: a schedule cached by another build may differ from what this one makes.
const std::string& build_id() {
  static const std::string id = [] {
    Dl_info info{};
    struct stat st{};
    if (dladdr(reinterpret_cast<void*>(&cached_schedule), &info) && info.dli_fname && stat(info.dli_fname, &st) == 0)
      return std::string(info.dli_fname) + "@" + std::to_string(st.st_mtime) + ":" + std::to_string(st.st_size);
    return std::string("unknown");
  }();
  return id;
}

// The graph with its inputs as slots and its bound values dropped, and what the slots and variables hold now.
struct GraphKey {
  std::string text;
  std::vector<std::shared_ptr<Payload>> inputs;     // by slot, as sched::input_buffers() numbers them
  std::unordered_map<std::string, int64_t> values;  // variable name -> bound value
};

GraphKey graph_key(const std::vector<UOpPtr>& roots, const std::string& device) {
  GraphKey key;
  Writer w;
  w.i64(kFormat), w.str(build_id()), w.str(device);
  std::unordered_map<const UOp*, int64_t> index;
  std::vector<const UOp*> order = toposort(roots);
  key.inputs = input_buffers(order);  // numbered as create_schedule numbers its input slots
  std::unordered_map<const Payload*, int64_t> slots;
  for (size_t i = 0; i < key.inputs.size(); ++i) slots.emplace(key.inputs[i].get(), static_cast<int64_t>(i));
  w.i64(static_cast<int64_t>(order.size()));
  for (const UOp* n : order) {
    write_node_head(w, *n, index);
    // a symbolic shape's expressions, each as its own small graph (with any bound values in them: a key that
    // changes with them is safe, merely not shared)
    w.i64(static_cast<int64_t>(n->sym_shape.size()));
    for (const auto& dim : n->sym_shape) {
      if (!write_graph(w, {dim})) throw std::logic_error("tg: internal: a payload inside a symbolic dim");
      for (const UOp* d : toposort(std::vector<UOpPtr>{dim}))
        if (d->op == Op::BIND) key.values[d->src[0]->var().name] = d->arg_int();
    }
    if (n->op == Op::BUFFER) {
      const auto& buf = n->payload();
      w.u8(kPayload), w.i64(slots.at(buf.get())), w.dtype(buf->dtype()), w.i64(buf->numel()), w.str(buf->device_name());
    } else if (n->op == Op::BIND) {
      key.values[n->src[0]->var().name] = n->arg_int();
      w.u8(kNone);  // the value is the launch's, not the schedule's
    } else if (!write_arg(w, n->arg)) {
      throw std::logic_error("tg: internal: a payload on a " + std::string(op_name(n->op)) + " node");
    }
    index.emplace(n, static_cast<int64_t>(index.size()));
  }
  w.i64(static_cast<int64_t>(roots.size()));
  for (const auto& r : roots) w.i64(index.at(r.get()));
  key.text.assign(w.bytes.begin(), w.bytes.end());
  return key;
}

// ---- schedules ---------------------------------------------------------------------------------------------------

// The cached schedule for this graph: its variables' values read from the graph's BINDs. Null when the graph does
// not bind every variable the kernels read, or binds other inputs (then it is scheduled afresh).
std::optional<Schedule> for_graph(const Schedule& cached, const GraphKey& key) {
  if (cached.n_inputs() != key.inputs.size()) return std::nullopt;
  Schedule s = cached;
  for (auto& item : s.items) {
    item.var_vals.clear();
    for (const auto& v : item.kernel.vars) {
      auto it = key.values.find(v->var().name);
      if (it == key.values.end()) return std::nullopt;
      item.var_vals.push_back(it->second);
    }
  }
  return s;
}

// An entry: the key text (compared on load: a hash collision is a miss), then the schedule.
std::optional<std::vector<uint8_t>> serialize(const Schedule& s, const std::string& key_text) {
  Writer w;
  w.str(key_text);
  w.i64(static_cast<int64_t>(s.slots.size()));
  for (const auto& b : s.slots) w.u8(static_cast<uint8_t>(b.kind)), w.dtype(b.dtype), w.i64(b.numel), w.str(b.device);
  w.i64(static_cast<int64_t>(s.roots.size()));
  for (int r : s.roots) w.i64(r);
  w.i64(static_cast<int64_t>(s.items.size()));
  for (const auto& item : s.items) {
    const Kernel& k = item.kernel;
    w.u8(static_cast<uint8_t>(item.kind)), w.str(k.name), w.i64(k.n_outputs), w.u8(k.custom), w.u8(k.parallel);
    w.i64(static_cast<int64_t>(k.out_ranges.size())), w.i64(static_cast<int64_t>(k.local_ranges.size()));
    w.i64(static_cast<int64_t>(k.vars.size()));
    std::vector<UOpPtr> roots{k.sink ? k.sink : UOp::make(Op::SINK, dtypes::bool_)};
    roots.insert(roots.end(), k.out_ranges.begin(), k.out_ranges.end());
    roots.insert(roots.end(), k.local_ranges.begin(), k.local_ranges.end());
    roots.insert(roots.end(), k.vars.begin(), k.vars.end());
    if (!write_graph(w, roots)) return std::nullopt;
    w.u8(k.sink != nullptr);
    w.i64(static_cast<int64_t>(item.slots.size()));
    for (int slot : item.slots) w.i64(slot);
  }
  return std::move(w.bytes);
}

Schedule deserialize(const std::vector<uint8_t>& bytes, const std::string& key_text) {
  Reader r{bytes.data(), bytes.data() + bytes.size()};
  if (r.str() != key_text) throw Corrupt();
  Schedule s;
  s.slots.resize(static_cast<size_t>(r.count(1 << 20)));
  for (auto& b : s.slots) {
    const uint8_t kind = r.u8();
    if (kind > static_cast<uint8_t>(BufferSlot::Kind::TEMP)) throw Corrupt();
    b.kind = static_cast<BufferSlot::Kind>(kind), b.dtype = r.dtype(), b.numel = r.i64(), b.device = r.str();
  }
  auto slot = [&] {
    const int64_t k = r.i64();
    if (k < 0 || static_cast<size_t>(k) >= s.slots.size()) throw Corrupt();
    return static_cast<int>(k);
  };
  s.roots.resize(static_cast<size_t>(r.count(1 << 20)));
  for (int& root : s.roots) root = slot();
  s.items.resize(static_cast<size_t>(r.count(1 << 20)));
  for (auto& item : s.items) {
    Kernel& k = item.kernel;
    uint8_t kind = r.u8();
    if (kind > static_cast<uint8_t>(ScheduleItem::Kind::COLLECTIVE)) throw Corrupt();
    item.kind = static_cast<ScheduleItem::Kind>(kind);
    k.name = r.str(), k.n_outputs = static_cast<int>(r.i64()), k.custom = r.u8(), k.parallel = r.u8();
    size_t nout = static_cast<size_t>(r.count(64)), nlocal = static_cast<size_t>(r.count(3)),
           nvars = static_cast<size_t>(r.count(1 << 16));
    std::vector<UOpPtr> roots = read_graph(r);
    if (roots.size() != 1 + nout + nlocal + nvars) throw Corrupt();
    k.sink = roots[0];
    k.out_ranges.assign(roots.begin() + 1, roots.begin() + 1 + static_cast<ptrdiff_t>(nout));
    k.local_ranges.assign(roots.begin() + 1 + static_cast<ptrdiff_t>(nout),
                          roots.begin() + 1 + static_cast<ptrdiff_t>(nout + nlocal));
    k.vars.assign(roots.end() - static_cast<ptrdiff_t>(nvars), roots.end());
    for (const auto& v : k.vars)
      if (v->op != Op::DEFINE_VAR) throw Corrupt();
    if (!r.u8()) k.sink = nullptr;
    item.slots.resize(static_cast<size_t>(r.count(1 << 16)));
    for (int& sl : item.slots) sl = slot();
    if (item.kind != ScheduleItem::Kind::KERNEL && item.slots.size() != 2) throw Corrupt();
    describe_params(item, s.slots);
  }
  if (r.p != r.end) throw Corrupt();
  return s;
}

std::mutex g_mu;
auto& g_memory = *new std::unordered_map<std::string, std::shared_ptr<const Schedule>>();
constexpr size_t kMemoryEntries = 4096;  // a graph-per-call program must not grow the cache without bound

}  // namespace

void clear_schedule_cache() {
  std::lock_guard lock(g_mu);
  g_memory.clear();
}

Schedule cached_schedule(const std::vector<UOpPtr>& roots, const std::string& device,
                         std::vector<std::shared_ptr<Payload>>& inputs, bool use_cache) {
  ScheduleStats& stats = rt::mutable_schedule_stats();
  if (!use_cache) {
    ++stats.schedules_computed;
    inputs = input_buffers(roots);
    return create_schedule(roots, device);
  }
  GraphKey key = graph_key(roots, device);
  inputs = key.inputs;
  std::shared_ptr<const Schedule> cached;
  {
    std::lock_guard lock(g_mu);
    if (auto it = g_memory.find(key.text); it != g_memory.end()) cached = it->second;
  }
  if (cached) {
    if (auto s = for_graph(*cached, key)) {
      ++stats.schedule_memory_hits;
      return std::move(*s);
    }
  }
  const rt::DiskCache& disk = rt::DiskCache::get();
  const uint64_t disk_key = rt::fnv1a(key.text.data(), key.text.size());
  std::optional<Schedule> s;
  if (auto bytes = disk.load("schedules", disk_key)) {
    try {  // a corrupt entry, or one that names variables this graph does not bind, is a miss (stored over below)
      cached = std::make_shared<const Schedule>(deserialize(*bytes, key.text));
      s = for_graph(*cached, key);
      if (s) ++stats.schedule_disk_hits;
    } catch (const std::exception&) {}
  }
  if (!s) {
    ++stats.schedules_computed;
    s = create_schedule(roots, device);
    cached = std::make_shared<const Schedule>(*s);
    if (auto bytes = serialize(*s, key.text)) disk.store("schedules", disk_key, *bytes);
  }
  std::lock_guard lock(g_mu);
  if (g_memory.size() >= kMemoryEntries) g_memory.clear();
  g_memory.emplace(std::move(key.text), std::move(cached));
  return std::move(*s);
}

}  // namespace tg::rt
