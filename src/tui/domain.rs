//! The loaded run and what is derived from it under the current settings: the advantage table, the
//! per-iteration summaries, the anchor groupings made so far and the policy that reuses them. Nothing here
//! knows about the screen, the keys or the selection: [`super::state::State`] holds a [`Domain`] beside the UI
//! state and keeps its selection valid when the domain changes.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::mpsc::Sender;
use std::sync::{Arc, OnceLock};

use crate::advantage::explain::{explain, Explanation};
use crate::advantage::stats::{
    compare_stored_over, count_step_group_sizes, AdvantageQuantiles, GrowingQuantiles, SliceStats, StatsBy,
};
use crate::advantage::{
    compute_grouped, group_keyed, group_lean, recompute, regroup, unrecorded_states, AdvantageOverrides,
    AdvantageSettings, AdvantageTable, AnchorGrouping, AnchorMode, KeyedAnchor, RowRef, SimilarityJob,
};
use crate::live::{Applied, LiveEvent, LiveStatus, Refused};
use crate::run::bursts::{burst_at, burst_spans, marks_tell, BurstSpan};
use crate::run::cache::{Cached, CachedHead};
use crate::run::text_on_disk::{LeanEpisode, PageIds, TextError, TextStore};
use crate::run::tokens::{count_lengths, Lengths};
use crate::run::{
    duplicate_id, Episode, EpisodeIds, LeanEpisodeRef, LeanEpisodes, LineError, ReadAt, Run, RunMeta, EPISODES_FILE,
};

/// Where an episode belongs in the run's summaries: a training iteration, or the play bucket (groups played in
/// the TUI, by hand or by the policy), which the training charts leave out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Bucket {
    Iteration(i64),
    Play,
}

/// The key a played episode carries (`"source": "play"`), so that it is kept apart from training iterations.
pub const SOURCE_KEY: &str = "source";
pub const PLAY_SOURCE: &str = "play";

/// Whether `episode` was played in the TUI: it says so (`"source": "play"`), or it is one of the `play-goal-…`
/// groups written before episodes said so.
pub fn is_played(episode: LeanEpisodeRef<'_>) -> bool {
    episode.source() == Some(PLAY_SOURCE) || episode.group.starts_with("play-goal-")
}

pub fn bucket_of(episode: LeanEpisodeRef<'_>) -> Bucket {
    if is_played(episode) {
        Bucket::Play
    } else {
        Bucket::Iteration(episode.iteration)
    }
}

/// One row of the run overview: an iteration (or the play bucket) and the engine's statistics of it.
#[derive(Clone, Debug, PartialEq)]
pub struct IterationStats {
    /// The iteration number (0 for the play bucket, whose `bucket` says so).
    pub iteration: i64,
    pub bucket: Bucket,
    /// Its episodes, its episode groups (those whose first episode is in it) and their statistics.
    pub stats: SliceStats,
    /// The quantiles of A_E, A_S and A over its episodes' steps; `None` when they have no step.
    pub advantages: Option<AdvantageQuantiles>,
}

impl IterationStats {
    pub fn is_play(&self) -> bool {
        self.bucket == Bucket::Play
    }

    /// `3`, or `play`.
    pub fn label(&self) -> String {
        match self.bucket {
            Bucket::Iteration(i) => i.to_string(),
            Bucket::Play => "play".into(),
        }
    }
}

/// Everything computed from the episodes under the current settings.
#[derive(Clone, Debug, Default)]
pub struct Derived {
    pub table: AdvantageTable,
    /// The settings `table` was computed with: the user's, except for the anchor mode while a new grouping is
    /// being computed in the background.
    pub settings: AdvantageSettings,
    /// Training iterations in order, then the play bucket (if any episode was played).
    pub iterations: Vec<IterationStats>,
    /// Step-group size → number of step groups of that size (the engine's statistics).
    pub size_histogram: BTreeMap<usize, usize>,
    /// Largest |trainer-recorded − recomputed| advantage over steps that carry one (the engine's comparison).
    pub max_trainer_diff: Option<f64>,
    /// Why the grouping the settings ask for could not be made (its anchors' text could not be read back).
    pub read_error: Option<String>,
    /// Under state anchors, the steps that record no state and so fell back to their anchor and step
    /// ([`crate::advantage::unrecorded_states`]); 0 under the other modes.
    pub state_fallbacks: usize,
    /// The per-bucket sums `iterations` are made from, kept so that an appended part is taken in alone.
    by_bucket: StatsBy<Bucket>,
    /// Each bucket's episodes, and the quantiles of their advantages.
    bucket_episodes: BTreeMap<Bucket, EpisodeRuns>,
    quantiles: BTreeMap<Bucket, Option<AdvantageQuantiles>>,
    /// The advantages of the buckets the last appended part added to (a live run's iteration being written),
    /// in order: the next part to add to one of them makes its quantiles exact at the cost of the part, where
    /// computing them again went over every step of the bucket at every part. Kept while parts keep coming
    /// ([`Derived::release_growing`]).
    growing: BTreeMap<Bucket, GrowingQuantiles>,
}

/// Equal when everything derived is: the advantages kept in order for the growing buckets' quantiles are a
/// way to compute them, not part of them.
impl PartialEq for Derived {
    fn eq(&self, other: &Derived) -> bool {
        let Derived {
            table,
            settings,
            iterations,
            size_histogram,
            max_trainer_diff,
            read_error,
            state_fallbacks,
            by_bucket,
            bucket_episodes,
            quantiles,
            growing: _,
        } = self;
        *table == other.table
            && *settings == other.settings
            && *iterations == other.iterations
            && *size_histogram == other.size_histogram
            && *max_trainer_diff == other.max_trainer_diff
            && *read_error == other.read_error
            && *state_fallbacks == other.state_fallbacks
            && *by_bucket == other.by_bucket
            && *bucket_episodes == other.bucket_episodes
            && *quantiles == other.quantiles
    }
}

impl Derived {
    /// Everything derived from `episodes` under `settings`. Should the anchors' text of a similarity grouping no
    /// longer be readable (the file changed under the viewer, which the watcher is about to report), the exact
    /// grouping stands in until the run is read again, and [`Derived::read_error`] says so.
    pub fn build(episodes: &LeanEpisodes, settings: &AdvantageSettings) -> Derived {
        match group_lean(episodes, settings.anchor) {
            Ok(grouping) => Derived::from_table(episodes, compute_grouped(episodes, &grouping, settings), *settings),
            Err(err) => {
                let exact = AdvantageSettings { anchor: AnchorMode::Exact, ..*settings };
                let grouping = group_keyed(episodes, KeyedAnchor::Exact);
                let table = compute_grouped(episodes, &grouping, &exact);
                Derived {
                    read_error: Some(format!("anchor grouping: {err}")),
                    ..Derived::from_table(episodes, table, exact)
                }
            }
        }
    }

    /// After episodes were appended to `episodes` (those from `old_len` on): when every new episode belongs
    /// to a group that did not exist before, only the new episodes are computed and their table appended
    /// (episode groups never influence each other); otherwise everything is recomputed. This keeps a live
    /// run that writes whole groups at a time fast however large it grows.
    pub fn extend(self, episodes: &LeanEpisodes, old_len: usize, settings: &AdvantageSettings) -> Derived {
        // The table holds the groups of the episodes before `old_len`, numbered as the columns number them.
        let known = |e: usize| episodes.group_ordinal(e) < self.table.episode_groups.len();
        if old_len > episodes.len() || (old_len..episodes.len()).any(known) {
            return Derived::build(episodes, settings);
        }
        let appended = episodes.slice(old_len..episodes.len());
        let Ok(grouping) = group_lean(&appended, settings.anchor) else {
            return Derived::build(episodes, settings);
        };
        let mut derived = Derived { read_error: None, settings: *settings, ..self };
        let anchor_groups_before = derived.table.anchor_groups.len();
        derived.table.append(compute_grouped(&appended, &grouping, settings));
        derived.take_in(episodes, old_len, anchor_groups_before);
        derived
    }

    /// The summaries shown beside the table: the engine's run statistics, and per-iteration sums.
    pub(crate) fn from_table(episodes: &LeanEpisodes, table: AdvantageTable, settings: AdvantageSettings) -> Derived {
        let mut derived = Derived { table, settings, ..Derived::default() };
        derived.take_in(episodes, 0, 0);
        derived
    }

    /// Bring the summaries up to date with the episodes from `old_len` on and the table's anchor groups from
    /// `old_anchor_groups` on (appended in new episode groups): the cost is the appended part's, whatever the size
    /// of the run before it.
    fn take_in(&mut self, episodes: &LeanEpisodes, old_len: usize, old_anchor_groups: usize) {
        if self.settings.anchor == AnchorMode::State {
            self.state_fallbacks += unrecorded_states(&episodes.slice(old_len..episodes.len()));
        }
        count_step_group_sizes(&mut self.size_histogram, &self.table.anchor_groups, old_anchor_groups);
        let appended = compare_stored_over(episodes, &self.table, old_len..episodes.len());
        // The first largest difference stands, as `compare_stored` keeps it over the whole run.
        match (self.max_trainer_diff, appended.and_then(|c| c.largest).map(|l| l.abs_diff)) {
            (Some(before), Some(now)) if now > before => self.max_trainer_diff = Some(now),
            (None, now) => self.max_trainer_diff = now,
            _ => {}
        }
        self.by_bucket.extend(episodes, &self.table, |e| bucket_of(episodes.at(e)));
        let mut appended: BTreeMap<Bucket, EpisodeRuns> = BTreeMap::new();
        // By index: skipping the episodes before `old_len` through `iter()` would build each of them.
        for e in old_len..episodes.len() {
            appended.entry(bucket_of(episodes.at(e))).or_default().push(e);
        }
        let mut growing = BTreeMap::new();
        for (bucket, new) in appended {
            let members = self.bucket_episodes.entry(bucket).or_default();
            let quantiles = if old_len == 0 {
                // The whole run at once: order statistics selected, nothing kept.
                members.append(&new);
                AdvantageQuantiles::of_episodes(&self.table, members.iter())
            } else {
                // The rows before a part of new episode groups stay as they were: what was kept in order
                // takes in the part's alone.
                let mut values = self.growing.remove(&bucket).unwrap_or_else(|| {
                    let mut values = GrowingQuantiles::default();
                    values.extend(&self.table, members.iter());
                    values
                });
                values.extend(&self.table, new.iter());
                members.append(&new);
                let quantiles = values.quantiles();
                growing.insert(bucket, values);
                quantiles
            };
            self.quantiles.insert(bucket, quantiles);
        }
        self.growing = growing;
        self.list_iterations();
    }

    /// Whether the advantages of the buckets being added to are kept ([`Derived::release_growing`]).
    pub fn holds_growing(&self) -> bool {
        !self.growing.is_empty()
    }

    /// Free the advantages kept for the buckets being added to (24 bytes a step of them), as the viewer does
    /// once the run has been read and its writer pauses: the next part added to such a bucket takes them from
    /// its rows again.
    pub fn release_growing(&mut self) {
        self.growing = BTreeMap::new();
    }

    fn list_iterations(&mut self) {
        // Training iterations in order, then the play bucket.
        self.iterations = self
            .by_bucket
            .stats()
            .into_iter()
            .map(|(bucket, stats)| IterationStats {
                iteration: match bucket {
                    Bucket::Iteration(i) => i,
                    Bucket::Play => 0,
                },
                bucket,
                stats,
                advantages: self.quantiles.get(&bucket).copied().flatten(),
            })
            .collect();
    }

    /// The training iterations (the play bucket left out), for the charts.
    pub fn training_iterations(&self) -> impl Iterator<Item = &IterationStats> {
        self.iterations.iter().filter(|i| !i.is_play())
    }
}

/// A bucket's episodes (indices, ascending) as runs of consecutive indices: a run's iterations come one after
/// another, so an iteration is one run, where a list held 4 bytes an episode and its room.
#[derive(Clone, Debug, Default, PartialEq)]
struct EpisodeRuns {
    runs: Vec<std::ops::Range<u32>>,
}

impl EpisodeRuns {
    /// Episode `e`, after every episode in it.
    fn push(&mut self, e: usize) {
        let e = e as u32;
        self.join(e..e + 1);
    }

    /// `more`'s episodes, all after every episode in it.
    fn append(&mut self, more: &EpisodeRuns) {
        for run in &more.runs {
            self.join(run.clone());
        }
    }

    /// The episodes of `run`, all after every episode in it: the last run grows where `run` continues it.
    fn join(&mut self, run: std::ops::Range<u32>) {
        match self.runs.last_mut() {
            Some(last) if last.end == run.start => last.end = run.end,
            _ => self.runs.push(run),
        }
    }

    fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.runs.iter().flat_map(|run| run.start as usize..run.end as usize)
    }
}

/// Work for the thread that frees what the viewer parsed and no longer needs, and what a reader's thread made
/// and the viewer has taken in. The viewer's thread frees no small block a reader's thread made: glibc would
/// put it in the viewer thread's cache of free blocks, hand it out for the viewer's next block of its size,
/// and grow such a block in the reader's heap, leaving another of the reader's blocks in the cache; what the
/// viewer keeps (its groups' names and member lists) then spread over the reader's heap among the text it had
/// parsed and freed, and kept its pages taken (about 10 MB after opening a verl dump of 100,000 rows).
/// `tests/tui/thread_frees.rs` counts such frees.
enum Release {
    /// Parsed episodes whose text stays on disk: a part's worth is hundreds of thousands of strings, whose
    /// freeing would hold the viewer's thread for milliseconds of every merge.
    Free(Vec<Episode>),
    /// Lean episodes made on a reader's thread, copied since, and the page names that came with them.
    FreeLean(Vec<LeanEpisode>, Vec<String>),
    /// An event of a few small parts (settings, notices, broken lines, metrics) as a reader's thread made it,
    /// copied since.
    FreeEvent(LiveEvent),
    /// Episodes the run refused (an id met before), as a reader's thread made them.
    FreeRefused(Vec<Refused>),
    /// Give the freed heap back to the system once what was sent before is freed, then say so (if asked).
    Trim(Option<std::sync::mpsc::SyncSender<()>>),
}

/// The items of `carried`, in a vector made on this thread (`carried`'s own, emptied, may then go to the release
/// thread: taking it whole would have this thread free it).
fn moved_here<T>(carried: &mut Vec<T>) -> Vec<T> {
    let mut here = Vec::with_capacity(carried.len());
    here.append(carried);
    here
}

/// Hand `work` to the release thread (started on first use), in order; on this thread should it not start.
fn release(work: Release) {
    static RELEASE: OnceLock<Option<Sender<Release>>> = OnceLock::new();
    let thread = RELEASE.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel::<Release>();
        let run = move || rx.into_iter().for_each(carry_out);
        std::thread::Builder::new().name("gigscope-release".into()).spawn(run).ok().map(|_| tx)
    });
    match thread {
        Some(tx) => {
            if let Err(unsent) = tx.send(work) {
                carry_out(unsent.0);
            }
        }
        None => carry_out(work),
    }
}

fn carry_out(work: Release) {
    match work {
        Release::Free(parsed) => drop(parsed),
        Release::FreeLean(lean, pages) => drop((lean, pages)),
        Release::FreeEvent(event) => drop(event),
        Release::FreeRefused(refused) => drop(refused),
        Release::Trim(done) => {
            release_freed_heap();
            if let Some(done) = done {
                let _ = done.send(());
            }
        }
    }
}

/// Wait until what was handed to the release thread so far is freed and the freed heap given back to the
/// system: the memory a viewer holds once it has settled after reading a run (the viewer itself asks for this
/// when its reader has caught up, and goes on meanwhile).
pub fn settle_freed_memory() {
    // A channel with its room made here: one that made it on the release thread's send would have this
    // thread free it (see [`Release`]).
    let (done, freed) = std::sync::mpsc::sync_channel(1);
    release(Release::Trim(Some(done)));
    let _ = freed.recv();
}

/// Have the allocator give large blocks back to the system as soon as they are freed, once per process: glibc
/// otherwise raises the size from which it maps blocks apart, and the free space it keeps at a heap's top, to
/// that of the largest block freed (a reader's part of `episodes.jsonl`, megabytes), so those blocks come from the
/// reading threads' heaps, whose free top [`release_freed_heap`] cannot give back (`malloc_trim` shortens only
/// the main heap's): tens of megabytes stayed taken after a run was read. Fixed thresholds keep both from
/// rising. What a reading thread's heap keeps at its top stays taken once the run is read (nothing frees there
/// again to give it back), so it is kept small: 1 MB, a part of a run as the readers deliver it; 4 MB kept that
/// much more in a viewer of a 100 MB verl dump, while a quarter of 1 MB gave back no more and took longer.
fn give_large_blocks_back() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: mallopt only changes the allocator's thresholds; it may be called at any time.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, MAPPED_APART);
                libc::mallopt(libc::M_TRIM_THRESHOLD, KEPT_AT_TOP);
            }
        });
    }
}

/// The size from which the allocator maps a block apart, and the most free memory it keeps at a heap's top.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MAPPED_APART: i32 = 2 << 20;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const KEPT_AT_TOP: i32 = 1 << 20;

/// Give the memory freed after reading a run (the parsed parts' text, the engine's scratch) back to the system.
/// glibc keeps freed heap for reuse, so a viewer that has just read a large run would otherwise stay as large as
/// the reading was at its peak.
fn release_freed_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::os::raw::c_int;
        }
        // SAFETY: malloc_trim only returns free heap pages to the system; it may be called at any time.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// How many anchor groupings [`Domain::groupings`] keeps (about 12 bytes per step each).
const KEPT_GROUPINGS: usize = 4;

/// A grouping for the app to compute off the UI thread, answered with `Msg::Grouped`.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupingRequest {
    pub episodes_version: u64,
    pub job: SimilarityJob,
}

/// What became of a grouping that arrived from the background.
#[derive(Debug)]
pub enum Arrived {
    /// Kept for later (or dropped); nothing to do.
    Kept,
    /// The settings ask for it: apply them ([`Domain::apply_settings`]).
    Apply,
    /// It was made for older episodes and is still wanted: compute this one.
    Again(GroupingRequest),
}

/// The settings a run recorded in `run.json`, on top of the defaults.
pub fn recorded_settings(meta: Option<&RunMeta>) -> AdvantageSettings {
    meta.and_then(|m| m.advantage.as_ref()).map(|o| o.apply(AdvantageSettings::default())).unwrap_or_default()
}

/// The run, the settings, what they derive, and the anchor groupings kept for reuse.
///
/// The episodes are held lean ([`LeanEpisodes`]: numbers, ids, anchor hashes and where each episode's line is, by
/// column)
/// and their text stays on disk: views read the episodes they show through [`Domain::episode`]. Episodes that
/// arrive in [`Domain::run`] (what [`Domain::new`] is given, and what live events add) are moved into
/// [`Domain::episodes`] at once, so `run.episodes` is only ever a staging area.
pub struct Domain {
    /// The run as read so far (live events are merged into it), without its episodes: see [`Domain::episodes`].
    pub run: Run,
    /// The run's episodes, without their text, in file order.
    pub episodes: LeanEpisodes,
    /// Reads an episode's text back from `episodes.jsonl`.
    pub text: TextStore,
    /// The page names of the episodes' page anchors.
    pub pages: PageIds,
    pub run_name: String,
    /// The settings the run recorded (run.json), or the defaults.
    pub recorded: AdvantageSettings,
    /// The settings given when the run was opened (`gigscope RUN --scale-rewards batch ...`), over the recorded
    /// ones: what the settings are whenever the run's settings are taken anew.
    opening: AdvantageOverrides,
    pub settings: AdvantageSettings,
    pub derived: Derived,
    /// When the run last changed and how many lines were skipped as broken.
    pub live: LiveStatus,
    /// Anchor groupings made for these episodes, most recent first, so that switching back to an anchor mode
    /// needs no grouping at all.
    pub groupings: Vec<AnchorGrouping>,
    /// The anchor mode being grouped in the background (similarity on a large run).
    pub grouping_job: Option<AnchorMode>,
    /// Bumped whenever the episodes change, so a grouping made for older episodes is recognised.
    pub episodes_version: u64,
    /// The full records of the episodes the view about to be drawn shows, read back by [`Domain::show`] (from
    /// `update`, never while drawing).
    shown: HashMap<usize, Result<Arc<Episode>, TextError>>,
    /// The run's token store: its index, the shown episode's tokens ([`Domain::show`]) and the run's token
    /// summaries.
    pub tokens: super::tokens::RunTokens,
    /// Whose response lengths (DEPO's tokens per step) are the token store's counts: every episode is counted
    /// as it is taken in, the store's index read up to then.
    pub lengths: Lengths,
    /// The run's load cache, when the viewer keeps one ([`Domain::keep_load_cache`]).
    load_cache: Option<KeptCache>,
    /// Episodes taken from the load cache, not merged yet ([`Domain::merge_cached`]).
    cached: std::collections::VecDeque<LeanEpisode>,
    /// The lines of the episodes whose span does not say it (text kept in memory, or spilled to a file of its
    /// own), by index: the viewer admits the ids against its columns ([`Domain::take_episodes`]) and names the
    /// line an id was first met on. None for a gigscope run's own lines.
    lines_apart: Vec<(u32, u64)>,
    /// How many episodes the load cache being taken in holds, so that the table makes room for them once
    /// ([`AdvantageTable::reserve_for`]): growing it part by part held keys' frames back. A first read makes
    /// none: a room projected from its first parts, made while the parsing threads ran, held the viewer's thread
    /// longer than the growing it saves (not understood; the figures are in the CHANGELOG).
    expected_episodes: usize,
}

/// What reading a run's load cache needs, for a thread of its own.
pub struct LoadCache {
    root: std::path::PathBuf,
    dir: std::path::PathBuf,
    store: TextStore,
}

impl LoadCache {
    /// What the cache holds of the run, when that is still what the run's files hold, its episodes to be
    /// decoded part by part; `None` on a miss (no cache, a changed run, a damaged file), and the run is read
    /// from its files.
    pub fn load(&self) -> Option<Cached> {
        crate::run::cache::load(&self.root, &self.dir, &self.store).ok()
    }
}

/// Where a viewer keeps the run's load cache, and what the cache file holds: episodes and bytes read.
struct KeptCache {
    root: std::path::PathBuf,
    saved: Option<(usize, u64)>,
    /// The thread writing it, if one was started.
    saving: Option<std::thread::JoinHandle<()>>,
    /// A snapshot being copied for the writing thread, [`SNAPSHOT_PART`] episodes per turn of the viewer's loop
    /// (copying a large run's lean episodes at once held the viewer's thread for tens of milliseconds), and how
    /// many episodes it is to hold.
    copying: Option<(crate::run::cache::Snapshot, usize)>,
}

/// Episodes copied into a load-cache snapshot per turn of the viewer's loop: about a millisecond.
const SNAPSHOT_PART: usize = 5_000;

/// The viewer's admission of the episodes it takes, where it admits their ids itself
/// ([`EpisodeIds::by_consumer`]): an id its columns hold already is refused as every reader refuses it
/// ([`duplicate_id`]), the first episode with the id kept.
struct Admission<'a> {
    episodes: &'a mut LeanEpisodes,
    lines_apart: &'a mut Vec<(u32, u64)>,
    errors: &'a mut Vec<LineError>,
}

impl Admission<'_> {
    /// Whether the episode `id` read `at` joins the columns (each does where the viewer does not admit them).
    fn admits(&mut self, id: &str, at: Option<&ReadAt>) -> bool {
        let (Some(at), Some(first)) = (at, self.episodes.find_id(id)) else { return true };
        let line = match self.lines_apart.binary_search_by_key(&first, |&(e, _)| e as usize) {
            Ok(apart) => self.lines_apart[apart].1,
            Err(_) => self.episodes.text(first).span().map_or(0, |span| span.line),
        };
        self.errors.push(duplicate_id(id, at.line, at.file.as_deref(), line));
        false
    }

    /// Append `episode` (see [`LeanEpisodes::push`]), read `at`.
    fn push(&mut self, episode: LeanEpisodeRef<'_>, pages: &[crate::run::text_on_disk::PageId], at: Option<ReadAt>) {
        let e = self.episodes.len();
        self.episodes.push(episode, pages);
        if let Some(at) = at.filter(|at| self.episodes.text(e).span().map(|span| span.line) != Some(at.line)) {
            self.lines_apart.push((e as u32, at.line));
        }
    }
}

impl Domain {
    pub fn new(run: Run) -> Domain {
        give_large_blocks_back();
        let text = TextStore::new(&run.dir.join(EPISODES_FILE));
        let tokens = super::tokens::RunTokens::open(&run.dir);
        let mut domain = Domain {
            run,
            episodes: LeanEpisodes::default(),
            text,
            pages: PageIds::default(),
            run_name: String::new(),
            recorded: AdvantageSettings::default(),
            opening: AdvantageOverrides::default(),
            settings: AdvantageSettings::default(),
            derived: Derived::default(),
            live: LiveStatus::default(),
            groupings: Vec::new(),
            grouping_job: None,
            episodes_version: 0,
            shown: HashMap::new(),
            tokens,
            lengths: Lengths::default(),
            load_cache: None,
            cached: Default::default(),
            lines_apart: Vec::new(),
            expected_episodes: 0,
        };
        domain.take_episodes();
        if domain.run.episode_ids.kept() {
            // The viewer admits the ids against its own columns from here on, rather than keep a map of them
            // beside (a digest and a line an episode, 23 bytes with the map's room, about 6 indexed).
            domain.episodes.index_ids();
            domain.run.episode_ids = EpisodeIds::by_consumer();
        }
        domain.adopt_run();
        domain.rebuild();
        domain
    }

    /// Read the rest of the run from `tails` (all of it, for a run just started), part by part: each part's
    /// episodes are taken in lean before the next part is read. The caller rebuilds what is derived.
    pub fn read_all(&mut self, tails: &mut crate::live::Tails) {
        loop {
            let poll = tails.poll();
            self.apply_live(poll.events);
            if !poll.more {
                break;
            }
        }
        // The run is read when what it was parsed into is freed too (and the freed heap given back).
        settle_freed_memory();
        self.adopt_run();
    }

    /// The run's name, its recorded settings (which become the settings) and its broken lines, from what has
    /// been read of it.
    fn adopt_run(&mut self) {
        let run = &self.run;
        self.recorded = recorded_settings(run.meta.as_ref());
        self.settings = self.opening.apply(self.recorded);
        self.run_name = run
            .meta
            .as_ref()
            .and_then(|m| m.name.clone())
            .or_else(|| run.dir.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| run.dir.display().to_string());
        self.live.broken_lines = run.errors.len() + run.metrics_errors.len();
    }

    /// Move the episodes that arrived in `run.episodes` into [`Domain::episodes`], lean; returns where they went.
    fn take_episodes(&mut self) -> std::ops::Range<usize> {
        let start = self.episodes.len();
        // Steps that record no page anchor get the environment's (WebShop's page type of the observation).
        let page_anchor = crate::env_registry::page_anchor(&self.run);
        let classify = page_anchor.as_ref().map(|p| p.as_fn() as &dyn Fn(&str) -> &'static str);
        let (pages, text) = (&mut self.pages, &self.text);
        // Where the viewer admits the ids, where each episode was read, in order (else none).
        let mut read_at = std::mem::take(&mut self.run.to_admit).into_iter();
        let mut admission = Admission {
            episodes: &mut self.episodes,
            lines_apart: &mut self.lines_apart,
            errors: &mut self.run.errors,
        };
        let mut parsed = Vec::new();
        for episode in self.run.episodes.drain(..) {
            let at = read_at.next();
            if !admission.admits(&episode.id, at.as_ref()) {
                parsed.push(episode);
                continue;
            }
            let (lean, on_disk) = LeanEpisode::split(episode, text, pages, classify);
            admission.push(lean.view(), &[], at);
            parsed.extend(on_disk);
        }
        // Episodes the reader took in lean: their page ids are the reader's, renumbered into the viewer's. They
        // are copied into the columns here (each group's name once), and the reader's freed on the release
        // thread, with their page names: made on the reader's threads among the text they parsed, they would
        // keep most of those threads' heap pages taken once the text is freed (see [`Release`]).
        let renumber: Vec<_> = self.run.lean_pages.iter().map(|name| pages.id(name)).collect();
        let lean = std::mem::take(&mut self.run.lean);
        let lean_pages = std::mem::take(&mut self.run.lean_pages);
        for episode in &lean {
            let at = read_at.next();
            if admission.admits(&episode.id, at.as_ref()) {
                admission.push(episode.view(), &renumber, at);
            }
        }
        if !lean.is_empty() || !lean_pages.is_empty() {
            release(Release::FreeLean(lean, lean_pages));
        }
        if !parsed.is_empty() {
            release(Release::Free(parsed));
        }
        self.count_lengths(start);
        start..self.episodes.len()
    }

    /// Count the response lengths of the episodes from `start` on in the token store, its index read up to
    /// now first (the writers index a step's tokens before its episode's line).
    fn count_lengths(&mut self, start: usize) {
        if start == 0 {
            self.lengths = Lengths::default();
        }
        self.tokens.refresh();
        if let Some(store) = self.tokens.store() {
            self.lengths.add(count_lengths(store, &mut self.episodes, start));
        } else {
            self.lengths.episodes += self.episodes.len() - start;
        }
    }

    /// Merge live events into the run (see [`crate::live::apply`]); the episodes they add are taken in lean.
    /// The summary's `new_episodes` are indices into [`Domain::episodes`].
    pub fn apply_live(&mut self, events: Vec<LiveEvent>) -> Applied {
        let n = self.episodes.len();
        let mut applied = Applied { new_episodes: n..n, ..Applied::default() };
        let mut caught_up = None;
        for event in events {
            let event = match event {
                // The episodes go to the release thread once merged (`take_episodes`); the vector that carried
                // them goes now, the run taking them from one of its own.
                LiveEvent::Episodes(mut carried) => {
                    let here = moved_here(&mut carried);
                    release(Release::FreeEvent(LiveEvent::Episodes(carried)));
                    LiveEvent::Episodes(here)
                }
                LiveEvent::LeanEpisodes { episodes: mut carried, pages } => {
                    let here = moved_here(&mut carried);
                    release(Release::FreeEvent(LiveEvent::LeanEpisodes { episodes: carried, pages: Vec::new() }));
                    LiveEvent::LeanEpisodes { episodes: here, pages }
                }
                LiveEvent::Progress { .. } | LiveEvent::Reset(_) => event,
                // What the run keeps of these, and what it drops of them (a notice that is not kept, a file that
                // reads again), is a copy made here.
                small => {
                    let here = small.clone();
                    release(Release::FreeEvent(small));
                    here
                }
            };
            let mut refused = Vec::new();
            let mut one = crate::live::apply_handing_back(&mut self.run, event, &mut |r| refused.push(r));
            if !refused.is_empty() {
                release(Release::FreeRefused(refused));
            }
            caught_up =
                one.progress.filter(|&(read, total)| read == total && total > 0).map_or(caught_up, |p| Some(p.0));
            if one.episodes_reset {
                self.episodes.clear();
                self.lines_apart.clear();
                self.cached.clear();
                self.expected_episodes = 0;
                if let Some(kept) = self.load_cache.as_mut() {
                    (kept.copying, kept.saved) = (None, None);
                }
                self.text.clear();
            }
            let errors = self.run.errors.len();
            one.new_episodes = self.take_episodes();
            // The episodes the viewer refused as ids met before.
            one.broken_lines += self.run.errors.len() - errors;
            applied.absorb(one);
        }
        if applied.progress.is_some_and(|(read, total)| read == total) {
            // Grown by doubling as parts arrived, the columns would keep up to as much room again.
            self.episodes.shrink_slack();
            release(Release::Trim(None));
        }
        if let Some(read) = caught_up {
            self.save_load_cache(read);
        }
        applied
    }

    /// Keep the run's load cache ([`crate::run::cache`]) under `root`: save it whenever a read of the run catches
    /// up with new episodes. What the cache holds is taken with [`LoadCache::load`] (on another thread: a large
    /// run's cache takes a while to decode) and [`Domain::adopt_load_cache`].
    pub fn keep_load_cache(&mut self, root: std::path::PathBuf) -> LoadCache {
        self.load_cache = Some(KeptCache { root: root.clone(), saved: None, saving: None, copying: None });
        LoadCache { root, dir: self.run.dir.clone(), store: self.text.clone() }
    }

    /// Take in what the load cache held of the run, but its episodes: they arrive part by part
    /// ([`Domain::take_cached`]) and are merged part by part ([`Domain::merge_cached`]).
    pub fn adopt_load_cache(&mut self, head: CachedHead) {
        // run.json too (a few bytes), so that the watcher's first news of it changes nothing.
        self.run.meta = crate::run::read_meta(&self.run.dir).ok().flatten();
        (self.pages, self.run.errors) = (head.pages, head.errors);
        self.adopt_run();
        // Room for every episode the cache holds, made now: grown as parts arrive, these would be moved (and the
        // id map rehashed) at doubling sizes, holding the viewer's thread for up to ten milliseconds each time.
        self.cached.reserve(head.episodes);
        self.episodes.reserve(head.episodes);
        self.expected_episodes = head.episodes;
        if let Some(kept) = self.load_cache.as_mut() {
            kept.saved = Some((head.episodes, head.position.offset));
        }
    }

    /// Episodes decoded from the load cache, to be merged after those before them.
    pub fn take_cached(&mut self, episodes: Vec<LeanEpisode>) {
        self.cached.extend(episodes);
    }

    /// The load cache turned out damaged while its episodes were decoded: forget everything taken from it (the
    /// run is read from its files); the caller rebuilds what is derived.
    pub fn void_load_cache(&mut self) {
        self.cached.clear();
        self.episodes.clear();
        self.lines_apart.clear();
        (self.pages, self.run.errors) = Default::default();
        self.adopt_run();
        if let Some(kept) = self.load_cache.as_mut() {
            (kept.copying, kept.saved) = (None, None);
        }
    }

    /// Whether episodes taken from the load cache wait to be merged.
    pub fn cached_pending(&self) -> bool {
        !self.cached.is_empty()
    }

    /// Merge the next part of the episodes taken from the load cache: at most `max` (more only to end where an
    /// episode group ends); where they went in [`Domain::episodes`].
    pub fn merge_cached(&mut self, max: usize) -> std::ops::Range<usize> {
        let start = self.episodes.len();
        let cached = &self.cached;
        let end = crate::live::part_end(cached.len(), max, |i| &cached[i].group);
        for episode in self.cached.drain(..end) {
            self.episodes.push(episode.view(), &[]);
        }
        self.count_lengths(start);
        start..self.episodes.len()
    }

    /// Save the load cache of the episodes read up to `offset` (a read that caught up), unless it holds them
    /// already: copied a part at a time ([`Domain::copy_load_cache`]), then encoded and written off the viewer's
    /// thread (that takes a while for a large run, and a failure only means that the next open reads the run
    /// from its files).
    fn save_load_cache(&mut self, offset: u64) {
        let Some(kept) = self.load_cache.as_mut() else { return };
        let len = self.episodes.len();
        if kept.saved == Some((len, offset)) {
            return;
        }
        kept.saved = Some((len, offset));
        let mut episodes = LeanEpisodes::default();
        episodes.reserve(len);
        let snapshot = crate::run::cache::Snapshot {
            episodes,
            pages: self.pages.clone(),
            errors: self.run.errors.clone(),
            offset,
        };
        kept.copying = Some((snapshot, len));
        self.copy_load_cache();
    }

    /// Copy the next part of the load-cache snapshot being made, and start writing it once it is whole; whether
    /// copying is left for later turns.
    pub fn copy_load_cache(&mut self) -> bool {
        let Some(kept) = self.load_cache.as_mut() else { return false };
        let Some((snapshot, len)) = kept.copying.as_mut() else { return false };
        let (from, to) = (snapshot.episodes.len(), (snapshot.episodes.len() + SNAPSHOT_PART).min(*len));
        if to > self.episodes.len() {
            // The episodes were reset since: nothing to save.
            (kept.copying, kept.saved) = (None, None);
            return false;
        }
        snapshot.episodes.extend((from..to).map(|e| self.episodes.at(e)), &[]);
        if to < *len {
            return true;
        }
        let Some((snapshot, _)) = kept.copying.take() else { return false };
        let (root, dir) = (kept.root.clone(), self.run.dir.clone());
        let save = move || drop(crate::run::cache::save(&root, &dir, &snapshot));
        kept.saving = std::thread::Builder::new().name("gigscope-load-cache".into()).spawn(save).ok();
        false
    }

    /// Whether a load-cache snapshot is being copied.
    pub fn load_cache_copying(&self) -> bool {
        self.load_cache.as_ref().is_some_and(|kept| kept.copying.is_some())
    }

    /// Copy what is left of the load cache asked for, and wait until it is written (or has failed).
    pub fn finish_load_cache(&mut self) {
        while self.copy_load_cache() {}
        if let Some(saving) = self.load_cache.as_mut().and_then(|kept| kept.saving.take()) {
            let _ = saving.join();
        }
    }

    /// The full record of episode `e`, text and all: read back from the run's file (or kept in memory for
    /// layouts converted from other files). An error when the file no longer holds it (truncated, replaced or
    /// rewritten since it was read: the watcher is about to read the run again). This reads the file: drawing
    /// uses [`Domain::episode`] instead.
    pub fn read_episode(&self, e: usize) -> Result<Arc<Episode>, TextError> {
        self.episodes.at(e).read()
    }

    /// Read back the full records of `episodes` (those the view about to be drawn shows), keeping the ones read
    /// for an earlier frame and forgetting the rest, so that drawing reads them from memory
    /// ([`Domain::episode`]). Called by `update` after every message.
    pub fn show(&mut self, episodes: impl IntoIterator<Item = usize>) {
        let mut kept = HashMap::new();
        for e in episodes.into_iter().filter(|&e| e < self.episodes.len()) {
            // A record read for an earlier frame stands while episode `e` is still the line it was read from:
            // appends leave it, a reset that read the file again gives `e` another line (or another checksum).
            let record = match self.shown.remove(&e) {
                Some(Ok(read)) if read.read_from.0.is_some() && read.read_from.0 == self.episodes.at(e).span() => {
                    Ok(read)
                }
                _ => self.read_episode(e),
            };
            kept.insert(e, record);
        }
        self.shown = kept;
    }

    /// Episode `e`'s full record as [`Domain::show`] read it back for this frame: no I/O, for drawing.
    /// [`TextError::NotReadBack`] for an episode the view did not name.
    pub fn episode(&self, e: usize) -> Result<&Arc<Episode>, &TextError> {
        static NOT_READ_BACK: TextError = TextError::NotReadBack;
        self.shown.get(&e).map_or(Err(&NOT_READ_BACK), Result::as_ref)
    }

    /// What the run's environment can do ([`crate::env_registry::capabilities`]).
    pub fn capabilities(&self) -> crate::env::Capabilities {
        crate::env_registry::capabilities(&self.run)
    }

    pub fn settings_modified(&self) -> bool {
        self.settings != self.recorded
    }

    /// The bursts whose groups are marked ([`crate::run::bursts`]): none when marking tells nothing (no burst
    /// recorded its range, or one burst made the whole run).
    pub fn marked_bursts(&self) -> Vec<BurstSpan> {
        let spans = burst_spans(self.run.meta.as_ref());
        if marks_tell(&spans) {
            spans
        } else {
            Vec::new()
        }
    }

    /// The burst that wrote episode group `g`: the one whose part of `episodes.jsonl` holds its first episode's
    /// line.
    pub fn group_burst(&self, bursts: &[BurstSpan], g: u32) -> Option<u32> {
        if bursts.is_empty() {
            // No group has a burst then; the overview asks for every group at every frame.
            return None;
        }
        let first = self.derived.table.get_group_episodes(g as usize)?.first()? as usize;
        // The line's place alone: the overview asks for every group at every frame, and building each first
        // episode whole took most of a frame on a large run.
        let span = (first < self.episodes.len()).then(|| self.episodes.text(first))?.span()?;
        burst_at(bursts, span.offset)
    }

    /// The bursts that wrote `groups`, each once, in order.
    pub fn bursts_of(&self, bursts: &[BurstSpan], groups: &[u32]) -> Vec<u32> {
        let found: BTreeSet<u32> = groups.iter().filter_map(|&g| self.group_burst(bursts, g)).collect();
        found.into_iter().collect()
    }

    /// The settings the table is computed with: the user's, with the anchor mode the table has.
    pub fn table_settings(&self) -> AdvantageSettings {
        AdvantageSettings { anchor: self.derived.settings.anchor, ..self.settings }
    }

    /// The engine's explanation of row `r`'s advantage, under the settings the table was computed with.
    pub fn explanation(&self, r: RowRef) -> Option<Explanation> {
        explain(&self.derived.table, &self.episodes, &self.derived.settings, &self.lengths, r)
    }

    /// Open with `overrides` over the run's recorded settings (the TUI's advantage flags): the settings from now
    /// on, checked, and everything derived recomputed under them. The recorded settings stay what they are, so
    /// the settings panel marks what the flags changed and `R` puts back the run's own.
    pub fn open_with(&mut self, overrides: AdvantageOverrides) -> Result<(), crate::advantage::SettingsError> {
        let settings = overrides.apply(self.recorded);
        settings.validate()?;
        (self.opening, self.settings) = (overrides, settings);
        self.rebuild();
        Ok(())
    }

    /// Recompute everything derived (after a reset of the episodes).
    pub fn rebuild(&mut self) {
        self.episodes_changed();
        self.grouping_job = None;
        self.derived = Derived::build(&self.episodes, &self.settings);
        self.note(self.derived.read_error.clone());
        release_freed_heap();
    }

    /// A problem the views should show (reading text back failed).
    fn note(&mut self, error: Option<String>) {
        if error.is_some() {
            self.live.last_error = error;
        }
    }

    /// Recompute after a settings change, the episodes unchanged. The anchor grouping is reused when the
    /// anchor mode is unchanged or was grouped before; an exact or page grouping is made at once; a similarity
    /// grouping of a run of at least `background_steps` steps is returned as a request for the app to compute
    /// in the background, and until it arrives the numbers are recomputed over the table's present grouping
    /// (when anything else changed).
    pub fn apply_settings(&mut self, background_steps: usize) -> Option<GroupingRequest> {
        let wanted = self.settings.anchor;
        let mut anchor = self.derived.settings.anchor;
        let mut table = std::mem::take(&mut self.derived.table);
        let mut request = None;
        if wanted == anchor {
            self.grouping_job = None;
            recompute(&mut table, &self.episodes, &self.settings);
        } else {
            self.keep_grouping(table.grouping(anchor));
            let kept = self.groupings.iter().position(|g| g.mode == wanted).map(|i| self.groupings.remove(i));
            let steps = table.row_count();
            let grouping = match (kept, wanted) {
                (Some(g), _) => Some(g),
                (None, AnchorMode::Similarity(theta)) if steps >= background_steps => {
                    request = Some(self.similarity_request(theta));
                    None
                }
                (None, mode) => match group_lean(&self.episodes, mode) {
                    Ok(g) => Some(g),
                    Err(err) => {
                        self.note(Some(format!("anchor grouping: {err}")));
                        None
                    }
                },
            };
            match grouping {
                Some(grouping) => {
                    self.grouping_job = None;
                    regroup(&mut table, &self.episodes, &grouping, &self.settings);
                    anchor = wanted;
                    self.keep_grouping(grouping);
                }
                None if self.table_settings() == self.derived.settings => {
                    // Only the anchor mode changed and its grouping is on its way: the table stands as it is
                    // (on a large run, recomputing it for nothing would hold the frame back).
                    self.grouping_job = request.is_some().then_some(wanted);
                    self.derived.table = table;
                    return request;
                }
                None => {
                    self.grouping_job = request.is_some().then_some(wanted);
                    recompute(&mut table, &self.episodes, &self.table_settings());
                }
            }
        }
        let settings = AdvantageSettings { anchor, ..self.settings };
        self.derived = Derived::from_table(&self.episodes, table, settings);
        request
    }

    /// A grouping computed in the background arrived. It is kept if it was made for the present episodes; one
    /// made for older episodes is asked for again while wanted.
    pub fn grouped(&mut self, episodes_version: u64, grouping: AnchorGrouping) -> Arrived {
        let mode = grouping.mode;
        if episodes_version != self.episodes_version {
            return match (self.grouping_job, mode) {
                (Some(wanted), AnchorMode::Similarity(theta)) if wanted == mode => {
                    Arrived::Again(self.similarity_request(theta))
                }
                _ => Arrived::Kept,
            };
        }
        self.keep_grouping(grouping);
        if self.grouping_job == Some(mode) {
            self.grouping_job = None;
        }
        if self.settings.anchor == mode && self.derived.settings.anchor != mode {
            return Arrived::Apply;
        }
        Arrived::Kept
    }

    fn similarity_request(&mut self, theta: f64) -> GroupingRequest {
        let exact = match self.groupings.iter().find(|g| g.mode == AnchorMode::Exact) {
            Some(g) => g.clone(),
            None => {
                let g = group_keyed(&self.episodes, KeyedAnchor::Exact);
                self.keep_grouping(g.clone());
                g
            }
        };
        GroupingRequest {
            episodes_version: self.episodes_version,
            job: SimilarityJob::lean(&self.episodes, exact, theta),
        }
    }

    fn keep_grouping(&mut self, grouping: AnchorGrouping) {
        self.groupings.retain(|g| g.mode != grouping.mode);
        self.groupings.insert(0, grouping);
        self.groupings.truncate(KEPT_GROUPINGS);
    }

    /// The episodes changed: groupings made before no longer fit them.
    fn episodes_changed(&mut self) {
        self.episodes_version += 1;
        self.groupings.clear();
    }

    /// Take in episodes appended from index `old_len` on (see [`Derived::extend`]), under the table's anchor
    /// mode; a background grouping for the old episodes will be asked for again when it arrives.
    pub fn extend(&mut self, old_len: usize) {
        self.episodes_changed();
        let settings = self.table_settings();
        self.derived = std::mem::take(&mut self.derived).extend(&self.episodes, old_len, &settings);
        self.derived.table.reserve_for(self.expected_episodes);
        self.note(self.derived.read_error.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::EpisodeRuns;
    use proptest::prelude::*;

    proptest! {
        /// Episodes given to two buckets (as a run's iterations and its played groups may interleave), taken in
        /// part by part: each bucket's runs list its episodes in order, as when they are taken in one by one.
        #[test]
        fn a_buckets_runs_list_its_episodes(
            buckets in prop::collection::vec(0..2u8, 0..200),
            cuts in prop::collection::vec(0..200usize, 0..6),
        ) {
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(buckets.len())).collect();
            cuts.extend([0, buckets.len()]);
            cuts.sort_unstable();
            let mut parts_taken = [EpisodeRuns::default(), EpisodeRuns::default()];
            for part in cuts.windows(2) {
                let mut appended = [EpisodeRuns::default(), EpisodeRuns::default()];
                for e in part[0]..part[1] {
                    appended[buckets[e] as usize].push(e);
                }
                for (runs, more) in parts_taken.iter_mut().zip(&appended) {
                    runs.append(more);
                }
            }
            for b in 0..2u8 {
                let mut one_by_one = EpisodeRuns::default();
                let listed: Vec<usize> = (0..buckets.len()).filter(|&e| buckets[e] == b).collect();
                for &e in &listed {
                    one_by_one.push(e);
                }
                prop_assert_eq!(&parts_taken[b as usize], &one_by_one);
                prop_assert_eq!(one_by_one.iter().collect::<Vec<_>>(), listed);
            }
        }
    }
}
