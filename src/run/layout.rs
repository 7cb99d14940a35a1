//! The directory layouts gigscope reads a run from, by name.
//!
//! Contract: [`Layout`] only names a layout (for `--from`, for the run's description, for the views); what
//! tells a layout apart and how it is read belong to its reader under `source/`, listed in the registry of
//! `source/mod.rs`. A new trainer's format adds its variant here and nothing else in this file.

/// The directory layouts gigscope reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum Layout {
    /// gigscope-run/1: `episodes.jsonl`, optional `run.json` and `metrics.jsonl` (its own trainer, live
    /// play, `gigscope convert`, the verl-agent exporter).
    Gigscope,
    /// verl's `trainer.rollout_data_dir`: one `{global_step}.jsonl` per training step.
    Verl,
    /// TRL GRPOTrainer's `log_completions`: `completions/completions_{step:05d}.parquet`.
    Trl,
    /// verifiers' saved rollouts (prime-rl's traces): `traces.jsonl`, one rollout episode per line.
    Verifiers,
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Layout::Gigscope => "gigscope-run/1",
            Layout::Verl => "verl rollout dump",
            Layout::Trl => "TRL completions log",
            Layout::Verifiers => "verifiers traces",
        }
    }
}
