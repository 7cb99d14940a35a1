//! The terminal side: set up and always restore the terminal, read keys/mouse/resize on a thread, receive
//! the run watcher's events (`crate::live`) on the same channel, tick once a second for the status bar, feed
//! everything to `update`, and draw only when it says something changed.

use std::io::stdout;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, KeyCode, KeyEventKind, KeyModifiers, MouseButton,
    MouseEventKind,
};
use crossterm::execute;
use ratatui::DefaultTerminal;

use super::action::Action;
use super::burst_dialog::{BurstRequest, BurstUpdate};
use super::config::{Config, ConfigError};
use super::domain::LoadCache;
use super::play::TasksHandle;
use super::runner::{JobContext, JobNews, Outcome, Runner};
use super::state::{Cancel, JobKind};
use super::state::{GroupingRequest, State};
use super::theme::color_enabled;
use super::update::{update, AutoplayRequest, Effects, InputKey, Msg};
use crate::advantage::AdvantageSettings;
use crate::index::{IndexSearcher, TrajectoryIndex};
use crate::live::{self, LiveError, LiveEvent, Tails, WatchOptions, Watcher};
use crate::run::cache::CachedHead;
use crate::run::lean::{LeanEpisode, LeanReading};
use crate::run::{Episode, Layout, RunError, RunWriter, SourceOptions};
use crate::training::{self, BurstHandle, TaskSource, TrainEvent, Training};

#[derive(Debug, Clone)]
pub struct Options {
    pub run: PathBuf,
    /// Config file (keymap, theme); `None` reads the default location if it exists.
    pub config: Option<PathBuf>,
    /// Start in follow mode.
    pub follow: bool,
    /// How the run directory is watched (debounce of change events, periodic re-scan).
    pub watch: WatchOptions,
    /// WebShop catalog directory for live play and training bursts (`None`: the embedded demo catalog).
    pub catalog: Option<PathBuf>,
    /// Read the run as this layout instead of detecting it.
    pub from: Option<Layout>,
    pub source: SourceOptions,
    /// A built-in theme (`dark`, `light`, `high-contrast`) instead of the config's.
    pub theme: Option<String>,
    /// Workshop mode: high-contrast theme, wider spacing, a status line naming the view and what the
    /// highlighted number means.
    pub present: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Live(#[from] LiveError),
    #[error("terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

/// Raw mode, alternate screen and mouse capture for as long as it lives; dropping it (also on an early
/// return) restores the terminal. A panic hook restores it too, before the panic message is printed.
struct TerminalGuard {
    terminal: DefaultTerminal,
}

impl TerminalGuard {
    fn new() -> Result<TerminalGuard, std::io::Error> {
        // ratatui's hook (installed by `try_init`) leaves raw mode and the alternate screen and then calls
        // this one, which releases the mouse before the default hook prints the panic.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = execute!(stdout(), DisableMouseCapture);
            previous(info);
        }));
        let terminal = ratatui::try_init()?;
        execute!(stdout(), EnableMouseCapture)?;
        Ok(TerminalGuard { terminal })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let _ = execute!(stdout(), DisableMouseCapture);
        ratatui::restore();
    }
}

/// Translate a terminal event; `None` for events the TUI ignores (key releases, mouse moves).
fn translate(state: &State, ev: Event) -> Option<Msg> {
    match ev {
        Event::Key(k) if k.kind != KeyEventKind::Release => {
            // Ctrl-C always quits, whatever the keymap says, so the terminal can always be recovered.
            if k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL) {
                return Some(Msg::Action(Action::Quit));
            }
            if state.ui.input.is_some() {
                // The search prompt takes keys as text.
                return match k.code {
                    KeyCode::Char(c) => Some(Msg::Input(InputKey::Char(c))),
                    KeyCode::Backspace => Some(Msg::Input(InputKey::Backspace)),
                    KeyCode::Enter => Some(Msg::Input(InputKey::Submit)),
                    KeyCode::Esc => Some(Msg::Input(InputKey::Cancel)),
                    _ => None,
                };
            }
            state.config.keymap.action(&k).map(Msg::Action)
        }
        Event::Mouse(m) => match m.kind {
            MouseEventKind::ScrollDown => Some(Msg::Wheel { col: m.column, row: m.row, down: true }),
            MouseEventKind::ScrollUp => Some(Msg::Wheel { col: m.column, row: m.row, down: false }),
            MouseEventKind::Down(MouseButton::Left) => Some(Msg::Click { col: m.column, row: m.row }),
            _ => None,
        },
        Event::Resize(w, h) => Some(Msg::Resize(w, h)),
        _ => None,
    }
}

/// Results listed per search; `total` still counts every match.
const SEARCH_LIMIT: usize = 1000;
/// Episodes indexed per commit of a background build: each commit makes them searchable.
const INDEX_BATCH: usize = 10_000;

/// The run's search index, built and brought up to date in the background (a job) and searched meanwhile
/// through a handle on what is committed. Opened on the first search and again when the settings change
/// (the advantage fields it indexes depend on them).
#[derive(Default)]
struct Searcher {
    /// The settings the index was opened for, and a handle that searches what it has committed.
    handle: Option<(AdvantageSettings, IndexSearcher)>,
    /// The index while no update runs (an update takes it to its thread and gives it back).
    index: Option<TrajectoryIndex>,
    /// A query answered from part of the run while the index was being built: asked again when it is done.
    rerun: Option<String>,
}

impl Searcher {
    /// Search for `query`: a search job over what the index has committed, and an update job first when the
    /// index does not hold every episode yet (the search then covers part of the run and runs again when the
    /// update is done).
    fn search(&mut self, runner: &mut Runner, state: &State, query: String) -> Result<(), String> {
        let settings = state.domain.settings;
        let updating = runner.has(|k| matches!(k, JobKind::Index { .. }));
        // Opened for other settings, or the index went with a cancelled update: open it (again).
        if self.handle.as_ref().is_none_or(|(s, _)| *s != settings) || (self.index.is_none() && !updating) {
            if updating {
                // The update of the previous settings' index must give it back first.
                self.rerun = Some(query);
                return Ok(());
            }
            let index = TrajectoryIndex::open_default(&state.domain.run.dir, &settings)
                .map_err(|e| e.to_string())?
                .with_page_anchor(crate::env::page_anchor(&state.domain.run));
            self.handle = Some((settings, index.searcher()));
            self.index = Some(index);
        }
        let total = state.domain.episodes.len();
        let (_, handle) = self.handle.as_ref().expect("opened above");
        let snapshot = handle.snapshot();
        if snapshot.episodes_indexed() != total || self.index.as_ref().is_some_and(|i| i.episodes_indexed() != total) {
            if let Some(index) = self.index.take() {
                start_index_update(runner, index, state);
            }
            self.rerun = Some(query.clone());
            if snapshot.episodes_indexed() == 0 {
                // Nothing searchable yet: the search runs once the update is done (the status bar says how
                // far it is).
                return Ok(());
            }
        }
        runner.spawn(JobKind::Search, move |_| {
            let partial = (snapshot.episodes_indexed() < total).then_some((snapshot.episodes_indexed(), total));
            let result = snapshot.search(&query, SEARCH_LIMIT).map_err(|e| e.to_string());
            Outcome::Msg(Msg::SearchDone { query, result, partial })
        });
        Ok(())
    }
}

/// Bring `index` up to date with the run in the background, in committed batches (each searchable at once),
/// reading the episodes' text back from the run's file as it goes; the job gives the index back.
fn start_index_update(runner: &mut Runner, mut index: TrajectoryIndex, state: &State) {
    // The job works on a snapshot of the numbers (the text stays on disk): the run may grow meanwhile, and
    // the next search updates the index again.
    let episodes = state.domain.episodes.clone();
    let table = state.domain.derived.table.clone();
    let total = episodes.len();
    runner.spawn(JobKind::Index { indexed: index.episodes_indexed().min(total), total }, move |ctx| {
        let result = index
            .update_in_batches(episodes.as_slice(), &table, INDEX_BATCH, |p| {
                ctx.progress(JobKind::Index { indexed: p.episodes_indexed, total: p.episodes_total });
                if ctx.cancelled() {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .map(|_| ())
            .map_err(|e| e.to_string());
        Outcome::Index(Box::new(index), result)
    });
}

fn draw(terminal: &mut DefaultTerminal, state: &State) -> Result<(), std::io::Error> {
    terminal.draw(|f| f.render_widget(state, f.area())).map(|_| ())
}

/// Carries out what updates ask for (searches, opening the shop, writing played groups, the policy playing,
/// training bursts) and feeds the outcomes back to `update`.
struct Effector {
    searcher: Searcher,
    /// Slow effects run as jobs off the UI thread.
    runner: Runner,
    catalog: Option<PathBuf>,
    /// The run's environment, opened on first use and shared by play and bursts.
    tasks: Option<TasksHandle>,
}

impl Effector {
    /// `runner` delivers jobs' news to the main loop.
    fn new(catalog: Option<PathBuf>, runner: Runner) -> Effector {
        Effector { searcher: Searcher::default(), runner, catalog, tasks: None }
    }

    /// The run's environment as the training side names it: the registry's entry for the run, WebShop on the
    /// TUI's `--catalog`.
    fn task_source(&self, run: &crate::run::Run) -> Result<TaskSource, String> {
        task_source(run, self.catalog.as_deref())
    }

    /// Open the run's environment as a job (at once when it is open already).
    fn open_env(&mut self, run: &crate::run::Run) -> Option<Msg> {
        if let Some(tasks) = &self.tasks {
            return Some(Msg::EnvReady(Ok(Arc::clone(tasks))));
        }
        let source = match self.task_source(run) {
            Ok(source) => source,
            Err(e) => return Some(Msg::EnvReady(Err(e))),
        };
        self.runner.spawn(JobKind::OpenEnv, move |_| {
            Outcome::Env(crate::env::registry::open(&source.env, &source.options).map_err(|e| e.to_string()))
        });
        None
    }

    /// News of a job: what `update` should hear of it (nothing for progress, a cancelled job, or what the app
    /// keeps).
    fn news(&mut self, state: &State, news: JobNews) -> Option<Msg> {
        match self.runner.news(news)? {
            Outcome::Msg(msg) => Some(msg),
            Outcome::Env(result) => {
                if let Ok(tasks) = &result {
                    self.tasks = Some(Arc::clone(tasks));
                }
                Some(Msg::EnvReady(result))
            }
            Outcome::Cancelled => None,
            Outcome::Index(index, result) => {
                self.searcher.index = Some(*index);
                let rerun = self.searcher.rerun.take();
                match (result, rerun) {
                    (Err(e), _) => Some(Msg::SearchDone { query: String::new(), result: Err(e), partial: None }),
                    (Ok(()), Some(query)) => self.search(state, query),
                    (Ok(()), None) => None,
                }
            }
        }
    }

    /// Start a search (see [`Searcher::search`]); an error to show at once.
    fn search(&mut self, state: &State, query: String) -> Option<Msg> {
        let Effector { searcher, runner, .. } = self;
        searcher.search(runner, state, query.clone()).err().map(|e| Msg::SearchDone {
            query,
            result: Err(e),
            partial: None,
        })
    }

    /// Carry out an update's effects and those of the messages they answer with; `true` when the app should quit.
    fn apply(
        &mut self,
        terminal: &mut DefaultTerminal,
        state: &mut State,
        fx: Effects,
        redraw: &mut bool,
    ) -> Result<bool, std::io::Error> {
        let mut queue = vec![fx];
        while let Some(fx) = queue.pop() {
            *redraw |= fx.redraw;
            if fx.quit {
                if self.runner.has(|k| k.cancel() == Cancel::Stop) {
                    state.ui.message = Some("quitting once the burst or the truth stops at its next boundary …".into());
                    draw(terminal, state)?;
                }
                // A burst ends its iteration, so the run and checkpoint stay valid; a write ends its group.
                self.runner.wind_down();
                return Ok(true);
            }
            let jobs_before = self.runner.kinds();
            let mut answers = Vec::new();
            if let Some(query) = fx.search {
                answers.extend(self.search(state, query));
            }
            if let Some(request) = fx.estimator_batch {
                self.runner.spawn(JobKind::Estimators, move |_| Outcome::Msg(Msg::EstimatorBatch(request.compute())));
            }
            if fx.open_env {
                answers.extend(self.open_env(&state.domain.run));
            }
            if !fx.write.is_empty() {
                let (dir, episodes) = (state.domain.run.dir.clone(), fx.write);
                self.runner.spawn(JobKind::Write, move |_| Outcome::Msg(Msg::Written(write_episodes(&dir, &episodes))));
            }
            if let Some(request) = fx.autoplay {
                if let Err(e) = self.autoplay(&state.domain.run, &request) {
                    answers.push(Msg::Autoplayed(Err(e)));
                }
            }
            if let Some(request) = fx.start_burst {
                if let Err(e) = self.start_burst(&state.domain.run, request) {
                    answers.push(Msg::Burst(BurstUpdate::Failed(e)));
                }
            }
            if let Some(request) = fx.group_anchors {
                self.start_grouping(request);
            }
            if let Some(request) = fx.truth {
                let progress = JobKind::Truth { states: 0, continuations: 0 };
                self.runner.spawn(progress, move |ctx| Outcome::Msg(super::truth_job::run(&request, ctx)));
            }
            if fx.cancel_truth {
                self.runner.cancel_where(|k| matches!(k, JobKind::Truth { .. }));
            }
            if fx.cancel_jobs {
                self.runner.cancel();
            }
            if self.runner.kinds() != jobs_before {
                answers.push(Msg::Jobs(self.runner.kinds()));
            }
            queue.extend(answers.into_iter().map(|msg| update(state, msg)));
        }
        Ok(false)
    }

    /// The run's policy plays a group, in the training plugin (loaded on first use), as a job.
    fn autoplay(&mut self, run: &crate::run::Run, request: &AutoplayRequest) -> Result<(), String> {
        let request = training::AutoplayRequest {
            run: run.dir.clone(),
            tasks: self.task_source(run)?,
            task: request.goal,
            group: request.group.clone(),
            first: request.first,
            n: request.n,
            step_limit: training::TrainConfig::default().step_limit,
            seed: request.seed,
        };
        self.runner.spawn(JobKind::Autoplay, move |_| {
            let played = Training::load().map_err(|e| e.to_string()).and_then(|t| t.autoplay(&request));
            Outcome::Msg(Msg::Autoplayed(played.map(|p| (p.episodes, p.policy))))
        });
        Ok(())
    }

    /// Start a burst into the open run, in the training plugin (loaded on first use: a clear error when it
    /// cannot be). How it continues the run is the training side's decision.
    fn start_burst(&mut self, run: &crate::run::Run, request: BurstRequest) -> Result<(), String> {
        if self.runner.has(|k| matches!(k, JobKind::StartBurst | JobKind::Burst { .. })) {
            return Err("a burst is already running".into());
        }
        let request = request.train_request(&run.dir, self.task_source(run)?);
        // Loading the plugin (and libtorch with it) the first time takes a while, and so does the burst.
        self.runner.spawn(JobKind::StartBurst, move |ctx| {
            let training = match Training::load() {
                Ok(training) => training,
                Err(e) => return Outcome::Msg(Msg::Burst(BurstUpdate::Failed(e.to_string()))),
            };
            if ctx.cancelled() {
                // X while the trainer was loading: the burst never starts.
                return Outcome::Msg(Msg::Burst(BurstUpdate::Finished { completed: 0, cancelled: true }));
            }
            Outcome::Msg(Msg::Burst(follow_burst(ctx, &training.start(&request))))
        });
        Ok(())
    }

    /// Group anchors as a job; a grouping still running is given up.
    fn start_grouping(&mut self, request: GroupingRequest) {
        self.runner.cancel_where(|k| k == JobKind::Grouping);
        self.runner.spawn(JobKind::Grouping, move |ctx| match request.job.run_unless(ctx.cancel_flag()) {
            Some(grouping) => Outcome::Msg(Msg::Grouped { episodes_version: request.episodes_version, grouping }),
            None => Outcome::Cancelled,
        });
    }
}

/// How often the running burst's news is looked for.
const BURST_POLL: Duration = Duration::from_millis(200);

/// The burst job's life after the start: its news to `update` (iterations as the job's progress), a cancel
/// handed on to the trainer (which stops after the current iteration); the last news, once it has ended.
fn follow_burst(ctx: &JobContext, handle: &BurstHandle) -> BurstUpdate {
    let (mut done, mut of) = (0, 0);
    loop {
        if ctx.cancelled() && !handle.cancelled() {
            handle.cancel();
        }
        let events = handle.poll();
        if events.is_empty() {
            if handle.is_finished() {
                return BurstUpdate::Failed("the trainer ended without saying how".into());
            }
            std::thread::sleep(BURST_POLL);
        }
        for event in events {
            match &event {
                TrainEvent::Started { iterations, .. } => of = *iterations,
                TrainEvent::Iteration(_) => done += 1,
                _ => {}
            }
            ctx.progress(JobKind::Burst { done, of });
            if event.is_last() {
                return BurstUpdate::from(event);
            }
            ctx.send(Msg::Burst(BurstUpdate::from(event)));
        }
    }
}

/// Append a played group to the run: whole lines, so the watcher (and any other reader) sees whole episodes.
/// The run's environment as the app names it to its jobs (opening it, the policy's play, a burst), with
/// `catalog` for the environments that take one (`--catalog`).
pub fn task_source(run: &crate::run::Run, catalog: Option<&Path>) -> Result<TaskSource, String> {
    let registered = crate::env::registry::of_run(run)
        .ok_or_else(|| format!("this run's environment is not one gigscope has ({})", crate::env::registry::names()))?;
    let mut options = crate::env::EnvOptions::default();
    // `--catalog` is the option of the environments that take one (WebShop's catalog directory).
    let takes_catalog = registered.options.iter().any(|(key, _)| *key == "catalog");
    if let Some(catalog) = catalog.filter(|_| takes_catalog) {
        options.set("catalog", catalog.display().to_string());
    }
    Ok(TaskSource::new(registered.name, options))
}

/// Append a played group to the run in `dir` (the app's group-write job).
pub fn write_episodes(dir: &Path, episodes: &[Episode]) -> Result<usize, String> {
    let fail = |e: crate::run::RunError| format!("writing the played group: {e} (the group was not saved)");
    let mut writer = RunWriter::create(dir).map_err(fail)?;
    for e in episodes {
        writer.append_episode(e).map_err(fail)?;
    }
    Ok(episodes.len())
}

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
    let mut state = State::new(run, config, size);
    state.domain.read_all(&mut tails);
    state.rebuild();
    Ok((state, tails))
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
    let (run, mut tails) = live::start_as(dir, from, options)?;
    let mut state = State::new(run, config, (80, 24));
    let gigscope = tails.layout() == Layout::Gigscope;
    let cache = cache.filter(|_| gigscope).map(|root| state.domain.keep_load_cache(root));
    // The watcher takes the episodes in lean as it parses them (see `LeanReading`).
    let lean = LeanReading::new(state.domain.text.clone(), crate::env::page_classifier, &state.domain.run);
    tails.read_lean(lean.clone());
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
                            tails = Tails::resumed(&self.dir, cached.head.position);
                            tails.read_lean(self.lean);
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
}

/// The least time between two frames asked for by merged parts (60 a second).
const MERGE_FRAME_INTERVAL: Duration = Duration::from_millis(16);

impl Loading {
    /// Take in what the reading thread sent; an error when the run cannot be watched.
    pub fn receive(&mut self, state: &mut State, reading: Reading) -> Result<bool, LiveError> {
        match reading {
            Reading::Cached(head) => {
                // Said, so that a run that opens at once is not taken for a stale one.
                state.ui.message = Some(format!(
                    "{} episodes taken from the load cache, reading on from line {} (GIGSCOPE_NO_CACHE=1 reads \
                     the files)",
                    head.episodes, head.position.lines
                ));
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
                self.backlog.push_back(ev);
                Ok(false)
            }
            Reading::Failed(err) => Err(err),
        }
    }

    /// Whether parts wait to be merged.
    pub fn merging(&self, state: &State) -> bool {
        state.domain.cached_pending() || !self.backlog.is_empty()
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
        let (redraw, caught_up) = if state.domain.cached_pending() {
            (update(state, Msg::CachedPart).redraw, false)
        } else if !self.backlog.is_empty() {
            let part = live::next_part(&mut self.backlog);
            let caught_up = part.iter().any(|e| matches!(e, LiveEvent::Progress { read, total } if read == total));
            (!part.is_empty() && update(state, Msg::Live(part, Instant::now())).redraw, caught_up)
        } else {
            // Nothing to merge: the next part of the load cache being copied, if any.
            state.domain.copy_load_cache();
            (false, false)
        };
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

/// Everything the main loop waits for, on one channel.
enum Incoming {
    Terminal(Event),
    Reading(Reading),
    Job(JobNews),
}

/// The "updated N s ago" clock.
const TICK: Duration = Duration::from_secs(1);

pub fn run(opts: Options) -> Result<(), AppError> {
    let color = color_enabled(std::env::var("NO_COLOR").ok().as_deref());
    let config = Config::load(opts.config.as_deref(), color)?.with_display(opts.theme.as_deref(), opts.present)?;
    // Errors that stop the run from being read at all print before the terminal is touched; the run itself
    // is read by the watcher's first scan, part by part, while the first frame is already on screen.
    let cache = crate::run::cache::default_root(crate::index::default_cache_dir());
    let (mut state, opening) = start(&opts.run, opts.from, &opts.source, config, cache)?;
    let (tx, rx) = mpsc::channel::<Incoming>();
    let reading_tx = tx.clone();
    opening.spawn(opts.watch, move |reading| reading_tx.send(Incoming::Reading(reading)).is_ok());
    let jobs_tx = tx.clone();

    let mut guard = TerminalGuard::new()?;
    let size = guard.terminal.size()?;
    update(&mut state, Msg::Resize(size.width, size.height));
    if opts.follow {
        update(&mut state, Msg::Action(Action::Follow));
    }
    std::thread::spawn(move || {
        // Ends when the terminal read fails or the main loop has gone (send fails).
        while let Ok(ev) = event::read() {
            if tx.send(Incoming::Terminal(ev)).is_err() {
                break;
            }
        }
    });

    draw(&mut guard.terminal, &state)?;
    let mut next_tick = Instant::now() + TICK;
    let jobs_tx = std::sync::Mutex::new(jobs_tx);
    let runner = Runner::new(move |job| {
        let _ = jobs_tx.lock().map(|tx| tx.send(Incoming::Job(job)));
    });
    let mut effector = Effector::new(opts.catalog.clone(), runner);
    // What was read but not merged yet: one part of the run is merged per turn of the loop, so keys are answered
    // between parts while a large run arrives.
    let mut loading = Loading::default();
    loop {
        let mut wait = next_tick.saturating_duration_since(Instant::now());
        if loading.pending(&state) {
            wait = Duration::ZERO;
        }
        let mut redraw = false;
        match rx.recv_timeout(wait) {
            Ok(first) => {
                // Handle everything queued (key repeat, wheel bursts, jobs' news), then merge a part of what the
                // watcher sent, then draw once.
                for incoming in std::iter::once(first).chain(rx.try_iter()) {
                    match incoming {
                        Incoming::Reading(reading) => redraw |= loading.receive(&mut state, reading)?,
                        Incoming::Job(job) => {
                            let mut answers: Vec<Msg> = effector.news(&state, job).into_iter().collect();
                            answers.push(Msg::Jobs(effector.runner.kinds()));
                            for msg in answers {
                                let fx = update(&mut state, msg);
                                if effector.apply(&mut guard.terminal, &mut state, fx, &mut redraw)? {
                                    return Ok(());
                                }
                            }
                        }
                        Incoming::Terminal(ev) => {
                            if let Some(msg) = translate(&state, ev) {
                                let fx = update(&mut state, msg);
                                if effector.apply(&mut guard.terminal, &mut state, fx, &mut redraw)? {
                                    return Ok(());
                                }
                            }
                        }
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
        }
        redraw |= loading.merge_next(&mut state).0;
        let now = Instant::now();
        if now >= next_tick {
            next_tick = now + TICK;
            redraw |= update(&mut state, Msg::Tick(now)).redraw;
        }
        if redraw {
            draw(&mut guard.terminal, &state)?;
        }
    }
}
