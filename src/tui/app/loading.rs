//! Opening a run for the viewer: at once and whole ([`open`], for tests and benches), or the app's way
//! ([`start`]): the first frame is drawn on nothing read yet while a thread ([`Opening::spawn`]) reads the
//! load cache and then watches the run, and the main loop merges what it sends one part per turn
//! ([`Loading`]), so keys are answered while a large run arrives.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::error::AppError;
use crate::live::{self, LiveError, LiveEvent, LiveFile, Tails, WatchOptions, Watcher};
use crate::run::cache::CachedHead;
use crate::run::text_on_disk::LeanEpisode;
use crate::run::LeanReading;
use crate::run::{Layout, SourceOptions};
use crate::tui::config::Config;
use crate::tui::domain::LoadCache;
use crate::tui::msg::{Effect, Effects, Msg};
use crate::tui::state::State;
use crate::tui::update::update;

/// Open a run directory and read all of it into a fresh state, for a terminal of `size`. The readers'
/// positions are returned for [`Watcher::spawn`], which continues from exactly there.
pub fn open(dir: &Path, config: Config, size: (u16, u16)) -> Result<(State, Tails), AppError> {
    open_as(dir, None, &SourceOptions::default(), config, size)
}

/// [`open`], reading the run as `from` (else the detected layout) with the layout's `options`.
pub fn open_as(
    dir: &Path,
    from: Option<Layout>,
    options: &SourceOptions,
    config: Config,
    size: (u16, u16),
) -> Result<(State, Tails), AppError> {
    // Part by part, each part's episodes taken in lean before the next is read: the run's text is never in
    // memory whole.
    let (run, mut tails) = live::start_as(dir, from, options)?;
    let mut state = new_state(run, config, size);
    state.domain.read_all(&mut tails);
    state.rebuild();
    note_partial_groups(&mut state);
    Ok((state, tails))
}

/// A state for `run` in this process: a Ray burst's command names this binary and directory (read once, here).
fn new_state(run: crate::run::Run, config: Config, size: (u16, u16)) -> State {
    let mut state = State::new(run, config, size);
    state.jobs.burst_host = crate::tui::burst_dialog::BurstHost::of_this_process();
    state
}

/// The run's partial groups (cut short by a writer that stopped: [`crate::run::partial_groups`]) as reader
/// notes, once the run has been read, so that the overview does not show them as smaller complete groups.
fn note_partial_groups(state: &mut State) {
    let run = &mut state.domain.run;
    let sizes = run.meta.as_ref().map(crate::run::RunMeta::group_sizes).unwrap_or_default();
    let episodes = state.domain.episodes.iter().map(|e| (e.group, e.iteration));
    for group in crate::run::partial_groups(episodes, &sizes) {
        let note = group.to_string();
        if !run.notices.contains(&note) {
            run.notices.push(note);
        }
    }
}

/// The state to show first (nothing read yet) and how the run is to be read, for the app's way of opening a
/// run: [`Opening::spawn`] reads it in the background while the first frame is already on screen. For a
/// gigscope run read before, the load cache under `cache` (when given) is kept and taken first.
pub fn start(
    dir: &Path,
    from: Option<Layout>,
    options: &SourceOptions,
    config: Config,
    cache: Option<PathBuf>,
) -> Result<(State, Opening), AppError> {
    let (run, tails) = live::start_as(dir, from, options)?;
    let mut state = new_state(run, config, (80, 24));
    let gigscope = tails.layout() == Layout::Gigscope;
    // The text of layouts without lines of their own goes to a spill file under the cache root, else in the
    // system's temporary directory (which may be memory: a tmpfs).
    let spill_dirs: Vec<PathBuf> =
        cache.iter().map(|root| root.join(crate::run::spill::SPILL_DIR)).chain([std::env::temp_dir()]).collect();
    let cache = cache.filter(|_| gigscope).map(|root| state.domain.keep_load_cache(root));
    // The watcher takes the episodes in lean as it parses them (see `LeanReading`).
    let lean = LeanReading::new(state.domain.text.clone(), crate::env_registry::page_classifier, &state.domain.run);
    let tails = tails.read_lean(lean.clone(), &spill_dirs);
    state.domain.live.first_read = true;
    Ok((state, Opening { dir: dir.to_path_buf(), tails, cache, lean }))
}

/// How a run being opened is read: [`start`]'s second half.
pub struct Opening {
    dir: PathBuf,
    tails: Tails,
    cache: Option<LoadCache>,
    /// For the reader that goes on from the load cache's offset.
    lean: LeanReading,
}

/// What the thread reading a run sends, in this order: what the load cache held (when the viewer keeps one),
/// then the watcher's events; or why the watcher could not start.
pub enum Reading {
    /// What the load cache holds of the run, but its episodes (boxed, as it is far larger than the rest).
    Cached(Box<CachedHead>),
    /// The next episodes decoded from the load cache, ending where an episode group ends.
    CachedEpisodes(Vec<LeanEpisode>),
    /// The load cache turned out damaged while its episodes were decoded: what was taken from it is void, and
    /// the watcher reads the run from its files.
    CacheVoid,
    /// The watcher has started: the viewer keeps it (dropping it stops it, and then this thread).
    Watching(Watcher),
    Live(LiveEvent),
    Failed(LiveError),
}

/// Episodes decoded from the load cache per message: a few milliseconds of decoding.
const CACHE_DECODE_PART: usize = 1_000;

impl Opening {
    /// Read the run on a thread of its own: the load cache first (decoding a large run's cache takes longer
    /// than a frame), then the watcher, from where the cached read stopped on a hit. Ends when the watcher stops
    /// or `send` says the viewer has gone.
    pub fn spawn(self, watch: WatchOptions, send: impl Fn(Reading) -> bool + Send + 'static) {
        let read = move || {
            let mut tails = self.tails;
            if let Some(mut cached) = self.cache.and_then(|cache| cache.load()) {
                if !send(Reading::Cached(Box::new(cached.head.clone()))) {
                    return;
                }
                // Part by part, each merged by the viewer while the next is decoded.
                loop {
                    let reading = match cached.next_episodes(CACHE_DECODE_PART) {
                        Ok(part) if part.is_empty() => {
                            // A gigscope run's: its episodes have lines of their own, nothing to spill.
                            tails = Tails::resumed(&self.dir, cached.head.position).read_lean(self.lean, &[]);
                            break;
                        }
                        Ok(part) => Reading::CachedEpisodes(part),
                        Err(_) => Reading::CacheVoid,
                    };
                    let void = matches!(reading, Reading::CacheVoid);
                    if !send(reading) {
                        return;
                    }
                    if void {
                        break;
                    }
                }
            }
            let (watcher, live) = match Watcher::spawn(&self.dir, tails, watch) {
                Ok(watching) => watching,
                Err(err) => {
                    send(Reading::Failed(err));
                    return;
                }
            };
            if !send(Reading::Watching(watcher)) {
                return;
            }
            while let Ok(ev) = live.recv() {
                if !send(Reading::Live(ev)) {
                    break;
                }
            }
        };
        // Without a thread the viewer could not read the run at all; the error says so on the first frame.
        let _ = std::thread::Builder::new().name("gigscope-read".into()).spawn(read);
    }
}

/// The viewer's part of reading a run: the watcher (kept for as long as the viewer keeps this), the load cache
/// taken in, the watcher's events waiting to be merged, one part per turn of the loop (cached episodes first,
/// in the order they were read).
#[derive(Default)]
pub struct Loading {
    backlog: std::collections::VecDeque<LiveEvent>,
    /// A merged part not drawn yet, and when a merge last asked for a frame: while a run arrives in many parts,
    /// a frame per part would cost more than the merging (keys are drawn at once all the same).
    owed_frame: bool,
    last_frame: Option<Instant>,
    /// The run's watcher, once started: it stops when the viewer drops this.
    watcher: Option<Watcher>,
    /// What the merges' updates asked for besides a frame, for the app's effect runner.
    effects: Effects,
    /// When the latest episodes arrived from the watcher, and how long a last group is held back after that
    /// (`None`: [`HOLD_TAIL`]).
    episodes_at: Option<Instant>,
    hold: Option<Duration>,
    /// The run was read through since it was opened or last read again: its partial groups were noted and the
    /// advantages kept in order for its quantiles while it was read freed. A run followed catches up with its
    /// writer at nearly every part, and noting goes over every episode, so both are done at the first catch-up
    /// only (a group still being written is not partial either; what is kept while the writer goes on is freed
    /// when it pauses).
    read_through: bool,
}

/// Whether the advantages the viewer keeps in order while parts come are to be freed once its writer pauses: they
/// are kept, and the first read has caught up (during it they are freed when it catches up).
fn frees_kept(state: &State) -> bool {
    !state.domain.live.first_read && state.domain.derived.holds_growing()
}

/// How long the last episode group the watcher read is held back, when nothing has followed it yet, once the
/// run has been read: a writer may be half-way through that group (its batch read half-written), and episodes
/// of a group already merged make the viewer compute the whole run again, where a new group is computed alone
/// (on a large run followed at 20,000 lines a second, a key waited for such a recomputation). Longer than the
/// watcher's debounce (150 ms), so that the group's rest arrives meanwhile while the writer goes on; a group
/// appended whole shows this much later.
const HOLD_TAIL: Duration = Duration::from_millis(250);

/// The least time between two frames asked for by merged parts (60 a second).
const MERGE_FRAME_INTERVAL: Duration = Duration::from_millis(16);

impl Loading {
    /// Hold a last group back for `hold` instead of [`HOLD_TAIL`] (tests that must not depend on the machine's
    /// speed).
    pub fn holding_back_for(hold: Duration) -> Loading {
        Loading { hold: Some(hold), ..Loading::default() }
    }

    fn hold(&self) -> Duration {
        self.hold.unwrap_or(HOLD_TAIL)
    }

    /// Take in what the reading thread sent; an error when the run cannot be watched.
    pub fn receive(&mut self, state: &mut State, reading: Reading) -> Result<bool, LiveError> {
        match reading {
            Reading::Cached(head) => {
                // Said, so that a run that opens at once is not taken for a stale one.
                state.ui.message = Some(head.taken());
                state.domain.adopt_load_cache(*head);
                // Settings recorded in run.json, on no episodes yet: instant.
                state.rebuild();
                Ok(true)
            }
            Reading::CachedEpisodes(episodes) => {
                state.domain.take_cached(episodes);
                Ok(false)
            }
            Reading::CacheVoid => {
                state.domain.void_load_cache();
                state.rebuild();
                Ok(true)
            }
            Reading::Watching(watcher) => {
                self.watcher = Some(watcher);
                Ok(false)
            }
            Reading::Live(ev) => {
                self.push_live(ev);
                Ok(false)
            }
            Reading::Failed(err) => Err(err),
        }
    }

    /// What the merges' updates asked for besides a frame, since this was last asked.
    pub fn take_effects(&mut self) -> Effects {
        std::mem::take(&mut self.effects)
    }

    /// An event from the watcher into the backlog. Episodes that go on with the group the backlog's last
    /// episodes end with (a group read half-written, held back by [`Loading::held_tail`]) join them, so that the
    /// group is merged whole.
    fn push_live(&mut self, ev: LiveEvent) {
        if batch_groups(&ev).is_some() {
            self.episodes_at = Some(Instant::now());
        }
        let last = self.backlog.iter_mut().rev().find(|e| !matches!(e, LiveEvent::Progress { .. }));
        let goes_on = match (last.as_deref().and_then(batch_groups), batch_groups(&ev)) {
            (Some((_, ends)), Some((starts, _))) => ends == starts,
            _ => false,
        };
        let ev = match (last, ev) {
            (Some(LiveEvent::Episodes(before)), LiveEvent::Episodes(more)) if goes_on => {
                before.extend(more);
                return;
            }
            (
                Some(LiveEvent::LeanEpisodes { episodes, pages }),
                LiveEvent::LeanEpisodes { episodes: more, pages: newer },
            ) if goes_on => {
                // The reader's page table only grows: its newer names cover the earlier episodes' ids.
                episodes.extend(more);
                *pages = newer;
                return;
            }
            (_, ev) => ev,
        };
        self.backlog.push_back(ev);
    }

    /// Hold back the last episode group of the backlog while it may be incomplete: once the run has been
    /// read, when the backlog holds one batch of episodes and it arrived less than [`HOLD_TAIL`] ago, its last
    /// group is split off to wait for the rest. Whether all that waits is that group.
    fn held_tail(&mut self, state: &State) -> bool {
        if !self.holding(state) {
            return false;
        }
        let is_episodes = |e: &LiveEvent| matches!(e, LiveEvent::Episodes(_) | LiveEvent::LeanEpisodes { .. });
        let mut batches = self.backlog.iter().enumerate().filter(|(_, e)| is_episodes(e)).map(|(i, _)| i);
        let (Some(at), None) = (batches.next(), batches.next()) else { return false };
        let tail = match &mut self.backlog[at] {
            LiveEvent::Episodes(episodes) => LiveEvent::Episodes(live::trailing_group(episodes, |(_, e)| &e.group)),
            LiveEvent::LeanEpisodes { episodes, pages } => LiveEvent::LeanEpisodes {
                episodes: live::trailing_group(episodes, |r| &r.episode.group),
                pages: pages.clone(),
            },
            _ => return false,
        };
        let whole = matches!(&tail, LiveEvent::Episodes(t) if t.is_empty())
            || matches!(&tail, LiveEvent::LeanEpisodes { episodes, .. } if episodes.is_empty());
        if !whole {
            self.backlog.insert(at + 1, tail);
        }
        // When the batch is that one group, it waits (and what came before it with it).
        whole
    }

    /// The run has been read and its writer paused (nothing arrived for the hold): the advantages kept in
    /// order while parts kept coming ([`crate::tui::domain::Derived::release_growing`]) are freed.
    fn settles(&self, state: &State) -> bool {
        frees_kept(state) && !self.holding(state)
    }

    /// When a group held back is due to be merged anyway, or the advantages kept while parts kept coming to be
    /// freed (the main loop wakes then). During the first read they are freed when it catches up, not at a
    /// time: a time already past would make the loop spin while it waits for the reader.
    pub fn wake_at(&self, state: &State) -> Option<Instant> {
        let waits = !self.backlog.is_empty() || frees_kept(state);
        self.episodes_at.map(|at| at + self.hold()).filter(|_| waits)
    }

    /// Whether parts wait to be merged (a group held back waits for its time).
    pub fn merging(&self, state: &State) -> bool {
        let held = self.holding(state) && self.one_group_waits();
        state.domain.cached_pending() || !(self.backlog.is_empty() || held)
    }

    /// Whether a last group is held back now: the run has been read, and episodes arrived less than the hold
    /// ago.
    fn holding(&self, state: &State) -> bool {
        !state.domain.live.first_read && self.episodes_at.is_some_and(|at| at.elapsed() < self.hold())
    }

    /// Whether the backlog's episodes are one batch of one group.
    fn one_group_waits(&self) -> bool {
        let mut batches = self.backlog.iter().filter_map(|e| match e {
            LiveEvent::Episodes(episodes) => Some(episodes.windows(2).all(|w| w[0].1.group == w[1].1.group)),
            LiveEvent::LeanEpisodes { episodes, .. } => {
                Some(episodes.windows(2).all(|w| w[0].episode.group == w[1].episode.group))
            }
            _ => None,
        });
        matches!((batches.next(), batches.next()), (Some(true), None))
    }

    /// Whether work waits for the next turn of the loop: parts to merge, or the load cache to copy.
    pub fn pending(&self, state: &State) -> bool {
        self.merging(state) || state.domain.load_cache_copying()
    }

    /// Merge the next part (see [`crate::live::next_part`]), else copy a part of the load cache being saved;
    /// whether to draw (at most one frame every
    /// [`MERGE_FRAME_INTERVAL`] while parts keep coming, and one when the last has been merged), and whether the
    /// part said the reader caught up with the run.
    pub fn merge_next(&mut self, state: &mut State) -> (bool, bool) {
        let (fx, caught_up) = if state.domain.cached_pending() {
            (update(state, Msg::CachedPart), false)
        } else if !self.backlog.is_empty() && !self.held_tail(state) {
            let part = live::next_part(&mut self.backlog);
            let caught_up = part.iter().any(|e| matches!(e, LiveEvent::Progress { read, total } if read == total));
            self.read_through &= !part.iter().any(|e| matches!(e, LiveEvent::Reset(LiveFile::Episodes)));
            let fx = if part.is_empty() { Effects::none() } else { update(state, Msg::Live(part, Instant::now())) };
            if caught_up && !self.read_through {
                note_partial_groups(state);
                state.domain.derived.release_growing();
                self.read_through = true;
            }
            (fx, caught_up)
        } else if self.settles(state) {
            state.domain.derived.release_growing();
            (Effects::none(), false)
        } else {
            // Nothing to merge: the next part of the load cache being copied, if any.
            state.domain.copy_load_cache();
            (Effects::none(), false)
        };
        let redraw = fx.redraws();
        self.effects.extend(fx.into_iter().filter(|e| *e != Effect::Redraw));
        self.owed_frame |= redraw;
        let due = !self.merging(state) || self.last_frame.is_none_or(|at| at.elapsed() >= MERGE_FRAME_INTERVAL);
        if !(self.owed_frame && due) {
            return (false, caught_up);
        }
        self.owed_frame = false;
        self.last_frame = Some(Instant::now());
        (true, caught_up)
    }
}

/// The groups of the first and the last episode of a batch of episodes (`None`: not episodes, or none).
fn batch_groups(ev: &LiveEvent) -> Option<(&str, &str)> {
    match ev {
        LiveEvent::Episodes(episodes) => Some((&episodes.first()?.1.group, &episodes.last()?.1.group)),
        LiveEvent::LeanEpisodes { episodes, .. } => {
            Some((&episodes.first()?.episode.group, &episodes.last()?.episode.group))
        }
        _ => None,
    }
}
