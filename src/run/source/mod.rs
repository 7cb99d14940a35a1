//! Run sources: every layout gigscope reads a run from, behind one incremental interface.
//!
//! A run is a directory written by some trainer. [`Layout`] names the layouts gigscope understands
//! (its own `gigscope-run/1`, verl's rollout dumps, TRL's completion logs); [`detect`] tells them apart from
//! the files present, and [`open_source`] gives a [`RunSource`] that reads the directory incrementally: each
//! [`RunSource::poll`] returns what arrived since the last one as [`LiveEvent`]s, in order. The one-shot
//! readers of the CLI ([`Run::open_as`]) and the live watcher of the TUI (`crate::live`) both consume these
//! events through [`apply`], so a run reads the same whichever way it is opened.
//!
//! Every source keeps the reader's guarantees: a line or file still being written is held back (and the
//! poll says data is [`SourcePoll::pending`], so the watcher looks again soon), a broken line or row is
//! reported with its file and line and skipped, and a file truncated, replaced or rewritten voids what was
//! read (a `Reset` event, then the run from the start).

mod gigscope;
mod trl;
mod verl;

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::error::RunError;
use super::format::{Episode, MetricsRecord, RunMeta, EPISODES_FILE, RUN_META_FILE};
use super::lean::{LeanEpisode, LeanReading};
use super::reader::{check_run_dir, LineError, Run};

pub use gigscope::{GigscopeSource, EPISODES_PART_BYTES};
pub use trl::TrlSource;
pub use verl::VerlSource;

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
}

impl Layout {
    pub fn name(self) -> &'static str {
        match self {
            Layout::Gigscope => "gigscope-run/1",
            Layout::Verl => "verl rollout dump",
            Layout::Trl => "TRL completions log",
        }
    }
}

/// What [`detect`] looks for, for the error when nothing matches.
const LOOKED_FOR: &str = "episodes.jsonl or run.json (gigscope-run/1), {step}.jsonl files (verl rollout dump), \
     completions/completions_{step}.parquet (TRL GRPOTrainer log)";

/// The layout of the run in `dir`, from the files present: gigscope's own files first, then a TRL
/// completions log, then verl step files. `None` when none is there (an empty directory, say).
pub fn detect(dir: &Path) -> Result<Option<Layout>, RunError> {
    check_run_dir(dir)?;
    if dir.join(EPISODES_FILE).exists() || dir.join(RUN_META_FILE).exists() {
        return Ok(Some(Layout::Gigscope));
    }
    let names = list_dir(dir)?;
    let is_completions = |name: &str| name.starts_with("completions_") && name.ends_with(".parquet");
    if dir.join("completions").is_dir() || names.iter().any(|n| is_completions(n)) {
        return Ok(Some(Layout::Trl));
    }
    if names.iter().any(|n| step_file_number(n).is_some()) {
        return Ok(Some(Layout::Verl));
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
        None => Err(RunError::NoRun { dir: dir.to_path_buf(), looked_for: LOOKED_FOR }),
    }
}

/// A reader of `dir` in `layout`, positioned at the start.
pub fn open_source(dir: &Path, layout: Layout, options: &SourceOptions) -> Result<Box<dyn RunSource>, RunError> {
    check_run_dir(dir)?;
    Ok(match layout {
        Layout::Gigscope => Box::new(GigscopeSource::new(dir)),
        Layout::Verl => Box::new(VerlSource::new(dir, options)),
        Layout::Trl => Box::new(TrlSource::new(dir, options)),
    })
}

/// What identifies a file's content without reading it: size, modification time and identity (device and
/// inode), so that growth, rewrites and replacement (an atomic rename) are noticed from a `stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub len: u64,
    pub modified: Option<std::time::SystemTime>,
    pub dev: u64,
    pub ino: u64,
}

impl Stamp {
    pub fn of(meta: &std::fs::Metadata) -> Self {
        #[cfg(unix)]
        let (dev, ino) = {
            use std::os::unix::fs::MetadataExt;
            (meta.dev(), meta.ino())
        };
        #[cfg(not(unix))]
        let (dev, ino) = (0, 0);
        Stamp { len: meta.len(), modified: meta.modified().ok(), dev, ino }
    }

    /// How the file changed from `self` to `now`, for the notice.
    fn change(self, now: Stamp) -> &'static str {
        if (self.dev, self.ino) != (now.dev, now.ino) {
            "was replaced"
        } else if now.len < self.len {
            "shrank"
        } else if now.len > self.len {
            "grew"
        } else {
            "was rewritten"
        }
    }
}

/// Options some layouts take.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceOptions {
    /// TRL: rows per group (`num_generations`), overriding the groups inferred from consecutive equal prompts.
    pub group_size: Option<usize>,
}

/// The file names in `dir` (not recursive); names that are not UTF-8 are left out.
pub(crate) fn list_dir(dir: &Path) -> Result<Vec<String>, RunError> {
    let entries = std::fs::read_dir(dir).map_err(RunError::io(dir))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(RunError::io(dir))?;
        if let Ok(name) = entry.file_name().into_string() {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// The step number of a verl step file name (`{global_step}.jsonl`, no zero padding).
pub(crate) fn step_file_number(name: &str) -> Option<u64> {
    let stem = name.strip_suffix(".jsonl")?;
    if stem.is_empty() || !stem.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    stem.parse().ok()
}

/// An incremental reader of one run directory.
pub trait RunSource: Send + std::fmt::Debug {
    fn layout(&self) -> Layout;

    /// Everything that arrived since the last poll, as events in order. Errors reading a file are events
    /// too ([`LiveEvent::Error`], reported once while they last): a poll never fails, reading goes on.
    fn poll(&mut self) -> SourcePoll;

    /// Whether a change to `path` (an entry of the run directory, or below it) may concern this source: the
    /// watcher wakes for these and ignores the rest.
    fn watches(&self, path: &Path) -> bool;

    /// Directories the watcher should watch besides the run directory itself (e.g. TRL's `completions/`).
    fn watch_dirs(&self) -> Vec<PathBuf> {
        Vec::new()
    }

    /// Deliver episodes read from the run's own lines lean ([`LiveEvent::LeanEpisodes`]), taken in by
    /// `reading` as they are parsed; a source whose episodes keep their text in memory (built from other
    /// files) goes on delivering them whole.
    fn read_lean(&mut self, _reading: LeanReading) {}
}

/// The result of one [`RunSource::poll`].
#[derive(Debug, Default)]
pub struct SourcePoll {
    pub events: Vec<LiveEvent>,
    /// Some data was seen but is not complete yet (a torn line, a file still being written, a session whose
    /// end has not arrived): poll again soon rather than at the next periodic re-scan.
    pub pending: bool,
    /// Complete data is still unread (a large file is read in parts): poll again at once.
    pub more: bool,
}

/// Which of the run's record streams an event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiveFile {
    Episodes,
    Metrics,
}

/// What a source found. Events of one stream arrive in order; a `Reset` comes before the records read from
/// the new content.
#[derive(Clone, Debug, PartialEq)]
pub enum LiveEvent {
    /// The stream's files were truncated or replaced: everything read from it before is void.
    Reset(LiveFile),
    /// New episodes with the 1-based line (or row) of their first record in their file.
    Episodes(Vec<(u64, Episode)>),
    /// New episodes taken in lean by the reader ([`LeanReading`]); `pages`: the names of the page ids their
    /// steps use, in id order.
    LeanEpisodes { episodes: Vec<LeanRecord>, pages: Vec<String> },
    /// New metrics records with their 1-based line numbers.
    Metrics(Vec<(u64, MetricsRecord)>),
    /// Lines or rows that could not be read (skipped; every good one is still delivered).
    BrokenLines(LiveFile, Vec<LineError>),
    /// `run.json` changed (or appeared, or was removed: `None`); for other layouts, the run's description
    /// and its trainer's advantage settings, made up by the source. Boxed, as it is far larger than the rest.
    Meta(Option<Box<RunMeta>>),
    /// A file could not be read (e.g. a malformed `run.json`, permissions), or a quirk of the trainer's
    /// output worth knowing was found. Reported once per distinct problem; reading goes on.
    Error(String),
    /// How far reading a large episodes file is (it arrives in parts): `read` of `total` bytes. Sent with
    /// every part while reading is behind, and once more when it has caught up (`read == total`); the live
    /// watcher also sends `0 of 0` when its first scan of the run is over, whatever the layout.
    Progress { read: u64, total: u64 },
}

/// An episode taken in lean where it was read, with the 1-based line of its record and the file it names
/// ([`Episode::source_file`]), kept for the error should its id have been met before.
#[derive(Clone, Debug, PartialEq)]
pub struct LeanRecord {
    pub line: u64,
    pub episode: LeanEpisode,
    pub file: Option<String>,
}

/// What applying events changed, for the consumer to decide what to recompute and redraw.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Applied {
    /// The episodes were reset (file truncated or replaced): indices from before are void; find the
    /// selected episode again by id.
    pub episodes_reset: bool,
    /// Indices in `run.episodes` of the episodes added.
    pub new_episodes: Range<usize>,
    pub metrics_changed: bool,
    pub meta_changed: bool,
    /// Broken lines reported.
    pub broken_lines: usize,
    pub errors: Vec<String>,
    /// The latest [`LiveEvent::Progress`]: bytes read and the file's size.
    pub progress: Option<(u64, u64)>,
}

impl Applied {
    /// Anything the consumer shows changed.
    pub fn changed(&self) -> bool {
        self.episodes_reset
            || !self.new_episodes.is_empty()
            || self.metrics_changed
            || self.meta_changed
            || self.broken_lines > 0
            || !self.errors.is_empty()
            || self.progress.is_some()
    }

    /// Combine with the summary of a later event.
    pub fn absorb(&mut self, later: Applied) {
        // A later reset voids the episodes added before it.
        if later.episodes_reset || self.new_episodes.is_empty() {
            self.new_episodes = later.new_episodes;
        } else if !later.new_episodes.is_empty() {
            self.new_episodes.end = later.new_episodes.end;
        }
        self.episodes_reset |= later.episodes_reset;
        self.metrics_changed |= later.metrics_changed;
        self.meta_changed |= later.meta_changed;
        self.broken_lines += later.broken_lines;
        self.errors.extend(later.errors);
        self.progress = later.progress.or(self.progress);
    }
}

/// Merge one event into `run`. Pure: no I/O, so the consumer's state stays testable.
pub fn apply(run: &mut Run, event: LiveEvent) -> Applied {
    let mut applied = Applied { new_episodes: run.episodes.len()..run.episodes.len(), ..Applied::default() };
    match event {
        LiveEvent::Reset(LiveFile::Episodes) => {
            run.episodes.clear();
            run.lean.clear();
            run.episode_lines.clear();
            run.episode_ids.clear();
            run.errors.clear();
            applied.episodes_reset = true;
            applied.new_episodes = 0..0;
        }
        LiveEvent::Reset(LiveFile::Metrics) => {
            run.metrics.clear();
            run.metrics_errors.clear();
            applied.metrics_changed = true;
        }
        LiveEvent::Episodes(records) => {
            let start = run.episodes.len();
            for (line, episode) in records {
                if admit(run, &episode.id, line, episode.source_file(), &mut applied) {
                    run.episodes.push(episode);
                }
            }
            applied.new_episodes = start..run.episodes.len();
        }
        LiveEvent::LeanEpisodes { episodes, pages } => {
            for LeanRecord { line, episode, file } in episodes {
                if admit(run, &episode.id, line, file.as_deref(), &mut applied) {
                    run.lean.push(episode);
                }
            }
            run.lean_pages = pages;
        }
        LiveEvent::Metrics(records) => {
            applied.metrics_changed = !records.is_empty();
            run.metrics.extend(records.into_iter().map(|(_, m)| m));
        }
        LiveEvent::BrokenLines(file, errors) => {
            applied.broken_lines = errors.len();
            match file {
                LiveFile::Episodes => run.errors.extend(errors),
                LiveFile::Metrics => run.metrics_errors.extend(errors),
            }
        }
        LiveEvent::Meta(meta) => {
            run.meta = meta.map(|m| *m);
            applied.meta_changed = true;
        }
        LiveEvent::Error(message) => {
            run.notices.push(message.clone());
            applied.errors.push(message);
        }
        LiveEvent::Progress { read, total } => applied.progress = Some((read, total)),
    }
    applied
}

/// Whether the episode `id` on `line` (of `file`) joins the run: an id met before is a broken line, for every
/// reader alike (validate, stats, the TUI), and the first episode with the id is kept, as the one any reference
/// to the id meant first.
fn admit(run: &mut Run, id: &str, line: u64, file: Option<&str>, applied: &mut Applied) -> bool {
    if let Some(&first) = run.episode_ids.get(id) {
        let reason = format!("duplicate episode id {id:?} (first on line {first})");
        run.errors.push(LineError { file: file.map(str::to_owned), line, reason });
        applied.broken_lines += 1;
        return false;
    }
    run.episode_ids.insert(id.to_owned(), line);
    run.episode_lines.push(line);
    true
}

/// Poll `source` until nothing complete is left unread (a large file arrives in several parts), applying
/// every event to `run`.
pub fn read_all(source: &mut dyn RunSource, run: &mut Run) {
    loop {
        let poll = source.poll();
        for event in poll.events {
            apply(run, event);
        }
        if !poll.more {
            return;
        }
    }
}

/// Reports a lasting problem of one part of a source once: the same message again is not repeated until
/// the part reads cleanly (or fails differently).
#[derive(Clone, Debug, Default)]
pub struct ErrorOnce {
    last: Option<String>,
}

impl ErrorOnce {
    /// The event to send for this outcome, if any.
    pub fn report(&mut self, error: Option<String>) -> Option<LiveEvent> {
        if error == self.last {
            return None;
        }
        self.last = error.clone();
        error.map(LiveEvent::Error)
    }
}

impl Run {
    /// Read the run in `dir` once, in whatever layout it is (`from` forces one). A directory holding none
    /// of the layouts' files is an error naming what was looked for.
    pub fn open_as(dir: &Path, from: Option<Layout>, options: &SourceOptions) -> Result<Run, RunError> {
        let layout = resolve_layout(dir, from, false)?;
        if layout == Layout::Gigscope {
            if !dir.join(EPISODES_FILE).is_file() {
                return Err(RunError::NoEpisodes(dir.to_path_buf()));
            }
            // A one-shot reader has no later poll to report a broken run.json in: it is an error.
            super::reader::read_meta(dir)?;
        }
        let mut source = open_source(dir, layout, options)?;
        let mut run = Run::empty(dir, layout);
        read_all(source.as_mut(), &mut run);
        Ok(run)
    }

    /// Read the gigscope-run/1 directory `dir` once: `run.json` (optional), `episodes.jsonl` (required) and
    /// `metrics.jsonl` (optional).
    pub fn open(dir: &Path) -> Result<Run, RunError> {
        Run::open_as(dir, Some(Layout::Gigscope), &SourceOptions::default())
    }

    /// Whether this is a WebShop run (so WebShop's page types, page anchors and live play apply): its recorded
    /// `env`, else a gigscope run that records none (gigscope's own trainer and play write WebShop runs), never
    /// another trainer's layout that does not say so.
    pub fn is_webshop(&self) -> bool {
        match self.meta.as_ref().and_then(|m| m.env.as_deref()) {
            Some(env) => env.eq_ignore_ascii_case("webshop"),
            None => self.layout == Layout::Gigscope,
        }
    }

    /// A run with nothing read yet.
    pub fn empty(dir: &Path, layout: Layout) -> Run {
        Run {
            dir: dir.to_path_buf(),
            layout,
            meta: None,
            episodes: Vec::new(),
            episode_lines: Vec::new(),
            episode_ids: Default::default(),
            errors: Vec::new(),
            metrics: Vec::new(),
            metrics_errors: Vec::new(),
            notices: Vec::new(),
            lean: Vec::new(),
            lean_pages: Vec::new(),
        }
    }
}
