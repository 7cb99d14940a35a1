//! Training bursts: a compact tch policy trained with GiGPO (or GRPO / RLOO) on an environment in this
//! process, writing a run directory the TUI can watch live.
//!
//! Compiled only with the `train` feature (tch/libtorch), which the `gigscope` binary never has: the training
//! plugin (`src/trainer/plugin`, `libgigscope_train.so`) links this module, and the binary reaches it through
//! [`crate::plugin_host`], which loads the plugin when training is first asked for. [`service::serve`] is the
//! plugin's entry point.
//!
//! The advantages that train the policy come from [`crate::advantage::compute`] (or, for a successor estimator,
//! [`crate::advantage::estimators`] on its table), the same code every view of gigscope shows, and are written
//! into each episode's `advantages`.

mod autoplay;
pub mod checkpoint;
mod error;
mod output;
pub mod policy;
pub mod ppo;
pub(crate) mod request;
pub mod rollout;
pub mod service;
mod tasks;
mod training_loop;
pub mod truth;

pub use crate::env::{Environment, Split, Started, Tasks, Transition};
pub use autoplay::{autoplay, play_group, PolicySource};
pub use error::TrainError;
pub use policy::PolicyShape;
pub use ppo::PpoConfig;
pub use training_loop::{resolve_device, DeviceChoice, EvalResult, IterationReport, Progress, TrainConfig, Trainer};
