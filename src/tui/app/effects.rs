//! The effect runner: carries out what `update` asks for (searches over the run's index, opening the
//! environment, writing played groups, the policy playing, training bursts, the truth, background groupings
//! and estimator columns), slow work as jobs off the UI thread, and feeds their outcomes back to `update`.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use ratatui::DefaultTerminal;

use super::terminal::draw;
use crate::advantage::AdvantageSettings;
use crate::index::{IndexError, IndexSearcher, TrajectoryIndex};
use crate::plugin_host::{self, BurstHandle, TaskSource, TrainEvent, Training};
use crate::run::{Episode, RunWriter};
use crate::tui::burst_dialog::{BurstRequest, BurstUpdate};
use crate::tui::msg::{AutoplayRequest, Effect, Effects, JobError, Msg};
use crate::tui::play::TasksHandle;
use crate::tui::runner::{JobContext, JobNews, Outcome, Runner};
use crate::tui::state::{Cancel, GroupingRequest, JobKind, State};
use crate::tui::truth_job::{self, TruthJobError, TruthJobRequest};
use crate::tui::update::update;

/// Results listed per search; `total` still counts every match.
const SEARCH_LIMIT: usize = 1000;
/// Episodes indexed per commit of a background build: each commit makes them searchable.
const INDEX_BATCH: usize = 10_000;

/// What a query is asked for: the search view's list of the best hits, or every step it matches (the credit
/// view's grouping).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Asked {
    Hits,
    Every,
}

/// The run's search index, built and brought up to date in the background (a job) and searched meanwhile
/// through a handle on what is committed. Opened on the first search and again when the settings change
/// (the advantage fields it indexes depend on them).
#[derive(Default)]
struct Searcher {
    /// The settings the index was opened for, and a handle that searches what it has committed.
    handle: Option<(AdvantageSettings, IndexSearcher)>,
    /// The index while no update runs (an update takes it to its thread and gives it back).
    index: Option<TrajectoryIndex>,
    /// Queries answered from part of the run while the index was being built: asked again when it is done.
    rerun: Vec<(String, Asked)>,
}

impl Searcher {
    /// Search for `query`: a search job over what the index has committed, and an update job first when the
    /// index does not hold every episode yet (the search then covers part of the run and runs again when the
    /// update is done).
    fn search(&mut self, runner: &mut Runner, state: &State, query: String, asked: Asked) -> Result<(), IndexError> {
        let settings = state.domain.settings;
        let updating = runner.has(|k| matches!(k, JobKind::Index { .. }));
        // Opened for other settings, or the index went with a cancelled update: open it (again).
        if self.handle.as_ref().is_none_or(|(s, _)| *s != settings) || (self.index.is_none() && !updating) {
            if updating {
                // The update of the previous settings' index must give it back first.
                self.rerun_later(query, asked);
                return Ok(());
            }
            let index = TrajectoryIndex::open_default(&state.domain.run.dir, &settings)?
                .with_page_anchor(crate::env_registry::page_anchor(&state.domain.run));
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
            self.rerun_later(query.clone(), asked);
            if snapshot.episodes_indexed() == 0 {
                // Nothing searchable yet: the search runs once the update is done (the status bar says how
                // far it is).
                return Ok(());
            }
        }
        runner.spawn(JobKind::Search, move |_| {
            let searched = snapshot.episodes_indexed();
            Outcome::Msg(match asked {
                Asked::Hits => {
                    let partial = (searched < total).then_some((searched, total));
                    let result = snapshot.search(&query, SEARCH_LIMIT).map_err(JobError::from);
                    Msg::SearchDone { query, result, partial }
                }
                Asked::Every => {
                    let result = snapshot.positions(&query).map_err(JobError::from);
                    Msg::Matched { query, result, searched: (searched, total) }
                }
            })
        });
        Ok(())
    }

    /// Ask `query` again once the index is up to date (the latest of each kind).
    fn rerun_later(&mut self, query: String, asked: Asked) {
        self.rerun.retain(|(_, a)| *a != asked);
        self.rerun.push((query, asked));
    }
}

/// Bring `index` up to date with the run in the background, in committed batches (each searchable at once),
/// reading the episodes' text back from the run's file as it goes; the job gives the index back.
fn start_index_update(runner: &mut Runner, mut index: TrajectoryIndex, state: &State) {
    // The job works on a snapshot of the numbers (the text stays on disk): the run may grow meanwhile, and
    // the next search updates the index again. The snapshots of the episodes and of the table share their data
    // until the viewer changes it (copy on write): taking them copies nothing.
    let episodes = state.domain.episodes.clone();
    let table = state.domain.derived.table.clone();
    let total = episodes.len();
    runner.spawn(JobKind::Index { indexed: index.episodes_indexed().min(total), total }, move |ctx| {
        let result = index
            .update_in_batches(&episodes, &table, INDEX_BATCH, |p| {
                ctx.progress(JobKind::Index { indexed: p.episodes_indexed, total: p.episodes_total });
                if ctx.cancelled() {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            })
            .map(|_| ());
        Outcome::Index(Box::new(index), result)
    });
}

/// Carries out what updates ask for (searches, opening the shop, writing played groups, the policy playing,
/// training bursts) and feeds the outcomes back to `update`.
pub(super) struct Effector {
    searcher: Searcher,
    /// Slow effects run as jobs off the UI thread.
    runner: Runner,
    catalog: Option<PathBuf>,
    /// The run's environment, opened on first use and shared by play and bursts.
    tasks: Option<TasksHandle>,
}

impl Effector {
    /// `runner` delivers jobs' news to the main loop.
    pub(super) fn new(catalog: Option<PathBuf>, runner: Runner) -> Effector {
        Effector { searcher: Searcher::default(), runner, catalog, tasks: None }
    }

    /// The run's environment as the training side names it: the registry's entry for the run, WebShop on the
    /// TUI's `--catalog`.
    fn task_source(&self, run: &crate::run::Run) -> Result<TaskSource, JobError> {
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
            Outcome::Env(crate::env_registry::open(&source.env, &source.options).map_err(JobError::from))
        });
        None
    }

    /// News of a job: what `update` should hear of it (nothing for progress, a cancelled job, or what the app
    /// keeps).
    pub(super) fn news(&mut self, state: &State, news: JobNews) -> Option<Msg> {
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
                let rerun = std::mem::take(&mut self.searcher.rerun);
                if let Err(e) = result {
                    return Some(Msg::SearchDone { query: String::new(), result: Err(e.into()), partial: None });
                }
                // Each query asked again; the first to fail at once is said (the others' answers come as jobs).
                let errors: Vec<Msg> =
                    rerun.into_iter().filter_map(|(query, asked)| self.search(state, query, asked)).collect();
                errors.into_iter().next()
            }
        }
    }

    /// The jobs under way, for `update` ([`Msg::Jobs`]).
    pub(super) fn jobs(&self) -> Vec<JobKind> {
        self.runner.kinds()
    }

    /// Start a search (see [`Searcher::search`]); an error to show at once.
    fn search(&mut self, state: &State, query: String, asked: Asked) -> Option<Msg> {
        let Effector { searcher, runner, .. } = self;
        let error = searcher.search(runner, state, query.clone(), asked).err()?;
        Some(match asked {
            Asked::Hits => Msg::SearchDone { query, result: Err(error.into()), partial: None },
            Asked::Every => Msg::Matched { query, result: Err(error.into()), searched: (0, 0) },
        })
    }

    /// Carry out an update's effects, in order, and those of the messages they answer with; `true` when the
    /// app is to quit.
    pub(super) fn apply(
        &mut self,
        terminal: &mut DefaultTerminal,
        state: &mut State,
        fx: Effects,
        redraw: &mut bool,
    ) -> Result<bool, std::io::Error> {
        let mut queue = vec![fx];
        while let Some(fx) = queue.pop() {
            let jobs_before = self.runner.kinds();
            let mut answers = Vec::new();
            for effect in fx {
                if effect == Effect::Quit {
                    self.quit(terminal, state);
                    return Ok(true);
                }
                *redraw |= effect == Effect::Redraw;
                answers.extend(self.carry_out(state, effect));
            }
            if self.runner.kinds() != jobs_before {
                answers.push(Msg::Jobs(self.runner.kinds()));
            }
            queue.extend(answers.into_iter().map(|msg| update(state, msg)));
        }
        Ok(false)
    }

    /// Quit: a burst ends its iteration, so the run and checkpoint stay valid, and a write ends its group.
    fn quit(&mut self, terminal: &mut DefaultTerminal, state: &mut State) {
        if self.runner.has(|k| k.cancel() == Cancel::Stop) {
            state.ui.message = Some("quitting once the burst or the truth stops at its next boundary …".into());
            // Said if it can be: a terminal that went away (a hang-up) must not keep the burst from its end.
            let _ = draw(terminal, state);
        }
        self.runner.wind_down();
    }

    /// Start one effect (most as a job); the message to answer with at once, if any.
    fn carry_out(&mut self, state: &State, effect: Effect) -> Option<Msg> {
        match effect {
            Effect::Redraw | Effect::Quit => None,
            Effect::Search(query) => self.search(state, query, Asked::Hits),
            Effect::Matches(query) => self.search(state, query, Asked::Every),
            Effect::EstimatorBatch(request) => {
                self.runner.spawn(JobKind::Estimators, move |_| Outcome::Msg(Msg::EstimatorBatch(request.compute())));
                None
            }
            Effect::Reconcile(key) => {
                let request = state.reconcile_request(key);
                self.runner
                    .spawn(JobKind::Reconcile, move |_| Outcome::Msg(Msg::Reconciled(Box::new(request.compute()))));
                None
            }
            Effect::OpenEnv => self.open_env(&state.domain.run),
            Effect::Write(episodes) => {
                let dir = state.domain.run.dir.clone();
                self.runner.spawn(JobKind::Write, move |_| Outcome::Msg(Msg::Written(write_episodes(&dir, &episodes))));
                None
            }
            Effect::Autoplay(request) => {
                self.autoplay(&state.domain.run, &request).err().map(|e| Msg::Autoplayed(Err(e)))
            }
            Effect::ReadTrainerBuild => Some(Msg::TrainerBuild(
                plugin_host::building::plugin_build().filter(|b| b.in_progress()).map(|b| b.to_string()),
            )),
            Effect::StartBurst(request) => self
                .start_burst(&state.domain.run, request)
                .err()
                .map(|e| Msg::Burst(BurstUpdate::Failed(e.to_string()))),
            Effect::StartRayBurst(plan) => {
                if self.runner.has(|k| matches!(k, JobKind::StartBurst | JobKind::Burst { .. } | JobKind::RayJob)) {
                    return Some(Msg::Burst(BurstUpdate::Failed(JobError::BurstRunning.to_string())));
                }
                super::ray_burst::start(&mut self.runner, *plan);
                None
            }
            Effect::GroupAnchors(request) => {
                self.start_grouping(request);
                None
            }
            Effect::Truth(request) => {
                let progress = JobKind::Truth { states: 0, continuations: 0 };
                self.runner.spawn(progress, move |ctx| Outcome::Msg(measure_truth(&request, ctx)));
                None
            }
            Effect::CancelTruth => {
                self.runner.cancel_where(|k| matches!(k, JobKind::Truth { .. }));
                None
            }
            Effect::CancelJobs => {
                self.runner.cancel();
                None
            }
        }
    }

    /// The run's policy plays a group, in the training plugin (loaded on first use), as a job.
    fn autoplay(&mut self, run: &crate::run::Run, request: &AutoplayRequest) -> Result<(), JobError> {
        let request = plugin_host::AutoplayRequest {
            run: run.dir.clone(),
            tasks: self.task_source(run)?,
            task: request.goal,
            group: request.group.clone(),
            first: request.first,
            n: request.n,
            step_limit: plugin_host::TrainConfig::default().step_limit,
            seed: request.seed,
        };
        self.runner.spawn(JobKind::Autoplay, move |_| {
            let played =
                Training::load().map_err(JobError::from).and_then(|t| t.autoplay(&request).map_err(JobError::Plugin));
            Outcome::Msg(Msg::Autoplayed(played.map(|p| (p.episodes, p.policy))))
        });
        Ok(())
    }

    /// Start a burst into the open run, in the training plugin (loaded on first use: a clear error when it
    /// cannot be). How it continues the run is the training side's decision.
    fn start_burst(&mut self, run: &crate::run::Run, request: BurstRequest) -> Result<(), JobError> {
        if self.runner.has(|k| matches!(k, JobKind::StartBurst | JobKind::Burst { .. } | JobKind::RayJob)) {
            return Err(JobError::BurstRunning);
        }
        let request = request.train_request(&run.dir, self.task_source(run)?);
        // Loading the plugin (and libtorch with it) the first time takes a while, and so does the burst.
        self.runner.spawn(JobKind::StartBurst, move |ctx| {
            if !wait_for_trainer_build(ctx) {
                return Outcome::Msg(Msg::Burst(BurstUpdate::Finished { completed: 0, cancelled: true }));
            }
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

/// The truth job: measure (the training plugin is loaded here, on first use) and merge into the iteration's
/// file; the message that ends it.
fn measure_truth(request: &TruthJobRequest, ctx: &JobContext) -> Msg {
    let outcome = truth_job::measure(request, ctx.cancel_flag(), &mut |p| {
        ctx.progress(JobKind::Truth { states: p.states_done, continuations: p.continuations });
    });
    Msg::Truth(match outcome {
        Err(_) if ctx.cancelled() => Err(TruthJobError::Cancelled { group: request.group.clone() }),
        other => other,
    })
}

/// How often a burst waiting for the trainer's build looks at it.
const BUILD_POLL: Duration = Duration::from_millis(500);

/// A burst asked for while the training plugin is being built in the background waits for the build, saying
/// how far it is; `false` when X cancelled the wait.
fn wait_for_trainer_build(ctx: &JobContext) -> bool {
    let mut said = String::new();
    while let Some(build) = plugin_host::building::plugin_build().filter(|b| b.in_progress()) {
        if ctx.cancelled() {
            return false;
        }
        let news = format!("waiting for the trainer's build: {}", build.progress());
        if news != said {
            ctx.send(Msg::Burst(BurstUpdate::Waiting(news.clone())));
            said = news;
        }
        std::thread::sleep(BUILD_POLL);
    }
    true
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

/// The run's environment as the app names it to its jobs (opening it, the policy's play, a burst), with
/// `catalog` for the environments that take one (`--catalog`).
pub fn task_source(run: &crate::run::Run, catalog: Option<&Path>) -> Result<TaskSource, JobError> {
    let registered = crate::env_registry::of_run(run)
        .ok_or_else(|| JobError::UnknownEnvironment { known: crate::env_registry::names() })?;
    let mut options = crate::env::EnvOptions::default();
    // `--catalog` is the option of the environments that take one (WebShop's catalog directory).
    let takes_catalog = registered.options.iter().any(|(key, _)| *key == "catalog");
    if let Some(catalog) = catalog.filter(|_| takes_catalog) {
        options.set("catalog", catalog.display().to_string());
    }
    Ok(TaskSource::new(registered.name, options))
}

/// Append a played group to the run in `dir` (the app's group-write job): whole lines, so the watcher (and any
/// other reader) sees whole episodes.
pub fn write_episodes(dir: &Path, episodes: &[Episode]) -> Result<usize, JobError> {
    let mut writer = RunWriter::create(dir).map_err(JobError::write)?;
    for e in episodes {
        writer.append_episode(e).map_err(JobError::write)?;
    }
    Ok(episodes.len())
}
