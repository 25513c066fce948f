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
# $CUDA_HOME/include, DIR/cuda-include, /usr/local/cuda/include. On a machine without the
# CUDA toolkit this script unpacks them into DIR/cuda-include from the CUDA 13.0 runtime's
# PyPI wheels (nvidia-cuda-runtime and nvidia-cuda-crt 13.0.x: headers only are kept).
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
cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [ -n "${KC_CUDA_INCLUDE:-}" ] || [ -f "$cuda_home/include/cuda_runtime_api.h" ] \
    || [ -f "$dir/cuda-include/cuda_runtime_api.h" ]; then
    echo "CUDA runtime headers found"
else
    # The runtime's headers, and crt/ (host_config.h and the rest) that they include.
    for package in nvidia-cuda-runtime nvidia-cuda-crt; do
        pip3 download --no-deps "$package>=13.0,<13.1" --python-version 3.12 --only-binary=:all: \
            --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d "$dir/wheel"
    done
    rm -rf "$dir/cuda-unpack" && mkdir -p "$dir/cuda-include"
    for wheel in "$dir"/wheel/nvidia_cuda_*-13.0.*.whl; do
        unzip -q -o "$wheel" 'nvidia/cu13/include/*' -d "$dir/cuda-unpack"
    done
    cp -r "$dir"/cuda-unpack/nvidia/cu13/include/. "$dir/cuda-include/"
    rm -rf "$dir/cuda-unpack" "$dir/wheel"
    echo "CUDA 13.0 runtime headers unpacked into $dir/cuda-include"
fi
echo "export LIBTORCH=$dir/torch LIBTORCH_CXX11_ABI=1"
