//! The trainer's side of a run directory: [`RunWriter`] plus what a trainer needs around it (refusing to mix
//! two runs, recording settings, cutting lines a checkpoint does not cover).

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::checkpoint::TrainerState;
use super::error::TrainError;
use crate::advantage::{AdvantageOverrides, AdvantageSettings};
use crate::plugin_host::protocol::{TrainConfig, ESTIMATOR_KEY};
use crate::run::bursts::{BURSTS_KEY, EPISODES_FROM_KEY, EPISODES_TO_KEY};
use crate::run::{
    episodes_size, read_meta, write_atomic, Episode, MetricsRecord, Run, RunWriter, EPISODES_FILE, FORMAT_V1,
    METRICS_FILE,
};

pub struct RunOutput {
    dir: PathBuf,
    env: String,
    writer: RunWriter,
    /// This burst's entry in `run.json`'s `bursts` (its index), once [`RunOutput::write_meta`] has made it.
    burst: Option<usize>,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> TrainError + '_ {
    move |source| TrainError::Io { path: path.to_path_buf(), source }
}

fn file_len(path: &Path) -> Result<u64, TrainError> {
    match std::fs::metadata(path) {
        Ok(m) => Ok(m.len()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(io_err(path)(e)),
    }
}

impl RunOutput {
    /// Open `dir` for writing. A new run must not have episodes yet; a resumed one keeps what it has.
    pub fn open(dir: &Path, resume: bool, env: &str) -> Result<RunOutput, TrainError> {
        if !resume && file_len(&dir.join(EPISODES_FILE))? > 0 {
            return Err(TrainError::RunNotEmpty(dir.to_path_buf()));
        }
        Ok(RunOutput { dir: dir.to_path_buf(), env: env.to_owned(), writer: RunWriter::create(dir)?, burst: None })
    }

    /// The advantage settings recorded in `run.json` (none when there is no `run.json`).
    pub fn recorded_settings(&self) -> Result<AdvantageOverrides, TrainError> {
        Ok(read_meta(&self.dir)?.and_then(|m| m.advantage).unwrap_or_default())
    }

    /// Record the settings in use (every key, so `gigscope advantages` recomputes exactly what trains) and the
    /// burst's configuration in `run.json`, keeping whatever else it holds. The burst's entry also records where
    /// its part of `episodes.jsonl` starts (`episodes_from`, [`crate::run::bursts`]).
    pub fn write_meta(&mut self, settings: &AdvantageSettings, config: &TrainConfig) -> Result<(), TrainError> {
        let mut meta = read_meta(&self.dir)?.unwrap_or_default();
        meta.format = Some(FORMAT_V1.to_string());
        meta.env.get_or_insert_with(|| self.env.clone());
        if let Some(name) = &config.name {
            meta.name = Some(name.clone());
        }
        if meta.created.is_none() {
            let now = time::OffsetDateTime::now_utc();
            meta.created = now.format(&time::format_description::well_known::Rfc3339).ok();
        }
        meta.advantage = Some(AdvantageOverrides::from_settings(settings));
        match &config.estimator {
            Some(family) => {
                meta.extra.insert(ESTIMATOR_KEY.into(), serde_json::to_value(family)?);
            }
            None => {
                meta.extra.remove(ESTIMATOR_KEY);
            }
        }
        meta.notes.get_or_insert_with(|| "written by `gigscope train`".to_string());
        // Every burst's configuration is kept, in order, under `bursts`; the `train` record the run's first
        // trainer wrote (gigscope's or another writer's) is never replaced.
        let record = serde_json::to_value(config)?;
        meta.extra.entry("train").or_insert_with(|| record.clone());
        let mut entry = record;
        if let Value::Object(fields) = &mut entry {
            fields.insert(EPISODES_FROM_KEY.into(), episodes_size(&self.dir)?.into());
        }
        let mut bursts = match meta.extra.shift_remove(BURSTS_KEY) {
            Some(Value::Array(bursts)) => bursts,
            Some(other) => vec![other],
            None => Vec::new(),
        };
        bursts.push(entry);
        self.burst = Some(bursts.len() - 1);
        meta.extra.insert(BURSTS_KEY.into(), Value::Array(bursts));
        Ok(self.writer.write_meta(&meta)?)
    }

    /// Record where this burst's part of `episodes.jsonl` ends (`episodes_to`: its size now) in the entry
    /// [`RunOutput::write_meta`] made; nothing when it made none or the entry is gone.
    pub fn record_burst_end(&self) -> Result<(), TrainError> {
        let Some(index) = self.burst else { return Ok(()) };
        let Some(mut meta) = read_meta(&self.dir)? else { return Ok(()) };
        let entry = meta.extra.get_mut(BURSTS_KEY).and_then(|b| b.get_mut(index));
        let Some(Value::Object(fields)) = entry else { return Ok(()) };
        fields.insert(EPISODES_TO_KEY.into(), episodes_size(&self.dir)?.into());
        Ok(self.writer.write_meta(&meta)?)
    }

    pub fn append_episode(&mut self, episode: &Episode) -> Result<(), TrainError> {
        Ok(self.writer.append_episode(episode)?)
    }

    pub fn append_metrics(&mut self, record: &MetricsRecord) -> Result<(), TrainError> {
        Ok(self.writer.append_metrics(record)?)
    }

    /// Current lengths of the episodes and metrics files.
    pub fn lengths(&self) -> Result<(u64, u64), TrainError> {
        Ok((file_len(&self.dir.join(EPISODES_FILE))?, file_len(&self.dir.join(METRICS_FILE))?))
    }

    /// The largest iteration number among the run's episodes (0 when there are none).
    pub fn last_iteration(&self) -> Result<u64, TrainError> {
        let run = Run::open(&self.dir)?;
        Ok(run.episodes.iter().map(|e| e.iteration.max(0) as u64).max().unwrap_or(0))
    }

    /// Drop what an iteration the checkpoint `state` does not cover wrote after it: metrics lines after the
    /// recorded length, and episode lines after it whose iteration is later than the checkpoint's. Episode
    /// lines other writers appended meanwhile (episodes played in the TUI) are kept. A file shorter than
    /// recorded was replaced or truncated by someone else: that is an error.
    pub fn cut_unfinished_iteration(&mut self, state: &TrainerState) -> Result<(), TrainError> {
        let keep_episode = |line: &[u8]| {
            let iteration = serde_json::from_slice::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v.get("iteration").and_then(serde_json::Value::as_u64));
            iteration.is_none_or(|i| i <= state.iteration)
        };
        self.cut_after(EPISODES_FILE, state.episodes_bytes, keep_episode)?;
        self.cut_after(METRICS_FILE, state.metrics_bytes, |_| false)?;
        // A cut that kept lines replaced the file: append to the new one, not the unlinked old one.
        self.writer = RunWriter::create(&self.dir)?;
        Ok(())
    }

    fn cut_after(&self, name: &str, len: u64, keep: impl Fn(&[u8]) -> bool) -> Result<(), TrainError> {
        let path = self.dir.join(name);
        let actual = file_len(&path)?;
        if actual < len {
            return Err(TrainError::RunChanged { path, expected: len, actual });
        }
        if actual == len {
            return Ok(());
        }
        let bytes = std::fs::read(&path).map_err(io_err(&path))?;
        let (head, tail) = bytes.split_at(len as usize);
        let kept: Vec<&[u8]> =
            tail.split_inclusive(|&b| b == b'\n').filter(|l| l.ends_with(b"\n") && keep(l)).collect();
        if kept.is_empty() {
            let file = OpenOptions::new().write(true).open(&path).map_err(io_err(&path))?;
            return file.set_len(len).map_err(io_err(&path));
        }
        let mut out = head.to_vec();
        kept.iter().for_each(|l| out.extend_from_slice(l));
        Ok(write_atomic(&path, &out)?)
    }
}
