//! Reading a run directory for the TUI: the first load and every later poll go through the same incremental
//! tails, so a live run and a finished one are handled alike.
//!
//! Stop-gap until the core reader (`crate::run::JsonlTail`) lands on main; the TUI only depends on
//! [`RunSource::poll`] returning a [`RunUpdate`], so swapping the reader does not touch the rest.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use crate::run::{Episode, MetricsRecord, RunMeta, EPISODES_FILE, METRICS_FILE, RUN_META_FILE};

#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    #[error("{0}: no such run directory")]
    NoDir(PathBuf),
    #[error("{0}: no {EPISODES_FILE} in the run directory")]
    NoEpisodes(PathBuf),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: {reason}")]
    BadMeta { path: PathBuf, reason: String },
}

/// What changed in the run since the last poll.
#[derive(Debug, Default)]
pub struct RunUpdate {
    /// The episodes file was truncated or replaced: drop every episode held so far.
    pub reset: bool,
    pub episodes: Vec<Episode>,
    /// Lines skipped as broken in this batch (`line number`, reason).
    pub broken: Vec<(u64, String)>,
    pub metrics_reset: bool,
    pub metrics: Vec<MetricsRecord>,
}

impl RunUpdate {
    pub fn is_empty(&self) -> bool {
        !self.reset && !self.metrics_reset && self.episodes.is_empty() && self.broken.is_empty() && self.metrics.is_empty()
    }
}

/// Incremental reader of one JSONL file: resumes from the end of the last complete line, leaves a torn last
/// line for the next poll, and starts over when the file shrinks or is replaced.
#[derive(Debug)]
pub struct Tail {
    path: PathBuf,
    offset: u64,
    line: u64,
    identity: Option<u64>,
}

pub struct TailBatch<T> {
    pub reset: bool,
    pub records: Vec<T>,
    pub broken: Vec<(u64, String)>,
}

impl Tail {
    pub fn new(path: PathBuf) -> Tail {
        Tail { path, offset: 0, line: 0, identity: None }
    }

    pub fn poll<T: DeserializeOwned>(&mut self) -> Result<TailBatch<T>, SourceError> {
        let io = |source| SourceError::Io { path: self.path.clone(), source };
        let mut batch = TailBatch { reset: false, records: Vec::new(), broken: Vec::new() };
        let mut file = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if self.offset > 0 {
                    batch.reset = true;
                    self.offset = 0;
                    self.line = 0;
                }
                return Ok(batch);
            }
            Err(e) => return Err(io(e)),
        };
        let meta = file.metadata().map_err(io)?;
        let identity = file_identity(&meta);
        if meta.len() < self.offset || (self.identity.is_some() && identity != self.identity) {
            batch.reset = self.offset > 0;
            self.offset = 0;
            self.line = 0;
        }
        self.identity = identity;
        if meta.len() == self.offset {
            return Ok(batch);
        }
        file.seek(SeekFrom::Start(self.offset)).map_err(io)?;
        let mut buf = Vec::with_capacity((meta.len() - self.offset) as usize);
        file.read_to_end(&mut buf).map_err(io)?;
        // Only complete lines: a writer may be halfway through the last one.
        let Some(end) = buf.iter().rposition(|&b| b == b'\n') else { return Ok(batch) };
        for raw in buf[..end].split(|&b| b == b'\n') {
            self.line += 1;
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            if raw.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match std::str::from_utf8(raw) {
                Err(e) => batch.broken.push((self.line, format!("invalid UTF-8: {e}"))),
                Ok(text) => match serde_json::from_str::<T>(text) {
                    Ok(r) => batch.records.push(r),
                    Err(e) => batch.broken.push((self.line, e.to_string())),
                },
            }
        }
        self.offset += end as u64 + 1;
        Ok(batch)
    }
}

#[cfg(unix)]
fn file_identity(meta: &std::fs::Metadata) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    Some(meta.ino())
}

#[cfg(not(unix))]
fn file_identity(_meta: &std::fs::Metadata) -> Option<u64> {
    None
}

/// A run directory being read.
#[derive(Debug)]
pub struct RunSource {
    pub dir: PathBuf,
    episodes: Tail,
    metrics: Tail,
}

impl RunSource {
    /// Check the directory and its episodes file; read `run.json`.
    pub fn open(dir: &Path) -> Result<(RunSource, Option<RunMeta>), SourceError> {
        if !dir.is_dir() {
            return Err(SourceError::NoDir(dir.to_path_buf()));
        }
        let episodes = dir.join(EPISODES_FILE);
        if !episodes.is_file() {
            return Err(SourceError::NoEpisodes(dir.to_path_buf()));
        }
        let meta_path = dir.join(RUN_META_FILE);
        let meta = match std::fs::read_to_string(&meta_path) {
            Ok(text) => Some(
                serde_json::from_str::<RunMeta>(&text)
                    .map_err(|e| SourceError::BadMeta { path: meta_path.clone(), reason: e.to_string() })?,
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(SourceError::Io { path: meta_path, source }),
        };
        let source =
            RunSource { dir: dir.to_path_buf(), episodes: Tail::new(episodes), metrics: Tail::new(dir.join(METRICS_FILE)) };
        Ok((source, meta))
    }

    /// Everything new since the last poll (the first poll reads the whole run).
    pub fn poll(&mut self) -> Result<RunUpdate, SourceError> {
        let eps = self.episodes.poll::<Episode>()?;
        let mets = self.metrics.poll::<MetricsRecord>()?;
        Ok(RunUpdate {
            reset: eps.reset,
            episodes: eps.records,
            broken: eps.broken,
            metrics_reset: mets.reset,
            metrics: mets.records,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const EP: &str = r#"{"id":"a","group":"g","steps":[{"observation":"o","action":"x","reward":1}]}"#;

    #[test]
    fn torn_line_waits_and_broken_line_is_counted() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.jsonl");
        let mut f = File::create(&path).unwrap();
        write!(f, "{EP}\nnot json\n{}", &EP[..10]).unwrap();
        let mut tail = Tail::new(path.clone());
        let b = tail.poll::<Episode>().unwrap();
        assert_eq!(b.records.len(), 1);
        assert_eq!(b.broken.len(), 1);
        assert_eq!(b.broken[0].0, 2);
        write!(f, "{}\n", &EP[10..]).unwrap();
        let b = tail.poll::<Episode>().unwrap();
        assert_eq!(b.records.len(), 1);
        assert!(!b.reset);
    }

    #[test]
    fn truncation_resets() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("e.jsonl");
        std::fs::write(&path, format!("{EP}\n{EP}\n")).unwrap();
        let mut tail = Tail::new(path.clone());
        assert_eq!(tail.poll::<Episode>().unwrap().records.len(), 2);
        std::fs::OpenOptions::new().write(true).truncate(true).open(&path).unwrap();
        std::fs::write(&path, format!("{EP}\n")).unwrap();
        let b = tail.poll::<Episode>().unwrap();
        assert!(b.reset);
        assert_eq!(b.records.len(), 1);
    }
}
