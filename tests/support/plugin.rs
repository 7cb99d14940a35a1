//! The training plugin, for the tests that run the binary through it.

use std::path::{Path, PathBuf};

/// The plugin where the binary `bin` looks for it: `$GIGSCOPE_TRAIN_LIB` when the tests run with it set (then the TUI
/// sessions, which take their environment from the tmux server, are given it too), else next to the binary.
/// `None` (skip) when it was not built, which CI does not allow.
pub fn plugin(bin: &str) -> Option<PathBuf> {
    let path = match std::env::var_os("GIGSCOPE_TRAIN_LIB") {
        Some(p) => PathBuf::from(p),
        None => Path::new(bin).parent().unwrap().join("libgigscope_train.so"),
    };
    if path.is_file() {
        return Some(path);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "{} is missing: build it first (`cargo build --release -p gigscope-train` in its own cargo invocation; \
         `./scripts/dev test` does)",
        path.display()
    );
    eprintln!("{} not built: skipping", path.display());
    None
}
