// tg-difftest: random tensor programs (from seeds) run on tg and on an independent float64 reference with
// per-element error bounds. Programs run in a worker process, so a crash or a hang is reported with its seed
// instead of ending the run; a failing program is shrunk (earliest failing node, inputs replaced by fresh
// leaves while it still fails, each try in a fresh process) and printed as a C++ reproduction.
//   tg-difftest --seeds 0:200            DEV=INTERP tg-difftest ...      NOOPT=1 tg-difftest ...
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>

#include "program.hpp"
#include "reference.hpp"
#include "tg/jit.hpp"

namespace po = boost::program_options;
using namespace tg::difftest;

namespace {

struct Stats {
  long checked = 0, unchecked = 0;
};
bool g_planted_bug = false;

std::vector<double> read_back(tg::Tensor& t) {
  std::vector<double> out;
  if (t.dtype() == tg::dtypes::float32)
    for (float v : t.to_vector<float>()) out.push_back(v);
  else if (t.dtype() == tg::dtypes::int32)
    for (int32_t v : t.to_vector<int32_t>()) out.push_back(v);
  else
    for (uint8_t v : t.to_vector<uint8_t>()) out.push_back(v);
  return out;
}

int g_jit_rounds = 0;

// nullopt when the outputs got[k] (of p.outputs[k]) agree with the reference within its bound, else what differs
std::optional<std::string> compare(const Program& p, std::vector<tg::Tensor>& got, Stats& st) {
  std::vector<Val> want = run_reference(p, g_planted_bug);
  for (size_t k = 0; k < p.outputs.size(); ++k) {
    int o = p.outputs[k];
    const Node& n = p.nodes[static_cast<size_t>(o)];
    const Val& w = want[static_cast<size_t>(o)];
    std::vector<double> g;
    try {
      g = read_back(got[k]);
    } catch (const std::exception& e) {
      return std::string("reading the output threw: ") + e.what();
    }
    if (got[k].shape() != n.shape)
      return "node t" + std::to_string(o) + " (" + n.op + ") has shape " + tg::shape_str(got[k].shape()) +
             ", expected " + tg::shape_str(n.shape);
    for (size_t i = 0; i < g.size(); ++i) {
      double r = w.v[i], e = w.e[i];
      bool exact_inf = std::isinf(r) && e == 0;  // an empty max or min
      if (!exact_inf && (!std::isfinite(e) || !std::isfinite(r) || std::fabs(r) > 1e30)) {
        ++st.unchecked;
        continue;
      }
      ++st.checked;
      if (exact_inf ? g[i] != r : !(std::fabs(g[i] - r) <= 2 * e + 1e-30)) {
        std::ostringstream m;
        m.precision(9);
        m << "node t" << o << " (" << n.op << ", shape " << tg::shape_str(n.shape) << ") element " << i << ": got "
          << g[i] << ", expected " << r << " within " << 2 * e;
        return m.str();
      }
    }
  }
  return std::nullopt;
}

std::optional<std::string> check(const Program& p, Stats& st) {
  try {
    if (g_jit_rounds == 0) {
      std::vector<tg::Tensor> all = run_tg(p), got;
      for (int o : p.outputs) got.push_back(all[static_cast<size_t>(o)]);
      return compare(p, got, st);
    }
    // through a tg::Jit: the calls that run, capture and replay each see fresh input data
    tg::Jit jit([&](const std::vector<tg::Tensor>& leaves, const std::vector<tg::BoundVariable>&) {
      return run_outputs(p, leaves);
    });
    for (int round = 0; round < g_jit_rounds; ++round) {
      Program q = with_fresh_leaves(p, static_cast<uint64_t>(round));
      std::vector<tg::Tensor> got = jit(make_leaves(q));
      if (auto f = compare(q, got, st)) return "jit call " + std::to_string(round + 1) + ": " + *f;
    }
    return std::nullopt;
  } catch (const std::exception& e) {
    return std::string("threw: ") + e.what();
  }
}

// Runs body in a fresh process that reports through say(line); each line reaches on_line here. Returns "" when
// the process exited, "crashed: <signal>", or "hung" when no line came for timeout_s.
using Say = std::function<void(const std::string&)>;
std::string in_child(const std::function<void(const Say&)>& body, int timeout_s,
                     const std::function<void(const std::string&)>& on_line) {
  int fd[2];
  if (pipe(fd) != 0) return "pipe failed";
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    close(fd[0]);
    body([&](const std::string& line) {
      std::string l = line + "\n";
      if (write(fd[1], l.data(), l.size()) < 0) _exit(3);
    });
    _exit(0);
  }
  close(fd[1]);
  std::string buf;
  char chunk[4096];
  pollfd pfd{fd[0], POLLIN, 0};
  for (;;) {
    if (poll(&pfd, 1, timeout_s * 1000) <= 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
      close(fd[0]);
      return "hung (nothing for " + std::to_string(timeout_s) + " s)";
    }
    ssize_t n = read(fd[0], chunk, sizeof chunk);
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    for (size_t nl; (nl = buf.find('\n')) != std::string::npos; buf.erase(0, nl + 1)) on_line(buf.substr(0, nl));
  }
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return std::string("crashed: ") + strsignal(WTERMSIG(status));
  return "";
}

// "" when p passes in a fresh process, else why not
std::string failure_of(const Program& p, int timeout_s) {
  std::string fail;
  std::string ended = in_child(
      [&](const Say& say) {
        Stats st;
        if (auto f = check(p, st)) say(*f);
      },
      timeout_s, [&](const std::string& l) { fail = l; });
  return ended.empty() ? fail : ended;
}
// The smallest program found that still fails: the earliest node that fails as the only output, or else the
// fewest outputs realized together that still fail; then inputs replaced by fresh leaves of the same shape
// wherever the failure stays.
Program shrink(Program p, int timeout_s) {
  bool alone = false;
  for (size_t k = 0; k < p.nodes.size() && !alone; ++k) {
    if (p.nodes[k].op == "leaf") continue;
    Program cand = prune(p, {static_cast<int>(k)});
    if ((alone = !failure_of(cand, timeout_s).empty())) p = cand;
  }
  for (size_t o = 0; !alone && p.outputs.size() > 1 && o < p.outputs.size();) {
    std::vector<int> keep = p.outputs;
    keep.erase(keep.begin() + static_cast<std::ptrdiff_t>(o));
    Program cand = prune(p, keep);
    if (!failure_of(cand, timeout_s).empty())
      p = cand;
    else
      ++o;
  }
  for (size_t k = p.nodes.size(); k-- > 0;) {
    for (size_t j = 0; j < p.nodes[k].in.size(); ++j) {
      const Node& src = p.nodes[static_cast<size_t>(p.nodes[k].in[j])];
      if (src.op == "leaf" || (src.dtype != tg::dtypes::float32 && src.dtype != tg::dtypes::int32)) continue;
      Program cand = p;
      Node leaf{.op = "leaf",
                .lo = src.dtype == tg::dtypes::int32 ? -8.0 : -1.0,
                .hi = src.dtype == tg::dtypes::int32 ? 8.0 : 1.0,
                .seed = p.seed * 1000 + cand.nodes.size() * 31 + k * 7 + j,
                .shape = src.shape,
                .dtype = src.dtype};
      cand.nodes.insert(cand.nodes.begin(), leaf);
      for (auto& n : cand.nodes)
        for (int& x : n.in) ++x;
      for (int& o : cand.outputs) ++o;
      cand.nodes[k + 1].in[j] = 0;
      cand = prune(cand, cand.outputs);
      if (!failure_of(cand, timeout_s).empty()) return shrink(cand, timeout_s);
    }
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  std::string seeds = "0:100";
  int timeout_s = 120, min_ops = 3, max_ops = 12;
  bool no_shrink = false, print = false;
  po::options_description desc("tg-difftest: random tensor programs against a float64 reference (device from DEV)");
  // clang-format off: one option per line
  desc.add_options()("help,h", "this help")("seeds", po::value(&seeds), "seed range A:B (B excluded) or one seed")(
      "min-ops", po::value(&min_ops), "fewest ops per program")("max-ops", po::value(&max_ops), "most ops per program")(
      "timeout", po::value(&timeout_s), "seconds one program may take")("no-shrink", po::bool_switch(&no_shrink),
                                                                          "print failing programs as generated")(
      "print", po::bool_switch(&print), "print every program as C++ (and run nothing)")(
      "planted-bug", po::bool_switch(&g_planted_bug), "make the reference's add 1e-4 too large (tests the tester)")(
      "jit", po::value(&g_jit_rounds)->implicit_value(4),
      "run each program through a tg::Jit this many times (run, capture, replays), fresh inputs each call");
  // clang-format on
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    po::notify(vm);
  } catch (const std::exception& e) {
    std::cerr << "tg-difftest: " << e.what() << "\n" << desc;
    return 2;
  }
  if (vm.count("help")) {
    std::cout << desc;
    return 0;
  }
  uint64_t first = 0, last = 0;
  if (auto c = seeds.find(':'); c != std::string::npos)
    first = std::stoull(seeds.substr(0, c)), last = std::stoull(seeds.substr(c + 1));
  else
    first = std::stoull(seeds), last = first + 1;
  GenOptions go{.min_ops = min_ops, .max_ops = max_ops};
  const char* dev = std::getenv("DEV");
  std::string where = std::string(dev ? dev : "default device") +
                      (std::getenv("NOOPT") ? ", NOOPT=" + std::string(std::getenv("NOOPT")) : "") +
                      (g_jit_rounds ? ", through a Jit" : "");

  int failed = 0;
  Stats total, run_stats;
  auto t0 = std::chrono::steady_clock::now();
  // one worker runs seeds in a row and reports each ("ok <seed> <checked> <unchecked>" or "fail <seed> <why>");
  // after a failure, a crash or a hang the next worker starts at the following seed
  for (uint64_t s = first; s < last;) {
    if (print) {
      std::cout << to_cpp(generate(s, go), "// seed " + std::to_string(s) + "\n", g_jit_rounds) << "\n";
      ++s;
      continue;
    }
    uint64_t next = s;
    std::string msg;
    std::string ended = in_child(
        [&](const Say& say) {
          Stats st;
          for (uint64_t k = s; k < last; ++k) {
            if (auto f = check(generate(k, go), st)) return say("fail " + std::to_string(k) + " " + *f);
            say("ok " + std::to_string(k) + " " + std::to_string(st.checked) + " " + std::to_string(st.unchecked));
          }
        },
        timeout_s,
        [&](const std::string& l) {
          std::istringstream in(l);
          std::string kind;
          uint64_t k;
          in >> kind >> k;
          next = k + 1;
          if (kind == "ok") {
            Stats st;
            in >> st.checked >> st.unchecked;
            run_stats = st;
          } else {
            std::getline(in >> std::ws, msg);
          }
        });
    total.checked += run_stats.checked, total.unchecked += run_stats.unchecked, run_stats = {};
    if (msg.empty() && ended.empty() && next == last) break;  // all done
    if (msg.empty() && ended.empty()) ended = "the worker stopped without a result";
    uint64_t bad = msg.empty() ? next : next - 1;  // a crash or hang: the seed after the last reported
    if (msg.empty()) msg = ended, next = bad + 1;
    ++failed;
    Program p = generate(bad, go);
    std::cout << "FAIL seed " << bad << " (" << where << "): " << msg << std::endl;
    if (!no_shrink) p = shrink(p, timeout_s);
    std::string now = failure_of(p, timeout_s);
    std::cout << to_cpp(p,
                        "// tg-difftest seed " + std::to_string(bad) + " on " + where + ": " +
                            (now.empty() ? msg : now) + "\n",
                        g_jit_rounds)
              << std::endl;
    s = next;
  }
  if (print) return 0;
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "{\"programs\": " << (last - first) << ", \"failed\": " << failed
            << ", \"elements_checked\": " << total.checked << ", \"elements_unchecked\": " << total.unchecked
            << ", \"device\": \"" << where << "\", \"seconds\": " << secs << "}" << std::endl;
  return failed ? 1 : 0;
}
