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
    #[error("{path}: line {line}, column {column}: {message}")]
    BadMeta { path: PathBuf, line: usize, column: usize, message: String },
    #[error("{dir}: no run found; looked for {looked_for}")]
    NoRun { dir: PathBuf, looked_for: &'static str },
    #[error("{path}: line {line}: {message}")]
    BadTruth { path: PathBuf, line: usize, message: String },
    #[error("{path}: holds the truth of {what} {found}, not of {what} {expected}")]
    TruthMismatch { path: PathBuf, what: &'static str, found: String, expected: String },
    #[error("{path}: could not encode a record: {source}")]
    Encode { path: PathBuf, source: serde_json::Error },
}

impl RunError {
    pub(crate) fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> RunError {
        let path = path.into();
        move |source| RunError::Io { path, source }
    }
}
