#!/usr/bin/env bash
# Installs the Debian 12 packages pathlift needs to build, test and run its Python package.
# Idempotent: installs only what is missing. Uses sudo when not run as root.
set -euo pipefail

# Each package has a user: the build (cmake, make, g++; git for scripts/format.sh; ccache, which
# lets the pip build reuse the objects of build/), the library
# (Eigen, nlohmann-json, fmt, FLINT for ranks mod p, LAPACKE for singular values, ONNX
# and protobuf for read_onnx), the CLI (CLI11; zlib for the CRC-32 of .npz files), the tests and benchmarks (GoogleTest, Google
# Benchmark, clang-format), the Python package (pybind11, numpy, scipy.sparse results) and its
# tests (pytest, PyTorch references, torchvision's ResNet and ONNX export for the CNN tests,
# matplotlib for the figures and pathlift.plot, scikit-learn's digits for
# examples/path_training.py, mypy for the type check), `pip install --no-build-isolation .` into a
# venv (pip, venv, setuptools, wheel: scripts/check-install.sh, docs/install.md), and the fuzzing
# of scripts/fuzz.sh (clang with libFuzzer and its sanitizers in libclang-rt-dev; libomp-dev,
# clang's OpenMP). libopenblas0-pthread replaces Debian's reference BLAS under numpy, scipy and
# PyTorch (and LAPACKE) by an optimized one, as a pip user's MKL or OpenBLAS would: the PyTorch
# recipes of bench/ race pathlift fairly only on it (docs/benchmarks.md#fair-blas).
packages=(
  cmake g++ make git ccache
  libeigen3-dev nlohmann-json3-dev libfmt-dev libcli11-dev libflint-dev libgmp-dev liblapacke-dev
  libopenblas0-pthread
  libonnx-dev libprotobuf-dev zlib1g-dev
  libgtest-dev libbenchmark-dev clang-format clang libclang-rt-dev libomp-dev
  python3 python3-dev pybind11-dev python3-numpy python3-scipy python3-pytest
  python3-torch python3-torchvision python3-onnx python3-matplotlib python3-sklearn python3-mypy
  python3-pandas python3-distributed
  python3-pip python3-venv python3-setuptools python3-wheel
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "pathlift: all Debian packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
echo "pathlift: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
