//! The `kc` package's link arguments for the `torch` feature; nothing happens in other
//! builds. kc-exec's build.rs compiles the C++ shim and names libtorch's libraries.
//!
//! rustc links with `--as-needed`, which drops libtorch_cuda.so because no Rust symbol refers
//! to it directly; without it libtorch reports CUDA as unavailable. It is therefore linked
//! with `--no-as-needed`. The libtorch wheel's own CUDA dependencies (cuBLAS, cuDNN, NCCL)
//! are not present on the build machine, so undefined symbols in shared libraries are
//! allowed at link time; the GPU machine resolves them at load time.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var_os("CARGO_FEATURE_TORCH").is_none() {
        return;
    }
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    if let Some(libtorch) = std::env::var_os("LIBTORCH") {
        println!(
            "cargo:rustc-link-search=native={}",
            std::path::Path::new(&libtorch).join("lib").display()
        );
    }
    println!("cargo:rustc-link-arg-bins=-Wl,--no-as-needed");
    println!("cargo:rustc-link-arg-bins=-ltorch_cuda");
    println!("cargo:rustc-link-arg-bins=-Wl,--as-needed");
    println!("cargo:rustc-link-arg=-Wl,--allow-shlib-undefined");
}
