//! The run directory as the TUI sees it: two incremental tails (episodes, metrics) from the core reader. The
//! first poll reads the whole run and every later poll only what was appended, so a live run and a finished
//! one are handled alike.

use std::path::{Path, PathBuf};

use crate::run::{
    check_run_dir, read_meta, Episode, JsonlTail, LineError, MetricsRecord, RunError, RunMeta, EPISODES_FILE,
    METRICS_FILE,
};

/// What changed in the run since the last poll.
#[derive(Debug, Default)]
pub struct RunUpdate {
    /// The episodes file was truncated or replaced: drop every episode held so far.
    pub reset: bool,
    pub episodes: Vec<Episode>,
    /// Lines of the episodes file skipped as broken in this batch.
    pub broken: Vec<LineError>,
    pub metrics_reset: bool,
    pub metrics: Vec<MetricsRecord>,
}

impl RunUpdate {
    pub fn is_empty(&self) -> bool {
        !self.reset && !self.metrics_reset && self.episodes.is_empty() && self.broken.is_empty() && self.metrics.is_empty()
    }
}

/// A run directory being read.
#[derive(Debug)]
pub struct RunSource {
    pub dir: PathBuf,
    episodes: JsonlTail<Episode>,
    metrics: JsonlTail<MetricsRecord>,
}

impl RunSource {
    /// Check the directory and its episodes file; read `run.json`.
    pub fn open(dir: &Path) -> Result<(RunSource, Option<RunMeta>), RunError> {
        check_run_dir(dir)?;
        let episodes = dir.join(EPISODES_FILE);
        if !episodes.is_file() {
            return Err(RunError::NoEpisodes(dir.to_path_buf()));
        }
        let meta = read_meta(dir)?;
        let source = RunSource {
            dir: dir.to_path_buf(),
            episodes: JsonlTail::new(episodes),
            metrics: JsonlTail::new(dir.join(METRICS_FILE)),
        };
        Ok((source, meta))
    }

    /// Everything new since the last poll (the first poll reads the whole run).
    pub fn poll(&mut self) -> Result<RunUpdate, RunError> {
        let eps = self.episodes.poll()?;
        let mets = self.metrics.poll()?;
        Ok(RunUpdate {
            reset: eps.reset,
            episodes: eps.records.into_iter().map(|(_, e)| e).collect(),
            broken: eps.errors,
            metrics_reset: mets.reset,
            metrics: mets.records.into_iter().map(|(_, m)| m).collect(),
        })
    }
}
