//! The errors of `run/`: [`RunError`] for a run that cannot be read or written (it names the path), and
//! [`LineError`] for one line or row that is not a record (reported and skipped; reading goes on).

use std::path::PathBuf;

/// Errors reading or writing a run directory. Every message names the path involved.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{0}: no such run directory")]
    MissingDir(PathBuf),
    #[error("{0}: not a directory")]
    NotADirectory(PathBuf),
    #[error("{0}: no episodes file (a run directory holds episodes.jsonl)")]
    NoEpisodes(PathBuf),
    #[error("{path}: is {kind}, not the run's episodes file")]
    NotAFile { path: PathBuf, kind: &'static str },
    #[error("{path}: line {line}, column {column}: {message}")]
    BadMeta { path: PathBuf, line: usize, column: usize, message: String },
    #[error("{dir}: no run found; looked for {looked_for}")]
    NoRun { dir: PathBuf, looked_for: String },
    #[error("{path}: line {line}: {message}")]
    BadTruth { path: PathBuf, line: usize, message: String },
    #[error("{path}: holds the truth of {what} {found}, not of {what} {expected}")]
    TruthMismatch { path: PathBuf, what: &'static str, found: String, expected: String },
    #[error("{0}: its files were replaced or cut while they were read; read it again")]
    ChangedWhileRead(PathBuf),
    #[error("{path}: could not encode a record: {source}")]
    Encode { path: PathBuf, source: serde_json::Error },
}

impl RunError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> RunError {
        let path = path.into();
        move |source| RunError::Io { path, source }
    }
}

/// A line (or row) that could not be read as a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    /// The file, for runs read from several files (`None`: the stream's one file).
    pub file: Option<String>,
    /// 1-based line (or row) number in the file.
    pub line: u64,
    pub reason: String,
}

impl LineError {
    pub fn new(line: u64, reason: impl Into<String>) -> Self {
        LineError { file: None, line, reason: reason.into() }
    }
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(file) = &self.file {
            write!(f, "{file}: ")?;
        }
        write!(f, "line {}: {}", self.line, self.reason)
    }
}
