//! Writing run directories: whole lines appended with one write each, `run.json` replaced atomically.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::error::RunError;
use super::format::{Episode, MetricsRecord, RunMeta, EPISODES_FILE, METRICS_FILE, RUN_META_FILE};

/// Appends episodes and metrics to a run directory (creating it if needed).
#[derive(Debug)]
pub struct RunWriter {
    dir: PathBuf,
    episodes: Appender,
    metrics: Appender,
}

impl RunWriter {
    /// Open `dir` for appending; existing lines are kept.
    pub fn create(dir: &Path) -> Result<Self, RunError> {
        std::fs::create_dir_all(dir).map_err(RunError::io(dir))?;
        Ok(RunWriter {
            dir: dir.to_path_buf(),
            episodes: Appender::open(dir.join(EPISODES_FILE))?,
            metrics: Appender::open(dir.join(METRICS_FILE))?,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Replace `run.json` atomically.
    pub fn write_meta(&self, meta: &RunMeta) -> Result<(), RunError> {
        let path = self.dir.join(RUN_META_FILE);
        let mut text =
            serde_json::to_string_pretty(meta).map_err(|source| RunError::Encode { path: path.clone(), source })?;
        text.push('\n');
        write_atomic(&path, text.as_bytes())
    }

    pub fn append_episode(&mut self, episode: &Episode) -> Result<(), RunError> {
        self.episodes.append(episode)
    }

    pub fn append_metrics(&mut self, metrics: &MetricsRecord) -> Result<(), RunError> {
        self.metrics.append(metrics)
    }
}

/// An append-only JSON Lines file.
#[derive(Debug)]
struct Appender {
    path: PathBuf,
    file: File,
}

impl Appender {
    fn open(path: PathBuf) -> Result<Self, RunError> {
        let file = OpenOptions::new().create(true).append(true).open(&path).map_err(RunError::io(&path))?;
        Ok(Appender { path, file })
    }

    /// One `write` of the whole line, newline included, so a concurrent reader never sees half a record
    /// followed by another writer's bytes, then a flush.
    fn append(&mut self, record: &impl Serialize) -> Result<(), RunError> {
        let mut line =
            serde_json::to_vec(record).map_err(|source| RunError::Encode { path: self.path.clone(), source })?;
        line.push(b'\n');
        self.file.write_all(&line).map_err(RunError::io(&self.path))?;
        self.file.flush().map_err(RunError::io(&self.path))
    }
}

/// Write `bytes` to a temporary file beside `path`, sync it, and rename it over `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    let result = (|| {
        let mut file = File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(err) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(RunError::io(path)(err));
    }
    Ok(())
}
