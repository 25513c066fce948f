#!/usr/bin/env bash
# Fetches libtorch 2.11.0 (the pairing of tch =0.24.0) for building kc with `--features torch`.
#
# The PyPI wheel holds the same libraries, headers and CMake files as the libtorch archive, so
# this downloads the CUDA 13 wheel and unpacks only `torch/lib`, `torch/include` and
# `torch/share`: a wheel for Python 3.12 does not `pip install` under another Python, and kc
# needs none of the Python parts. The wheel's CUDA runtime dependencies (cuBLAS, cuDNN, NCCL)
# are not fetched: kc links with `--allow-shlib-undefined` and the GPU machine provides them.
#
# Usage: tools/setup_libtorch.sh [DIR]        (default DIR: .libtorch beside Cargo.toml)
# Then:  export LIBTORCH=DIR/torch LIBTORCH_CXX11_ABI=1
#        cargo build --release --features torch
# Tier 3's C++ shim (src/exec/torch_shim.cpp) also needs the CUDA 13 runtime headers
# (cuda_runtime_api.h and what it includes): build.rs looks in KC_CUDA_INCLUDE,
# $CUDA_HOME/include, DIR/cuda-include, /usr/local/cuda/include. A machine without the
# CUDA toolkit can copy a GPU machine's /usr/local/cuda-13.0/targets/x86_64-linux/include
# into DIR/cuda-include.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-.libtorch}
version=2.11.0
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)

if [ -f "$dir/torch/lib/libtorch_cuda.so" ] && grep -qs "^$version" "$dir/torch/VERSION"; then
    echo "libtorch $version already in $dir/torch"
else
    command -v pip3 >/dev/null || { echo "setup_libtorch: pip3 is needed to fetch the wheel" >&2; exit 1; }
    command -v unzip >/dev/null || { echo "setup_libtorch: unzip is needed (apt-get install unzip)" >&2; exit 1; }
    pip3 download --no-deps "torch==$version" --python-version 3.12 --only-binary=:all: \
        --platform manylinux_2_28_x86_64 -d "$dir/wheel"
    wheel=$(ls "$dir"/wheel/torch-"$version"-*.whl | head -n 1)
    rm -rf "$dir/torch"
    unzip -q -o "$wheel" 'torch/lib/*' 'torch/include/*' 'torch/share/*' 'torch/version.py' -d "$dir"
    echo "$version" > "$dir/torch/VERSION"
    rm -rf "$dir/wheel"
    echo "libtorch $version unpacked into $dir/torch"
fi
echo "export LIBTORCH=$dir/torch LIBTORCH_CXX11_ABI=1"
