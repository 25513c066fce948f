//! kc-exec's build steps for the `torch` feature (the C++ shim and libtorch's libraries);
//! nothing happens in other builds. The `kc` package's build.rs sets the link arguments of
//! its programs.
//!
//! rustc links with `--as-needed`, which drops libtorch_cuda.so because no Rust symbol refers
//! to it directly; without it libtorch reports CUDA as unavailable. It is therefore linked
//! with `--no-as-needed`. The libtorch wheel's own CUDA dependencies (cuBLAS, cuDNN, NCCL)
//! are not present on the build machine, so undefined symbols in shared libraries are
//! allowed at link time; the GPU machine resolves them at load time.
//!
//! The C++ shim (`src/backends/torch_shim.cpp`: libtorch's boxed dispatcher and its CUDA graph
//! capture) is compiled against libtorch's headers and the CUDA runtime headers, found in
//! `KC_CUDA_INCLUDE`, `$CUDA_HOME/include`, `.libtorch/cuda-include` or
//! `/usr/local/cuda/include`, in that order.
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_TORCH").is_none() {
        return;
    }
    println!("cargo:rerun-if-changed=src/backends/torch_shim.cpp");
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    println!("cargo:rerun-if-env-changed=KC_CUDA_INCLUDE");
    println!("cargo:rerun-if-env-changed=CUDA_HOME");
    let libtorch = PathBuf::from(
        std::env::var("LIBTORCH")
            .expect("--features torch needs LIBTORCH (see tools/setup_libtorch.sh)"),
    );
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let cuda_include = std::env::var_os("KC_CUDA_INCLUDE")
        .map(PathBuf::from)
        .into_iter()
        .chain(std::env::var_os("CUDA_HOME").map(|h| PathBuf::from(h).join("include")))
        .chain([
            manifest.join("../.libtorch/cuda-include"),
            PathBuf::from("/usr/local/cuda/include"),
        ])
        .find(|p| p.join("cuda_runtime_api.h").is_file())
        .expect(
            "--features torch needs the CUDA runtime headers (cuda_runtime_api.h): set \
             KC_CUDA_INCLUDE or CUDA_HOME, or run tools/setup_libtorch.sh",
        );
    cc::Build::new()
        .cpp(true)
        .file("src/backends/torch_shim.cpp")
        .include(libtorch.join("include"))
        .include(libtorch.join("include/torch/csrc/api/include"))
        .include(&cuda_include)
        .flag("-std=c++17")
        .define("_GLIBCXX_USE_CXX11_ABI", "1")
        .flag("-w")
        .opt_level(2)
        .compile("kc_torch_shim");
    println!(
        "cargo:rustc-link-search=native={}",
        libtorch.join("lib").display()
    );
    println!("cargo:rustc-link-lib=dylib=c10_cuda");
    println!("cargo:rustc-link-lib=dylib=torch_cuda");
    // The link arguments of the programs that use this crate (`--no-as-needed` for
    // libtorch_cuda, `--allow-shlib-undefined`) are set by the `kc` package's build.rs.
}
