//! Live runs: watch a run directory while a trainer writes to it, and merge what arrives into a [`Run`].
//!
//! [`open`] reads the run like [`Run::open`] but keeps the readers' positions ([`Tails`]); [`Watcher::spawn`]
//! continues from exactly there on a background thread, so nothing is read twice or missed between opening
//! and watching. The thread wakes on `notify` events for the directory (debounced: a burst of appends
//! becomes one read) and, because some filesystems (network mounts, some containers) never deliver events,
//! also re-scans periodically. What it finds is sent as [`LiveEvent`]s; [`apply`] merges them into the
//! consumer's `Run` and [`LiveStatus`] keeps the time of the last update and the count of broken lines.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};

use crate::run::{
    check_run_dir, read_meta, Episode, JsonlTail, LineError, MetricsRecord, Run, RunError, RunMeta, EPISODES_FILE,
    METRICS_FILE, RUN_META_FILE,
};

/// Which of the run's line files an event is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LiveFile {
    Episodes,
    Metrics,
}

/// What the watcher found. Events of one file arrive in file order; a `Reset` comes before the records
/// read from the new content.
#[derive(Clone, Debug, PartialEq)]
pub enum LiveEvent {
    /// The file was truncated or replaced: everything read from it before is void.
    Reset(LiveFile),
    /// New episodes with their 1-based line numbers.
    Episodes(Vec<(u64, Episode)>),
    /// New metrics records with their 1-based line numbers.
    Metrics(Vec<(u64, MetricsRecord)>),
    /// Lines that could not be read (skipped; every good line is still delivered).
    BrokenLines(LiveFile, Vec<LineError>),
    /// `run.json` changed (or appeared, or was removed: `None`); boxed, as it is far larger than the rest.
    Meta(Option<Box<RunMeta>>),
    /// A file could not be read (e.g. a malformed `run.json`, permissions). Reported once per distinct
    /// problem; watching goes on.
    Error(String),
}

/// Where the readers of a run stand, handed from [`open`] to [`Watcher::spawn`].
#[derive(Debug)]
pub struct Tails {
    episodes: JsonlTail<Episode>,
    metrics: JsonlTail<MetricsRecord>,
    /// The bytes of `run.json` last seen (`None`: absent), to notice changes by content rather than mtime,
    /// whose resolution can hide a quick rewrite.
    meta_bytes: Option<Vec<u8>>,
}

impl Tails {
    /// Readers at the start of every file: the watcher's first scan delivers the whole run as events.
    pub fn from_start(dir: &Path) -> Self {
        Tails {
            episodes: JsonlTail::new(dir.join(EPISODES_FILE)),
            metrics: JsonlTail::new(dir.join(METRICS_FILE)),
            meta_bytes: None,
        }
    }
}

/// A run with nothing read yet, for a consumer that takes everything from a [`Tails::from_start`] watcher.
pub fn empty_run(dir: &Path) -> Run {
    Run {
        dir: dir.to_path_buf(),
        meta: None,
        episodes: Vec::new(),
        episode_lines: Vec::new(),
        errors: Vec::new(),
        metrics: Vec::new(),
        metrics_errors: Vec::new(),
    }
}

/// Read the run as it is now, keeping the readers' positions for [`Watcher::spawn`]. Unlike
/// [`Run::open`], a missing `episodes.jsonl` is not an error: a trainer may not have written it yet.
pub fn open(dir: &Path) -> Result<(Run, Tails), RunError> {
    check_run_dir(dir)?;
    // Bytes first, then parse: if run.json changes in between, the watcher sees a difference and reports
    // the new content, rather than the change being missed.
    let meta_bytes = std::fs::read(dir.join(RUN_META_FILE)).ok();
    let meta = read_meta(dir)?;
    let mut tails = Tails { meta_bytes, ..Tails::from_start(dir) };
    let mut run = empty_run(dir);
    run.meta = meta;
    let episodes = tails.episodes.poll()?;
    let metrics = tails.metrics.poll()?;
    apply(&mut run, LiveEvent::Episodes(episodes.records));
    apply(&mut run, LiveEvent::BrokenLines(LiveFile::Episodes, episodes.errors));
    apply(&mut run, LiveEvent::Metrics(metrics.records));
    apply(&mut run, LiveEvent::BrokenLines(LiveFile::Metrics, metrics.errors));
    Ok((run, tails))
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
    }
}

/// Merge one event into `run`. Pure: no I/O, so the consumer's state stays testable.
pub fn apply(run: &mut Run, event: LiveEvent) -> Applied {
    let mut applied = Applied { new_episodes: run.episodes.len()..run.episodes.len(), ..Applied::default() };
    match event {
        LiveEvent::Reset(LiveFile::Episodes) => {
            run.episodes.clear();
            run.episode_lines.clear();
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
                run.episode_lines.push(line);
                run.episodes.push(episode);
            }
            applied.new_episodes = start..run.episodes.len();
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
        LiveEvent::Error(message) => applied.errors.push(message),
    }
    applied
}

/// For the status bar: when the run last changed and how many lines were skipped as broken.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveStatus {
    pub last_update: Option<Instant>,
    /// Broken lines seen in the current content of the files (reset with them).
    pub broken_lines: usize,
    pub last_error: Option<String>,
}

impl LiveStatus {
    /// Note what an [`apply`] (or several, [`Applied::absorb`]ed) did at `now`.
    pub fn record(&mut self, applied: &Applied, run: &Run, now: Instant) {
        if applied.changed() {
            self.last_update = Some(now);
        }
        self.broken_lines = run.errors.len() + run.metrics_errors.len();
        if let Some(error) = applied.errors.last() {
            self.last_error = Some(error.clone());
        }
    }

    /// Time since the last update ("updated 3s ago").
    pub fn since_update(&self, now: Instant) -> Option<Duration> {
        self.last_update.map(|at| now.saturating_duration_since(at))
    }
}

/// Apply every event waiting on `events` without blocking, and record it in `status`.
pub fn drain(events: &Receiver<LiveEvent>, run: &mut Run, status: &mut LiveStatus) -> Applied {
    let mut applied = Applied { new_episodes: run.episodes.len()..run.episodes.len(), ..Applied::default() };
    while let Ok(event) = events.try_recv() {
        applied.absorb(apply(run, event));
    }
    status.record(&applied, run, Instant::now());
    applied
}

/// Timing of the watcher.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WatchOptions {
    /// After the first change event, wait this long for more before reading (a burst becomes one read).
    pub debounce: Duration,
    /// Read even without events this often (filesystems where `notify` misses changes).
    pub rescan: Duration,
    /// Use `notify` at all; without it the watcher only re-scans.
    pub notify: bool,
}

impl Default for WatchOptions {
    fn default() -> Self {
        WatchOptions { debounce: Duration::from_millis(150), rescan: Duration::from_secs(1), notify: true }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("could not start the watcher thread: {0}")]
    Thread(std::io::Error),
}

enum Wake {
    Changed,
    Stop,
}

/// The background watcher. Dropping it stops the thread and waits for it.
pub struct Watcher {
    notify: Option<RecommendedWatcher>,
    wake: Sender<Wake>,
    thread: Option<JoinHandle<()>>,
}

impl Watcher {
    /// Watch `dir`, continuing from `tails`. Events arrive on the returned receiver; if `notify` cannot
    /// watch the directory, an [`LiveEvent::Error`] says so and the periodic re-scan carries on alone.
    pub fn spawn(dir: &Path, tails: Tails, options: WatchOptions) -> Result<(Watcher, Receiver<LiveEvent>), LiveError> {
        check_run_dir(dir)?;
        let (events_tx, events_rx) = mpsc::channel();
        let (wake_tx, wake_rx) = mpsc::channel();
        let notify = if options.notify {
            match start_notify(dir, wake_tx.clone()) {
                Ok(watcher) => Some(watcher),
                Err(err) => {
                    let message = format!("not watching {} for changes ({err}); re-reading it every {:?}", dir.display(), options.rescan);
                    let _ = events_tx.send(LiveEvent::Error(message));
                    None
                }
            }
        } else {
            None
        };
        let mut scanner = Scanner { dir: dir.to_path_buf(), tails, events: events_tx, last_errors: [None, None, None] };
        let thread = std::thread::Builder::new()
            .name("gigscope-live".to_string())
            .spawn(move || scanner.run(wake_rx, options))
            .map_err(LiveError::Thread)?;
        Ok((Watcher { notify, wake: wake_tx, thread: Some(thread) }, events_rx))
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        // Stop the notify thread first so nothing wakes the scanner after it is told to stop.
        self.notify.take();
        let _ = self.wake.send(Wake::Stop);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn start_notify(dir: &Path, wake: Sender<Wake>) -> notify::Result<RecommendedWatcher> {
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let relevant = match &event {
            Ok(event) => is_relevant(event),
            // An overflowed or failed event stream may have lost changes: read to be sure.
            Err(_) => true,
        };
        if relevant {
            let _ = wake.send(Wake::Changed);
        }
    })?;
    // The directory, not the files: a file replaced by rename, or created later, is still seen.
    watcher.watch(dir, RecursiveMode::NonRecursive)?;
    Ok(watcher)
}

/// Changes to the files the watcher reads. Opens and reads are ignored: the watcher's own reads would
/// otherwise wake it again and again.
fn is_relevant(event: &notify::Event) -> bool {
    let kind_matters = match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    };
    let names = [EPISODES_FILE, METRICS_FILE, RUN_META_FILE];
    kind_matters
        && (event.paths.is_empty()
            || event.paths.iter().any(|p| p.file_name().is_some_and(|n| names.iter().any(|name| n == *name))))
}

/// The watcher thread's state.
struct Scanner {
    dir: PathBuf,
    tails: Tails,
    events: Sender<LiveEvent>,
    /// Last error reported per source (episodes, metrics, run.json), so a lasting problem is reported once.
    last_errors: [Option<String>; 3],
}

/// The consumer dropped the receiver: nothing left to do.
struct Disconnected;

impl Scanner {
    fn run(&mut self, wake: Receiver<Wake>, options: WatchOptions) {
        loop {
            if self.scan().is_err() {
                return;
            }
            match wake.recv_timeout(options.rescan) {
                Ok(Wake::Changed) => {
                    // Debounce: collect the rest of the burst, but never wait longer than `debounce`.
                    let deadline = Instant::now() + options.debounce;
                    loop {
                        match wake.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                            Ok(Wake::Changed) => {}
                            Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => return,
                            Err(RecvTimeoutError::Timeout) => break,
                        }
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    fn send(&self, event: LiveEvent) -> Result<(), Disconnected> {
        self.events.send(event).map_err(|_| Disconnected)
    }

    /// Report `error` from `source` unless it is the one reported last; clear it on success.
    fn report(&mut self, source: usize, error: Option<String>) -> Result<(), Disconnected> {
        if error != self.last_errors[source] {
            self.last_errors[source] = error.clone();
            if let Some(message) = error {
                self.send(LiveEvent::Error(message))?;
            }
        }
        Ok(())
    }

    fn scan(&mut self) -> Result<(), Disconnected> {
        self.scan_meta()?;
        match self.tails.episodes.poll() {
            Ok(batch) => {
                self.report(0, None)?;
                if batch.reset {
                    self.send(LiveEvent::Reset(LiveFile::Episodes))?;
                }
                if !batch.records.is_empty() {
                    self.send(LiveEvent::Episodes(batch.records))?;
                }
                if !batch.errors.is_empty() {
                    self.send(LiveEvent::BrokenLines(LiveFile::Episodes, batch.errors))?;
                }
            }
            Err(err) => self.report(0, Some(err.to_string()))?,
        }
        match self.tails.metrics.poll() {
            Ok(batch) => {
                self.report(1, None)?;
                if batch.reset {
                    self.send(LiveEvent::Reset(LiveFile::Metrics))?;
                }
                if !batch.records.is_empty() {
                    self.send(LiveEvent::Metrics(batch.records))?;
                }
                if !batch.errors.is_empty() {
                    self.send(LiveEvent::BrokenLines(LiveFile::Metrics, batch.errors))?;
                }
            }
            Err(err) => self.report(1, Some(err.to_string()))?,
        }
        Ok(())
    }

    fn scan_meta(&mut self) -> Result<(), Disconnected> {
        let bytes = std::fs::read(self.dir.join(RUN_META_FILE)).ok();
        if bytes == self.tails.meta_bytes {
            return Ok(());
        }
        self.tails.meta_bytes = bytes;
        match read_meta(&self.dir) {
            Ok(meta) => {
                self.report(2, None)?;
                self.send(LiveEvent::Meta(meta.map(Box::new)))
            }
            Err(err) => self.report(2, Some(err.to_string())),
        }
    }
}
