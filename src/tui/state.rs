//! The TUI's whole state: the run's data, what is derived from it under the current settings, and where the
//! user is. Rendering reads it; only [`super::update::update`] changes it.

use std::collections::BTreeMap;
use std::time::Instant;

use crate::advantage::{
    compute, group_anchors, recompute, regroup, AdvantageSettings, AdvantageTable, AnchorGrouping, AnchorMode, RowRef,
    SimilarityJob,
};
use crate::live::LiveStatus;
use crate::run::{Episode, Run, RunMeta};

use super::burst::{BurstRequest, BurstStatus};
use super::config::Config;
use super::play::Play;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    Overview,
    Groups,
    Episode,
    Anchor,
    Compare,
    Search,
    Play,
}

impl View {
    pub fn title(self) -> &'static str {
        match self {
            View::Overview => "Overview",
            View::Groups => "Groups",
            View::Episode => "Episode",
            View::Anchor => "Anchor group",
            View::Compare => "Compare",
            View::Search => "Search",
            View::Play => "Play",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Popup {
    Help { scroll: u16 },
    Settings { field: super::fields::Field },
    Burst { field: usize },
}

/// What the text prompt's input is for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Prompt {
    /// A query over the run's trajectory index.
    #[default]
    Search,
    /// A WebShop search typed in live play.
    PlayQuery,
}

/// One row of the run overview.
#[derive(Clone, Debug, PartialEq)]
pub struct IterationStats {
    pub iteration: i64,
    pub episodes: usize,
    pub groups: usize,
    pub success_rate: f64,
    pub mean_return: f64,
    /// Steps per episode (the second efficiency measure).
    pub mean_len: f64,
    /// Mean tokens per step over steps that record a count; `None` when no step does.
    pub tokens_per_step: Option<f64>,
    pub zero_variance_share: f64,
    pub mean_step_group_size: f64,
}

/// Everything computed from the episodes under the current settings.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Derived {
    pub table: AdvantageTable,
    /// The settings `table` was computed with: the user's, except for the anchor mode while a new grouping is
    /// being computed in the background.
    pub settings: AdvantageSettings,
    pub iterations: Vec<IterationStats>,
    /// Per entry of `iterations`: episode-group indices whose first episode is in that iteration.
    pub groups_of_iteration: Vec<Vec<u32>>,
    /// Step-group size → number of step groups of that size.
    pub size_histogram: BTreeMap<usize, usize>,
    /// Largest |trainer-recorded − recomputed| advantage over steps that carry one.
    pub max_trainer_diff: Option<f64>,
}

impl Derived {
    pub fn build(episodes: &[Episode], settings: &AdvantageSettings) -> Derived {
        Derived::from_table(episodes, compute(episodes, settings), *settings)
    }

    /// After episodes were appended to `episodes` (those from `old_len` on): when every new episode belongs
    /// to a group that did not exist before, only the new episodes are computed and their table appended
    /// (episode groups never influence each other); otherwise everything is recomputed. This keeps a live
    /// run that writes whole groups at a time fast however large it grows.
    pub fn extend(self, episodes: &[Episode], old_len: usize, settings: &AdvantageSettings) -> Derived {
        let known: std::collections::HashSet<&str> =
            self.table.episode_groups.iter().map(|g| g.name.as_str()).collect();
        if old_len > episodes.len() || episodes[old_len..].iter().any(|e| known.contains(e.group.as_str())) {
            return Derived::build(episodes, settings);
        }
        let mut table = self.table;
        table.append(compute(&episodes[old_len..], settings));
        Derived::from_table(episodes, table, *settings)
    }

    /// The summaries shown beside the table.
    fn from_table(episodes: &[Episode], table: AdvantageTable, settings: AdvantageSettings) -> Derived {
        let mut size_histogram = BTreeMap::new();
        for g in &table.anchor_groups {
            *size_histogram.entry(g.members.len()).or_insert(0) += 1;
        }
        let mut max_trainer_diff: Option<f64> = None;
        for (e, ep) in episodes.iter().enumerate() {
            if let Some(adv) = &ep.advantages {
                for (rec, row) in adv.iter().zip(table.episode_rows(e)) {
                    let d = (rec - row.advantage).abs();
                    max_trainer_diff = Some(max_trainer_diff.map_or(d, |m| m.max(d)));
                }
            }
        }
        // Iterations: per-iteration sums, then groups attached to their first episode's iteration.
        #[derive(Default)]
        struct Acc {
            episodes: usize,
            success: usize,
            ret: f64,
            steps: usize,
            tokens: u64,
            token_steps: usize,
            groups: Vec<u32>,
        }
        let mut acc: BTreeMap<i64, Acc> = BTreeMap::new();
        for ep in episodes {
            let a = acc.entry(ep.iteration).or_default();
            a.episodes += 1;
            a.success += usize::from(ep.success());
            a.ret += ep.total_reward();
            a.steps += ep.steps.len();
            for s in &ep.steps {
                if let Some(t) = s.tokens {
                    a.tokens += t;
                    a.token_steps += 1;
                }
            }
        }
        for (g, group) in table.episode_groups.iter().enumerate() {
            if let Some(&first) = group.episodes.first() {
                if let Some(a) = acc.get_mut(&episodes[first as usize].iteration) {
                    a.groups.push(g as u32);
                }
            }
        }
        let mut iterations = Vec::with_capacity(acc.len());
        let mut groups_of_iteration = Vec::with_capacity(acc.len());
        for (iteration, a) in acc {
            let zero = a.groups.iter().filter(|&&g| table.episode_groups[g as usize].zero_variance).count();
            let (mut sg_sum, mut sg_n) = (0usize, 0usize);
            for &g in &a.groups {
                // Anchor groups of this episode group: count members per anchor group once.
                for &e in &table.episode_groups[g as usize].episodes {
                    for (t, row) in table.episode_rows(e as usize).iter().enumerate() {
                        let ag = &table.anchor_groups[row.step_group as usize];
                        if ag.members.first() == Some(&RowRef { episode: e, step: t as u32 }) {
                            sg_sum += ag.members.len();
                            sg_n += 1;
                        }
                    }
                }
            }
            let n = a.episodes.max(1) as f64;
            iterations.push(IterationStats {
                iteration,
                episodes: a.episodes,
                groups: a.groups.len(),
                success_rate: a.success as f64 / n,
                mean_return: a.ret / n,
                mean_len: a.steps as f64 / n,
                tokens_per_step: (a.token_steps > 0).then(|| a.tokens as f64 / a.token_steps as f64),
                zero_variance_share: if a.groups.is_empty() { 0.0 } else { zero as f64 / a.groups.len() as f64 },
                mean_step_group_size: if sg_n == 0 { 0.0 } else { sg_sum as f64 / sg_n as f64 },
            });
            groups_of_iteration.push(a.groups);
        }
        Derived { table, settings, iterations, groups_of_iteration, size_histogram, max_trainer_diff }
    }
}

/// Where the user is. Indices into the derived lists; kept valid (clamped or re-found) after every change.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    /// Index into `Derived::iterations`.
    pub iteration: usize,
    /// Episode-group index (into `AdvantageTable::episode_groups`).
    pub group: u32,
    /// Trajectory: index into the group's episode list.
    pub traj: usize,
    pub step: usize,
    /// Member index inside the selected step's anchor group.
    pub member: usize,
    /// Compare view: the other trajectory (index into the group's episode list) and the scroll.
    pub other: usize,
    pub compare_scroll: usize,
    /// Observation scroll in lines.
    pub obs_scroll: usize,
    /// Anchor view: scroll of the explanation panel, in lines.
    pub formula_scroll: usize,
    /// Long plain-text observations show whole instead of folded (kept while moving between steps).
    pub unfolded: bool,
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

pub struct State {
    /// The run as read so far (live events are merged into it).
    pub run: Run,
    pub run_name: String,
    /// The settings the run recorded (run.json), or the defaults.
    pub recorded: AdvantageSettings,
    pub settings: AdvantageSettings,
    pub derived: Derived,
    pub view: View,
    pub popup: Option<Popup>,
    pub sel: Selection,
    /// When the run last changed and how many lines were skipped as broken.
    pub live: LiveStatus,
    /// Follow mode: jump to the newest episodes as they arrive.
    pub follow: bool,
    /// The clock as of the last tick, for "updated N s ago" (time only enters through messages).
    pub now: Option<Instant>,
    /// Terminal size (columns, rows), from resize events.
    pub size: (u16, u16),
    /// One-line message (errors of effects, hints), cleared on the next key.
    pub message: Option<String>,
    /// The search prompt's text while it is open (keys then type into it instead of acting).
    pub input: Option<String>,
    pub prompt: Prompt,
    pub search: Option<SearchState>,
    pub config: Config,
    /// Live play, once the shop is open.
    pub play: Option<Play>,
    /// A group written by play: selected as soon as the run shows it.
    pub pending_group: Option<String>,
    /// The burst dialog's form, and the burst started from it.
    pub burst_form: BurstRequest,
    pub burst: Option<BurstStatus>,
    /// Anchor groupings made for these episodes, most recent first, so that switching back to an anchor mode
    /// needs no grouping at all.
    pub groupings: Vec<AnchorGrouping>,
    /// The anchor mode being grouped in the background (similarity on a large run).
    pub grouping_job: Option<AnchorMode>,
    /// Bumped whenever the episodes change, so a grouping made for older episodes is recognised.
    pub episodes_version: u64,
}

/// How many anchor groupings [`State::groupings`] keeps (about 12 bytes per step each).
const KEPT_GROUPINGS: usize = 4;

/// A grouping for the app to compute off the UI thread, answered with `Msg::Grouped`.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupingRequest {
    pub episodes_version: u64,
    pub job: SimilarityJob,
}

/// The settings a run recorded in `run.json`, on top of the defaults.
pub fn recorded_settings(meta: Option<&RunMeta>) -> AdvantageSettings {
    meta.and_then(|m| m.advantage.as_ref()).map(|o| o.apply(AdvantageSettings::default())).unwrap_or_default()
}

impl State {
    /// A state showing `run` (already read) on a terminal of `size`.
    pub fn new(run: Run, config: Config, size: (u16, u16)) -> State {
        let recorded = recorded_settings(run.meta.as_ref());
        let run_name = run
            .meta
            .as_ref()
            .and_then(|m| m.name.clone())
            .or_else(|| run.dir.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| run.dir.display().to_string());
        let live = LiveStatus { broken_lines: run.errors.len() + run.metrics_errors.len(), ..LiveStatus::default() };
        let mut state = State {
            run,
            run_name,
            recorded,
            settings: recorded,
            derived: Derived::default(),
            view: View::Overview,
            popup: None,
            sel: Selection::default(),
            live,
            follow: false,
            now: None,
            size,
            message: None,
            input: None,
            prompt: Prompt::Search,
            search: None,
            config,
            play: None,
            pending_group: None,
            burst_form: BurstRequest::default(),
            burst: None,
            groupings: Vec::new(),
            grouping_job: None,
            episodes_version: 0,
        };
        state.rebuild();
        state
    }

    /// Whether the run is a WebShop run, so that live play (and WebShop's page anchors) apply: its recorded
    /// `env`, else a gigscope run without one (gigscope's own trainer and play write WebShop runs), never a
    /// foreign layout that does not say so.
    pub fn is_webshop(&self) -> bool {
        match self.run.meta.as_ref().and_then(|m| m.env.as_deref()) {
            Some(env) => env.eq_ignore_ascii_case("webshop"),
            None => self.run.layout == crate::run::Layout::Gigscope,
        }
    }

    pub fn settings_modified(&self) -> bool {
        self.settings != self.recorded
    }

    // ---- Resolved selection (always valid when the run has episodes) ----

    pub fn current_groups(&self) -> &[u32] {
        self.derived.groups_of_iteration.get(self.sel.iteration).map(Vec::as_slice).unwrap_or(&[])
    }

    pub fn group_episodes(&self) -> &[u32] {
        self.derived
            .table
            .episode_groups
            .get(self.sel.group as usize)
            .map(|g| g.episodes.as_slice())
            .unwrap_or(&[])
    }

    /// Index of the selected episode in `episodes`.
    pub fn episode_index(&self) -> Option<usize> {
        self.group_episodes().get(self.sel.traj).map(|&e| e as usize)
    }

    pub fn other_index(&self) -> Option<usize> {
        self.group_episodes().get(self.sel.other).map(|&e| e as usize)
    }

    /// The row whose advantage is explained: the selected member in the anchor view, else the selected step.
    pub fn explained_row(&self) -> Option<RowRef> {
        let r = self.row_ref()?;
        match self.view {
            View::Anchor => self.derived.table.anchor_group_of(r).members.get(self.sel.member).copied(),
            _ => Some(r),
        }
    }

    /// The engine's explanation of [`State::explained_row`]'s advantage, under the settings the table was
    /// computed with.
    pub fn explanation(&self) -> Option<crate::advantage::explain::Explanation> {
        let r = self.explained_row()?;
        crate::advantage::explain::explain(&self.derived.table, &self.run.episodes, &self.derived.settings, r)
    }

    pub fn row_ref(&self) -> Option<RowRef> {
        let e = self.episode_index()?;
        (self.sel.step < self.run.episodes[e].steps.len()).then_some(RowRef { episode: e as u32, step: self.sel.step as u32 })
    }

    /// Select episode `e`, step `step`: its iteration, group and trajectory.
    pub fn select_row(&mut self, e: usize, step: usize) {
        let Some(&g) = self.derived.table.episode_group_of.get(e) else { return };
        let group = &self.derived.table.episode_groups[g as usize];
        let first = group.episodes.first().map_or(e, |&f| f as usize);
        let iteration = self.run.episodes[first].iteration;
        if let Some(i) = self.derived.iterations.iter().position(|s| s.iteration == iteration) {
            self.sel.iteration = i;
        }
        self.sel.group = g;
        self.sel.traj = group.episodes.iter().position(|&x| x as usize == e).unwrap_or(0);
        self.sel.step = step;
        self.sel.obs_scroll = 0;
        self.clamp();
    }

    /// Recompute everything derived (after a reset of the episodes) and keep the user's position: the same
    /// iteration number, group and trajectory when they still exist, else the nearest valid one.
    pub fn rebuild(&mut self) {
        let iteration = self.selected_iteration();
        self.episodes_changed();
        self.grouping_job = None;
        self.derived = Derived::build(&self.run.episodes, &self.settings);
        self.reselect(iteration);
    }

    /// The settings the table is computed with: the user's, with the anchor mode the table has.
    pub fn table_settings(&self) -> AdvantageSettings {
        AdvantageSettings { anchor: self.derived.settings.anchor, ..self.settings }
    }

    /// Recompute after a settings change, the episodes unchanged. The anchor grouping is reused when the
    /// anchor mode is unchanged or was grouped before; an exact or page grouping is made at once; a similarity
    /// grouping of a large run is returned as a request for the app to compute in the background, and until it
    /// arrives the numbers are recomputed over the table's present grouping (when anything else changed).
    pub fn apply_settings(&mut self) -> Option<GroupingRequest> {
        let iteration = self.selected_iteration();
        let wanted = self.settings.anchor;
        let mut anchor = self.derived.settings.anchor;
        let mut table = std::mem::take(&mut self.derived.table);
        let mut request = None;
        if wanted == anchor {
            self.grouping_job = None;
            recompute(&mut table, &self.run.episodes, &self.settings);
        } else {
            self.keep_grouping(table.grouping(anchor));
            let kept = self.groupings.iter().position(|g| g.mode == wanted).map(|i| self.groupings.remove(i));
            let steps = table.rows.len();
            let grouping = match (kept, wanted) {
                (Some(g), _) => Some(g),
                (None, AnchorMode::Similarity(theta)) if steps >= self.config.background_grouping_steps => {
                    request = Some(self.similarity_request(theta));
                    None
                }
                (None, mode) => Some(group_anchors(&self.run.episodes, mode)),
            };
            match grouping {
                Some(grouping) => {
                    self.grouping_job = None;
                    regroup(&mut table, &self.run.episodes, &grouping, &self.settings);
                    anchor = wanted;
                    self.keep_grouping(grouping);
                }
                None if self.table_settings() == self.derived.settings => {
                    // Only the anchor mode changed and its grouping is on its way: the table stands as it is
                    // (on a large run, recomputing it for nothing would hold the frame back).
                    self.grouping_job = Some(wanted);
                    self.derived.table = table;
                    return request;
                }
                None => {
                    self.grouping_job = Some(wanted);
                    recompute(&mut table, &self.run.episodes, &self.table_settings());
                }
            }
        }
        let settings = AdvantageSettings { anchor, ..self.settings };
        self.derived = Derived::from_table(&self.run.episodes, table, settings);
        self.reselect(iteration);
        request
    }

    /// A grouping computed in the background arrived. It is kept if it was made for the present episodes and
    /// applied if the settings still ask for it; one made for older episodes is asked for again while wanted.
    pub fn grouped(&mut self, episodes_version: u64, grouping: AnchorGrouping) -> Option<GroupingRequest> {
        let mode = grouping.mode;
        if episodes_version != self.episodes_version {
            return match (self.grouping_job, mode) {
                (Some(wanted), AnchorMode::Similarity(theta)) if wanted == mode => Some(self.similarity_request(theta)),
                _ => None,
            };
        }
        self.keep_grouping(grouping);
        if self.grouping_job == Some(mode) {
            self.grouping_job = None;
        }
        if self.settings.anchor == mode && self.derived.settings.anchor != mode {
            return self.apply_settings();
        }
        None
    }

    fn similarity_request(&mut self, theta: f64) -> GroupingRequest {
        let exact = match self.groupings.iter().find(|g| g.mode == AnchorMode::Exact) {
            Some(g) => g.clone(),
            None => {
                let g = group_anchors(&self.run.episodes, AnchorMode::Exact);
                self.keep_grouping(g.clone());
                g
            }
        };
        GroupingRequest {
            episodes_version: self.episodes_version,
            job: SimilarityJob::new(&self.run.episodes, exact, theta),
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
        let iteration = self.selected_iteration();
        self.episodes_changed();
        let settings = self.table_settings();
        self.derived = std::mem::take(&mut self.derived).extend(&self.run.episodes, old_len, &settings);
        self.reselect(iteration);
    }

    /// Select the episode group named `name`, in the group view; `false` when the run has no such group.
    pub fn select_group(&mut self, name: &str) -> bool {
        let Some(g) = self.derived.table.episode_groups.iter().position(|g| g.name == name) else { return false };
        let Some(&first) = self.derived.table.episode_groups[g].episodes.first() else { return false };
        self.select_row(first as usize, 0);
        self.view = View::Groups;
        true
    }

    fn selected_iteration(&self) -> Option<i64> {
        self.derived.iterations.get(self.sel.iteration).map(|i| i.iteration)
    }

    /// After the derived lists changed: the same iteration number as before, and valid indices.
    fn reselect(&mut self, iteration: Option<i64>) {
        if let Some(it) = iteration {
            if let Some(i) = self.derived.iterations.iter().position(|s| s.iteration == it) {
                self.sel.iteration = i;
            }
        }
        self.clamp();
    }

    /// Make every index valid.
    pub fn clamp(&mut self) {
        let n_iter = self.derived.iterations.len();
        self.sel.iteration = self.sel.iteration.min(n_iter.saturating_sub(1));
        let groups = self.current_groups();
        if !groups.contains(&self.sel.group) {
            self.sel.group = groups.first().copied().unwrap_or(0);
        }
        let n = self.group_episodes().len();
        self.sel.traj = self.sel.traj.min(n.saturating_sub(1));
        self.sel.other = self.sel.other.min(n.saturating_sub(1));
        let steps = self.episode_index().map_or(0, |e| self.run.episodes[e].steps.len());
        self.sel.step = self.sel.step.min(steps.saturating_sub(1));
        let members = self.row_ref().map_or(0, |r| self.derived.table.anchor_group_of(r).members.len());
        self.sel.member = self.sel.member.min(members.saturating_sub(1));
    }
}
