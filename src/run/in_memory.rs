//! A run held in memory: [`Run`], built by applying a source's events to it.
//!
//! Contract: [`apply`] merges one [`LiveEvent`] into a [`Run`] and says what changed ([`Applied`]); it does no
//! I/O, so every consumer (the one-shot readers of the CLI, [`Run::open_as`]; the live watcher of the TUI,
//! `crate::live`) reads a run the same way and stays testable. An episode id met before is a broken line for
//! every reader alike, and the first episode with the id is kept: [`Run::episode_ids`] keeps the ids met, or a
//! viewer admits them itself against the ids its columns hold anyway ([`EpisodeIds::by_consumer`]), with the
//! same broken line ([`duplicate_id`]). This file sits above the sources (it opens
//! one through the registry) and below everything outside `run/`.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::{LineError, RunError};
use super::format::{Episode, MetricsRecord, RunMeta, EPISODES_FILE};
use super::group_sizes::{partial_groups, PartialGroup};
use super::layout::Layout;
use super::lean_reading::LeanReading;
use super::source::{open_source, resolve_layout, LeanRecord, LiveEvent, LiveFile, RunSource, SourceOptions, TornTail};
use super::text_on_disk::{LeanEpisode, PageClassifier, TextStore};

/// The parts [`Run::stream_as`] reads a run's episodes file (or a verl dump's step files) in, bytes. A verl row
/// builds into an episode of about 3.5 times its bytes, so a part holds about 1 MB of episodes at a time (an
/// eighth of a typical 2 MB step file).
const STREAMED_PART_BYTES: u64 = 1 << 18;

/// A whole run, read once or followed live (see [`super::source`]).
#[derive(Debug)]
pub struct Run {
    pub dir: PathBuf,
    /// The layout the run was read from.
    pub layout: Layout,
    pub meta: Option<RunMeta>,
    pub episodes: Vec<Episode>,
    /// Each episode's id → its line: a later episode with the same id is a broken line.
    pub episode_ids: EpisodeIds,
    /// Where each episode in `episodes`, then each in `lean`, was read, while the consumer admits the ids itself
    /// ([`EpisodeIds::by_consumer`]): it takes them with the episodes. Empty otherwise.
    pub to_admit: Vec<ReadAt>,
    /// Broken lines of the episodes.
    pub errors: Vec<LineError>,
    pub metrics: Vec<MetricsRecord>,
    /// Broken lines of `metrics.jsonl`.
    pub metrics_errors: Vec<LineError>,
    /// Problems reading a file, and quirks of the trainer's output the source noticed, in order.
    pub notices: Vec<String>,
    /// The files (or parts of files) whose records are missing from the run as it is now, with the reason,
    /// in the order met ([`LiveEvent::Skipped`]); each is also a notice.
    pub skipped: Vec<SkippedFile>,
    /// The episodes file's unfinished last line, once it has stopped growing ([`LiveEvent::TornTail`]).
    pub torn_tail: Option<TornTail>,
    /// Episodes the reader took in lean ([`LeanReading`]), for a viewer to take from here, and
    /// the names of the page ids their steps use.
    pub lean: Vec<LeanEpisode>,
    pub lean_pages: Vec<String>,
    /// Whose response lengths were counted from the token store ([`crate::run::tokens::count_lengths`], done
    /// by the readers that compute advantages); none by a plain read.
    pub lengths: crate::run::tokens::Lengths,
}

/// Each episode's id → the line it was first met on, kept by a 96-bit digest of the id (two xxh3 hashes of it,
/// the second cut to 32 bits) rather than by a copy of it: a viewer of a run of many short episodes held more
/// for the copies of their ids here than for anything else of an episode. An entry is 16 bytes (the digest as
/// three `u32`s and the line as a `u32`; lines past `u32::MAX`, a file of over four billion lines, are kept
/// apart as they are), against 24 for a 128-bit digest and a `u64` line. Two different ids are taken for one
/// with a chance of about 2⁻⁹⁶ a pair: about 10⁻¹⁷ for a run of 1.6 M episodes, 10⁻¹³ for one of 100 M.
#[derive(Debug, Default, PartialEq)]
pub struct EpisodeIds {
    lines: std::collections::HashMap<[u32; 3], u32, foldhash::fast::FixedState>,
    /// The ids first met past line `u32::MAX`.
    far: std::collections::HashMap<[u32; 3], u64, foldhash::fast::FixedState>,
    keeping: Keeping,
}

/// Whether an [`EpisodeIds`] keeps the ids met.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum Keeping {
    #[default]
    Kept,
    /// The source's ids are unique by construction ([`RunSource::ids_unique`]): none is kept, and none is met
    /// twice.
    Unique,
    /// The consumer admits each episode itself, against the ids it keeps anyway (a viewer's columns): none is
    /// kept here, and where each episode was read is left for it in [`Run::to_admit`].
    ByConsumer,
}

/// Where an episode was read ([`Run::to_admit`]): its line, and the file it names, as a broken line names them.
#[derive(Clone, Debug, PartialEq)]
pub struct ReadAt {
    pub line: u64,
    pub file: Option<Arc<str>>,
}

impl EpisodeIds {
    /// The map for the ids `source` delivers: one that keeps none where they are unique by construction (a
    /// verl dump's, a TRL log's), where it would be most of what a reader of many short rows holds.
    pub fn for_source(source: &dyn RunSource) -> EpisodeIds {
        let keeping = if source.ids_unique() { Keeping::Unique } else { Keeping::Kept };
        EpisodeIds { keeping, ..EpisodeIds::default() }
    }

    /// A map that keeps no id: the consumer admits each episode itself ([`Run::to_admit`], [`duplicate_id`]).
    pub fn by_consumer() -> EpisodeIds {
        EpisodeIds { keeping: Keeping::ByConsumer, ..EpisodeIds::default() }
    }

    /// Whether the ids met are kept here (neither unique by construction nor admitted by the consumer).
    pub fn kept(&self) -> bool {
        self.keeping == Keeping::Kept
    }

    fn digest(id: &str) -> [u32; 3] {
        use twox_hash::XxHash3_64;
        let (a, b) = (XxHash3_64::oneshot(id.as_bytes()), XxHash3_64::oneshot_with_seed(ID_SEED, id.as_bytes()));
        [a as u32, (a >> 32) as u32, b as u32]
    }

    /// The line `id` was first met on.
    pub fn get(&self, id: &str) -> Option<u64> {
        if !self.kept() {
            return None;
        }
        let digest = EpisodeIds::digest(id);
        self.lines.get(&digest).map(|&line| u64::from(line)).or_else(|| self.far.get(&digest).copied())
    }

    pub fn contains_key(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// `id` met on `line` (a later line for an id met before replaces it).
    pub fn insert(&mut self, id: &str, line: u64) {
        if !self.kept() {
            return;
        }
        let digest = EpisodeIds::digest(id);
        match u32::try_from(line) {
            Ok(line) => {
                self.far.remove(&digest);
                self.lines.insert(digest, line);
            }
            Err(_) => {
                self.lines.remove(&digest);
                self.far.insert(digest, line);
            }
        }
    }

    pub fn reserve(&mut self, more: usize) {
        if self.kept() {
            self.lines.reserve(more);
        }
    }

    pub fn clear(&mut self) {
        self.lines.clear();
        self.far.clear();
    }
}

/// The seed of the second of an id's two hashes (any seed but the first's, 0).
const ID_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// A file, or a part of one, whose records could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedFile {
    /// Relative to the run directory.
    pub file: String,
    pub reason: String,
}

impl std::fmt::Display for SkippedFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.file, self.reason)
    }
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
    apply_handing_back(run, event, &mut drop)
}

/// An episode [`apply`] refused (its id was met before), handed back by [`apply_handing_back`] so that its
/// caller chooses the thread that frees it: made on a reader's thread, it is best freed away from a viewer's.
#[derive(Debug)]
pub enum Refused {
    Parsed(Box<Episode>),
    Lean(LeanEpisode),
}

/// [`apply`], each episode it refuses handed to `refused` instead of dropped.
pub fn apply_handing_back(run: &mut Run, event: LiveEvent, refused: &mut dyn FnMut(Refused)) -> Applied {
    let mut applied = Applied { new_episodes: run.episodes.len()..run.episodes.len(), ..Applied::default() };
    match event {
        LiveEvent::Reset(LiveFile::Episodes) => {
            run.episodes.clear();
            run.lean.clear();
            run.episode_ids.clear();
            run.to_admit.clear();
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
                let file = episode.source_file();
                if admit(run, &episode.id, line, file, &mut applied, || file.map(Arc::from)) {
                    run.episodes.push(episode);
                } else {
                    refused(Refused::Parsed(Box::new(episode)));
                }
            }
            applied.new_episodes = start..run.episodes.len();
        }
        LiveEvent::LeanEpisodes { episodes, pages } => {
            for LeanRecord { line, episode, file, .. } in episodes {
                if admit(run, &episode.id, line, file.as_deref(), &mut applied, || file.clone()) {
                    run.lean.push(episode);
                } else {
                    refused(Refused::Lean(episode));
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
        LiveEvent::Skipped { file, reason } => {
            // What was said of the file before is no longer so: its note goes with it.
            let stale: Vec<String> = run.skipped.iter().filter(|s| s.file == file).map(ToString::to_string).collect();
            run.notices.retain(|n| !stale.contains(n));
            run.skipped.retain(|s| s.file != file);
            if let Some(reason) = reason {
                let skipped = SkippedFile { file, reason };
                run.notices.push(skipped.to_string());
                applied.errors.push(skipped.to_string());
                run.skipped.push(skipped);
            }
        }
        LiveEvent::TornTail(tail) => {
            if let Some(tail) = &tail {
                run.notices.push(tail.to_string());
                applied.errors.push(tail.to_string());
            }
            run.torn_tail = tail;
        }
        LiveEvent::Progress { read, total } => applied.progress = Some((read, total)),
    }
    applied
}

/// Whether the episode `id` on `line` (of `file`) joins the run: an id met before is a broken line, for every
/// reader alike (validate, stats, the TUI), and the first episode with the id is kept, as the one any reference
/// to the id meant first. Where the consumer admits the ids itself, every episode joins here, and where it was
/// read is left for the consumer (the file as `shared_file` gives it, asked only then).
fn admit(
    run: &mut Run,
    id: &str,
    line: u64,
    file: Option<&str>,
    applied: &mut Applied,
    shared_file: impl FnOnce() -> Option<Arc<str>>,
) -> bool {
    if let Some(first) = run.episode_ids.get(id) {
        run.errors.push(duplicate_id(id, line, file, first));
        applied.broken_lines += 1;
        return false;
    }
    run.episode_ids.insert(id, line);
    if run.episode_ids.keeping == Keeping::ByConsumer {
        run.to_admit.push(ReadAt { line, file: shared_file() });
    }
    true
}

/// The broken line of the episode `id` on `line` (of `file`), whose id was first met on line `first`.
pub fn duplicate_id(id: &str, line: u64, file: Option<&str>, first: u64) -> LineError {
    let reason = format!("duplicate episode id {id:?} (first on line {first})");
    LineError { file: file.map(str::to_owned), line, reason }
}

/// Poll `source` until nothing complete is left unread (a large file arrives in several parts), applying
/// every event to `run`. The source may be polled again later (a watcher goes on from here).
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

/// [`read_all`] for a reader that reads once: then what a writer may still be at is delivered as far as it
/// is complete, and what is left unread is said ([`RunSource::finish`]).
pub fn read_once(source: &mut dyn RunSource, run: &mut Run) {
    read_all(source, run);
    for event in source.finish() {
        apply(run, event);
    }
}

impl Run {
    /// Read the run in `dir` once, in whatever layout it is (`from` forces one). A directory holding none
    /// of the layouts' files, or a gigscope run without its episodes file, is an error naming what was looked
    /// for; a damaged `run.json` (optional) is not: the run reads without it, and [`Run::skipped`] says so.
    pub fn open_as(dir: &Path, from: Option<Layout>, options: &SourceOptions) -> Result<Run, RunError> {
        let layout = resolve_layout(dir, from, false)?;
        if layout == Layout::Gigscope {
            check_episodes_file(dir)?;
        }
        let mut source = open_source(dir, layout, options)?;
        let mut run = Run::empty_for(dir, layout, source.as_ref());
        read_once(source.as_mut(), &mut run);
        Ok(run)
    }

    /// [`Run::open_as`] without holding the episodes: each batch of episodes that joins the run (duplicate ids
    /// refused as every reader refuses them) is handed to `each` as it is read, and not kept. Memory grows with
    /// a part of the run (a part of the episodes file, a step file: the sources deliver a run in parts) and
    /// with the episode ids met ([`EpisodeIds`]: a digest and a line, about 16 bytes an episode; none kept for a
    /// layout whose ids are unique by construction, [`RunSource::ids_unique`]), not with the run. Everything
    /// else is kept in the run returned as the whole read keeps it (`run.json`, broken lines, metrics, notices,
    /// skipped files, a torn tail); its `episodes` stay empty. A run whose files are replaced while it is read is
    /// an error: what was handed out cannot be taken back.
    pub fn stream_as(
        dir: &Path,
        from: Option<Layout>,
        options: &SourceOptions,
        mut each: impl FnMut(&Run, Vec<Episode>),
    ) -> Result<Run, RunError> {
        let layout = resolve_layout(dir, from, false)?;
        if layout == Layout::Gigscope {
            check_episodes_file(dir)?;
        }
        let mut source = open_source(dir, layout, options)?;
        source.read_in_parts_of(STREAMED_PART_BYTES);
        let mut run = Run::empty_for(dir, layout, source.as_ref());
        let mut take = |run: &mut Run, event: LiveEvent| {
            let applied = apply(run, event);
            if applied.episodes_reset {
                return Err(RunError::ChangedWhileRead(dir.to_path_buf()));
            }
            if !run.episodes.is_empty() {
                let episodes = std::mem::take(&mut run.episodes);
                each(run, episodes);
            }
            Ok(())
        };
        loop {
            let poll = source.poll();
            for event in poll.events {
                take(&mut run, event)?;
            }
            if !poll.more {
                break;
            }
        }
        for event in source.finish() {
            take(&mut run, event)?;
        }
        Ok(run)
    }

    /// Read the gigscope-run/1 directory `dir` once: `run.json` (optional), `episodes.jsonl` (required) and
    /// `metrics.jsonl` (optional).
    pub fn open(dir: &Path) -> Result<Run, RunError> {
        Run::open_as(dir, Some(Layout::Gigscope), &SourceOptions::default())
    }

    /// [`Run::empty`] for what `source` delivers: its map of ids keeps none where they are unique by
    /// construction ([`EpisodeIds::for_source`]).
    pub fn empty_for(dir: &Path, layout: Layout, source: &dyn RunSource) -> Run {
        Run { episode_ids: EpisodeIds::for_source(source), ..Run::empty(dir, layout) }
    }

    /// A run with nothing read yet.
    pub fn empty(dir: &Path, layout: Layout) -> Run {
        Run {
            dir: dir.to_path_buf(),
            layout,
            meta: None,
            episodes: Vec::new(),
            episode_ids: Default::default(),
            to_admit: Vec::new(),
            errors: Vec::new(),
            metrics: Vec::new(),
            metrics_errors: Vec::new(),
            notices: Vec::new(),
            skipped: Vec::new(),
            torn_tail: None,
            lean: Vec::new(),
            lean_pages: Vec::new(),
            lengths: Default::default(),
        }
    }
}

/// The episodes file of the gigscope run in `dir` is there and is a file (through any symbolic links): a
/// directory, a symbolic link that leads nowhere or round in a loop is said as what it is, not as missing.
pub fn check_episodes_file(dir: &Path) -> Result<(), RunError> {
    let path = dir.join(EPISODES_FILE);
    match std::fs::metadata(&path) {
        Ok(meta) if meta.is_file() => Ok(()),
        Ok(meta) => {
            Err(RunError::NotAFile { kind: if meta.is_dir() { "a directory" } else { "a special file" }, path })
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => match std::fs::symlink_metadata(&path) {
            Ok(_) => Err(RunError::NotAFile { kind: "a symbolic link to nothing", path }),
            Err(_) => Err(RunError::NoEpisodes(dir.to_path_buf())),
        },
        Err(err) => Err(RunError::io(path)(err)),
    }
}

impl LeanReading {
    /// Episodes whose text is read back through `store`; the page anchor of steps without a recorded page
    /// from `classifier_of` the run (the layer that knows environments gives it), and again from the run's new
    /// description whenever its `run.json` changes ([`LeanReading::described`]).
    pub fn new(store: TextStore, classifier_of: fn(&Run) -> Option<PageClassifier>, run: &Run) -> LeanReading {
        let (dir, layout) = (run.dir.clone(), run.layout);
        let of_meta = move |meta: Option<&RunMeta>| {
            let mut described = Run::empty(&dir, layout);
            described.meta = meta.cloned();
            classifier_of(&described)
        };
        LeanReading::with_classifier(store, std::sync::Arc::new(of_meta), classifier_of(run))
    }
}

impl Run {
    /// The run's partial groups ([`partial_groups`], under the group sizes its `run.json` records).
    pub fn partial_groups(&self) -> Vec<PartialGroup> {
        let sizes = self.meta.as_ref().map(RunMeta::group_sizes).unwrap_or_default();
        partial_groups(self.episodes.iter().map(|e| (e.group.as_str(), e.iteration)), &sizes)
    }
}

#[cfg(test)]
mod tests {
    use super::EpisodeIds;

    #[test]
    fn lines_past_u32_are_kept_as_they_are() {
        let far = u64::from(u32::MAX) + 7;
        let mut ids = EpisodeIds::default();
        ids.insert("a", 3);
        ids.insert("b", far);
        assert_eq!((ids.get("a"), ids.get("b"), ids.get("c")), (Some(3), Some(far), None));
        ids.insert("b", 4);
        assert_eq!(ids.get("b"), Some(4));
        assert!(ids.far.is_empty());
    }
}
