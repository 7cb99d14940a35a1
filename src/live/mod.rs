//! Live runs: watch a run directory while a trainer writes to it, and merge what arrives into a [`Run`].
//!
//! [`open`] reads the run like [`Run::open`] but keeps the readers' positions ([`Tails`]); [`Watcher::spawn`]
//! continues from exactly there on a background thread, so nothing is read twice or missed between opening
//! and watching. The thread wakes on `notify` events for the directory (debounced: a burst of appends
//! becomes one read) and, because some filesystems (network mounts, some containers) never deliver events,
//! also re-scans periodically. What it finds is sent as [`LiveEvent`]s; [`apply`] merges them into the
//! consumer's `Run` and [`LiveStatus`] keeps the time of the last update and the count of broken lines. Lean
//! episodes are sent no further ahead of the consumer than `MERGES_AHEAD` not yet merged (or dropped): the
//! watcher waits for the merges before it reads on.

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher as _};

use crate::run::source::{open_source, resolve_layout, FlightTally, GigscopeSource, InFlight, RunSource, SourcePoll};
use crate::run::{check_run_dir, Episode, Layout, Run, RunError, SourceOptions, TailPosition};
use crate::run::{read_all, LeanReading};

pub use crate::run::source::{LeanRecord, LiveEvent, LiveFile};
pub use crate::run::{apply, apply_handing_back, Applied, Refused};

/// Where the reader of a run stands, handed from [`open`] to [`Watcher::spawn`].
#[derive(Debug)]
pub struct Tails {
    source: Box<dyn RunSource>,
}

impl Tails {
    /// A gigscope-run/1 reader at the start of every file: the watcher's first scan delivers the whole run
    /// as events.
    pub fn from_start(dir: &Path) -> Self {
        Tails { source: Box::new(GigscopeSource::new(dir)) }
    }

    /// A gigscope-run/1 reader that goes on reading `episodes.jsonl` from `position` (where the load cache's
    /// read stopped) and every other file from the start.
    pub fn resumed(dir: &Path, position: TailPosition) -> Self {
        Tails { source: Box::new(GigscopeSource::resume(dir, position)) }
    }

    pub fn layout(&self) -> Layout {
        self.source.layout()
    }

    /// What arrived since the last poll ([`RunSource::poll`]): a consumer that reads the run itself, part by
    /// part, before handing the reader on to [`Watcher::spawn`].
    pub fn poll(&mut self) -> SourcePoll {
        self.source.poll()
    }

    /// Deliver the episodes lean to `reading`: those of the run's own lines as they are parsed
    /// ([`RunSource::read_lean`]), those of layouts without lines of their own with their text written to a
    /// spill file made in the first of `spill_dirs` where one can be ([`crate::run::source::read_lean`]).
    pub fn read_lean(self, reading: LeanReading, spill_dirs: &[PathBuf]) -> Tails {
        Tails { source: crate::run::source::read_lean(self.source, reading, spill_dirs) }
    }
}

/// Read the run in `dir` as it is now, in the layout detected from its files, keeping the reader's position
/// for [`Watcher::spawn`]. Unlike [`Run::open_as`], a directory with nothing in it yet is not an error: it is
/// followed as a gigscope run a trainer has not started writing.
pub fn open(dir: &Path) -> Result<(Run, Tails), RunError> {
    open_as(dir, None, &SourceOptions::default())
}

/// [`open`], reading the run as `from` (else the detected layout) with the layout's `options`.
pub fn open_as(dir: &Path, from: Option<Layout>, options: &SourceOptions) -> Result<(Run, Tails), RunError> {
    let (mut run, mut tails) = start_as(dir, from, options)?;
    read_all(tails.source.as_mut(), &mut run);
    Ok((run, tails))
}

/// [`open_as`] without reading anything: the empty run and a reader at the start of every file, so that
/// [`Watcher::spawn`]'s first scan delivers the whole run as events, part by part with
/// [`LiveEvent::Progress`] (a viewer shows its first frame at once and fills in as the run arrives). Errors
/// that stop a run from being read at all (no such directory) still come from here.
pub fn start_as(dir: &Path, from: Option<Layout>, options: &SourceOptions) -> Result<(Run, Tails), RunError> {
    let layout = resolve_layout(dir, from, true)?;
    let source = open_source(dir, layout, options)?;
    Ok((Run::empty_for(dir, layout, source.as_ref()), Tails { source }))
}

/// For the status bar: when the run last changed and how many lines were skipped as broken.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LiveStatus {
    pub last_update: Option<Instant>,
    /// Broken lines seen in the current content of the files (reset with them).
    pub broken_lines: usize,
    pub last_error: Option<String>,
    /// The first read of a large run, while it is under way.
    pub loading: Option<Loading>,
    /// The run is being read for the first time by the watcher (a viewer that opened it at once, empty):
    /// until the watcher says it has caught up, what it reports is the run's content rather than news.
    pub first_read: bool,
}

/// How far the first read of a run is, for the progress indicator.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Loading {
    pub started: Instant,
    /// Bytes read of the episodes file's size, as of `at`.
    pub read: u64,
    pub total: u64,
    pub at: Instant,
}

impl Loading {
    /// Share read, 0..=1.
    pub fn fraction(&self) -> f64 {
        if self.total == 0 {
            1.0
        } else {
            self.read as f64 / self.total as f64
        }
    }

    /// Bytes per second so far (`None` before any time has passed).
    pub fn rate(&self) -> Option<f64> {
        let secs = self.at.saturating_duration_since(self.started).as_secs_f64();
        (secs > 0.0).then(|| self.read as f64 / secs)
    }

    /// Time left at the rate so far.
    pub fn eta(&self) -> Option<Duration> {
        let rate = self.rate().filter(|r| *r > 0.0)?;
        Some(Duration::from_secs_f64(self.total.saturating_sub(self.read) as f64 / rate))
    }
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
        if let Some((read, total)) = applied.progress {
            self.first_read &= read < total;
            self.loading = (read < total).then(|| Loading {
                started: self.loading.map_or(now, |l| l.started),
                read,
                total,
                at: now,
            });
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
    /// Something changed at these paths (none: unknown, read to be sure).
    Changed(Vec<PathBuf>),
    /// The consumer has merged the lean episodes in flight down to [`MERGES_AHEAD`].
    Merged,
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
        let watch_dirs: Vec<PathBuf> = std::iter::once(dir.to_path_buf()).chain(tails.source.watch_dirs()).collect();
        let notify = if options.notify {
            match start_notify(&watch_dirs, wake_tx.clone()) {
                Ok(watcher) => Some(watcher),
                Err(err) => {
                    let message = format!(
                        "not watching {} for changes ({err}); re-reading it every {:?}",
                        dir.display(),
                        options.rescan
                    );
                    let _ = events_tx.send(LiveEvent::Error(message));
                    None
                }
            }
        } else {
            None
        };
        let merged = wake_tx.clone();
        let mut scanner = Scanner {
            source: tails.source,
            events: events_tx,
            scanned: false,
            held: Vec::new(),
            held_lean: Vec::new(),
            held_pages: Vec::new(),
            in_flight: FlightTally::new(MERGES_AHEAD, move || {
                let _ = merged.send(Wake::Merged);
            }),
            wake: wake_rx,
            changed: false,
        };
        let thread = std::thread::Builder::new()
            .name("gigscope-live".to_string())
            .spawn(move || scanner.run(options))
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

/// A notify watcher of `dirs` (the run directory first) that wakes the scanner on any change; the scanner
/// asks its source which changes matter.
fn start_notify(dirs: &[PathBuf], wake: Sender<Wake>) -> notify::Result<RecommendedWatcher> {
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let wake_up = match event {
            Ok(event) => is_change(&event).then_some(Wake::Changed(event.paths)),
            // An overflowed or failed event stream may have lost changes: read to be sure.
            Err(_) => Some(Wake::Changed(Vec::new())),
        };
        if let Some(wake_up) = wake_up {
            let _ = wake.send(wake_up);
        }
    })?;
    // Directories, not files: a file replaced by rename, or created later, is still seen.
    for dir in dirs {
        // A directory that does not exist yet (TRL's completions/) is found by the periodic re-scan.
        if dir.is_dir() {
            watcher.watch(dir, RecursiveMode::NonRecursive)?;
        }
    }
    Ok(watcher)
}

/// Changes, not reads: the watcher's own reads would otherwise wake it again and again.
fn is_change(event: &notify::Event) -> bool {
    match event.kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        _ => true,
    }
}

/// The watcher thread's state.
struct Scanner {
    source: Box<dyn RunSource>,
    events: Sender<LiveEvent>,
    /// The first scan is done (and was announced).
    scanned: bool,
    /// The episodes of a part's last episode group, held back while the reader has more at once: they go with
    /// the next part, so that parts end where groups end (when the file is written group by group) and a
    /// viewer takes in each part as new groups, computing that part alone.
    held: Vec<(u64, Episode)>,
    /// The same for episodes read lean, with the page names their ids stand for.
    held_lean: Vec<LeanRecord>,
    held_pages: Vec<String>,
    /// The lean episodes sent and not yet merged (nor dropped) by the consumer ([`InFlight`]).
    in_flight: Arc<FlightTally>,
    /// Changes, and the order to stop.
    wake: Receiver<Wake>,
    /// A change of a watched file was noticed while a scan was under way: scan again at once.
    changed: bool,
}

/// The lean episodes a watcher lets wait to be merged before it reads on (about a 4 MB part of a run of short
/// episodes): enough to keep the viewer merging while the next part is parsed.
const MERGES_AHEAD: usize = 4096;

/// The consumer dropped the receiver, or the watcher was stopped: nothing left to do.
struct Disconnected;

/// What waiting for a wake-up came to.
enum Woken {
    Changed(Vec<PathBuf>),
    TimedOut,
    Stop,
}

/// Run this thread (and the threads it starts, which inherit it) below the viewer's priority: a large run's
/// first scan keeps every core busy parsing, and the viewer's keys should not wait behind it.
#[cfg(target_os = "linux")]
fn background_priority() {
    extern "C" {
        fn setpriority(which: i32, who: u32, prio: i32) -> i32;
    }
    // SAFETY: setpriority(PRIO_PROCESS = 0, 0, n) only sets the calling thread's nice value on Linux, where
    // threads have their own; a failure leaves the priority as it was.
    unsafe {
        setpriority(0, 0, 10);
    }
}

#[cfg(not(target_os = "linux"))]
fn background_priority() {}

impl Scanner {
    fn run(&mut self, options: WatchOptions) {
        background_priority();
        loop {
            let Ok(pending) = self.scan() else { return };
            if std::mem::take(&mut self.changed) {
                continue;
            }
            // Data still being written is looked at again after the debounce, not at the next re-scan.
            let wait = if pending { options.debounce } else { options.rescan };
            match self.wait(Instant::now() + wait) {
                Woken::Changed(paths) => {
                    if !self.concerns(&paths) {
                        continue;
                    }
                    // Debounce: collect the rest of the burst, but never wait longer than `debounce`.
                    let deadline = Instant::now() + options.debounce;
                    loop {
                        match self.wait(deadline) {
                            Woken::Changed(_) => {}
                            Woken::Stop => return,
                            Woken::TimedOut => break,
                        }
                    }
                }
                Woken::TimedOut => {}
                Woken::Stop => return,
            }
        }
    }

    /// Wait for a change until `deadline`.
    fn wait(&mut self, deadline: Instant) -> Woken {
        loop {
            return match self.wake.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(Wake::Changed(paths)) => Woken::Changed(paths),
                // Merges the scanner no longer waits for.
                Ok(Wake::Merged) => continue,
                Err(RecvTimeoutError::Timeout) => Woken::TimedOut,
                Ok(Wake::Stop) | Err(RecvTimeoutError::Disconnected) => Woken::Stop,
            };
        }
    }

    /// Between the polls of a scan: stop when told to (a large run's first scan is many polls, and a viewer
    /// that quits waits for this thread), and note changes for a scan after this one.
    fn take_wakes(&mut self) -> Result<(), Disconnected> {
        loop {
            match self.wake.try_recv() {
                Ok(Wake::Changed(paths)) => self.changed |= self.concerns(&paths),
                Ok(Wake::Merged) => {}
                Err(mpsc::TryRecvError::Empty) => return Ok(()),
                Ok(Wake::Stop) | Err(mpsc::TryRecvError::Disconnected) => return Err(Disconnected),
            }
        }
    }

    /// An event without paths may concern anything.
    fn concerns(&self, paths: &[PathBuf]) -> bool {
        paths.is_empty() || paths.iter().any(|p| self.source.watches(p))
    }

    /// Poll the source until it has caught up and send what it found, part by part (each part is on its way
    /// to the viewer while the next is read); whether data is pending.
    fn scan(&mut self) -> Result<bool, Disconnected> {
        if !self.scanned {
            self.scanned = true;
            let pending = self.scan()?;
            // The first scan is over: say so, whatever the layout (a gigscope source also says how far it is).
            self.events.send(LiveEvent::Progress { read: 0, total: 0 }).map_err(|_| Disconnected)?;
            return Ok(pending);
        }
        loop {
            self.take_wakes()?;
            self.wait_for_merges()?;
            let poll = self.source.poll();
            for event in poll.events {
                match event {
                    LiveEvent::Episodes(episodes) => {
                        let mut part = std::mem::take(&mut self.held);
                        part.extend(episodes);
                        if poll.more {
                            self.held = trailing_group(&mut part, |(_, e)| &e.group);
                        }
                        if !part.is_empty() {
                            self.send(LiveEvent::Episodes(part))?;
                        }
                    }
                    LiveEvent::LeanEpisodes { episodes, pages } => {
                        let mut part = std::mem::take(&mut self.held_lean);
                        part.extend(episodes);
                        if poll.more {
                            self.held_lean = trailing_group(&mut part, |r| &r.episode.group);
                        }
                        if !part.is_empty() {
                            self.send_lean(part, pages.clone())?;
                        }
                        self.held_pages = pages;
                    }
                    // How far reading is may run ahead of the episodes held back.
                    progress @ LiveEvent::Progress { .. } => self.send(progress)?,
                    // Anything else comes after the episodes read before it.
                    other => {
                        self.flush()?;
                        self.send(other)?;
                    }
                }
            }
            if !poll.more {
                self.flush()?;
                return Ok(poll.pending);
            }
        }
    }

    fn send(&self, event: LiveEvent) -> Result<(), Disconnected> {
        self.events.send(event).map_err(|_| Disconnected)
    }

    /// Send lean episodes, each counted in flight until the consumer has merged it.
    fn send_lean(&self, mut episodes: Vec<LeanRecord>, pages: Vec<String>) -> Result<(), Disconnected> {
        for record in &mut episodes {
            record.flight = Some(InFlight::new(&self.in_flight));
        }
        self.send(LiveEvent::LeanEpisodes { episodes, pages })
    }

    /// Before reading on: wait while more than [`MERGES_AHEAD`] lean episodes sent wait to be merged. A reader
    /// that parses faster than its viewer merges (a large run's first read) would otherwise have the whole run
    /// waiting as it made it, besides the viewer's own copy of what it merged: the viewer's peak. Stopping,
    /// and a consumer gone (the episodes it had not taken are dropped with the channel), end the wait. The
    /// merge that brings the count down to the limit sends [`Wake::Merged`]; a change meanwhile is noted for
    /// the next scan.
    fn wait_for_merges(&mut self) -> Result<(), Disconnected> {
        while self.in_flight.ahead() {
            match self.wake.recv() {
                Ok(Wake::Changed(paths)) => self.changed |= self.concerns(&paths),
                Ok(Wake::Merged) => {}
                Ok(Wake::Stop) | Err(_) => return Err(Disconnected),
            }
        }
        Ok(())
    }

    /// Send the episodes held back, if any.
    fn flush(&mut self) -> Result<(), Disconnected> {
        if !self.held.is_empty() {
            let held = std::mem::take(&mut self.held);
            self.send(LiveEvent::Episodes(held))?;
        }
        if !self.held_lean.is_empty() {
            let episodes = std::mem::take(&mut self.held_lean);
            self.send_lean(episodes, self.held_pages.clone())?;
        }
        Ok(())
    }
}

/// Split off the episodes at the end of `part` that belong to its last episode's group; none when the whole
/// part is one group (a group larger than a part is sent as it comes).
pub fn trailing_group<T>(part: &mut Vec<T>, group: impl Fn(&T) -> &str) -> Vec<T> {
    let Some(last) = part.last().map(&group) else { return Vec::new() };
    let start = part.iter().rposition(|e| group(e) != last).map_or(0, |i| i + 1);
    if start == 0 {
        return Vec::new();
    }
    part.split_off(start)
}

/// The most episodes a viewer takes in at once ([`next_part`]): a small slice of the UI thread's work (turning
/// them lean, computing their groups), so that keys are answered within a frame while a large run arrives.
pub const EPISODES_PER_MERGE: usize = 250;

/// The next events of `backlog` for a viewer to merge at once: everything up to and including the first
/// batch of episodes (one part of a run read in parts), of which at most [`EPISODES_PER_MERGE`] (more only
/// to end where a group ends), the rest left first in the backlog with the part's progress (which comes with its last slice). A viewer
/// that merges a part, draws, and answers its keys before the next stays responsive while a large run
/// arrives, however far ahead the reader is.
pub fn next_part(backlog: &mut std::collections::VecDeque<LiveEvent>) -> Vec<LiveEvent> {
    let is_episodes = |e: &LiveEvent| matches!(e, LiveEvent::Episodes(_) | LiveEvent::LeanEpisodes { .. });
    let end = backlog.iter().position(is_episodes).map_or(backlog.len(), |i| i + 1);
    let mut part: Vec<LiveEvent> = backlog.drain(..end).collect();
    // Cut where a group ends, so the viewer takes in new groups alone; a group larger than that goes whole.
    let rest = match part.last_mut() {
        Some(LiveEvent::Episodes(episodes)) => cut_part(episodes, |(_, e)| &e.group).map(LiveEvent::Episodes),
        Some(LiveEvent::LeanEpisodes { episodes, pages }) => cut_part(episodes, |r| &r.episode.group)
            .map(|episodes| LiveEvent::LeanEpisodes { episodes, pages: pages.clone() }),
        _ => None,
    };
    let Some(rest) = rest else { return part };
    // How far reading is goes with the last slice of the episodes it counted.
    let (progress, part): (Vec<LiveEvent>, Vec<LiveEvent>) =
        part.into_iter().partition(|e| matches!(e, LiveEvent::Progress { .. }));
    backlog.push_front(rest);
    for event in progress.into_iter().rev() {
        backlog.push_front(event);
    }
    part
}

/// The episodes of `episodes` after the first [`EPISODES_PER_MERGE`] and the rest of their last group, split
/// off; none when they all go at once.
fn cut_part<T>(episodes: &mut Vec<T>, group: impl Fn(&T) -> &str) -> Option<Vec<T>> {
    let end = part_end(episodes.len(), EPISODES_PER_MERGE, |i| group(&episodes[i]));
    (end < episodes.len()).then(|| episodes.split_off(end))
}

/// Where the part of `len` episodes a viewer takes in at once ends when it takes about `max`: after the first
/// `max` (at least one) and the rest of their last group, `group(i)` being episode `i`'s group.
pub fn part_end<'a>(len: usize, max: usize, group: impl Fn(usize) -> &'a str) -> usize {
    (max.max(1)..len).find(|&i| group(i - 1) != group(i)).unwrap_or(len)
}
