//! What every fuzz target holds a reader of outside input to (issue 28's contract): no panic (libFuzzer reports
//! one as a crash, with the input that made it); a bad record named with its position inside its file; every good
//! record before and after it still read. The targets surround the fuzzed bytes with good records taken from the
//! project's own sample run and fixtures, and `scripts/fuzz` seeds each target's corpus from real files.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use gigscope::run::LineError;

/// The project's root (this crate is `tests/fuzz`).
pub fn project_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Where the targets make their scratch run directories: memory, where there is a `/dev/shm`.
pub fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() };
    dir.expect("a scratch directory")
}

/// Lines `first..first + n` of a project file, each without its newline.
pub fn project_lines(relative: &str, first: usize, n: usize) -> Vec<String> {
    let path = project_root().join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().skip(first).take(n).map(str::to_string).collect()
}

/// Two good episodes of the bundled WebShop sample run, with their ids.
pub fn good_episodes() -> &'static [(String, String)] {
    static GOOD: OnceLock<Vec<(String, String)>> = OnceLock::new();
    GOOD.get_or_init(|| {
        project_lines("sample_runs/webshop-gigpo/episodes.jsonl", 0, 2)
            .into_iter()
            .map(|line| {
                let value: serde_json::Value = serde_json::from_str(&line).expect("the sample run's line is JSON");
                let id = value["id"].as_str().expect("an episode id").to_string();
                (line, id)
            })
            .collect()
    })
}

/// `before`, the fuzzed bytes, `after`, each ended by a newline: the fuzzed record between two good ones.
pub fn surround(before: &str, fuzzed: &[u8], after: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(before.len() + fuzzed.len() + after.len() + 3);
    out.extend_from_slice(before.as_bytes());
    out.push(b'\n');
    out.extend_from_slice(fuzzed);
    out.push(b'\n');
    out.extend_from_slice(after.as_bytes());
    out.push(b'\n');
    out
}

/// How many lines a file of `bytes` (ended by a newline) has.
pub fn lines_in(bytes: &[u8]) -> u64 {
    bytes.iter().filter(|b| **b == b'\n').count() as u64
}

/// Every broken line is named with a position inside its file of `lines` lines.
pub fn assert_named_within(errors: &[LineError], lines: u64, file: &str) {
    for error in errors {
        assert!(
            (1..=lines).contains(&error.line),
            "{file}: a broken line is named as line {} of {lines}: {}",
            error.line,
            error.reason
        );
        assert!(!error.reason.is_empty(), "{file}: line {} is broken without a reason", error.line);
    }
}
