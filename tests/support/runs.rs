//! Run directories for the tests that write to one.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// A copy of the TUI fixture run `name` (`tests/fixtures/tui/NAME`) in a temporary directory, so a test may
/// write to it.
pub fn copy_fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    copy_run("tests/fixtures/tui", name)
}

/// A copy of the bundled sample run `name` (`sample_runs/NAME`) in a temporary directory.
pub fn copy_sample(name: &str) -> (tempfile::TempDir, PathBuf) {
    copy_run("sample_runs", name)
}

/// A copy of the run `PARENT/NAME` (relative to the repository) in a temporary directory.
fn copy_run(parent: &str, name: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join(name);
    std::fs::create_dir(&dir).expect("mkdir");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join(parent).join(name);
    for entry in std::fs::read_dir(fixture).expect("fixture") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), dir.join(entry.file_name())).expect("copy");
    }
    (tmp, dir)
}

/// The episode lines of `dir` that read as JSON (none when there is no file yet).
pub fn episode_lines(dir: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join("episodes.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// Give `path` the modification time `time`.
pub fn set_modified(path: &Path, time: SystemTime) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(time).unwrap();
}

/// Modified `age` ago: a file its writer has left.
pub fn modified_ago(path: &Path, age: Duration) {
    set_modified(path, SystemTime::now() - age);
}

/// Modified "just now" however slow the machine (a read may start seconds after the write under load): an hour
/// ahead, so that no reader can take it for a file its writer left. A time in the future gives no age, and then
/// only how long the reader itself has watched the file counts, which a one-shot read does for an instant.
pub fn modified_just_now(path: &Path) {
    set_modified(path, SystemTime::now() + Duration::from_secs(3600));
}
