//! Estimators view: every step row of the selected episode group with one column per estimator of the family
//! (`crate::advantage::estimators`: gigpo, grpo, rloo, step, hgpo, graphgpo, proxmo, soft-page, q-minus-v)
//! and the Monte-Carlo truth A* of `gigscope truth` (`crate::run::truth`), and under the table each
//! estimator's agreement with A* over the iteration, as the truth file records it.
//!
//! The episode group is the unit shown because it is the unit every estimator computes over: all of its rows,
//! trajectory by trajectory, so the rows that share an anchor state (the `sg` column) are compared across
//! trajectories as the step-level estimators compare them; the cursor row is the shared selected step.
//!
//! The columns are computed on demand, per group (a group is small), the first time a group is drawn under
//! given settings, and memoised per (group, settings, episodes); ProxMO's IDF is fitted over the whole
//! iteration as its authors fit it, and TRL's batch statistics span the iteration, so those columns are
//! computed once per iteration and memoised with it: as they are drawn for a small iteration, and as a job on
//! an iteration of at least [`BACKGROUND_BATCH_ROWS`] step rows ([`background_work`], asked after every
//! update), their cells waiting meanwhile. The memo is filled at draw time rather than by the update so that
//! every path that changes the group, the settings or the episodes (keys, the settings panel, live events) is
//! covered without the update knowing this view.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Widget};

use super::{adv_span, block, clamp_add, go, hint, layout, trunc, Component, Hint, ListRegion};
use crate::advantage::estimators::{self, EnvInputs, EstimatorKind, EstimatorSettings};
use crate::advantage::{compute, AdvantageSettings, RowRef};
use crate::env::{fill_page_anchors, PageAnchor};
use crate::run::lean::EpisodeText;
use crate::run::truth::{
    branchable_among, read_truth, truth_path, truth_run_name, NoTruth, TruthAgreement, TruthFile, TruthRow,
};
use crate::run::{Episode, Run};
use crate::tui::action::Action;
use crate::tui::state::{State, View};

pub struct Estimators;

/// The view's own state.
#[derive(Debug)]
pub struct EstimatorsUi {
    /// The first estimator column shown when they do not all fit (←/→).
    pub first_column: usize,
    /// Scroll of the agreement panel, in lines (J/K).
    pub panel_scroll: usize,
    /// Iterations of at least this many step rows have their batch columns (ProxMO's TF-IDF spans the
    /// iteration) computed as a job rather than on the UI thread.
    pub background_rows: usize,
    memo: Mutex<Memo>,
}

/// [`EstimatorsUi::background_rows`]: about 25 ms of ProxMO on the UI thread (performance table).
pub const BACKGROUND_BATCH_ROWS: usize = 2_000;

impl Default for EstimatorsUi {
    fn default() -> Self {
        EstimatorsUi {
            first_column: 0,
            panel_scroll: 0,
            background_rows: BACKGROUND_BATCH_ROWS,
            memo: Mutex::default(),
        }
    }
}

/// The episode `e` of the run, read back from the run's file: the one place this view reads episodes. One that
/// can no longer be read (the file changed; the watcher reads the run again) stands in without steps.
fn episode(state: &State, e: u32) -> Arc<Episode> {
    state.domain.episode(e as usize).unwrap_or_else(|_| {
        let lean = &state.domain.episodes[e as usize];
        Arc::new(Episode::new(lean.id.as_str(), lean.group.as_str(), Vec::new()))
    })
}

impl Component for Estimators {
    fn view(&self) -> View {
        View::Estimators
    }

    fn title(&self) -> &'static str {
        "Estimators"
    }

    fn crumbs(&self, state: &State) -> Vec<String> {
        super::groups::Groups.crumbs(state)
    }

    fn hints(&self, _state: &State) -> Vec<Hint> {
        use Action::*;
        vec![
            hint(&[Up, Down], "move", "select a step row of the group (the other views follow)"),
            hint(&[PrevItem, NextItem], "group", "previous / next group of the iteration"),
            hint(&[Left, Right], "columns", "show the estimator columns left / right of these when not all fit"),
            hint(&[ScrollDown, ScrollUp], "scroll agreement", "scroll the agreement panel under the table"),
            hint(&[Open], "episode", "the selected step in the episode view"),
            hint(&[Truth], "truth", "measure this group's Monte-Carlo truth in the background (again: cancel)"),
        ]
    }

    fn highlight(&self, state: &State) -> Option<String> {
        let (cols, i) = (group_columns(state)?, cursor_row(state)?);
        let values: Vec<String> = cols
            .columns
            .iter()
            .filter_map(|c| Some(format!("{} {}", c.kind, super::adv(*c.values.as_ref().ok()?.get(i)?))))
            .collect();
        Some(format!("the selected row's A under each estimator: {}", values.join(", ")))
    }

    fn enter(&self, state: &mut State) {
        state.ui.estimators.panel_scroll = 0;
    }

    fn selects_step(&self) -> bool {
        true
    }

    fn render(&self, state: &State, area: Rect, buf: &mut Buffer) {
        render(state, area, buf);
    }

    fn list(&self, state: &State, body: Rect) -> Option<ListRegion> {
        let rect = layout::table_body(areas(state, body).table);
        Some(ListRegion { rect, len: group_rows(state).len(), selected: cursor_row(state).unwrap_or(0) })
    }

    fn scroll_region(&self, state: &State, body: Rect) -> Option<Rect> {
        Some(areas(state, body).panel)
    }

    fn on_action(&self, state: &mut State, a: Action) -> Option<crate::tui::Effects> {
        let ui = &mut state.ui.estimators;
        match a {
            Action::Left => ui.first_column = ui.first_column.saturating_sub(1),
            Action::Right => ui.first_column = (ui.first_column + 1).min(EstimatorKind::ALL.len() - 1),
            Action::Truth => return Some(crate::tui::truth_job::toggle(state)),
            _ => return super::standard(self, state, a),
        }
        Some(crate::tui::Effects::redraw())
    }

    fn move_by(&self, state: &mut State, by: isize) {
        let rows = group_rows(state);
        let Some(&to) = rows.get(clamp_add(cursor_row(state).unwrap_or(0), by, rows.len())) else { return };
        state.ui.sel.traj = state.group_episodes().iter().position(|&e| e == to.episode).unwrap_or(0);
        state.ui.sel.step = to.step as usize;
    }

    fn open(&self, state: &mut State) {
        state.ui.episode.obs_scroll = 0;
        go(state, View::Episode);
    }

    fn back_to(&self) -> View {
        View::Groups
    }

    fn item(&self, state: &mut State, by: isize) {
        super::groups::Groups.item(state, by);
        state.ui.sel.step = 0;
    }

    fn scroll(&self, state: &mut State, by: isize) {
        let max = panel_lines(state, layout::inner(areas(state, super::body(state)).panel).width as usize)
            .len()
            .saturating_sub(layout::inner(areas(state, super::body(state)).panel).height as usize);
        let s = (state.ui.estimators.panel_scroll as isize).saturating_add(by).max(0) as usize;
        state.ui.estimators.panel_scroll = s.min(max);
    }
}

// ---- The group's rows and columns ----

/// Every step row of the selected episode group: its trajectories in order, each step by step.
fn group_rows(state: &State) -> Vec<RowRef> {
    state
        .group_episodes()
        .iter()
        .flat_map(|&e| {
            (0..state.domain.episodes[e as usize].steps.len() as u32).map(move |step| RowRef { episode: e, step })
        })
        .collect()
}

/// The cursor's index in [`group_rows`].
fn cursor_row(state: &State) -> Option<usize> {
    let r = state.row_ref()?;
    group_rows(state).iter().position(|&x| x == r)
}

/// One estimator's advantages for a group's rows (in [`group_rows`] order), or why it has none.
#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub kind: EstimatorKind,
    pub values: Result<Vec<f64>, String>,
}

/// What a group's columns were computed from: the group, the settings, and the episodes as they were.
#[derive(Clone, Copy, Debug, PartialEq)]
struct GroupKey {
    episodes_version: u64,
    group: u32,
    settings: AdvantageSettings,
    family: EstimatorSettings,
}

#[derive(Debug)]
pub struct GroupColumns {
    key: GroupKey,
    pub columns: Vec<Column>,
}

/// One estimator's advantages over a batch: per episode index, its rows' advantages.
type ByEpisode = std::collections::HashMap<u32, Vec<f64>>;

/// The batch-scoped estimators' advantages over one iteration.
#[derive(Debug)]
pub struct BatchColumns {
    key: BatchKey,
    columns: Vec<(EstimatorKind, Result<ByEpisode, String>)>,
}

/// A truth file as last read, and the file's modification time then (a newer file is read again).
#[derive(Debug)]
struct TruthEntry {
    path: PathBuf,
    modified: Option<SystemTime>,
    read: Result<Arc<TruthFile>, String>,
}

#[derive(Debug, Default)]
struct Memo {
    /// Most recent first.
    groups: Vec<Arc<GroupColumns>>,
    batches: Vec<Arc<BatchColumns>>,
    /// Iterations whose batch columns a job is computing.
    pending: Vec<BatchKey>,
    truths: Vec<Arc<TruthEntry>>,
}

/// How many groups' columns, iterations' batch columns and truth files the memo keeps.
const KEPT_GROUPS: usize = 32;
const KEPT_BATCHES: usize = 2;
const KEPT_TRUTHS: usize = 4;

fn memo(state: &State) -> MutexGuard<'_, Memo> {
    // A panic while the memo was held leaves nothing half-written that matters: entries are whole `Arc`s.
    state.ui.estimators.memo.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn keep<T>(list: &mut Vec<Arc<T>>, entry: Arc<T>, kept: usize) {
    list.insert(0, entry);
    list.truncate(kept);
}

/// The settings of the family's own estimators: their authors' defaults (the CLI's flags left out).
fn family_settings() -> EstimatorSettings {
    EstimatorSettings::default()
}

/// Whether `kind`'s advantages for a group depend on the other groups of its iteration: ProxMO's TF-IDF is
/// fitted over the whole batch, and TRL's `scale_rewards` takes statistics over it.
fn batch_scoped(kind: EstimatorKind, settings: &AdvantageSettings) -> bool {
    kind == EstimatorKind::Proxmo || settings.scale_rewards.is_some()
}

/// The selected group's columns, computed now if this group was not computed under these settings before.
pub fn group_columns(state: &State) -> Option<Arc<GroupColumns>> {
    let group = state.ui.sel.group;
    let first = *state.group_episodes().first()?;
    let key = GroupKey {
        episodes_version: state.domain.episodes_version,
        group,
        settings: state.domain.table_settings(),
        family: family_settings(),
    };
    if let Some(hit) = memo(state).groups.iter().find(|g| g.key == key) {
        return Some(hit.clone());
    }
    let mut group_eps: Vec<Episode> =
        state.group_episodes().iter().map(|&e| Episode::clone(&episode(state, e))).collect();
    let env = env_inputs(&state.domain.run);
    fill_page_anchors(&mut group_eps, env.page_anchor);
    let table = compute(&group_eps, &key.settings);
    let iteration = state.domain.episodes[first as usize].iteration;
    let rows = group_rows(state);
    let columns = EstimatorKind::ALL
        .into_iter()
        .map(|kind| {
            let values = if batch_scoped(kind, &key.settings) {
                batch_column(state, iteration, kind).and_then(|by_episode| {
                    rows.iter()
                        .map(|r| {
                            by_episode
                                .get(&r.episode)
                                .and_then(|v| v.get(r.step as usize).copied())
                                .ok_or_else(|| format!("{kind}: step {} of episode {} not computed", r.step, r.episode))
                        })
                        .collect()
                })
            } else {
                estimators::compute_with_table(kind, &group_eps, &table, &key.settings, &key.family, &env.inputs())
                    .map(|out| out.advantages)
                    .map_err(|e| e.to_string())
            };
            Column { kind, values }
        })
        .collect();
    let entry = Arc::new(GroupColumns { key, columns });
    // A column still computed in the background is filled in at a later draw.
    if !entry.columns.iter().any(|c| c.values.as_ref().is_err_and(|e| e == PENDING)) {
        keep(&mut memo(state).groups, entry.clone(), KEPT_GROUPS);
    }
    Some(entry)
}

/// What an iteration's batch columns are computed from: the episodes, the iteration, the settings.
type BatchKey = (u64, i64, AdvantageSettings, EstimatorSettings);

/// An iteration's batch-scoped columns to compute, on the UI thread for a small iteration or as a job.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchRequest {
    key: BatchKey,
    /// The iteration's episodes (indices in the run, in file order) and where their text is.
    members: Vec<u32>,
    texts: Vec<EpisodeText>,
    page_anchor: Option<PageAnchor>,
}

impl BatchRequest {
    /// Read the iteration's episodes back and compute its batch-scoped columns (a job does this off the UI
    /// thread). An episode that cannot be read back makes every column an error naming it.
    pub fn compute(self) -> Arc<BatchColumns> {
        let (_, _, settings, family) = self.key;
        let eps: Result<Vec<Episode>, String> = self
            .texts
            .iter()
            .map(|t| t.read().map(|e| Episode::clone(&e)).map_err(|e| format!("reading the iteration back: {e}")))
            .collect();
        let kinds = EstimatorKind::ALL.into_iter().filter(|&k| batch_scoped(k, &settings));
        let columns = match eps {
            Err(e) => kinds.map(|k| (k, Err(e.clone()))).collect(),
            Ok(mut eps) => {
                fill_page_anchors(&mut eps, self.page_anchor);
                let table = compute(&eps, &settings);
                let env = Env { page_anchor: self.page_anchor };
                kinds
                    .map(|k| {
                        let out = estimators::compute_with_table(k, &eps, &table, &settings, &family, &env.inputs())
                            .map_err(|e| e.to_string())
                            .map(|out| {
                                let rows = |i: usize| out.episode_advantages(i).to_vec();
                                self.members.iter().enumerate().map(|(i, &e)| (e, rows(i))).collect()
                            });
                        (k, out)
                    })
                    .collect()
            }
        };
        Arc::new(BatchColumns { key: self.key, columns })
    }
}

/// The batch key of iteration `iteration` under the present settings and episodes.
fn batch_key(state: &State, iteration: i64) -> BatchKey {
    (state.domain.episodes_version, iteration, state.domain.table_settings(), family_settings())
}

/// The request for iteration `iteration`'s batch columns (the groups whose first episode is in it), and how
/// many step rows it spans.
fn batch_request(state: &State, iteration: i64) -> (BatchRequest, usize) {
    let lean = &state.domain.episodes;
    let mut members: Vec<u32> = state
        .domain
        .derived
        .table
        .episode_groups
        .iter()
        .filter(|g| g.episodes.first().is_some_and(|&e| lean[e as usize].iteration == iteration))
        .flat_map(|g| g.episodes.iter().copied())
        .collect();
    members.sort_unstable();
    let rows = members.iter().map(|&e| lean[e as usize].steps.len()).sum();
    let texts = members.iter().map(|&e| lean[e as usize].text.clone()).collect();
    let page_anchor = crate::env::page_anchor(&state.domain.run);
    let request = BatchRequest { key: batch_key(state, iteration), members, texts, page_anchor };
    (request, rows)
}

/// What a column shows while its iteration is computed in the background.
const PENDING: &str = "being computed over the whole iteration in the background";

/// `kind`'s advantages over iteration `iteration`, per episode: memoised, computed now for a small iteration,
/// or [`PENDING`] while a job computes them.
fn batch_column(state: &State, iteration: i64, kind: EstimatorKind) -> Result<ByEpisode, String> {
    let key = batch_key(state, iteration);
    let found = memo(state).batches.iter().find(|b| b.key == key).cloned();
    let batch = match found {
        Some(b) => b,
        None if memo(state).pending.contains(&key) => return Err(PENDING.into()),
        None => {
            let b = batch_request(state, iteration).0.compute();
            keep(&mut memo(state).batches, b.clone(), KEPT_BATCHES);
            b
        }
    };
    batch
        .columns
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or_else(|| Err(format!("{kind}: not computed")), |(_, c)| c.clone())
}

/// Work the estimators view needs done off the UI thread before it draws (asked after every update): the batch
/// columns of the selected group's iteration, when the view shows it, they are not computed or asked for yet,
/// and the iteration has at least [`EstimatorsUi::background_rows`] step rows.
pub fn background_work(state: &State) -> Option<Box<BatchRequest>> {
    if state.ui.view != View::Estimators || state.ui.popup.is_some() {
        return None;
    }
    let iteration = group_iteration(state)?;
    let key = batch_key(state, iteration);
    if memo(state).batches.iter().any(|b| b.key == key) || memo(state).pending.contains(&key) {
        return None;
    }
    let (request, rows) = batch_request(state, iteration);
    if rows < state.ui.estimators.background_rows {
        return None;
    }
    memo(state).pending.push(key);
    Some(Box::new(request))
}

/// An iteration's batch columns computed in the background arrived.
pub fn batch_arrived(state: &mut State, batch: Arc<BatchColumns>) -> crate::tui::Effects {
    let mut m = memo(state);
    m.pending.retain(|k| *k != batch.key);
    keep(&mut m.batches, batch, KEPT_BATCHES);
    crate::tui::Effects::redraw()
}

/// What the environment tells the estimators: its page anchor of an observation (WebShop's page type).
struct Env {
    page_anchor: Option<PageAnchor>,
}

fn env_inputs(run: &Run) -> Env {
    Env { page_anchor: crate::env::page_anchor(run) }
}

impl Env {
    fn inputs(&self) -> EnvInputs<'_> {
        EnvInputs { page_of: self.page_anchor.as_ref().map(PageAnchor::as_fn) }
    }
}

// ---- The truth ----

/// The truth of an iteration: a truth file, or why there is none.
#[derive(Clone, Debug)]
pub enum Truth {
    Present { file: Arc<TruthFile>, path: PathBuf },
    Absent(String),
}

impl Truth {
    /// The truth of episode `id`'s step `step`, if it was measured.
    pub fn row(&self, id: &str, step: usize) -> Option<&TruthRow> {
        match self {
            Truth::Present { file, .. } => file.row(id, step),
            Truth::Absent(_) => None,
        }
    }
}

/// The truth of iteration `iteration` of the open run: its truth file (read again when it changed), else why
/// there is none.
pub fn truth(state: &State, iteration: i64) -> Truth {
    let run = &state.domain.run;
    let path = truth_path(&run.dir, iteration);
    let modified = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
    let Some(modified) = modified else {
        let reason = match branchable_among(run, state.domain.episodes.iter().map(|e| e.iteration), iteration) {
            Err(NoTruth::NoPolicy { why, .. }) => format!("no policy to branch with ({why})"),
            Err(other) => other.to_string(),
            Ok(_) => {
                let command = format!("`gigscope truth {} --iteration {iteration}`", run.dir.display());
                match state.config.keymap.first_label(Action::Truth) {
                    Some(key) => format!("no truth file — press {key} (this group) / {command} (the iteration)"),
                    None => format!("no truth file — {command} writes one"),
                }
            }
        };
        return Truth::Absent(reason);
    };
    let cached = memo(state).truths.iter().find(|t| t.path == path && t.modified == Some(modified)).cloned();
    let entry = cached.unwrap_or_else(|| {
        let name = truth_run_name(&run.dir, run.meta.as_ref());
        let read = read_truth(&path, &name, iteration).map(Arc::new).map_err(|e| e.to_string());
        let entry = Arc::new(TruthEntry { path: path.clone(), modified: Some(modified), read });
        let mut m = memo(state);
        m.truths.retain(|t| t.path != path);
        keep(&mut m.truths, entry.clone(), KEPT_TRUTHS);
        entry
    });
    match &entry.read {
        Ok(file) => Truth::Present { file: file.clone(), path },
        Err(e) => Truth::Absent(e.clone()),
    }
}

/// The standard error of A* = Q̂ − V̂: the continuations behind Q̂ and V̂ are rolled out independently, so
/// their variances add.
pub fn a_star_se(row: &TruthRow) -> f64 {
    row.q_se.hypot(row.v_se)
}

/// A* ± its standard error, as a cell.
pub fn a_star_text(row: &TruthRow) -> String {
    format!("{:+.3}±{:.3}", row.a_star, a_star_se(row))
}

/// The iteration the selected group belongs to (its first episode's).
fn group_iteration(state: &State) -> Option<i64> {
    state.group_episodes().first().map(|&e| state.domain.episodes[e as usize].iteration)
}

// ---- Layout and drawing ----

struct Areas {
    header: Rect,
    table: Rect,
    panel: Rect,
}

const HEADER_LINES: u16 = 2;

fn areas(state: &State, body: Rect) -> Areas {
    let [header, rest] = Layout::vertical([Constraint::Length(HEADER_LINES), Constraint::Min(0)]).areas(body);
    let wanted = panel_lines(state, rest.width.saturating_sub(2) as usize).len() as u16 + 2;
    let panel_h = wanted.min(rest.height / 2).max(3.min(rest.height));
    let [table, panel] = Layout::vertical([Constraint::Min(0), Constraint::Length(panel_h)]).areas(rest);
    Areas { header, table, panel }
}

/// Width of an estimator's column: its values (`-10.512`) and its name; of the truth column (`+0.512±0.081`).
fn value_width(kind: EstimatorKind) -> u16 {
    (kind.name().len() as u16).max(7)
}
const TRUTH_W: u16 = 13;
const ABSENT_TRUTH_W: u16 = 3;

/// The columns that fit `width`: the first estimator shown, how many, and the action column's width (0: none).
fn fit(state: &State, width: u16, truth_present: bool) -> (usize, usize, u16) {
    let gap = super::spacing(state);
    let truth_w = if truth_present { TRUTH_W } else { ABSENT_TRUTH_W };
    let room = width.saturating_sub(4 + 4 + 3 + truth_w + 4 * gap);
    let all = EstimatorKind::ALL.len();
    let span = |kinds: &[EstimatorKind]| kinds.iter().map(|&k| value_width(k) + gap).sum::<u16>();
    // From the user's first column on, as many as fit (at least one); moved left while every column up to the
    // last still fits, so that scrolling never leaves room unused.
    let mut first = state.ui.estimators.first_column.min(all - 1);
    while first > 0 && span(&EstimatorKind::ALL[first - 1..]) <= room {
        first -= 1;
    }
    let end = (first + 1..=all).take_while(|&end| span(&EstimatorKind::ALL[first..end]) <= room).last();
    let end = end.unwrap_or(first + 1);
    let left = room.saturating_sub(span(&EstimatorKind::ALL[first..end]));
    let action_w = if first == 0 && end == all && left >= 12 + gap { left - gap } else { 0 };
    (first, end - first, action_w)
}

fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let Some(cols) = group_columns(state) else { return };
    let iteration = group_iteration(state).unwrap_or(0);
    let truth = truth(state, iteration);
    let a = areas(state, area);
    let rows = group_rows(state);
    let table = &state.domain.derived.table;
    let group = table.episode_groups.get(state.ui.sel.group as usize);
    let header = vec![
        Line::styled(
            trunc(
                &format!(
                    "group {} · iteration {iteration} · {} trajectories · {} step rows",
                    group.map_or("", |g| g.name.as_str()),
                    state.group_episodes().len(),
                    rows.len()
                ),
                area.width as usize,
            ),
            theme.title(),
        ),
        match &state.jobs.truth {
            Some(job) => Line::styled(trunc(&job.describe(), area.width as usize), theme.warn()),
            None => Line::styled(
                trunc(
                    "sg = anchor-group size · A* = Q̂ − V̂ ± se · family estimators at their defaults",
                    area.width as usize,
                ),
                theme.dim(),
            ),
        },
    ];
    Paragraph::new(header).render(a.header, buf);

    let truth_present = matches!(truth, Truth::Present { .. });
    let inner_w = layout::inner(a.table).width;
    let (first, fits, action_w) = fit(state, inner_w, truth_present);
    let shown = &cols.columns[first..first + fits];
    let body = layout::table_body(a.table);
    let selected = cursor_row(state).unwrap_or(0);
    let start = layout::window_start(selected, rows.len(), body.height as usize);
    let group_eps = state.group_episodes();
    let lines = rows.iter().enumerate().skip(start).take(body.height as usize).map(|(i, r)| {
        let ep = episode(state, r.episode);
        let traj = group_eps.iter().position(|&e| e == r.episode).map_or("?".into(), |p| (p + 1).to_string());
        let sg = table.anchor_group_of(*r).members.len();
        let mut cells = vec![Cell::from(traj), Cell::from(r.step.to_string()), Cell::from(sg.to_string())];
        if action_w > 0 {
            cells.push(Cell::from(trunc(&ep.steps[r.step as usize].action, action_w as usize)));
        }
        for c in shown {
            cells.push(match &c.values {
                Ok(v) => v.get(i).map_or_else(|| Cell::from("—"), |&v| Cell::from(adv_span(state, v))),
                Err(e) if e == PENDING => Cell::from(Span::styled("…", theme.dim())),
                Err(_) => Cell::from(Span::styled("absent", theme.dim())),
            });
        }
        cells.push(match truth.row(&ep.id, r.step as usize) {
            Some(t) => Cell::from(Span::styled(a_star_text(t), theme.signed(t.a_star))),
            None => Cell::from(Span::styled("—", theme.dim())),
        });
        let row = Row::new(cells);
        if i == selected {
            row.style(theme.selected())
        } else {
            row
        }
    });
    let mut widths = vec![Constraint::Length(4), Constraint::Length(4), Constraint::Length(3)];
    let mut titles: Vec<String> = vec!["traj".into(), "step".into(), "sg".into()];
    if action_w > 0 {
        widths.push(Constraint::Length(action_w));
        titles.push("action".into());
    }
    for c in shown {
        widths.push(Constraint::Length(value_width(c.kind)));
        titles.push(c.kind.name().into());
    }
    widths.push(Constraint::Length(if truth_present { TRUTH_W } else { ABSENT_TRUTH_W }));
    titles.push("A*".into());
    let more = if fits < EstimatorKind::ALL.len() {
        format!(" · estimators {}–{} of {} · ←/→ more", first + 1, first + fits, EstimatorKind::ALL.len())
    } else {
        String::new()
    };
    Table::new(lines, widths)
        .column_spacing(super::spacing(state))
        .header(Row::new(titles).style(theme.title()))
        .block(block(state, format!("Step rows × estimators{more}")))
        .render(a.table, buf);

    let inner = layout::inner(a.panel);
    let lines = panel_lines(state, inner.width as usize);
    let h = inner.height as usize;
    let skip = state.ui.estimators.panel_scroll.min(lines.len().saturating_sub(h));
    let scrolled = if lines.len() > h {
        format!(" · J/K scroll {}–{}/{}", skip + 1, (skip + h).min(lines.len()), lines.len())
    } else {
        String::new()
    };
    let title = match &truth {
        Truth::Present { file, .. } => {
            format!("Agreement with A* over iteration {iteration} (K = {})", file.header.rollouts)
        }
        Truth::Absent(_) => "Truth A* and absent columns".into(),
    };
    Paragraph::new(lines.into_iter().skip(skip).take(h).collect::<Vec<_>>())
        .block(block(state, format!("{title}{scrolled}")))
        .render(a.panel, buf);
}

/// The panel under the table: where the truth comes from (or why there is none), each estimator's agreement
/// with it over the iteration, and why an absent column is absent; wrapped to `width`.
fn panel_lines(state: &State, width: usize) -> Vec<Line<'static>> {
    let theme = &state.config.theme;
    let mut out: Vec<Line<'static>> = Vec::new();
    let mut push = |text: &str, style: Style| {
        crate::tui::ui::text::hanging("", text, width, &mut |m, l| out.push(Line::styled(format!("{m}{l}"), style)));
    };
    let Some(iteration) = group_iteration(state) else { return vec![] };
    match truth(state, iteration) {
        Truth::Present { file, path } => {
            let h = &file.header;
            push(
                &format!(
                    "{} · {} of {} groups · {} rows · seed {}",
                    path.display(),
                    h.groups.len(),
                    h.groups_in_iteration,
                    file.rows.len(),
                    h.seed
                ),
                theme.dim(),
            );
            for kind in EstimatorKind::ALL {
                match file.agreements.iter().find(|a| a.estimator == kind.name()) {
                    Some(a) => push(&agreement_text(a), Style::new()),
                    None => push(&format!("{:<10} not in the truth file", kind.name()), theme.dim()),
                }
            }
        }
        Truth::Absent(reason) => push(&format!("A* absent: {reason}"), theme.warn()),
    }
    if let Some(cols) = group_columns(state) {
        for c in &cols.columns {
            match &c.values {
                Err(e) if e == PENDING => push(&format!("{}: {e} …", c.kind), theme.warn()),
                Err(e) => push(&format!("{} absent: {e}", c.kind), theme.dim()),
                Ok(_) => {}
            }
        }
    }
    out
}

/// One estimator's agreement with A*: Spearman ρ, sign agreement, the error after the best scale fit.
pub fn agreement_text(a: &TruthAgreement) -> String {
    if let Some(e) = &a.error {
        return format!("{:<10} absent: {e}", a.estimator);
    }
    let num = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("—".to_string(), f);
    format!(
        "{:<10} Spearman {} · sign {} · scale-fit RMSE {} (c = {}) · {} states",
        a.estimator,
        num(a.spearman, &|v| format!("{v:+.3}")),
        num(a.sign_agreement, &|v| format!("{:.0}%", v * 100.0)),
        num(a.rmse, &|v| format!("{v:.3}")),
        num(a.scale, &|v| format!("{v:.3}")),
        a.states
    )
}
