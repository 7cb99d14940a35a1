//! The trainer's side of a run directory: `run.json`, episodes and metrics appended one whole line per write.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use super::trainer::TrainConfig;
use super::TrainError;
use crate::advantage::{AdvantageOverrides, AdvantageSettings};
use crate::run::{Episode, RunMeta, EPISODES_FILE, FORMAT_V1, METRICS_FILE, RUN_META_FILE};

pub struct RunOutput {
    dir: PathBuf,
    env: &'static str,
    episodes: File,
    metrics: File,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> TrainError + '_ {
    move |source| TrainError::Io { path: path.to_path_buf(), source }
}

fn append(path: &Path) -> Result<File, TrainError> {
    OpenOptions::new().create(true).append(true).open(path).map_err(io_err(path))
}

/// One JSON line written with a single `write` so that a reader never sees half a record from us.
fn write_line(file: &mut File, path: &Path, value: &impl Serialize) -> Result<(), TrainError> {
    let mut line = serde_json::to_vec(value)?;
    line.push(b'\n');
    file.write_all(&line).and_then(|()| file.flush()).map_err(io_err(path))
}

impl RunOutput {
    /// Open `dir` for writing. A new run must not have episodes yet; a resumed one keeps what it has.
    pub fn open(dir: &Path, resume: bool, env: &'static str) -> Result<RunOutput, TrainError> {
        std::fs::create_dir_all(dir).map_err(io_err(dir))?;
        let episodes_path = dir.join(EPISODES_FILE);
        let has_episodes = std::fs::metadata(&episodes_path).map(|m| m.len() > 0).unwrap_or(false);
        if has_episodes && !resume {
            return Err(TrainError::RunNotEmpty(dir.to_path_buf()));
        }
        Ok(RunOutput {
            episodes: append(&episodes_path)?,
            metrics: append(&dir.join(METRICS_FILE))?,
            dir: dir.to_path_buf(),
            env,
        })
    }

    fn read_meta(&self) -> Result<Option<RunMeta>, TrainError> {
        let path = self.dir.join(RUN_META_FILE);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(serde_json::from_slice(&bytes)?)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err(&path)(e)),
        }
    }

    /// The advantage settings recorded in `run.json` (none when there is no `run.json`).
    pub fn recorded_settings(&self) -> Result<AdvantageOverrides, TrainError> {
        Ok(self.read_meta()?.and_then(|m| m.advantage).unwrap_or_default())
    }

    /// Record the settings in use (every key, so `gigscope advantages` recomputes exactly what trains) and the
    /// burst's configuration in `run.json`, keeping whatever else it holds; replaced atomically.
    pub fn write_meta(&self, settings: &AdvantageSettings, name: Option<&str>, config: &TrainConfig) -> Result<(), TrainError> {
        let mut meta = self.read_meta()?.unwrap_or_default();
        meta.format = Some(FORMAT_V1.to_string());
        meta.env.get_or_insert_with(|| self.env.to_string());
        if let Some(name) = name {
            meta.name = Some(name.to_string());
        }
        if meta.created.is_none() {
            let now = time::OffsetDateTime::now_utc();
            meta.created = now.format(&time::format_description::well_known::Rfc3339).ok();
        }
        meta.advantage = Some(AdvantageOverrides::from_settings(settings));
        meta.notes.get_or_insert_with(|| "written by `gigscope train`".to_string());
        meta.extra.insert("train".into(), serde_json::to_value(config)?);
        let path = self.dir.join(RUN_META_FILE);
        let tmp = self.dir.join(format!("{RUN_META_FILE}.tmp"));
        let mut bytes = serde_json::to_vec_pretty(&meta)?;
        bytes.push(b'\n');
        std::fs::write(&tmp, bytes).map_err(io_err(&tmp))?;
        std::fs::rename(&tmp, &path).map_err(io_err(&path))
    }

    pub fn append_episode(&mut self, episode: &Episode) -> Result<(), TrainError> {
        write_line(&mut self.episodes, &self.dir.join(EPISODES_FILE), episode)
    }

    pub fn append_metrics(&mut self, record: &Map<String, Value>) -> Result<(), TrainError> {
        write_line(&mut self.metrics, &self.dir.join(METRICS_FILE), record)
    }

    /// Current lengths of the episodes and metrics files.
    pub fn lengths(&self) -> Result<(u64, u64), TrainError> {
        let len = |f: &File, name: &str| f.metadata().map(|m| m.len()).map_err(io_err(&self.dir.join(name)));
        Ok((len(&self.episodes, EPISODES_FILE)?, len(&self.metrics, METRICS_FILE)?))
    }

    /// Cut both files back to the lengths a checkpoint recorded, dropping lines of an iteration it does not
    /// cover. A file shorter than recorded was replaced or truncated by someone else: that is an error.
    pub fn truncate_to(&self, episodes: u64, metrics: u64) -> Result<(), TrainError> {
        for (file, name, len) in [(&self.episodes, EPISODES_FILE, episodes), (&self.metrics, METRICS_FILE, metrics)] {
            let path = self.dir.join(name);
            let actual = file.metadata().map_err(io_err(&path))?.len();
            if actual < len {
                return Err(TrainError::RunChanged { path, expected: len, actual });
            }
            if actual > len {
                file.set_len(len).map_err(io_err(&path))?;
            }
        }
        Ok(())
    }
}
