//! What can go wrong in training: the trainer's, the checkpoint's and the run directory's errors.

use std::path::PathBuf;

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
    #[error(
        "{0} already holds episodes: pass --resume to continue its checkpoint, --append to train a fresh policy \
         beside them (a run stopped before its first checkpoint has none), or use a new directory"
    )]
    RunNotEmpty(PathBuf),
    #[error(
        "no checkpoint at {0} (one is written at the end of each iteration): --append trains a fresh policy \
         beside the run's episodes"
    )]
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
