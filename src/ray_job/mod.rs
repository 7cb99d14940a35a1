//! Training bursts as Ray jobs: gigscope drives a trainer on a Ray cluster through the dashboard's Job
//! Submission REST API (plain HTTP from this process; no Python here), so a burst of the real trainer (verl-agent
//! on the GPUs, or gigscope's own `train`) runs with exactly the settings chosen here and writes a run
//! directory gigscope follows live.
//!
//! - [`client`]: the REST API (submit, status, log, stop), errors naming the dashboard's address;
//! - [`profile`]: burst profiles from the config file and the one function that renders a burst's exact
//!   command ([`render_command`]), with the settings mapped onto the trainer's keys;
//! - [`burst`]: one burst's life: recorded in `run.json`'s `bursts`, submitted, watched with its log streamed,
//!   stopped on request, its outcome recorded.
//!
//! This is a service layer: it knows the run format and nothing of the TUI or the CLI, and it is not behind
//! the `train` feature (submitting needs no libtorch).

pub(crate) mod burst;
pub(crate) mod client;
pub(crate) mod profile;

pub use burst::{BurstError, Outcome, RayBurst};
pub use client::{JobInfo, JobSpec, JobState, RayClient, RayError};
pub use profile::{render_command, Backend, BurstProfile, BurstTable, ProfileError};
