//! gigscope-run/1: `episodes.jsonl` and `metrics.jsonl` tailed line by line, `run.json` compared by content.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::events::{LeanRecord, LiveEvent, LiveFile, RunSource, SourcePoll, TornTail};
use super::events::{Listing, RegisteredLayout};
use crate::run::dir::read_meta;
use crate::run::error::RunError;
use crate::run::format::{Episode, MetricsRecord, EPISODES_FILE, METRICS_FILE, RUN_META_FILE};
use crate::run::jsonl::{JsonlTail, TailBatch, TailPosition};
use crate::run::layout::Layout;
use crate::run::lean_reading::LeanReading;
use crate::run::span::{LineSpan, ReadFrom};

/// The registry's entry for gigscope's own layout: a directory with `episodes.jsonl` or `run.json`.
pub const REGISTERED: RegisteredLayout = RegisteredLayout {
    layout: Layout::Gigscope,
    looks_for: "episodes.jsonl or run.json (gigscope-run/1)",
    found_in: is_gigscope_run,
    open: |dir, _| Box::new(GigscopeSource::new(dir)),
};

fn is_gigscope_run(listing: &mut Listing) -> Result<bool, RunError> {
    let dir = listing.dir();
    // Present in any form (a directory, a symbolic link that leads nowhere): opening it then says what it is.
    Ok(dir.join(EPISODES_FILE).symlink_metadata().is_ok() || dir.join(RUN_META_FILE).symlink_metadata().is_ok())
}

/// Where the readers of a gigscope run directory stand.
#[derive(Debug)]
pub struct GigscopeSource {
    dir: PathBuf,
    episodes: JsonlTail<Episode>,
    metrics: JsonlTail<MetricsRecord>,
    /// The bytes of `run.json` last seen (`None`: absent, or not read yet), to notice changes by content
    /// rather than mtime, whose resolution can hide a quick rewrite.
    meta_bytes: Option<Vec<u8>>,
    meta_read: bool,
    /// Episodes, metrics and run.json that cannot be read, each reported once while it lasts.
    skipped: [SkipOnce; 3],
    /// An unfinished last line of `episodes.jsonl` (its offset and length) and when it was first seen so, to
    /// report it once it has stopped growing; whether it was reported.
    tail: Option<(u64, u64, Instant)>,
    tail_reported: bool,
    /// The last poll stopped at the read budget (or there was none yet): the next one reports progress even
    /// if it catches up, so a reader that waits for the first read to end always hears of it.
    behind: bool,
    /// Episodes taken in lean as they are parsed, when the reader asked for it ([`RunSource::read_lean`]): one
    /// reading per parsing thread, the first one's page table the one the events give.
    lean: Vec<LeanReading>,
}

/// Bytes of `episodes.jsonl` read per poll: a large run arrives in parts a viewer shows as they come. A part is
/// held whole while it is parsed, on top of what the viewer holds of the run so far: with the watcher waiting for
/// the viewer's merges (`crate::live`), 4 MB rather than 16 took a viewer's peak on a run of many short episodes
/// from 71–73 MB to 52 MB (138 MB of file) for no loss in open time at low load (docs/performance.md, ²⁷).
pub const EPISODES_PART_BYTES: u64 = 4 << 20;

impl GigscopeSource {
    /// Readers at the start of every file: the first poll delivers the whole run.
    pub fn new(dir: &Path) -> Self {
        let mut episodes = JsonlTail::new(dir.join(EPISODES_FILE));
        episodes.set_budget(EPISODES_PART_BYTES);
        GigscopeSource {
            dir: dir.to_path_buf(),
            episodes,
            metrics: JsonlTail::new(dir.join(METRICS_FILE)),
            meta_bytes: None,
            meta_read: false,
            skipped: [EPISODES_FILE, METRICS_FILE, RUN_META_FILE].map(SkipOnce::new),
            tail: None,
            tail_reported: false,
            behind: true,
            lean: Vec::new(),
        }
    }

    /// Readers at the start of every file but `episodes.jsonl`, which is read on from `position` (where a
    /// reader of the same content stopped: the load cache's, [`crate::run::cache`]).
    pub fn resume(dir: &Path, position: TailPosition) -> Self {
        let mut source = GigscopeSource::new(dir);
        source.episodes = JsonlTail::resume(dir.join(EPISODES_FILE), position);
        source.episodes.set_budget(EPISODES_PART_BYTES);
        source
    }

    fn poll_meta(&mut self, events: &mut Vec<LiveEvent>) {
        let bytes = std::fs::read(self.dir.join(RUN_META_FILE)).ok();
        if self.meta_read && bytes == self.meta_bytes {
            return;
        }
        // Bytes first, then parse: if run.json changes in between, the next poll sees a difference and
        // reports the new content, rather than the change being missed.
        self.meta_bytes = bytes;
        self.meta_read = true;
        // A damaged run.json is skipped (it is optional): the run reads without its description.
        match read_meta(&self.dir) {
            Ok(meta) => {
                events.extend(self.skipped[2].report(None));
                self.lean.iter_mut().for_each(|lean| lean.described(meta.as_ref()));
                events.push(LiveEvent::Meta(meta.map(Box::new)));
            }
            Err(err) => {
                let reason = format!("{err}; the run is read without it (run.json is optional)");
                events.extend(self.skipped[2].report(Some(reason)));
            }
        }
    }

    /// The unfinished last line of `episodes.jsonl` after a poll that caught up, reported once it has stopped
    /// growing: not modified for [`TAIL_SETTLES_AFTER`], or unchanged for that long between polls; and said
    /// gone when its newline arrives (or the file is cut).
    fn poll_tail(&mut self, file_len: u64, events: &mut Vec<LiveEvent>) {
        let offset = self.episodes.offset();
        let now = Instant::now();
        if file_len <= offset {
            self.tail = None;
            if std::mem::take(&mut self.tail_reported) {
                events.push(LiveEvent::TornTail(None));
            }
            return;
        }
        let len = file_len - offset;
        match self.tail {
            Some((at, known, _)) if at == offset && known == len => {}
            _ => {
                self.tail = Some((offset, len, now));
                if std::mem::take(&mut self.tail_reported) {
                    events.push(LiveEvent::TornTail(None));
                }
            }
        }
        let Some((_, _, since)) = self.tail else { return };
        let path = self.dir.join(EPISODES_FILE);
        let age = std::fs::metadata(&path).and_then(|m| m.modified()).ok().and_then(|m| m.elapsed().ok());
        let settled = now.duration_since(since) >= TAIL_SETTLES_AFTER || age.is_some_and(|a| a >= TAIL_SETTLES_AFTER);
        if settled && !self.tail_reported {
            self.tail_reported = true;
            let line = self.episodes.lines() + 1;
            events.push(LiveEvent::TornTail(Some(TornTail { file: EPISODES_FILE.to_string(), line, bytes: len })));
        }
    }
}

/// An unfinished last line that has not changed for this long is not being written: it is reported.
pub const TAIL_SETTLES_AFTER: Duration = Duration::from_secs(2);

/// Whether a batch stopped with more to read, and how far reading is.
fn progress<T>(batch: &Result<TailBatch<T>, RunError>) -> (bool, LiveEvent) {
    match batch {
        Ok(b) => (b.more, LiveEvent::Progress { read: b.offset, total: b.file_len }),
        Err(_) => (false, LiveEvent::Progress { read: 0, total: 0 }),
    }
}

/// A file of the run that cannot be read, said once while it lasts ([`LiveEvent::Skipped`]), and said again
/// readable when it is.
#[derive(Debug)]
struct SkipOnce {
    file: &'static str,
    last: Option<String>,
}

impl SkipOnce {
    fn new(file: &'static str) -> SkipOnce {
        SkipOnce { file, last: None }
    }

    /// The event to send for this outcome (`None`: the file was read), if any.
    fn report(&mut self, error: Option<String>) -> Option<LiveEvent> {
        if error == self.last {
            return None;
        }
        self.last = error.clone();
        Some(LiveEvent::Skipped { file: self.file.to_string(), reason: error })
    }
}

/// The events of one tail's batch, in order.
fn batch_events<T>(
    batch: Result<TailBatch<T>, RunError>,
    file: LiveFile,
    wrap: impl FnOnce(Vec<(u64, T)>) -> LiveEvent,
    skipped: &mut SkipOnce,
    events: &mut Vec<LiveEvent>,
) {
    match batch {
        Ok(batch) => {
            events.extend(skipped.report(None));
            if batch.reset {
                events.push(LiveEvent::Reset(file));
            }
            if !batch.records.is_empty() {
                events.push(wrap(batch.records));
            }
            if !batch.errors.is_empty() {
                events.push(LiveEvent::BrokenLines(file, batch.errors));
            }
        }
        Err(err) => events.extend(skipped.report(Some(err.to_string()))),
    }
}

impl RunSource for GigscopeSource {
    fn layout(&self) -> Layout {
        Layout::Gigscope
    }

    fn poll(&mut self) -> SourcePoll {
        let mut events = Vec::new();
        self.poll_meta(&mut events);
        let [episode_errors, metric_errors, _] = &mut self.skipped;
        let (more, progress) = match self.lean.split_first_mut() {
            Some((first, others)) => {
                let mut parsers: Vec<_> = std::iter::once(&mut *first)
                    .chain(others.iter_mut())
                    .map(|lean| {
                        move |line: &str, span: LineSpan| {
                            let (episode, file) = lean.parse(line, span)?;
                            Ok(LeanRecord { line: span.line, episode, file, flight: None })
                        }
                    })
                    .collect();
                let episodes = self.episodes.poll_lines_parallel(&mut parsers);
                drop(parsers);
                // Page ids given on other threads, in the first reading's table.
                let ids: Vec<Vec<_>> = others.iter_mut().map(|other| first.take_pages_of(other)).collect();
                let pages = first.page_names();
                let seen = progress(&episodes);
                let wrap = |records: Vec<(u64, (usize, LeanRecord))>| LiveEvent::LeanEpisodes {
                    episodes: records
                        .into_iter()
                        .map(|(_, (thread, mut record))| {
                            if let Some(ids) = thread.checked_sub(1).and_then(|other| ids.get(other)) {
                                record.episode.renumber_pages(ids);
                            }
                            record
                        })
                        .collect(),
                    pages,
                };
                batch_events(episodes, LiveFile::Episodes, wrap, episode_errors, &mut events);
                seen
            }
            None => {
                // Each episode records where its line is, so that a viewer may keep its text on disk.
                let episodes = self.episodes.poll_map(|mut episode, span| {
                    episode.read_from = ReadFrom(Some(span));
                    episode
                });
                let seen = progress(&episodes);
                batch_events(episodes, LiveFile::Episodes, LiveEvent::Episodes, episode_errors, &mut events);
                seen
            }
        };
        // Metrics are read once the episodes have caught up (they are small, and come after them in time).
        if !more {
            batch_events(self.metrics.poll(), LiveFile::Metrics, LiveEvent::Metrics, metric_errors, &mut events);
            // A torn last line is picked up when its newline arrives, which the writer's next event announces;
            // one that has stopped growing is reported (the periodic re-scan sees it settle).
            if let LiveEvent::Progress { total, .. } = progress {
                self.poll_tail(total, &mut events);
            }
        }
        if more || self.behind {
            events.push(progress);
        }
        self.behind = more;
        SourcePoll { events, pending: false, more }
    }

    fn finish(&mut self) -> Vec<LiveEvent> {
        // No later poll will see the unfinished last line settle or end: it is not read, and said so now.
        let Some((_, bytes, _)) = self.tail.filter(|_| !self.tail_reported) else { return Vec::new() };
        let line = self.episodes.lines() + 1;
        let reason = format!(
            "line {line} is unfinished ({bytes} bytes, no newline yet) and was modified less than {}s ago: a writer \
             is probably still at it; not read",
            TAIL_SETTLES_AFTER.as_secs()
        );
        vec![LiveEvent::Skipped { file: EPISODES_FILE.to_string(), reason: Some(reason) }]
    }

    fn read_in_parts_of(&mut self, bytes: u64) {
        self.episodes.set_budget(bytes);
    }

    fn read_lean(&mut self, reading: LeanReading) -> bool {
        // Parsing is most of reading a large run: a thread per core, up to four.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        self.lean = vec![reading; threads];
        true
    }

    fn watches(&self, path: &Path) -> bool {
        let names = [EPISODES_FILE, METRICS_FILE, RUN_META_FILE];
        path.file_name().is_some_and(|n| names.iter().any(|name| n == *name))
    }
}
