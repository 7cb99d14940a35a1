//! Link-time set-up of the plugin (the only artefact that links libtorch for users).
//!
//! torch-sys finds libtorch and links it, but two things are left for the final library:
//! - No rpath: loading the plugin would fail with `libtorch_cpu.so: cannot open shared object file` unless the
//!   user exports a library path. We write the torch library directory into the plugin's rpath.
//! - `libtorch_cuda` is dropped by the linker's `--as-needed` (nothing references its symbols directly; it
//!   registers the CUDA backend from its static initialisers), so CUDA would never be found on a GPU machine.
//!   We link it with `--no-as-needed` when the directory has it (CPU-only libtorch builds do not).
//!
//! (`cargo:rustc-link-arg` applies only to this package's own targets, so gigscope's build.rs cannot do this
//! for us.)

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // torch-sys (`links = "tch"`) publishes the directory it linked against; we depend on it directly so that
    // cargo hands it to us, which keeps this script and tch agreeing on which libtorch is used.
    let Some(lib_dir) = env::var_os("DEP_TCH_LIBTORCH_LIB").map(PathBuf::from) else {
        println!("cargo:warning=torch-sys did not report its libtorch directory; the plugin will need LD_LIBRARY_PATH");
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
