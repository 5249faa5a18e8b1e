#!/usr/bin/env bash
# Installs dependencies, builds, and runs every test with ctest; under CI (or TG_SANITIZE_TESTS=1) the unit
# tests run a second time in an ASan+UBSan build. CI builds build/ as Release (what a user's `cmake` gets), so no
# test may depend on asserts or debug info; developer builds keep RelWithDebInfo (TG_BUILD_TYPE overrides both).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ "${CI:-}" = "true" ]; then
  TG_BUILD_TYPE=${TG_BUILD_TYPE:-Release} scripts/build.sh
else
  scripts/build.sh
fi
# PoCL (the QCOM suites' OpenCL here) compiles each kernel twice without this: once generic for the program
# binary, and once more at the first launch, specialised for its work-group size. The generic one runs the same
# source; a clean machine's QCOM suites spend most of their time in PoCL's compiler (tensor_elementwise_test_qcom
# 13 min from empty caches).
export POCL_WORK_GROUP_SPECIALIZATION=${POCL_WORK_GROUP_SPECIALIZATION:-0}
# A test that fails once fails the run: no retries.
(cd build && ctest --output-on-failure -j "$(nproc)" "$@")
if [ "${CI:-}" = "true" ] || [ "${TG_SANITIZE_TESTS:-0}" = "1" ]; then
  TG_BUILD_DIR=build-asan TG_BUILD_TYPE=Debug scripts/build.sh -DTG_SANITIZE=ON
  # the slow suites, and the compile-every-kernel runs of AMD and DSP (clang and qemu subprocesses, already run
  # above), stay out of the Debug sanitizer build's time; so do repeats of code the sanitizers already cover:
  # quant_test again with AMX off (this host has none), llama.cpp's golden tokens (the same forward passes as
  # ModelVsReference, which runs), the long prompts of quantized weights (the generated kernels are not
  # instrumented; the host code they add over the float ones is none), and the tensor-parallel splits that add no
  # code path of their own to the llama, qwen3moe, deepseek2 and qwen35 ones; and the synthetic models' weight-format
  # repeats, whose host code (each format's decoder and kernels) quant_test's Formats cases run under the sanitizers,
  # keeping for each architecture its float case, each option (KV cache types, flash attention, RoPE scalings, SSM
  # state, latent ranks) once, and one quantized MoE (qwen3moe_Q8_0: the experts' grouped int8 prefill)
  # use_sigaltstack=0: clang, compiling on a worker thread, may register LLVM's own alternate signal stack (heap
  # memory) there, which ASan would then try to munmap when the thread exits ("unable to unmap", a CHECK failure)
  # The pattern keeps to CMake's regular expressions: at most 9 groups in parentheses (more: "Too many parentheses",
  # and ctest then excludes nothing)
  (cd build-asan && ASAN_OPTIONS=detect_leaks=0:use_sigaltstack=0 ctest --output-on-failure -j "$(nproc)" -L unit -LE slow \
     -E "^(conformance_amd_compile_.*|amd_compile_test|conformance_dsp|quant_test_without_amx|GoldenTokens\..*|\
Synthetic/LongPromptVsReference\.[A-Za-z]+/(llama_Q4_K|qwen2_Q5_0|gemma3_Q8_0|qwen3_Q6_K|qwen35_Q8_0|olmoe_F32|deepseek2_F32_rope_yarn_expertgroups42) .*|\
Splits/TensorParallelModel\.[A-Za-z]+/(llama_Q8_0|qwen2|qwen3_|gemma3|olmoe|qwen35moe|qwen3moe_F32_2_ranks_prompt|deepseek2_F32_2_ranks_q_lora).*|\
Synthetic/ModelVsReference\.[A-Za-z]+/(qwen35_Q4_K|qwen35_Q8_0|qwen35_F16_kv_f16|gemma3_Q4_K|gemma3_Q8_0|gemma3_Q5_0|gemma3_MXFP4|\
gemma3_Q5_0_kv_q8_0|qwen3_Q5_K|qwen3_IQ4_XS|qwen3_Q6_K|qwen3_Q8_0|llama_Q4_K|llama_IQ4_NL|llama_Q4_1|llama_Q8_0|deepseek2_F16|\
deepseek2_Q8_0|olmoe_Q4_K|qwen2_Q8_0|qwen35moe_Q8_0) .*|\
Synthetic/SlotsVsReference\.[A-Za-z]+/(qwen35moe_F16|gemma3_Q4_K|olmoe_F32) .*)$")
fi
