//! The plain files of a run directory: whether it is one, its listing, and `run.json`.
//!
//! Contract: every function names the path in its error ([`RunError`]); a missing `run.json` is not an error
//! (it is optional), a malformed one is, with its line and column.

use std::path::Path;

use super::error::RunError;
use super::format::{RunMeta, EPISODES_FILE, RUN_META_FILE};

/// The directory exists and is a directory.
pub fn check_run_dir(dir: &Path) -> Result<(), RunError> {
    match std::fs::metadata(dir) {
        Ok(meta) if meta.is_dir() => Ok(()),
        Ok(_) => Err(RunError::NotADirectory(dir.to_path_buf())),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Err(RunError::MissingDir(dir.to_path_buf())),
        Err(err) => Err(RunError::io(dir)(err)),
    }
}

/// `run.json`, if present.
pub fn read_meta(dir: &Path) -> Result<Option<RunMeta>, RunError> {
    let path = dir.join(RUN_META_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(RunError::io(path)(err)),
    };
    serde_json::from_str(&text).map(Some).map_err(|err| RunError::BadMeta {
        line: err.line(),
        column: err.column(),
        message: err.to_string(),
        path,
    })
}

/// The size of the run's `episodes.jsonl` in bytes (0 when there is none yet): where a burst starting now
/// begins, and where one ending now ends ([`super::bursts`]).
pub fn episodes_size(dir: &Path) -> Result<u64, RunError> {
    let path = dir.join(EPISODES_FILE);
    match std::fs::metadata(&path) {
        Ok(meta) => Ok(meta.len()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(err) => Err(RunError::io(path)(err)),
    }
}

/// The file names in `dir` (not recursive), sorted; names that are not UTF-8 are left out.
pub(crate) fn list_dir(dir: &Path) -> Result<Vec<String>, RunError> {
    let entries = std::fs::read_dir(dir).map_err(RunError::io(dir))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(RunError::io(dir))?;
        if let Ok(name) = entry.file_name().into_string() {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}
