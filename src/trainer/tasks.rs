//! The task list a training run plays: opened from what a request names ([`open_tasks`]), recorded in the
//! run's `run.json` ([`record_tasks`]) and read back from it ([`recorded_tasks`]) so that ground truth replays
//! the same tasks.

use std::path::Path;
use std::sync::Arc;

use super::error::TrainError;
use crate::env::{EnvError, EnvOptions, Tasks};
use crate::env_registry;
use crate::plugin_host::protocol::TaskSource;

/// Key of `run.json` where a training run records its [`TaskSource`], so that the policy can be put back in the
/// same environment later (`gigscope truth`).
pub const TASKS_KEY: &str = "tasks";
use crate::run::{read_meta, RunMeta, RunWriter};

/// The task list a request names: the registry's environment (WebShop opens each catalog once per process,
/// so bursts and policy play in one TUI session share it).
pub fn open_tasks(source: &TaskSource) -> Result<Arc<dyn Tasks>, EnvError> {
    env_registry::open(&source.env, &source.options)
}

/// Record in `run_dir`'s `run.json` the task list a training run plays ([`TASKS_KEY`]), for
/// [`recorded_tasks`]. The first burst's is kept: a run's groups are numbered in one task list.
pub fn record_tasks(run_dir: &Path, tasks: &TaskSource) -> Result<(), TrainError> {
    let mut meta = read_meta(run_dir)?.unwrap_or_default();
    if !meta.extra.contains_key(TASKS_KEY) {
        meta.extra.insert(TASKS_KEY.to_owned(), serde_json::to_value(tasks)?);
        RunWriter::create(run_dir)?.write_meta(&meta)?;
    }
    Ok(())
}

/// The task list the run was trained on, as `run.json` records it (`tasks`: environment and options); a run that
/// records none was trained on its `env` with default options (WebShop: the embedded demo catalog), and one
/// that records no `env` on [`env_registry::UNRECORDED_ENV`].
pub fn recorded_tasks(meta: &RunMeta) -> TaskSource {
    let env = meta.env.as_deref().unwrap_or(env_registry::UNRECORDED_ENV);
    meta.extra
        .get(TASKS_KEY)
        .and_then(|v| serde_json::from_value::<TaskSource>(v.clone()).ok())
        .unwrap_or_else(|| TaskSource::new(env, EnvOptions::default()))
}
