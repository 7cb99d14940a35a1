//! gigscope-run/1: `episodes.jsonl` and `metrics.jsonl` tailed line by line, `run.json` compared by content.

use std::path::{Path, PathBuf};

use super::events::{ErrorOnce, LeanRecord, LiveEvent, LiveFile, RunSource, SourcePoll};
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
    Ok(dir.join(EPISODES_FILE).exists() || dir.join(RUN_META_FILE).exists())
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
    /// Lasting problems of episodes, metrics and run.json, each reported once.
    errors: [ErrorOnce; 3],
    /// The last poll stopped at the read budget (or there was none yet): the next one reports progress even
    /// if it catches up, so a reader that waits for the first read to end always hears of it.
    behind: bool,
    /// Episodes taken in lean as they are parsed, when the reader asked for it ([`RunSource::read_lean`]): one
    /// reading per parsing thread, the first one's page table the one the events give.
    lean: Vec<LeanReading>,
}

/// Bytes of `episodes.jsonl` read per poll: a large run arrives in parts a viewer shows as they come.
pub const EPISODES_PART_BYTES: u64 = 16 << 20;

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
            errors: Default::default(),
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
        match read_meta(&self.dir) {
            Ok(meta) => {
                events.extend(self.errors[2].report(None));
                self.lean.iter_mut().for_each(|lean| lean.described(meta.as_ref()));
                events.push(LiveEvent::Meta(meta.map(Box::new)));
            }
            Err(err) => events.extend(self.errors[2].report(Some(err.to_string()))),
        }
    }
}

/// Whether a batch stopped with more to read, and how far reading is.
fn progress<T>(batch: &Result<TailBatch<T>, RunError>) -> (bool, LiveEvent) {
    match batch {
        Ok(b) => (b.more, LiveEvent::Progress { read: b.offset, total: b.file_len }),
        Err(_) => (false, LiveEvent::Progress { read: 0, total: 0 }),
    }
}

/// The events of one tail's batch, in order.
fn batch_events<T>(
    batch: Result<TailBatch<T>, RunError>,
    file: LiveFile,
    wrap: impl FnOnce(Vec<(u64, T)>) -> LiveEvent,
    errors: &mut ErrorOnce,
    events: &mut Vec<LiveEvent>,
) {
    match batch {
        Ok(batch) => {
            events.extend(errors.report(None));
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
        Err(err) => events.extend(errors.report(Some(err.to_string()))),
    }
}

impl RunSource for GigscopeSource {
    fn layout(&self) -> Layout {
        Layout::Gigscope
    }

    fn poll(&mut self) -> SourcePoll {
        let mut events = Vec::new();
        self.poll_meta(&mut events);
        let [episode_errors, metric_errors, _] = &mut self.errors;
        let (more, progress) = match self.lean.split_first_mut() {
            Some((first, others)) => {
                let mut parsers: Vec<_> = std::iter::once(&mut *first)
                    .chain(others.iter_mut())
                    .map(|lean| {
                        move |line: &str, span: LineSpan| {
                            let (episode, file) = lean.parse(line, span)?;
                            Ok(LeanRecord { line: span.line, episode, file })
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
        }
        if more || self.behind {
            events.push(progress);
        }
        self.behind = more;
        // A torn last line is picked up when its newline arrives, which the writer's next event announces.
        SourcePoll { events, pending: false, more }
    }

    fn read_lean(&mut self, reading: LeanReading) {
        // Parsing is most of reading a large run: a thread per core, up to four.
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
        self.lean = vec![reading; threads];
    }

    fn watches(&self, path: &Path) -> bool {
        let names = [EPISODES_FILE, METRICS_FILE, RUN_META_FILE];
        path.file_name().is_some_and(|n| names.iter().any(|name| n == *name))
    }
}
