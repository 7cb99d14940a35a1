//! Training bursts: a compact tch policy trained with GiGPO (or GRPO / RLOO) on an environment in this
//! process, writing a run directory the TUI can watch live.
//!
//! Compiled only with the `train` feature (tch/libtorch), which the `gigscope` binary never has: the training
//! plugin (`src/train/plugin`, `libgigscope_train.so`) links this module, and the binary reaches it through
//! [`crate::training`], which loads the plugin when training is first asked for. [`service::serve`] is the
//! plugin's entry point.
//!
//! The advantages that train the policy come from [`crate::advantage::compute`] (or, for a successor estimator,
//! [`crate::advantage::estimators`] on its table), the same code every view of gigscope shows, and are written
//! into each episode's `advantages`.

mod autoplay;
pub mod checkpoint;
mod output;
pub mod policy;
pub mod ppo;
pub mod request;
pub mod rollout;
pub mod service;
pub mod toy;
mod trainer;
pub mod truth;

use std::path::PathBuf;

pub use crate::env::{Environment, Split, Started, Tasks, Transition};
pub use autoplay::{autoplay, play_group, PolicySource};
pub use policy::PolicyShape;
pub use ppo::PpoConfig;
pub use trainer::{resolve_device, DeviceChoice, EvalResult, IterationReport, Progress, TrainConfig, Trainer};

#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("advantage settings: {0}")]
    Settings(#[from] crate::advantage::SettingsError),
    #[error(transparent)]
    Run(#[from] crate::run::RunError),
    #[error(transparent)]
    Torch(#[from] tch::TchError),
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("{0} already holds episodes: pass --resume to continue its checkpoint, or use a new directory")]
    RunNotEmpty(PathBuf),
    #[error("no checkpoint at {0}")]
    NoCheckpoint(PathBuf),
    #[error("checkpoint {path}: {why}")]
    BadCheckpoint { path: PathBuf, why: String },
    #[error("{path} is {actual} bytes but the checkpoint recorded {expected}: it was replaced or truncated")]
    RunChanged { path: PathBuf, expected: u64, actual: u64 },
    #[error("CUDA was asked for but libtorch finds no GPU")]
    NoCuda,
    #[error("the environment has no training goals")]
    NoGoals,
    #[error(transparent)]
    Env(#[from] crate::env::EnvError),
    #[error(transparent)]
    Estimator(#[from] crate::advantage::estimators::EstimatorError),
}
