//! The TUI's whole state, in parts: the loaded run and what is derived from it ([`Domain`], and the estimators'
//! numbers in [`Estimates`]), the background jobs ([`Jobs`]), and where the user is ([`Ui`]: the view, the
//! shared cursor and each view's own state). Rendering reads it; only [`super::update::update`] changes it.

use std::time::Instant;

use crate::advantage::explain::Explanation;
use crate::advantage::{GroupEpisodes, RowRef};
use crate::run::Run;

pub use super::domain::{recorded_settings, Bucket, Derived, Domain, GroupingRequest, IterationStats};

use super::burst_dialog::{BurstField, BurstHost, BurstRequest, BurstStatus};
use super::config::Config;
use super::estimates::{Estimates, BACKGROUND_BATCH_ROWS};
use super::play::Play;
use super::settings_fields::Field;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Overview,
    Groups,
    Episode,
    Anchor,
    Compare,
    Estimators,
    Search,
    Play,
    Credit,
    Timeline,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Popup {
    Help { scroll: u16 },
    Settings { field: Field },
    Burst { field: BurstField },
}

/// What the text prompt's input is for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Prompt {
    /// A query over the run's trajectory index.
    #[default]
    Search,
    /// A WebShop search typed in live play.
    PlayQuery,
    /// The reward functions' weights, typed in the settings panel (`1,2`).
    RewardWeights,
}

/// The cursor every view shares: indices into the derived lists, kept valid (clamped or re-found) after every
/// change.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cursor {
    /// Index into `Derived::iterations`.
    pub iteration: usize,
    /// Episode-group index (into `AdvantageTable::episode_groups`).
    pub group: u32,
    /// Trajectory: index into the group's episode list.
    pub traj: usize,
    pub step: usize,
}

/// The episode view's own state (its observation pane; the play view's pane shares it).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EpisodeUi {
    /// Observation scroll in lines.
    pub obs_scroll: usize,
    /// Long plain-text observations show whole instead of folded (kept while moving between steps).
    pub unfolded: bool,
    /// Token strip scroll in lines (kept within the selected step's strip as laid out; back to 0 on another
    /// step).
    pub token_scroll: usize,
    /// The token pane takes the episode view's whole detail area (kept while moving between steps).
    pub token_zoom: bool,
    /// What the token strip colours its tokens by.
    pub token_channel: super::tokens::TokenChannel,
    /// The entry of the token summaries' jump list the jump key went to last (`None`: none yet).
    pub token_jump: Option<usize>,
}

/// The anchor view's own state.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AnchorUi {
    /// Member index inside the selected step's anchor group.
    pub member: usize,
    /// Scroll of the explanation panel, in lines.
    pub formula_scroll: usize,
}

/// The compare view's own state.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CompareUi {
    /// The other trajectory (index into the group's episode list).
    pub other: usize,
    pub scroll: usize,
}

/// The estimators view's own state.
#[derive(Clone, Debug, PartialEq)]
pub struct EstimatorsUi {
    /// The first estimator column shown when they do not all fit (←/→).
    pub first_column: usize,
    /// Scroll of the agreement panel, in lines (J/K).
    pub panel_scroll: usize,
    /// Iterations of at least this many step rows have their batch columns (ProxMO's TF-IDF spans the
    /// iteration) computed as a job rather than on the UI thread.
    pub background_rows: usize,
}

impl Default for EstimatorsUi {
    fn default() -> Self {
        EstimatorsUi { first_column: 0, panel_scroll: 0, background_rows: BACKGROUND_BATCH_ROWS }
    }
}

/// The credit view's own state: the selected behaviour and, once opened, the selected row among its rows; the
/// trajectory query its steps are grouped by, when it is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CreditUi {
    pub selected: usize,
    /// The opened behaviour's rows are listed, this one selected.
    pub row: Option<usize>,
    /// Grouped by this query (the last search's) instead of by verb and target.
    pub by: Option<CreditQuery>,
}

/// The query the credit view groups by and the steps it matches, once the index has answered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CreditQuery {
    pub query: String,
    /// Its matches (`None` while the index is asked), as the audit's grouping takes them.
    pub matched: Option<crate::advantage::audit::Matched>,
    /// The matches cover the run's first `.0` of `.1` episodes (fewer while the index is being built).
    pub searched: (usize, usize),
}

/// The state timeline view's own state: the row whose anchor state it follows (the selected row when it was
/// opened) and its scroll in lines.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TimelineUi {
    pub row: Option<crate::advantage::RowRef>,
    pub scroll: usize,
}

/// The last search: its hits and which one is current.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SearchState {
    pub query: String,
    /// Total matching steps (more than `hits` when the list was capped).
    pub total: usize,
    pub hits: Vec<crate::index::Hit>,
    pub current: usize,
}

/// Where the user is and what the screen shows.
#[derive(Debug)]
pub struct Ui {
    pub view: View,
    pub popup: Option<Popup>,
    pub sel: Cursor,
    pub episode: EpisodeUi,
    pub anchor: AnchorUi,
    pub compare: CompareUi,
    pub estimators: EstimatorsUi,
    pub credit: CreditUi,
    pub timeline: TimelineUi,
    /// The search view's results.
    pub search: Option<SearchState>,
    /// The play view: the shop, the goal picker, the group being played.
    pub play: Option<Play>,
    /// Follow mode: jump to the newest episodes as they arrive.
    pub follow: bool,
    /// The clock as of the last tick, for "updated N s ago" (time only enters through messages).
    pub now: Option<Instant>,
    /// Terminal size (columns, rows), from resize events.
    pub size: (u16, u16),
    /// One-line message (errors of effects, hints), cleared on the next key.
    pub message: Option<String>,
    /// The prompt's text while it is open (keys then type into it instead of acting).
    pub input: Option<String>,
    pub prompt: Prompt,
    /// Workshop mode: larger spacing, the status line names the view and what the highlighted number means.
    pub present: bool,
}

/// Work that runs beside the UI.
#[derive(Debug, Default)]
pub struct Jobs {
    /// The burst dialog's form, and the burst started from it.
    pub burst_form: BurstRequest,
    pub burst: Option<BurstStatus>,
    /// The background build of the training plugin, while the burst dialog looks at it: how far it is.
    pub trainer_build: Option<String>,
    /// This process as a Ray burst's own `train` names it (set when the TUI starts).
    pub burst_host: BurstHost,
    /// A group written by play: selected as soon as the run shows it.
    pub pending_group: Option<String>,
    /// Effects running off the UI thread (as the job runner last reported them), oldest first.
    pub running: Vec<JobKind>,
    /// The open group's Monte-Carlo truth being measured (`T`).
    pub truth: Option<super::truth_job::TruthStatus>,
    /// The search for settings that reproduce the stored advantages, and what it offers.
    pub reconcile: super::reconcile_offer::ReconcileOffer,
}

/// The kinds of work the app runs off the UI thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobKind {
    OpenEnv,
    Autoplay,
    StartBurst,
    Write,
    /// Building the run's trajectory index for search: episodes searchable so far of those it will hold.
    Index {
        indexed: usize,
        total: usize,
    },
    Search,
    /// The estimators view's columns over a large iteration.
    Estimators,
    /// An anchor grouping the settings ask for (similarity: the anchors' text is compared).
    Grouping,
    /// The open group's Monte-Carlo truth (`T`): states measured and continuations played so far.
    Truth {
        states: usize,
        continuations: usize,
    },
    /// A training burst: iterations done of those asked for.
    Burst {
        done: u64,
        of: u64,
    },
    /// A training burst as a Ray job, followed until it ends.
    RayJob,
    /// The search for TRL settings that reproduce the trainer's stored advantages.
    Reconcile,
}

/// What cancelling a job does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cancel {
    /// `X` leaves it alone: a write appends a played group whole or not at all, and a grouping is only given
    /// up for a newer one.
    No,
    /// Its outcome is dropped (its thread runs to its end unseen).
    Drop,
    /// It is asked to stop at its next boundary (a burst's iteration, the truth's batch of continuations),
    /// stays listed until it has, and reports how it ended.
    Stop,
}

impl JobKind {
    /// For the status bar: "opening the environment".
    pub fn label(self) -> String {
        match self {
            JobKind::OpenEnv => "opening the environment".into(),
            JobKind::Autoplay => "the policy is playing".into(),
            JobKind::StartBurst => "loading the trainer".into(),
            JobKind::Write => "writing the played group".into(),
            JobKind::Index { indexed, total } => format!("indexing for search: {indexed} of {total} episodes"),
            JobKind::Search => "searching".into(),
            JobKind::Estimators => "computing the estimators over the iteration".into(),
            JobKind::Grouping => "grouping anchors".into(),
            JobKind::Truth { states, continuations } => {
                format!("measuring the truth: {states} states, {continuations} continuations")
            }
            JobKind::Burst { done, of } => format!("training: {done} of {of} iterations"),
            JobKind::RayJob => "training as a Ray job".into(),
            JobKind::Reconcile => "looking for the settings that reproduce the stored advantages".into(),
        }
    }

    pub fn cancel(self) -> Cancel {
        match self {
            JobKind::Write | JobKind::Grouping => Cancel::No,
            JobKind::Truth { .. } | JobKind::StartBurst | JobKind::Burst { .. } | JobKind::RayJob => Cancel::Stop,
            JobKind::OpenEnv
            | JobKind::Autoplay
            | JobKind::Index { .. }
            | JobKind::Search
            | JobKind::Estimators
            | JobKind::Reconcile => Cancel::Drop,
        }
    }
}

pub struct State {
    pub domain: Domain,
    /// The estimators' numbers and the truth files the views show, computed and read before a frame.
    pub estimates: Estimates,
    pub jobs: Jobs,
    pub ui: Ui,
    pub config: Config,
}

impl State {
    /// The episodes and settings the advantage table stands on now: what a search for reproducing settings is
    /// made under ([`super::reconcile_offer`]).
    pub fn reconcile_key(&self) -> super::reconcile_offer::SearchKey {
        super::reconcile_offer::SearchKey {
            episodes_version: self.domain.episodes_version,
            settings: self.domain.derived.settings,
        }
    }

    /// The settings offered because they reproduce the trainer's stored advantages, under the table as it is.
    pub fn offered_settings(&self) -> Option<&crate::advantage::AdvantageSettings> {
        self.jobs.reconcile.offered(&self.reconcile_key())
    }

    /// A state showing `run` (already read) on a terminal of `size`.
    pub fn new(run: Run, config: Config, size: (u16, u16)) -> State {
        let ui = Ui {
            view: View::Overview,
            popup: None,
            sel: Cursor::default(),
            episode: EpisodeUi::default(),
            anchor: AnchorUi::default(),
            compare: CompareUi::default(),
            estimators: Default::default(),
            credit: Default::default(),
            timeline: Default::default(),
            search: None,
            play: None,
            follow: false,
            now: None,
            size,
            message: None,
            input: None,
            prompt: Prompt::Search,
            present: config.present,
        };
        let mut state =
            State { domain: Domain::new(run), estimates: Estimates::default(), jobs: Jobs::default(), ui, config };
        state.clamp();
        state
    }

    // ---- Resolved selection (always valid when the run has episodes) ----

    pub fn current_groups(&self) -> &[u32] {
        self.domain.derived.iterations.get(self.ui.sel.iteration).map_or(&[], |i| i.stats.groups.as_slice())
    }

    pub fn group_episodes(&self) -> GroupEpisodes<'_> {
        super::estimates::group_episodes(&self.domain, self.ui.sel.group)
    }

    /// Index of the selected episode in `episodes`.
    pub fn episode_index(&self) -> Option<usize> {
        self.group_episodes().get(self.ui.sel.traj).map(|e| e as usize)
    }

    pub fn other_index(&self) -> Option<usize> {
        self.group_episodes().get(self.ui.compare.other).map(|e| e as usize)
    }

    pub fn row_ref(&self) -> Option<RowRef> {
        let e = self.episode_index()?;
        (self.ui.sel.step < self.domain.episodes.at(e).steps.len())
            .then_some(RowRef { episode: e as u32, step: self.ui.sel.step as u32 })
    }

    /// The row whose advantage is explained: the selected member in the anchor view, else the selected step.
    pub fn explained_row(&self) -> Option<RowRef> {
        let r = self.row_ref()?;
        match self.ui.view {
            View::Anchor => self.domain.derived.table.anchor_members_of(r).get(self.ui.anchor.member),
            _ => Some(r),
        }
    }

    /// The engine's explanation of [`State::explained_row`]'s advantage.
    pub fn explanation(&self) -> Option<Explanation> {
        self.domain.explanation(self.explained_row()?)
    }

    /// Select episode `e`, step `step`: its iteration, group and trajectory.
    pub fn select_row(&mut self, e: usize, step: usize) {
        let derived = &self.domain.derived;
        let Some(g) = derived.table.episode_group_index(e) else { return };
        let members = derived.table.group_episodes(g as usize);
        let first = members.first().map_or(e, |f| f as usize);
        let bucket = super::domain::bucket_of(self.domain.episodes.at(first));
        if let Some(i) = derived.iterations.iter().position(|s| s.bucket == bucket) {
            self.ui.sel.iteration = i;
        }
        self.ui.sel.group = g;
        self.ui.sel.traj = members.position(e as u32).unwrap_or(0);
        self.ui.sel.step = step;
        self.ui.episode.obs_scroll = 0;
        self.clamp();
    }

    /// Recompute everything derived (after a reset of the episodes) and keep the user's position: the same
    /// iteration, group and trajectory when they still exist, else the nearest valid one.
    pub fn rebuild(&mut self) {
        let bucket = self.selected_bucket();
        self.domain.rebuild();
        self.reselect(bucket);
    }

    /// The settings changed: recompute (see [`Domain::apply_settings`]) and keep the position.
    pub fn apply_settings(&mut self) -> Option<GroupingRequest> {
        let bucket = self.selected_bucket();
        let request = self.domain.apply_settings(self.config.background_grouping_steps);
        self.reselect(bucket);
        request
    }

    /// A grouping computed in the background arrived (see [`Domain::grouped`]).
    pub fn grouped(
        &mut self,
        episodes_version: u64,
        grouping: crate::advantage::AnchorGrouping,
    ) -> Option<GroupingRequest> {
        match self.domain.grouped(episodes_version, grouping) {
            super::domain::Arrived::Kept => None,
            super::domain::Arrived::Again(request) => Some(request),
            super::domain::Arrived::Apply => self.apply_settings(),
        }
    }

    /// Take in episodes appended from index `old_len` on, keeping the position.
    pub fn extend(&mut self, old_len: usize) {
        let bucket = self.selected_bucket();
        self.domain.extend(old_len);
        self.reselect(bucket);
    }

    /// Select the episode group named `name`, in the group view; `false` when the run has no such group.
    pub fn select_group(&mut self, name: &str) -> bool {
        let table = &self.domain.derived.table;
        let Some(g) = table.episode_groups.iter().position(|g| *g.name == *name) else { return false };
        let Some(first) = table.group_episodes(g).first() else { return false };
        self.select_row(first as usize, 0);
        self.ui.view = View::Groups;
        true
    }

    fn selected_bucket(&self) -> Option<Bucket> {
        self.domain.derived.iterations.get(self.ui.sel.iteration).map(|i| i.bucket)
    }

    /// After the derived lists changed: the same iteration as before, and valid indices.
    fn reselect(&mut self, bucket: Option<Bucket>) {
        if let Some(b) = bucket {
            if let Some(i) = self.domain.derived.iterations.iter().position(|s| s.bucket == b) {
                self.ui.sel.iteration = i;
            }
        }
        self.clamp();
    }

    /// Make every index valid.
    pub fn clamp(&mut self) {
        let n_iter = self.domain.derived.iterations.len();
        self.ui.sel.iteration = self.ui.sel.iteration.min(n_iter.saturating_sub(1));
        let groups = self.current_groups();
        if !groups.contains(&self.ui.sel.group) {
            self.ui.sel.group = groups.first().copied().unwrap_or(0);
        }
        let n = self.group_episodes().len();
        self.ui.sel.traj = self.ui.sel.traj.min(n.saturating_sub(1));
        self.ui.compare.other = self.ui.compare.other.min(n.saturating_sub(1));
        let steps = self.episode_index().map_or(0, |e| self.domain.episodes.at(e).steps.len());
        self.ui.sel.step = self.ui.sel.step.min(steps.saturating_sub(1));
        let members = self.row_ref().map_or(0, |r| self.domain.derived.table.anchor_members_of(r).len());
        self.ui.anchor.member = self.ui.anchor.member.min(members.saturating_sub(1));
    }
}
