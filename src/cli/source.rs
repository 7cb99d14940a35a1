//! How every command opens a run: any layout gigscope reads, detected from the directory or forced.

use std::path::Path;

use crate::run::{Layout, Run, SourceOptions};

/// The flags that choose how a run directory is read; shared by every command that opens a run.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct SourceFlags {
    /// Read the directory as this layout instead of detecting it (gigscope: episodes.jsonl; verl: a rollout
    /// dump of {step}.jsonl files; trl: a GRPOTrainer completions log).
    #[arg(long, value_enum, value_name = "LAYOUT")]
    pub from: Option<Layout>,
    /// TRL logs: rows per group (the trainer's num_generations), instead of groups inferred from
    /// consecutive equal prompts.
    #[arg(long, value_name = "N")]
    pub group_size: Option<usize>,
}

impl SourceFlags {
    pub fn options(&self) -> SourceOptions {
        SourceOptions { group_size: self.group_size }
    }

    /// Open a run for a subcommand: a missing directory, or one holding no run, is an error naming what was
    /// looked for; broken lines and the reader's notices are left to `validate` but counted on stderr so they
    /// are not silently dropped.
    pub fn open(&self, dir: &Path) -> anyhow::Result<Run> {
        let run = Run::open_as(dir, self.from, &self.options())?;
        report(dir, &run, &run.partial_groups());
        Ok(run)
    }

    /// [`Self::open`] for a command that computes advantages: steps that record no page anchor get the one the
    /// run's environment derives from their observation (`crate::env::fill_page_anchors`), as the engine's page
    /// anchors are read from the steps; the steps' lengths (DEPO's tokens per step) are the token store's counts
    /// where it has an episode's every step (`crate::run::tokens::count_lengths`, said in `run.lengths`).
    pub fn open_anchored(&self, dir: &Path) -> anyhow::Result<Run> {
        let run = self.read_anchored(dir)?;
        report(dir, &run, &run.partial_groups());
        Ok(run)
    }

    /// [`Self::open_anchored`] without the report on stderr: the caller reports `run.errors` and `run.notices`
    /// its own way (the Python API, as warnings).
    pub fn read_anchored(&self, dir: &Path) -> anyhow::Result<Run> {
        let mut run = Run::open_as(dir, self.from, &self.options())?;
        let page_anchor = crate::env_registry::page_anchor(&run);
        crate::env::fill_page_anchors(&mut run.episodes, page_anchor);
        match crate::run::tokens::TokenStore::open(dir) {
            Ok(store) => run.lengths = crate::run::tokens::count_lengths(&store, run.episodes.as_mut_slice(), 0),
            Err(err) => run.notices.push(format!("response lengths not counted: {err}")),
        }
        Ok(run)
    }
}

/// `run.json` of the run in `dir` for a command that reads it alone: a damaged one is said on stderr and read
/// as absent (it is optional), as the whole read does.
pub fn meta_or_warn(dir: &Path) -> Option<crate::run::RunMeta> {
    crate::run::read_meta(dir).unwrap_or_else(|err| {
        eprintln!("warning: {err}; the run is read without it (run.json is optional)");
        None
    })
}

/// The broken lines (counted), the reader's notices and the `partial` groups of `run`, on stderr.
pub fn report(dir: &Path, run: &Run, partial: &[crate::run::PartialGroup]) {
    if !run.errors.is_empty() {
        eprintln!(
            "warning: {}: skipped {} broken line(s) of the episodes (see `gigscope validate`)",
            dir.display(),
            run.errors.len()
        );
    }
    for notice in &run.notices {
        eprintln!("warning: {notice}");
    }
    for group in partial {
        eprintln!("warning: {}: {group}", dir.display());
    }
}
