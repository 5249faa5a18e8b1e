// Child processes for the DSP plugin: fork/exec with a socket for stdin (so a child that exits early gives EPIPE
// instead of SIGPIPE), pipes for stdout and stderr, and one poll() loop that feeds, drains and keeps the deadline.
#include "subprocess.hpp"

#include <tg/sdk/status.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

namespace tg::dsp {

using sdk::cat;
using sdk::Error;

namespace {

constexpr size_t kStderrKeep = 16 << 10, kExtraKeep = 4 << 10;

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

struct Fds {  // closes what it holds
  int fd[6] = {-1, -1, -1, -1, -1, -1};
  ~Fds() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
  void close(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

}  // namespace

bool ProcessResult::succeeded() const { return !timed_out && WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0; }

std::string ProcessResult::describe() const {
  if (timed_out) return "was killed at its deadline";
  if (WIFEXITED(wait_status)) return cat("exited with status ", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    const int sig = WTERMSIG(wait_status);
    const char* name = ::strsignal(sig);
    return cat("was killed by signal ", sig, " (", name ? name : "unknown", ")");
  }
  return cat("ended with wait status ", wait_status);
}

std::string tail_lines(const std::string& text, size_t max_lines) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) lines.push_back(line);
    start = end + 1;
  }
  std::string out;
  for (size_t i = lines.size() > max_lines ? lines.size() - max_lines : 0; i < lines.size(); ++i)
    out += (out.empty() ? "" : "; ") + lines[i];
  return out;
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<InputChunk>& input,
                          const std::vector<OutputChunk>& output, double timeout_s) {
  if (argv.empty()) throw Error(TG_ERR_INTERNAL, "run_process without a program");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  Fds fds;  // 0,1: stdin socket (parent, child); 2,3: stdout pipe (read, write); 4,5: stderr pipe
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds.fd) != 0 || ::pipe2(fds.fd + 2, O_CLOEXEC) != 0 ||
      ::pipe2(fds.fd + 4, O_CLOEXEC) != 0)
    throw Error(TG_ERR_INTERNAL, cat("cannot make pipes for ", argv[0], ": ", std::strerror(errno)));

  const pid_t pid = ::fork();
  if (pid < 0) throw Error(TG_ERR_UNAVAILABLE, cat("cannot start ", argv[0], ": fork: ", std::strerror(errno)));
  if (pid == 0) {  // the child: only async-signal-safe calls until exec
    ::dup2(fds.fd[1], 0);
    ::dup2(fds.fd[3], 1);
    ::dup2(fds.fd[5], 2);
    const rlimit no_core{0, 0};  // qemu-user would write a guest core file for a crashing kernel
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::execv(args[0], args.data());
    static const char msg[] = "cannot execute the program\n";
    [[maybe_unused]] ssize_t n = ::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  fds.close(1), fds.close(3), fds.close(5);
  for (int i : {0, 2, 4}) set_nonblocking(fds.fd[i]);

  ProcessResult result;
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_s > 0 ? timeout_s : 1e9));
  size_t in_chunk = 0, in_off = 0, out_chunk = 0, out_off = 0;
  const auto skip_empty_input = [&] {
    while (in_chunk < input.size() && in_off == input[in_chunk].size) ++in_chunk, in_off = 0;
  };
  skip_empty_input();
  if (in_chunk == input.size()) fds.close(0);
  char scratch[65536];
  while (fds.fd[2] >= 0 || fds.fd[4] >= 0) {
    pollfd p[3];
    nfds_t n = 0;
    if (fds.fd[0] >= 0) p[n++] = {fds.fd[0], POLLOUT, 0};
    if (fds.fd[2] >= 0) p[n++] = {fds.fd[2], POLLIN, 0};
    if (fds.fd[4] >= 0) p[n++] = {fds.fd[4], POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      result.timed_out = true;
      break;
    }
    const int ready = ::poll(p, n, static_cast<int>(std::min<long long>(left, 1000)));
    if (ready < 0 && errno != EINTR) throw Error(TG_ERR_INTERNAL, cat("poll: ", std::strerror(errno)));
    if (ready <= 0) continue;
    for (nfds_t k = 0; k < n; ++k) {
      if (p[k].revents == 0) continue;
      if (p[k].fd == fds.fd[0]) {  // feed stdin
        const InputChunk& c = input[in_chunk];
        const ssize_t put =
            ::send(fds.fd[0], static_cast<const char*>(c.data) + in_off, c.size - in_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (put < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (put <= 0) {  // the child closed its stdin or died: stop feeding, keep reading
          result.input_complete = false;
          fds.close(0);
          continue;
        }
        in_off += static_cast<size_t>(put);
        skip_empty_input();
        if (in_chunk == input.size()) fds.close(0);  // EOF for the child
      } else if (p[k].fd == fds.fd[2]) {             // drain stdout into the chunks, then into extra_stdout
        while (out_chunk < output.size() && out_off == output[out_chunk].size) ++out_chunk, out_off = 0;
        const bool into_chunk = out_chunk < output.size();
        char* dst = into_chunk ? static_cast<char*>(output[out_chunk].data) + out_off : scratch;
        const size_t room = into_chunk ? output[out_chunk].size - out_off : sizeof scratch;
        const ssize_t got = ::read(fds.fd[2], dst, room);
        if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (got <= 0) {
          fds.close(2);
          continue;
        }
        if (into_chunk) {
          out_off += static_cast<size_t>(got);
          result.stdout_bytes += static_cast<size_t>(got);
        } else if (result.extra_stdout.size() < kExtraKeep) {
          const size_t keep = std::min(static_cast<size_t>(got), kExtraKeep - result.extra_stdout.size());
          result.extra_stdout.append(scratch, keep);
        }
      } else {  // stderr: keep the tail
        const ssize_t got = ::read(fds.fd[4], scratch, sizeof scratch);
        if (got < 0 && (errno == EAGAIN || errno == EINTR)) continue;
        if (got <= 0) {
          fds.close(4);
          continue;
        }
        result.stderr_text.append(scratch, static_cast<size_t>(got));
        if (result.stderr_text.size() > 2 * kStderrKeep)
          result.stderr_text.erase(0, result.stderr_text.size() - kStderrKeep);
      }
    }
  }
  if (result.timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  result.wait_status = status;
  if (result.stderr_text.size() > kStderrKeep) result.stderr_text.erase(0, result.stderr_text.size() - kStderrKeep);
  return result;
}

}  // namespace tg::dsp
