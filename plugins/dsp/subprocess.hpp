// Runs a child process with its stdin fed from memory, its stdout streamed into memory and its stderr kept, under
// a deadline: the DSP plugin's way to call clang and ld.lld, and to launch kernels under qemu-hexagon.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tg::dsp {

struct InputChunk {
  const void* data;
  size_t size;
};
struct OutputChunk {
  void* data;
  size_t size;
};

struct ProcessResult {
  int wait_status = 0;         // as waitpid() reports it
  bool timed_out = false;      // killed at the deadline
  size_t stdout_bytes = 0;     // written into the output chunks, in order
  std::string extra_stdout;    // what came after the chunks were full (first 4 KiB)
  std::string stderr_text;     // the child's stderr (its last 16 KiB)
  bool input_complete = true;  // false when the child stopped reading before all input was sent

  bool succeeded() const;        // exited with status 0
  std::string describe() const;  // "exited with status 3", "was killed by signal 11 (Segmentation fault)"
};

// Runs argv (argv[0] a path) to completion. timeout_s <= 0: no deadline. Throws sdk::Error only when the process
// cannot be started; what the child does is in the result. Never raises SIGPIPE in this process.
ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<InputChunk>& input,
                          const std::vector<OutputChunk>& output, double timeout_s);

// The last `max_lines` non-empty lines of text, joined with "; " (for one-line error messages).
std::string tail_lines(const std::string& text, size_t max_lines);

}  // namespace tg::dsp
