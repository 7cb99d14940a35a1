//! The interface every run source implements, and what it tells the registry about itself.
//!
//! Contract: a [`RunSource`] reads one run directory incrementally; each [`RunSource::poll`] returns what
//! arrived since the last one as [`LiveEvent`]s, in order, and never fails (errors are events too). Every
//! source keeps the reader's guarantees: a line or file still being written is held back (and the poll says
//! data is [`SourcePoll::pending`], so the watcher looks again soon), a broken line or row is reported with its
//! file and line and skipped, and a file truncated, replaced or rewritten voids what was read (a `Reset` event,
//! then the run from the start). A source's file also gives the registry (`source/mod.rs`) one
//! [`RegisteredLayout`]: how to tell its layout from the files present and how to open it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::run::dir::list_dir;
use crate::run::error::{LineError, RunError};
use crate::run::format::{Episode, MetricsRecord, RunMeta};
use crate::run::layout::Layout;
use crate::run::lean_reading::LeanReading;
use crate::run::text_on_disk::LeanEpisode;

/// What a layout's reader tells the registry: the layout, what it looks for (for the error when no layout
/// matches), whether a directory holds it, and how to open a reader of it.
pub struct RegisteredLayout {
    pub layout: Layout,
    /// The files it looks for, in words: `"{step}.jsonl files (verl rollout dump)"`.
    pub looks_for: &'static str,
    /// Whether the directory holds this layout's files.
    pub found_in: fn(&mut Listing) -> Result<bool, RunError>,
    /// A reader of the directory, positioned at the start.
    pub open: fn(&Path, &SourceOptions) -> Box<dyn RunSource>,
}

/// A run directory being looked at for its layout: its listing is read once, and only if a layout asks.
pub struct Listing {
    dir: PathBuf,
    names: Option<Vec<String>>,
}

impl Listing {
    pub fn new(dir: &Path) -> Listing {
        Listing { dir: dir.to_path_buf(), names: None }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file names in the directory, sorted.
    pub fn names(&mut self) -> Result<&[String], RunError> {
        if self.names.is_none() {
            self.names = Some(list_dir(&self.dir)?);
        }
        Ok(self.names.as_deref().unwrap_or_default())
    }
}

/// Options some layouts take.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceOptions {
    /// TRL: rows per group (`num_generations`), overriding the groups inferred from consecutive equal prompts.
    pub group_size: Option<usize>,
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

    /// The reader will not poll again (a one-shot read: `validate`, `advantages`, `convert`): deliver what can
    /// be delivered now although a writer may still be at it (the complete lines of a step file still being
    /// written), and say what is left unread ([`LiveEvent::Skipped`]). A watcher never calls this.
    fn finish(&mut self) -> Vec<LiveEvent> {
        Vec::new()
    }

    /// A one-shot reader that does not keep the episodes ([`crate::run::Run::stream_as`]) reads the run in parts of
    /// about `bytes` (the episodes file's parts; a verl dump's step files, at least one a part; a TRL log's
    /// come in parts of their own), so that it holds less at a time than a viewer, whose parts are larger for
    /// speed.
    fn read_in_parts_of(&mut self, _bytes: u64) {}

    /// Whether every episode id this source delivers is unique in the run by construction (named after its
    /// file and its place there, as a verl dump's are), so that no episode can be a duplicate: a reader then
    /// keeps no map of the ids met ([`crate::run::Run::empty_for`]), the commands' nor the viewer's.
    fn ids_unique(&self) -> bool {
        false
    }

    /// Deliver episodes read from the run's own lines lean ([`LiveEvent::LeanEpisodes`]), taken in by
    /// `reading` as they are parsed; whether the source does (a source whose episodes are built from other
    /// files, with no line of their own, does not: `super::read_lean` has their text spilled instead).
    fn read_lean(&mut self, _reading: LeanReading) -> bool {
        false
    }
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
    /// A file, or a part of one, whose records could not be read: they are missing from the run (`reason`), or
    /// no longer are (`None`: the file reads again). Counted apart from notices: a one-shot command that met
    /// one says how many and fails. `file` is relative to the run directory.
    Skipped { file: String, reason: Option<String> },
    /// The episodes file ends in an unfinished line that has stopped growing (a writer killed mid-line, a full
    /// disk), or no longer does (`None`).
    TornTail(Option<TornTail>),
    /// How far reading a large episodes file is (it arrives in parts): `read` of `total` bytes. Sent with
    /// every part while reading is behind, and once more when it has caught up (`read == total`); the live
    /// watcher also sends `0 of 0` when its first scan of the run is over, whatever the layout.
    Progress { read: u64, total: u64 },
}

/// An unfinished last line that has stopped growing: where it starts and how long it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TornTail {
    /// The file, relative to the run directory.
    pub file: String,
    /// The 1-based line it would be.
    pub line: u64,
    pub bytes: u64,
}

impl std::fmt::Display for TornTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: line {} is unfinished ({} bytes, no newline) and has stopped growing: a writer stopped mid-line \
             (killed, or the disk filled); not read (the next writer moves it to {}.torn)",
            self.file, self.line, self.bytes, self.file
        )
    }
}

/// An episode taken in lean where it was read, with the 1-based line of its record and the file it names
/// ([`Episode::source_file`]), kept for the error should its id have been met before. The file's name is one
/// copy shared by the records that name it, which the reader keeps (a string of each record's own was made on
/// the reader's thread and freed on the viewer's: see `SourceFiles` in `lean_reading.rs`).
#[derive(Clone, Debug)]
pub struct LeanRecord {
    pub line: u64,
    pub episode: LeanEpisode,
    pub file: Option<Arc<str>>,
    /// Counted among the records a watcher has sent and its consumer not yet merged, while there is one
    /// ([`InFlight`]).
    pub(crate) flight: Option<InFlight>,
}

/// One record on its way from a watcher's thread to the run it joins: counted in the watcher's tally from when
/// it is sent until it is dropped (merged, or dropped unmerged), so that the watcher reads on only once its
/// consumer has caught up (`crate::live`), and a run read faster than it is merged is not held twice: once as
/// the reader made it, waiting, and once as the viewer keeps it.
pub(crate) struct InFlight(Arc<FlightTally>);

/// The records in flight, and what to do when they fall back to the limit: the watcher sleeps until then, and
/// `caught_up` wakes it (it is called by the drop that brings the count from `limit + 1` to `limit`, on the
/// consumer's thread).
pub(crate) struct FlightTally {
    count: AtomicUsize,
    limit: usize,
    caught_up: Box<dyn Fn() + Send + Sync>,
}

impl FlightTally {
    pub(crate) fn new(limit: usize, caught_up: impl Fn() + Send + Sync + 'static) -> Arc<FlightTally> {
        Arc::new(FlightTally { count: AtomicUsize::new(0), limit, caught_up: Box::new(caught_up) })
    }

    /// Whether more than the limit are in flight.
    pub(crate) fn ahead(&self) -> bool {
        self.count.load(Ordering::Acquire) > self.limit
    }
}

impl InFlight {
    /// Counted in `tally` until dropped.
    pub(crate) fn new(tally: &Arc<FlightTally>) -> InFlight {
        tally.count.fetch_add(1, Ordering::Relaxed);
        InFlight(tally.clone())
    }
}

impl Clone for InFlight {
    fn clone(&self) -> InFlight {
        InFlight::new(&self.0)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == self.0.limit + 1 {
            (self.0.caught_up)();
        }
    }
}

impl std::fmt::Debug for InFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InFlight({} of at most {})", self.0.count.load(Ordering::Relaxed), self.0.limit)
    }
}

/// Whether a record is counted in flight says nothing of the record itself.
impl PartialEq for LeanRecord {
    fn eq(&self, other: &LeanRecord) -> bool {
        (self.line, &self.episode, &self.file) == (other.line, &other.episode, &other.file)
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
