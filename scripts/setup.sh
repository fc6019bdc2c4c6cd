#!/usr/bin/env bash
# setup.sh - on a fresh Debian 12 machine: installs the Debian packages that
# are missing, builds Synor Compute (Release) and runs the main job.
#   bash scripts/setup.sh              install, build, run the main job
#   bash scripts/setup.sh --deps-only  only install what is missing
#   bash scripts/setup.sh --deps-only --test-deps   and what only the tests use
set -euo pipefail
cd "$(dirname "$0")/.."

# Build tools, hwloc (CPU topology), the OpenCL ICD loader + headers and PoCL
# (an OpenCL implementation on the CPU, so OpenCL code paths run without a
# GPU). CUDA and NVML are optional and loaded at run time when a driver is
# present; nothing to install for them. clang and its runtime libraries
# (libFuzzer, the sanitizers) build the fuzzing harnesses in fuzz/.
# libmicrohttpd: synor serve's HTTP server; the HTTP client of its test: curl.
# libcurl4-openssl-dev and nettle-dev (SHA-256): the network client of synor
# agent and submit.
# bible-kjv (+ its text): the King James Bible, public domain, the corpus
# of the documented training run (docs/TRAINING.md).
# libopenmpi-dev, openmpi-bin: the runtime across MPI ranks (docs/MPI.md).
# libglpk-dev (optional): the exact planner's ILP for identical processors
# (docs/PLANNING.md, "The exact planner").
# libhnswlib-dev (optional; header-only C++, built with build-essential's
# g++): the semantic cache's HNSW index (docs/LLM.md, "Caches").
PACKAGES=(build-essential cmake pkg-config libhwloc-dev hwloc libopenblas-dev
          ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clang libclang-rt-14-dev
          libsqlite3-dev libmicrohttpd-dev bible-kjv curl
          nettle-dev libpq-dev libcurl4-openssl-dev postgresql libopenmpi-dev openmpi-bin
          libglpk-dev libhnswlib-dev)
# --test-deps (scripts/test.sh): also what only the tests use - PyTorch, the
# independent reference the trainer's gradients are checked against
# (tests/test_train_torch.c); never a dependency of the library or the CLI.
# Chromium (headless): renders the coordinator's dashboard in
# tests/cli/dashboard.sh.
if [ "${2:-}" = "--test-deps" ] || [ "${1:-}" = "--test-deps" ]; then
  PACKAGES+=(python3-torch chromium)
fi

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=
  [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
[ "${1:-}" = "--deps-only" ] && exit 0

cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"

echo
echo "== synor devices: the processors of this machine =="
./build/synor devices
echo
echo "== synor profiles: the processor catalog =="
./build/synor profiles
echo
echo "== synor simulate: the seed's scenario (Llama-2-70B on CPU + H100 + TPU v5p + Groq LPU, simulated) =="
./build/synor simulate
echo
echo "== synor run: a real tiled Cholesky on this machine's processors, checked against LAPACK =="
./build/synor run --tiled cholesky --n 4096 --nb 512
echo
echo "== synor run: a workload file executed for real (an MLP block, fp32) =="
./build/synor run workloads/mlp-fp32.json
echo
echo "== synor run: a transformer block (embedding, RMS norm, grouped-KV causal attention, MLP, softmax) =="
./build/synor run workloads/attention-block-fp32.json
echo
echo "== synor generate: text from a Llama-architecture model built here (generated weights, BPE vocabulary trained on README.md) =="
model=$(mktemp -d)/tiny.gguf
./build/synor model synth "$model" --preset tiny --text README.md
./build/synor model info "$model"
./build/synor generate -m "$model" -p "Synor Compute places" -n 48 --temp 0.8 --seed 1
rm -rf "$(dirname "$model")"
