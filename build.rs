//! Link-time set-up for the `train` feature (tch/libtorch); does nothing without it.
//!
//! torch-sys finds libtorch and links it, but two things are left for the final binaries:
//! - No rpath: the binaries would fail to start with `libtorch_cpu.so: cannot open shared object file` unless
//!   the user exports a library path. We write the torch library directory into every binary's rpath.
//! - `libtorch_cuda` is dropped by the linker's `--as-needed` (nothing references its symbols directly; it
//!   registers the CUDA backend from its static initialisers), so CUDA would never be found on a GPU machine.
//!   We link it with `--no-as-needed` when the directory has it (CPU-only libtorch builds do not).

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if env::var_os("CARGO_FEATURE_TRAIN").is_none() {
        return;
    }
    // torch-sys (`links = "tch"`) publishes the directory it linked against; we depend on it directly so
    // that cargo hands it to us, which keeps this script and tch agreeing on which libtorch is used.
    let Some(lib_dir) = env::var_os("DEP_TCH_LIBTORCH_LIB").map(PathBuf::from) else {
        println!("cargo:warning=torch-sys did not report its libtorch directory; binaries will need LD_LIBRARY_PATH");
        return;
    };
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib_dir.display());
    if lib_dir.join("libtorch_cuda.so").exists() {
        println!("cargo:rustc-link-arg=-L{}", lib_dir.display());
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
        println!("cargo:rustc-link-arg=-ltorch_cuda");
        println!("cargo:rustc-link-arg=-Wl,--as-needed");
    }
}
