//! The trainer's side of a run directory: [`RunWriter`] plus what a trainer needs around it (refusing to mix
//! two runs, recording settings, cutting lines a checkpoint does not cover).

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};

use super::trainer::TrainConfig;
use super::TrainError;
use crate::advantage::{AdvantageOverrides, AdvantageSettings};
use crate::run::{read_meta, Episode, MetricsRecord, RunWriter, EPISODES_FILE, FORMAT_V1, METRICS_FILE};

pub struct RunOutput {
    dir: PathBuf,
    env: &'static str,
    writer: RunWriter,
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
    pub fn open(dir: &Path, resume: bool, env: &'static str) -> Result<RunOutput, TrainError> {
        if !resume && file_len(&dir.join(EPISODES_FILE))? > 0 {
            return Err(TrainError::RunNotEmpty(dir.to_path_buf()));
        }
        Ok(RunOutput { dir: dir.to_path_buf(), env, writer: RunWriter::create(dir)? })
    }

    /// The advantage settings recorded in `run.json` (none when there is no `run.json`).
    pub fn recorded_settings(&self) -> Result<AdvantageOverrides, TrainError> {
        Ok(read_meta(&self.dir)?.and_then(|m| m.advantage).unwrap_or_default())
    }

    /// Record the settings in use (every key, so `gigscope advantages` recomputes exactly what trains) and the
    /// burst's configuration in `run.json`, keeping whatever else it holds.
    pub fn write_meta(&self, settings: &AdvantageSettings, config: &TrainConfig) -> Result<(), TrainError> {
        let mut meta = read_meta(&self.dir)?.unwrap_or_default();
        meta.format = Some(FORMAT_V1.to_string());
        meta.env.get_or_insert_with(|| self.env.to_string());
        if let Some(name) = &config.name {
            meta.name = Some(name.clone());
        }
        if meta.created.is_none() {
            let now = time::OffsetDateTime::now_utc();
            meta.created = now.format(&time::format_description::well_known::Rfc3339).ok();
        }
        meta.advantage = Some(AdvantageOverrides::from_settings(settings));
        meta.notes.get_or_insert_with(|| "written by `gigscope train`".to_string());
        meta.extra.insert("train".into(), serde_json::to_value(config)?);
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

    /// Cut both files back to the lengths a checkpoint recorded, dropping lines of an iteration it does not
    /// cover. A file shorter than recorded was replaced or truncated by someone else: that is an error.
    pub fn truncate_to(&self, episodes: u64, metrics: u64) -> Result<(), TrainError> {
        for (name, len) in [(EPISODES_FILE, episodes), (METRICS_FILE, metrics)] {
            let path = self.dir.join(name);
            let actual = file_len(&path)?;
            if actual < len {
                return Err(TrainError::RunChanged { path, expected: len, actual });
            }
            if actual > len {
                let file = OpenOptions::new().write(true).open(&path).map_err(io_err(&path))?;
                file.set_len(len).map_err(io_err(&path))?;
            }
        }
        Ok(())
    }
}
