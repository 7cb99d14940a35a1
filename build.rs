//! Build set-up of the gigscope library and binary.
//!
//! 1. The build id (`GIGSCOPE_BUILD_ID`): a hash of the trainer's, plugin's and protocol's sources, so that the
//!    training plugin (`src/trainer/plugin`, built in its own cargo invocation) and the binary that loads it can
//!    tell whether they come from the same sources (`crate::plugin_host::HANDSHAKE`).
//! 2. With the `train` feature (tch/libtorch; the plugin and `cargo test --all-features` turn it on) the test
//!    and bench binaries that link the trainer need two things torch-sys leaves out:
//!    - an rpath to torch's library directory, or they fail to start with `libtorch_cpu.so: cannot open shared
//!      object file` unless the user exports a library path;
//!    - `libtorch_cuda` linked with `--no-as-needed`: nothing references its symbols directly (it registers the
//!      CUDA backend from its static initialisers), so the linker's `--as-needed` would drop it and CUDA would
//!      never be found on a GPU machine. CPU-only libtorch builds do not have it.
//!
//!    The `gigscope` binary never gets `libtorch_cuda` (it must start without libtorch; it reaches the trainer
//!    through the plugin only). The plugin's own build script does the same for the plugin.
//! 3. The `gigscope` binary's hot text (`scripts/hot-text.ld`, written by `scripts/hot-text`): the functions
//!    `validate`, `convert` and `advantages` run, placed together at the start of its code.

use std::env;
use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    build_id();
    // The `gigscope` binary is linked at a fixed address (not position-independent): a PIE of its size carries
    // about 33,000 relocations that the dynamic loader applies at every start, copying the pages they touch.
    // Without them `gigscope --help` starts in 1.9 ms instead of 2.4 ms (tests/benches/startup.rs). It loses
    // address-space randomisation of its own code, which a local, offline tool can spare; the plugin it loads
    // stays position-independent.
    println!("cargo:rustc-link-arg-bin=gigscope=-no-pie");
    hot_text();
    if env::var_os("CARGO_FEATURE_TRAIN").is_none() {
        return;
    }
    // torch-sys (`links = "tch"`) publishes the directory it linked against; we depend on it directly so
    // that cargo hands it to us, which keeps this script and tch agreeing on which libtorch is used.
    let Some(lib_dir) = env::var_os("DEP_TCH_LIBTORCH_LIB").map(PathBuf::from) else {
        println!("cargo:warning=torch-sys did not report its libtorch directory; binaries will need LD_LIBRARY_PATH");
        return;
    };
    // An rpath loads nothing by itself, so every target may have it (the library's unit tests need it).
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib_dir.display());
    if lib_dir.join("libtorch_cuda.so").exists() {
        for kind in ["tests", "benches"] {
            println!("cargo:rustc-link-arg-{kind}=-L{}", lib_dir.display());
            println!("cargo:rustc-link-arg-{kind}=-Wl,--no-as-needed");
            println!("cargo:rustc-link-arg-{kind}=-ltorch_cuda");
            println!("cargo:rustc-link-arg-{kind}=-Wl,--as-needed");
        }
    }
}

/// The kernel maps a program's code in 64 KB around each page it runs (fault-around): laid out by crate and
/// module, the functions the streaming commands run were spread over so many such windows that the binary's
/// code was most of their memory (docs/performance.md ⁴³). The linker script's `INSERT BEFORE .text` adds one
/// output section to the linker's own layout (lld's and GNU ld's alike), so the rest of the binary is placed as
/// before; a function renamed since the script was written keeps its usual place (`tests/architecture` says
/// when too many have).
fn hot_text() {
    if env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        return;
    }
    println!("cargo:rerun-if-changed=scripts/hot-text.ld");
    let root = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let script = root.join("scripts/hot-text.ld");
    println!("cargo:rustc-link-arg-bin=gigscope=-Wl,-T,{}", script.display());
}

/// FNV-1a over the files of the trainer and the plugin (`src/trainer`) and of the protocol and loader
/// (`src/plugin_host`): paths and contents, in path order. Those are what the two sides must share. The plugin also
/// holds its own copy of the engine and the WebShop environment; a change there does not make a built plugin
/// refuse to load (in a checkout edited by several people at once that would turn every unrelated edit into a
/// refused plugin), so rebuild it after such changes: `./scripts/dev run` always does.
fn build_id() {
    let root = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in ["src/trainer", "src/plugin_host"] {
        collect(&root.join(dir), &mut files);
    }
    files.sort();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            hash ^= u64::from(*b);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    };
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let relative = file.strip_prefix(&root).unwrap_or(file);
        feed(relative.to_string_lossy().as_bytes());
        feed(&[0]);
        feed(&std::fs::read(file).unwrap_or_default());
        feed(&[0]);
    }
    println!("cargo:rustc-env=GIGSCOPE_BUILD_ID={hash:016x}");
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        // Editors' swap and backup files are no part of the sources.
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name.ends_with('~') {
            continue;
        }
        match entry.file_type() {
            Ok(t) if t.is_dir() => collect(&path, out),
            Ok(t) if t.is_file() => out.push(path),
            _ => {}
        }
    }
}
