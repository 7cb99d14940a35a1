//! Run sources: every layout gigscope reads a run from, behind one incremental interface, and their registry.
//!
//! A run is a directory written by some trainer. [`Layout`] names the layouts gigscope understands (its own
//! `gigscope-run/1`, verl's rollout dumps, TRL's completion logs, verifiers' saved rollouts); [`detect`] tells them apart from the files
//! present, and [`open_source`] gives a [`RunSource`] that reads the directory incrementally: each
//! [`RunSource::poll`] returns what arrived since the last one as [`LiveEvent`]s, in order (the contract is in
//! `events.rs`). The one-shot readers of the CLI ([`crate::run::Run::open_as`]) and the live watcher of the TUI
//! (`crate::live`) both consume these events through [`crate::run::apply`], so a run reads the same whichever
//! way it is opened.
//!
//! # Files
//!
//! - `events.rs`: the [`RunSource`] interface, its events, and the [`RegisteredLayout`] a reader gives;
//! - `spilled.rs`: a viewer's reading of the layouts whose episodes have no line of their own, their text
//!   spilled to a file ([`read_lean`]);
//! - `contained_panic.rs`: a panic of a third-party decoder on damaged input (parquet's), caught and kept
//!   quiet, for the reader to report as an error of its file;
//! - `step_files.rs`: the bookkeeping of layouts written as one file per training step (verl, TRL);
//! - one file per layout, which parses that layout's files alone: `gigscope.rs`, `verl.rs`, `trl.rs`,
//!   `verifiers.rs`;
//! - this file: the registry [`LAYOUTS`], and detection and opening through it.
//!
//! # A new trainer's format
//!
//! touches: its own new file here (`source/<trainer>.rs`: its [`RunSource`], which parses its files, and its
//! `REGISTERED` entry: what it looks for and how to open it; step-file layouts keep their bookkeeping in a
//! `StepFiles`), its line in [`LAYOUTS`] below (and its `mod` line), and its variant in
//! `run/layout.rs` (the name `--from` takes). Nothing else in `run/`, and nothing above it, changes.

mod contained_panic;
mod events;
mod gigscope;
mod spilled;
mod step_files;
mod trl;
mod verifiers;
mod verl;

use std::path::Path;

use super::dir::check_run_dir;
use super::error::RunError;
use super::layout::Layout;

pub use contained_panic::keep_contained_panics_quiet;
pub use events::{
    ErrorOnce, LeanRecord, Listing, LiveEvent, LiveFile, RegisteredLayout, RunSource, SourceOptions, SourcePoll,
    TornTail,
};
pub(crate) use events::{FlightTally, InFlight};
pub use gigscope::{GigscopeSource, EPISODES_PART_BYTES};
pub use spilled::{read_lean, SpilledText};
pub use trl::TrlSource;
pub use verifiers::VerifiersSource;
pub use verl::VerlSource;

/// Every layout gigscope reads, in the order [`detect`] tries them: gigscope's own files first, then a TRL
/// completions log, then verifiers' saved rollouts, then verl step files.
pub const LAYOUTS: [&RegisteredLayout; 4] =
    [&gigscope::REGISTERED, &trl::REGISTERED, &verifiers::REGISTERED, &verl::REGISTERED];

/// The registry's entry for `layout`.
fn registered(layout: Layout) -> &'static RegisteredLayout {
    LAYOUTS.iter().find(|r| r.layout == layout).copied().unwrap_or_else(|| {
        unreachable!("every Layout has its line in LAYOUTS (run/source/mod.rs): {layout:?} has none")
    })
}

/// The layout of the run in `dir`, from the files present ([`LAYOUTS`] in order). `None` when none is there
/// (an empty directory, say).
pub fn detect(dir: &Path) -> Result<Option<Layout>, RunError> {
    check_run_dir(dir)?;
    let mut listing = Listing::new(dir);
    for entry in LAYOUTS {
        if (entry.found_in)(&mut listing)? {
            return Ok(Some(entry.layout));
        }
    }
    Ok(None)
}

/// The layout to read `dir` as: `from` when given, else the detected one. With `allow_empty`, a directory
/// with none of the layouts' files reads as an empty gigscope run (a trainer may not have written anything
/// yet); otherwise that is an error naming what was looked for.
pub fn resolve_layout(dir: &Path, from: Option<Layout>, allow_empty: bool) -> Result<Layout, RunError> {
    check_run_dir(dir)?;
    if let Some(layout) = from {
        return Ok(layout);
    }
    match detect(dir)? {
        Some(layout) => Ok(layout),
        None if allow_empty => Ok(Layout::Gigscope),
        None => {
            let looked_for = LAYOUTS.iter().map(|r| r.looks_for).collect::<Vec<_>>().join(", ");
            Err(RunError::NoRun { dir: dir.to_path_buf(), looked_for })
        }
    }
}

/// A reader of `dir` in `layout`, positioned at the start.
pub fn open_source(dir: &Path, layout: Layout, options: &SourceOptions) -> Result<Box<dyn RunSource>, RunError> {
    check_run_dir(dir)?;
    Ok((registered(layout).open)(dir, options))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn every_layout_has_one_line_in_the_registry() {
        for layout in Layout::value_variants() {
            let lines = LAYOUTS.iter().filter(|r| r.layout == *layout).count();
            assert_eq!(lines, 1, "{layout:?}");
            assert_eq!(registered(*layout).layout, *layout);
        }
        assert_eq!(LAYOUTS.len(), Layout::value_variants().len());
    }
}
