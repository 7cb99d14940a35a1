//! What reaches `update` ([`Msg`]) and what it asks of the world in return ([`Effect`], a list of them per
//! update, carried out in order by the app's effect runner). Plain data: below `update`, the views and the
//! app, which all speak it.

use std::sync::Arc;
use std::time::Instant;

use super::action::Action;
use super::burst_dialog::{BurstRequest, BurstUpdate, RayPlan};
use super::estimates::{BatchColumns, BatchRequest};
use super::play::TasksHandle;
use super::reconcile_offer::{Reconciled, SearchKey};
use super::state::{GroupingRequest, JobKind};
use super::truth_job::{TruthJobError, TruthJobRequest};
use crate::advantage::AnchorGrouping;
use crate::env::EnvError;
use crate::index::{IndexError, SearchResults};
use crate::live::LiveEvent;
use crate::plugin_host::Unavailable;
use crate::run::{Episode, RunError};

/// Everything that can happen to the TUI.
#[derive(Debug)]
pub enum Msg {
    Action(Action),
    Click {
        col: u16,
        row: u16,
    },
    Wheel {
        col: u16,
        row: u16,
        down: bool,
    },
    Resize(u16, u16),
    /// Periodic clock, for "updated N s ago".
    Tick(Instant),
    /// What the run watcher found, received at the given instant.
    Live(Vec<LiveEvent>, Instant),
    /// Merge the next part of the episodes taken from the run's load cache ([`Domain::merge_cached`]).
    ///
    /// [`Domain::merge_cached`]: super::domain::Domain::merge_cached
    CachedPart,
    /// A key typed while the search prompt is open.
    Input(InputKey),
    /// The outcome of a search the app ran for an [`Effect::Search`]; `partial`: the index held only the first
    /// `.0` of the run's `.1` episodes (it is still being built; the search runs again when it is done).
    SearchDone {
        query: String,
        result: Result<SearchResults, JobError>,
        partial: Option<(usize, usize)>,
    },
    /// Every step a query matches, found for an [`Effect::Matches`] (the credit view's grouping) as (episode,
    /// step); `searched`: the index held the run's first `.0` of `.1` episodes (fewer while it is being built;
    /// the query is answered again when it is done).
    Matched {
        query: String,
        result: Result<Vec<(usize, usize)>, JobError>,
        searched: (usize, usize),
    },
    /// The run's environment for live play, opened for an [`Effect::OpenEnv`].
    EnvReady(Result<TasksHandle, JobError>),
    /// The policy played the rest of a play group ([`Effect::Autoplay`]): its episodes and which policy.
    Autoplayed(Result<(Vec<Episode>, String), JobError>),
    /// A play group was appended to the run ([`Effect::Write`]): how many episodes, or why not.
    Written(Result<usize, JobError>),
    /// News from the running training burst.
    Burst(BurstUpdate),
    /// How far the background build of the training plugin is ([`Effect::ReadTrainerBuild`]); none when no build
    /// is under way.
    TrainerBuild(Option<String>),
    /// An anchor grouping computed in the background for an [`Effect::GroupAnchors`].
    Grouped {
        episodes_version: u64,
        grouping: AnchorGrouping,
    },
    /// The jobs now running off the UI thread (sent by the job runner whenever the list changes).
    Jobs(Vec<JobKind>),
    /// The truth measurement started for an [`Effect::Truth`] ended: what was written, or why nothing was.
    Truth(Result<String, TruthJobError>),
    /// An iteration's estimator columns computed in the background for an [`Effect::EstimatorBatch`].
    EstimatorBatch(Arc<BatchColumns>),
    /// The settings that reproduce the stored advantages, searched for an [`Effect::Reconcile`].
    Reconciled(Box<Reconciled>),
}

/// Why something the app did in the background for `update` did not happen, as the status line says it. The
/// larger errors are boxed: messages travel through channels.
#[derive(Debug, thiserror::Error)]
pub enum JobError {
    #[error("this run's environment is not one gigscope has ({known})")]
    UnknownEnvironment { known: String },
    #[error(transparent)]
    Env(Box<EnvError>),
    #[error(transparent)]
    Index(Box<IndexError>),
    #[error(transparent)]
    PluginUnavailable(#[from] Unavailable),
    /// What the training plugin answered (it speaks in words).
    #[error("{0}")]
    Plugin(String),
    #[error("a burst is already running")]
    BurstRunning,
    #[error("writing the played group: {0} (the group was not saved)")]
    Write(#[source] Box<RunError>),
}

impl From<EnvError> for JobError {
    fn from(e: EnvError) -> JobError {
        JobError::Env(Box::new(e))
    }
}

impl From<IndexError> for JobError {
    fn from(e: IndexError) -> JobError {
        JobError::Index(Box::new(e))
    }
}

impl JobError {
    /// Writing a played group failed.
    pub fn write(e: RunError) -> JobError {
        JobError::Write(Box::new(e))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKey {
    Char(char),
    Backspace,
    Submit,
    Cancel,
}

/// One thing `update` asks the app to do; the answers come back as messages.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Draw a new frame: what is on screen changed.
    Redraw,
    /// Leave: jobs that stop at a boundary (a burst, the truth) are stopped there first.
    Quit,
    /// Run this query against the run's index and answer with [`Msg::SearchDone`].
    Search(String),
    /// Find every step this query matches in the run's index and answer with [`Msg::Matched`].
    Matches(String),
    /// Open the run's environment (WebShop: catalog, search index, goals) and answer with [`Msg::EnvReady`].
    OpenEnv,
    /// Append these episodes (a finished play group) to the run and answer with [`Msg::Written`].
    Write(Vec<Episode>),
    /// Let the run's policy play episodes and answer with [`Msg::Autoplayed`].
    Autoplay(AutoplayRequest),
    /// Look at the background build of the training plugin and answer with [`Msg::TrainerBuild`].
    ReadTrainerBuild,
    /// Start a training burst into the run; progress comes back as [`Msg::Burst`].
    StartBurst(BurstRequest),
    /// Submit a training burst as a Ray job and follow it; its log and outcome come back as [`Msg::Burst`].
    StartRayBurst(Box<RayPlan>),
    /// `X`: cancel the running jobs (a burst stops after its current iteration, the truth between batches; the
    /// others' outcomes are dropped; a write always finishes).
    CancelJobs,
    /// Compute this anchor grouping in the background and answer with [`Msg::Grouped`] (a request replaces
    /// one still running).
    GroupAnchors(GroupingRequest),
    /// Measure this group's Monte-Carlo truth in the background; its progress comes back in [`Msg::Jobs`], its
    /// end as [`Msg::Truth`].
    Truth(Box<TruthJobRequest>),
    /// Cancel the truth measurement under way (nothing is written).
    CancelTruth,
    /// Compute an iteration's estimator columns (the estimators view) in the background and answer with
    /// [`Msg::EstimatorBatch`].
    EstimatorBatch(Box<BatchRequest>),
    /// Search for the TRL settings that reproduce the stored advantages under `key` and answer with
    /// [`Msg::Reconciled`] (the job's request made then: [`crate::tui::state::State::reconcile_request`]).
    Reconcile(SearchKey),
}

/// Episodes `{group}-{first}` … `{group}-{first+n-1}` of goal `goal`, played by the run's policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AutoplayRequest {
    pub goal: usize,
    pub group: String,
    pub first: usize,
    pub n: usize,
    pub seed: u64,
}

/// What one update asks for, in the order it was asked (a queue, as gitui's internal events).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Effects(Vec<Effect>);

impl Effects {
    /// Nothing to do, nothing changed on screen.
    pub fn none() -> Effects {
        Effects::default()
    }

    /// Only a new frame.
    pub fn redraw() -> Effects {
        Effects(vec![Effect::Redraw])
    }

    /// A new frame and `effect`.
    pub fn redraw_and(effect: Effect) -> Effects {
        Effects(vec![Effect::Redraw, effect])
    }

    /// `effect` after these.
    pub fn push(&mut self, effect: Effect) {
        self.0.push(effect);
    }

    /// Whether a new frame is asked for.
    pub fn redraws(&self) -> bool {
        self.contains(&Effect::Redraw)
    }

    /// Whether the app is to quit.
    pub fn quits(&self) -> bool {
        self.contains(&Effect::Quit)
    }

    pub fn contains(&self, effect: &Effect) -> bool {
        self.0.contains(effect)
    }

    /// The first effect `pick` takes, as what it makes of it (an effect's request, say).
    pub fn find<T>(self, pick: impl FnMut(Effect) -> Option<T>) -> Option<T> {
        self.0.into_iter().find_map(pick)
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Effect> {
        self.0.iter()
    }
}

impl IntoIterator for Effects {
    type Item = Effect;
    type IntoIter = std::vec::IntoIter<Effect>;

    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl Extend<Effect> for Effects {
    fn extend<I: IntoIterator<Item = Effect>>(&mut self, effects: I) {
        self.0.extend(effects);
    }
}

impl From<Effect> for Effects {
    fn from(effect: Effect) -> Effects {
        Effects(vec![effect])
    }
}
