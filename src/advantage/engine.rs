//! The GiGPO advantage engine: episode-level relative advantages within episode groups and step-level
//! relative advantages within anchor-state groups, reproducing the reference trainer's computation.
//!
//! For episode τ of group g with (shaped) rewards r_0..r_{T-1} and invalid-action penalty c:
//!
//! - row score s = Σ_k r_k − c·[step invalid]; return R_t = Σ_{k≥t} γ^{k−t} r_k − c·[step invalid]
//!   (the penalty lowers only the invalid row's own score and return, it is not discounted into earlier rows);
//! - A_E = (s − mean) / F over the episode group's pool: every row (pooling `steps`, what the reference trainer
//!   does) or each trajectory's first row (pooling `trajectories`, the paper's equation). With pooling
//!   `trajectories` only the baseline comes from first rows: every row's A_E uses its own score, as the
//!   reference trainer does. A pool of one sample has mean 0 and F 1, so its advantage is the raw score (as the
//!   issue specifies; the reference trainer's `mean_std_norm` divides such a score by 1 + 1e-6);
//! - A_S = (R_t − mean_S) / F_S over the row's anchor-state group; a singleton step group gives 0;
//! - F = 1 (`mean_norm`) or the sample standard deviation (N−1) + 1e-6 (`mean_std_norm`).
//!
//! [`RowAdvantage::episode_advantage`] and [`RowAdvantage::step_advantage`] are always these two GiGPO
//! components, whatever the estimator, so that views can show them side by side; the estimator only decides
//! [`RowAdvantage::advantage`]: A_E + ω·A_S (`gigpo`), A_E (`grpo`), A_S (`step`), or
//! n/(n−1)·(s − mean) over the same pool (`rloo`, 0 for a pool of one: no other sample to leave in).
//!
//! With `scale_rewards` set, A_E is TRL GRPOTrainer's advantage instead (see [`super::trl`]): computed after
//! the rest, as it takes statistics over a whole batch (an iteration) rather than one episode group.

use foldhash::{HashMap, HashMapExt};
use rayon::prelude::*;

use super::grouping::{group_anchors, regroup, AnchorGrouping};
use super::input::EngineInput;
use super::settings::{AdvantageSettings, AnchorMode, Estimator, Norm, Pooling};
use crate::run::{Episode, Step};
use crate::text::difflib::{Candidate, Matcher, Reference};

/// Added to the standard deviation by `mean_std_norm`, as in the reference trainer.
pub const STD_EPSILON: f64 = 1e-6;

/// Reward given to the last step of a successful episode by the binary success shaping (WebShop training
/// convention); every other step gets 0.
pub const SUCCESS_REWARD: f64 = 10.0;

/// Everything computed for one step row. The table keeps only what the rest is made from ([`StoredRow`]: the
/// shaped reward, the anchor group, the counts) and the statistics of its groups, and derives a row's values
/// when asked ([`AdvantageTable::episode_rows`]), with the operations the computation used, in the same order:
/// the values are those the engine computed, bit for bit. A viewer of a 1.5 M-step run holds 16 bytes a row
/// instead of 56.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RowAdvantage {
    /// Reward after shaping.
    pub reward: f64,
    /// Row score s = Σ_k r_k − c·[step invalid].
    pub score: f64,
    /// Discounted return R_t = Σ_{k≥t} γ^{k−t} r_k − c·[step invalid].
    pub ret: f64,
    /// GiGPO's episode component A_E (whatever the estimator).
    pub episode_advantage: f64,
    /// GiGPO's step component A_S (whatever the estimator).
    pub step_advantage: f64,
    /// The estimator's final advantage.
    pub advantage: f64,
    /// Index into [`AdvantageTable::anchor_groups`].
    pub step_group: u32,
    /// How many times the trainer counted this row in its statistics ([`Step::copies`]: verl-agent's
    /// `adjust_batch` copies rows to pad its batch); 1 for every row of gigscope's own runs.
    pub copies: u32,
}

/// What the table keeps of a row: the rest of its [`RowAdvantage`] is derived from it and its groups.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct StoredRow {
    /// Reward after shaping.
    pub(super) reward: f64,
    /// Index into [`AdvantageTable::anchor_groups`].
    pub(super) step_group: u32,
    /// [`RowAdvantage::copies`] in the low 31 bits, [`INVALID_ROW`] set for a step that was not valid.
    counts: u32,
}

const INVALID_ROW: u32 = 1 << 31;

impl StoredRow {
    fn copies(self) -> u32 {
        self.counts & !INVALID_ROW
    }

    fn valid(self) -> bool {
        self.counts & INVALID_ROW == 0
    }
}

/// The settings a row's values are derived with.
#[derive(Clone, Copy, Debug, PartialEq)]
struct RowRule {
    gamma: f64,
    invalid_penalty: f64,
    omega: f64,
    estimator: Estimator,
}

impl Default for RowRule {
    fn default() -> RowRule {
        RowRule::of(&AdvantageSettings::default())
    }
}

impl RowRule {
    fn of(settings: &AdvantageSettings) -> RowRule {
        RowRule {
            gamma: settings.gamma,
            invalid_penalty: settings.invalid_penalty,
            omega: settings.omega,
            estimator: settings.estimator,
        }
    }

    /// c·[step invalid].
    fn penalty(&self, row: StoredRow) -> f64 {
        if row.valid() {
            0.0
        } else {
            self.invalid_penalty
        }
    }
}

/// What TRL's computation gives an episode instead of the engine's episode level ([`super::trl`]): its A_E and
/// its RLOO advantage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct EpisodeTerms {
    pub(super) episode_advantage: f64,
    pub(super) rloo: f64,
}

/// A row is addressed by its episode's index in the input and its step index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct RowRef {
    pub episode: u32,
    pub step: u32,
}

/// Steps of one episode group that share an anchor state (GiGPO's step group).
#[derive(Clone, Debug, PartialEq)]
pub struct AnchorGroup {
    pub episode_group: u32,
    /// The samples its statistics counted: Σ copies over the members (a group of one sample gives A_S = 0).
    pub samples: u32,
    /// Members in file order; the first one is the cluster representative in similarity mode.
    pub members: Members,
    /// Mean and sample std (N−1; 0 for a singleton) of the members' returns.
    pub mean: f64,
    pub std: f64,
    /// The divisor F_S used for A_S (1 under `mean_norm`, std + 1e-6 under `mean_std_norm`).
    pub factor: f64,
}

/// The members of an anchor group, in file order: a slice of [`RowRef`]s. Most anchor groups have one or two
/// members (on a large WebShop run, 71% are singletons), so those are kept inline rather than in an allocation
/// of their own: a viewer of a 1.5 M-step run holds about 0.9 M anchor groups, and a heap block per group cost
/// more than the group itself.
#[derive(Clone)]
pub struct Members(MembersRepr);

#[derive(Clone)]
enum MembersRepr {
    Inline { len: u8, items: [RowRef; INLINE_MEMBERS] },
    Heap(Box<[RowRef]>),
}

const INLINE_MEMBERS: usize = 2;
const NO_ROW: RowRef = RowRef { episode: 0, step: 0 };

impl Members {
    pub const EMPTY: Members = Members(MembersRepr::Inline { len: 0, items: [NO_ROW; INLINE_MEMBERS] });
}

impl From<&[RowRef]> for Members {
    fn from(rows: &[RowRef]) -> Members {
        if rows.len() <= INLINE_MEMBERS {
            let mut items = [NO_ROW; INLINE_MEMBERS];
            items[..rows.len()].copy_from_slice(rows);
            Members(MembersRepr::Inline { len: rows.len() as u8, items })
        } else {
            Members(MembersRepr::Heap(rows.into()))
        }
    }
}

impl From<Vec<RowRef>> for Members {
    fn from(rows: Vec<RowRef>) -> Members {
        Members::from(rows.as_slice())
    }
}

impl std::ops::Deref for Members {
    type Target = [RowRef];

    fn deref(&self) -> &[RowRef] {
        match &self.0 {
            MembersRepr::Inline { len, items } => &items[..usize::from(*len)],
            MembersRepr::Heap(rows) => rows,
        }
    }
}

impl std::ops::DerefMut for Members {
    fn deref_mut(&mut self) -> &mut [RowRef] {
        match &mut self.0 {
            MembersRepr::Inline { len, items } => &mut items[..usize::from(*len)],
            MembersRepr::Heap(rows) => rows,
        }
    }
}

impl<'a> IntoIterator for &'a Members {
    type Item = &'a RowRef;
    type IntoIter = std::slice::Iter<'a, RowRef>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl PartialEq for Members {
    fn eq(&self, other: &Members) -> bool {
        **self == **other
    }
}

impl std::fmt::Debug for Members {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// One episode group (same task, same start state).
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeGroup {
    pub name: String,
    /// Indices of its episodes, in file order.
    pub episodes: Vec<u32>,
    /// Mean and sample std of the pool the episode baseline was taken over (std 0 for one sample).
    pub mean: f64,
    pub std: f64,
    pub pool_size: usize,
    /// The baseline and divisor actually used for A_E: (mean, F), or (0, 1) for a pool of one sample.
    pub baseline: f64,
    pub factor: f64,
    /// All trajectories have the same total (shaped) reward: A_E carries no learning signal.
    /// Trivially true for a group of one trajectory.
    pub zero_variance: bool,
}

/// The engine's output for a list of episodes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AdvantageTable {
    /// `row_offsets[e]..row_offsets[e + 1]` are episode `e`'s rows (table-wide row indices).
    pub row_offsets: Vec<usize>,
    pub(super) rows: Vec<StoredRow>,
    /// Anchor groups, episode group by episode group, each in order of first appearance.
    pub anchor_groups: Vec<AnchorGroup>,
    /// Episode groups in order of first appearance in the file.
    pub episode_groups: Vec<EpisodeGroup>,
    /// Episode index → index into `episode_groups`.
    pub episode_group_of: Vec<u32>,
    rule: RowRule,
    /// TRL's episode terms, one per episode, when the settings ask for TRL's computation; else empty.
    episode_terms: Vec<EpisodeTerms>,
    /// Advantages put in place of the estimator's, one per row ([`AdvantageTable::replace_advantages`]); else
    /// empty.
    replaced: Vec<f64>,
}

impl AdvantageTable {
    /// The number of rows (steps).
    pub fn row_count(&self) -> usize {
        self.rows.len()
    }

    /// Episode `e`'s rows, in step order.
    pub fn episode_rows(&self, e: usize) -> Vec<RowAdvantage> {
        let (start, end) = (self.row_offsets[e], self.row_offsets[e + 1]);
        let stored = &self.rows[start..end];
        let group = &self.episode_groups[self.episode_group_of[e] as usize];
        let terms = self.episode_terms.get(e);
        let rule = &self.rule;
        let rloo_scale = rloo_scale(group.pool_size);
        let mut rows = Vec::with_capacity(stored.len());
        for (t, (row, (score, ret))) in stored.iter().zip(scores_and_returns(stored, rule)).enumerate() {
            let anchor = &self.anchor_groups[row.step_group as usize];
            let step_advantage = step_advantage(ret, anchor);
            let (episode_advantage, advantage) = match terms {
                Some(terms) => {
                    (terms.episode_advantage, advantage(terms.episode_advantage, step_advantage, terms.rloo, rule))
                }
                None => {
                    let episode_advantage = (score - group.baseline) / group.factor;
                    let rloo = rloo_scale * (score - group.mean);
                    (episode_advantage, advantage(episode_advantage, step_advantage, rloo, rule))
                }
            };
            rows.push(RowAdvantage {
                reward: row.reward,
                score,
                ret,
                episode_advantage,
                step_advantage,
                advantage: self.replaced.get(start + t).copied().unwrap_or(advantage),
                step_group: row.step_group,
                copies: row.copies(),
            });
        }
        rows
    }

    /// Every row, episode by episode.
    pub fn rows(&self) -> impl Iterator<Item = RowAdvantage> + '_ {
        (0..self.episode_group_of.len()).flat_map(|e| self.episode_rows(e))
    }

    pub fn row(&self, at: RowRef) -> RowAdvantage {
        self.episode_rows(at.episode as usize)[at.step as usize]
    }

    /// Step `step` of episode `episode`, if the table has it.
    pub fn get_row(&self, episode: usize, step: usize) -> Option<RowAdvantage> {
        if episode + 1 >= self.row_offsets.len() {
            return None;
        }
        self.episode_rows(episode).get(step).copied()
    }

    /// The row of table-wide index `row` (see [`AdvantageTable::row_offsets`]).
    pub fn row_at(&self, row: usize) -> RowAdvantage {
        let e = self.row_offsets.partition_point(|&o| o <= row) - 1;
        self.episode_rows(e)[row - self.row_offsets[e]]
    }

    /// The anchor group of every row, in table order.
    pub fn step_groups(&self) -> impl ExactSizeIterator<Item = u32> + '_ {
        self.rows.iter().map(|r| r.step_group)
    }

    pub fn anchor_group_of(&self, at: RowRef) -> &AnchorGroup {
        let row = self.rows[self.row_offsets[at.episode as usize] + at.step as usize];
        &self.anchor_groups[row.step_group as usize]
    }

    pub fn episode_group_of(&self, episode: usize) -> &EpisodeGroup {
        &self.episode_groups[self.episode_group_of[episode] as usize]
    }

    /// Put `advantages` (one per row, in table order) in place of the estimator's final advantages: a family
    /// estimator's column ([`super::estimators`]); A_E and A_S stay GiGPO's components.
    pub fn replace_advantages(&mut self, advantages: Vec<f64>) {
        assert_eq!(advantages.len(), self.rows.len(), "replace_advantages: one advantage per row");
        self.replaced = advantages;
    }

    /// Append `extra`, the table [`compute`]d alone for episodes that follow this table's episodes in the input
    /// and belong only to episode groups this table does not have, under the same settings: its episodes, rows,
    /// anchor groups and episode groups are renumbered to follow this table's. Episode groups never influence
    /// each other, so the result equals the table of all the episodes computed at once (with TRL's
    /// `scale_rewards = batch` or `normalize_then_sum`, only if `extra` holds whole iterations: those take
    /// statistics over an iteration).
    pub fn append(&mut self, extra: AdvantageTable) {
        assert!(
            self.replaced.is_empty() && extra.replaced.is_empty(),
            "append: a table whose advantages were replaced"
        );
        if self.row_offsets.is_empty() {
            self.row_offsets.push(0);
        }
        let episode_base = self.episode_group_of.len() as u32;
        let row_base = self.rows.len();
        let anchor_base = self.anchor_groups.len() as u32;
        let group_base = self.episode_groups.len() as u32;
        self.row_offsets.extend(extra.row_offsets.iter().skip(1).map(|o| o + row_base));
        self.rows.extend(extra.rows.into_iter().map(|r| StoredRow { step_group: r.step_group + anchor_base, ..r }));
        self.anchor_groups.extend(extra.anchor_groups.into_iter().map(|mut a| {
            a.episode_group += group_base;
            for m in a.members.iter_mut() {
                m.episode += episode_base;
            }
            a
        }));
        self.episode_groups.extend(extra.episode_groups.into_iter().map(|mut g| {
            for e in &mut g.episodes {
                *e += episode_base;
            }
            g
        }));
        self.episode_group_of.extend(extra.episode_group_of.into_iter().map(|g| g + group_base));
        self.episode_terms.extend(extra.episode_terms);
        self.rule = extra.rule;
    }

    /// Room for about `episodes` episodes in all, projected from what the table holds per episode so far (10%
    /// more, so that a projection that creeps up does not move the arrays again). A viewer that appends a
    /// large run part by part calls it once it can tell the run's size: grown by doubling instead, the largest
    /// arrays (a 1.5 M-step run's rows and anchor groups take 24 and 51 MB) are moved time and again, each move
    /// holding the viewer's thread for up to 15 ms. Room never written to takes address space, not memory.
    pub fn reserve_for(&mut self, episodes: usize) {
        let now = self.episode_group_of.len();
        if now == 0 || episodes <= now {
            return;
        }
        let ratio = episodes as f64 / now as f64 * 1.1;
        fn reserve<T>(v: &mut Vec<T>, ratio: f64) {
            let target = (v.len() as f64 * ratio) as usize;
            if v.capacity() < target {
                v.reserve_exact(target - v.len());
            }
        }
        reserve(&mut self.rows, ratio);
        reserve(&mut self.row_offsets, ratio);
        reserve(&mut self.anchor_groups, ratio);
        reserve(&mut self.episode_groups, ratio);
        reserve(&mut self.episode_group_of, ratio);
        reserve(&mut self.episode_terms, ratio);
    }

    /// TRL's terms for each episode (the table then derives A_E and the RLOO advantage from them).
    pub(super) fn set_episode_terms(&mut self, terms: Vec<EpisodeTerms>) {
        self.episode_terms = terms;
    }
}

/// n/(n−1) for a pool of n > 1 samples; 0 for one (RLOO has no other sample to leave in).
pub(super) fn rloo_scale(pool: usize) -> f64 {
    if pool > 1 {
        pool as f64 / (pool - 1) as f64
    } else {
        0.0
    }
}

/// Each row's score and return from the rewards the table keeps: s = Σ_k r_k − c·[invalid], R_t by Horner's rule
/// from the last step back. Exactly the operations of the computation, so that derived values are its own.
fn scores_and_returns(rows: &[StoredRow], rule: &RowRule) -> Vec<(f64, f64)> {
    let mut total = 0.0;
    for row in rows {
        total += row.reward;
    }
    let mut out = vec![(0.0, 0.0); rows.len()];
    let mut running = 0.0;
    for (row, slot) in rows.iter().zip(out.iter_mut()).rev() {
        running = row.reward + rule.gamma * running;
        let penalty = rule.penalty(*row);
        *slot = (total - penalty, running - penalty);
    }
    out
}

/// A_S of a row with return `ret` in `anchor`: 0 in a group of one sample.
fn step_advantage(ret: f64, anchor: &AnchorGroup) -> f64 {
    if anchor.samples <= 1 {
        0.0
    } else {
        (ret - anchor.mean) / anchor.factor
    }
}

/// The estimator's final advantage from GiGPO's components and the RLOO advantage.
fn advantage(episode_advantage: f64, step_advantage: f64, rloo: f64, rule: &RowRule) -> f64 {
    match rule.estimator {
        Estimator::Gigpo => episode_advantage + rule.omega * step_advantage,
        Estimator::Grpo => episode_advantage,
        Estimator::Step => step_advantage,
        Estimator::Rloo => rloo,
    }
}

/// Compute advantages for `episodes` (in file order) under `settings`: their anchor grouping
/// ([`group_anchors`]), then the numbers over it ([`compute_grouped`]).
pub fn compute(episodes: &[Episode], settings: &AdvantageSettings) -> AdvantageTable {
    compute_grouped(episodes, &group_anchors(episodes, settings.anchor), settings)
}

/// Compute advantages for `input` under `settings` over `grouping`, its anchor grouping under
/// `settings.anchor` (made from the same episodes).
///
/// Episode groups never influence each other, so they are computed in parallel (rayon's global pool) and
/// assembled in group order: the table is the same, bit for bit, whatever the number of threads.
pub fn compute_grouped<I: EngineInput + ?Sized>(
    input: &I,
    grouping: &AnchorGrouping,
    settings: &AdvantageSettings,
) -> AdvantageTable {
    let (episode_groups, episode_group_of) = group_episodes(input);
    let n = input.episode_count();
    let mut row_offsets = Vec::with_capacity(n + 1);
    row_offsets.push(0);
    for e in 0..n {
        row_offsets.push(row_offsets[e] + input.step_count(e));
    }
    let rows = vec![EMPTY_ROW; row_offsets[n]];
    let mut table = AdvantageTable {
        row_offsets,
        rows,
        anchor_groups: Vec::new(),
        episode_groups,
        episode_group_of,
        rule: RowRule::of(settings),
        episode_terms: Vec::new(),
        replaced: Vec::new(),
    };
    regroup(&mut table, input, grouping, settings);
    table
}

/// Recompute `table`, which [`compute`] made from this `input` under settings with the same
/// [`AdvantageSettings::anchor`] mode, for new `settings`: the anchor-state groups (the costly part: hashing or
/// comparing every anchor string) are kept, everything numeric is computed again. The result equals
/// `compute(input, settings)` bit for bit. With another anchor mode it would keep the old grouping: call
/// [`compute`] (or [`regroup`]) then.
pub fn recompute<I: EngineInput + ?Sized>(table: &mut AdvantageTable, input: &I, settings: &AdvantageSettings) {
    let same_shape = table.row_offsets.len() == input.episode_count() + 1
        && table.row_offsets.windows(2).enumerate().all(|(e, o)| input.step_count(e) == o[1] - o[0]);
    assert!(same_shape, "recompute: the table was computed from other episodes");
    table.rule = RowRule::of(settings);
    table.episode_terms = Vec::new();
    table.replaced = Vec::new();
    let AdvantageTable { row_offsets, rows, anchor_groups, episode_groups, episode_group_of, rule, .. } = table;
    let parallel = in_parallel(rows.len());
    let mut parts = rows_by_group(rows, row_offsets, episode_group_of, episode_groups);
    // Anchor groups are stored episode group by episode group.
    let mut anchors_by_group = Vec::with_capacity(episode_groups.len());
    let mut rest = anchor_groups.as_mut_slice();
    for g in 0..episode_groups.len() as u32 {
        let n = rest.iter().position(|a| a.episode_group != g).unwrap_or(rest.len());
        let (anchors, tail) = std::mem::take(&mut rest).split_at_mut(n);
        anchors_by_group.push(anchors);
        rest = tail;
    }
    let rule = *rule;
    let fill = |((rows, group), anchors): ((&mut Vec<&mut [StoredRow]>, &mut EpisodeGroup), &mut [AnchorGroup])| {
        fill_group(rows, group, anchors, input, settings, &rule)
    };
    if parallel {
        parts.par_iter_mut().zip(episode_groups.par_iter_mut()).zip(anchors_by_group).for_each(fill);
    } else {
        parts.iter_mut().zip(episode_groups.iter_mut()).zip(anchors_by_group).for_each(fill);
    }
    drop(parts);
    super::trl::apply(table, input, settings);
}

/// Whether to compute `rows` rows on rayon's pool. A small input is computed on the calling thread: starting the
/// pool (in a short-lived process such as `gigscope advantages`) and waking its threads costs more than the work:
/// about 1.5 ms of system time (threads spinning, yielding) against 0.1 ms for a 1,000-step run.
pub(super) fn in_parallel(rows: usize) -> bool {
    rows >= 20_000
}

pub(super) const EMPTY_ANCHOR_GROUP: AnchorGroup =
    AnchorGroup { episode_group: 0, samples: 0, members: Members::EMPTY, mean: 0.0, std: 0.0, factor: 1.0 };

const EMPTY_ROW: StoredRow = StoredRow { reward: 0.0, step_group: 0, counts: 1 };

/// Episode groups in order of first appearance (statistics left at their empty values), and each episode's
/// group.
pub(super) fn group_episodes<I: EngineInput + ?Sized>(input: &I) -> (Vec<EpisodeGroup>, Vec<u32>) {
    let mut groups: Vec<EpisodeGroup> = Vec::new();
    let mut group_of = Vec::with_capacity(input.episode_count());
    let mut index: HashMap<&str, u32> = HashMap::new();
    for e in 0..input.episode_count() {
        let name = input.group(e);
        let g = *index.entry(name).or_insert_with(|| {
            groups.push(EpisodeGroup {
                name: name.to_string(),
                episodes: Vec::new(),
                mean: 0.0,
                std: 0.0,
                pool_size: 0,
                baseline: 0.0,
                factor: 1.0,
                zero_variance: true,
            });
            (groups.len() - 1) as u32
        });
        groups[g as usize].episodes.push(e as u32);
        group_of.push(g);
    }
    (groups, group_of)
}

/// `rows` cut into episodes and dealt out to their groups: `parts[g][i]` are the rows of the `i`-th episode of
/// group `g`.
fn rows_by_group<'r>(
    mut rows: &'r mut [StoredRow],
    row_offsets: &[usize],
    episode_group_of: &[u32],
    episode_groups: &[EpisodeGroup],
) -> Vec<Vec<&'r mut [StoredRow]>> {
    let mut parts: Vec<Vec<&mut [StoredRow]>> =
        episode_groups.iter().map(|g| Vec::with_capacity(g.episodes.len())).collect();
    for (e, &g) in episode_group_of.iter().enumerate() {
        let (episode, rest) = rows.split_at_mut(row_offsets[e + 1] - row_offsets[e]);
        parts[g as usize].push(episode);
        rows = rest;
    }
    parts
}

/// Everything numeric of one episode group, given its anchor-state groups: the shaped rewards of its rows, then
/// the statistics of the episode level and of the step level over their scores and returns.
fn fill_group<I: EngineInput + ?Sized>(
    rows: &mut [&mut [StoredRow]],
    group: &mut EpisodeGroup,
    anchors: &mut [AnchorGroup],
    input: &I,
    settings: &AdvantageSettings,
    rule: &RowRule,
) {
    for (rows, &e) in rows.iter_mut().zip(&group.episodes) {
        fill_rows(rows, input, e as usize, settings);
    }
    // Scores and returns, episode by episode, as the table derives them when asked.
    let derived: Vec<Vec<(f64, f64)>> = rows.iter().map(|rows| scores_and_returns(rows, rule)).collect();
    episode_level(rows, &derived, group, settings);
    step_level(rows, &derived, group, anchors, settings);
}

/// Shaped rewards and counts of episode `e`'s rows.
fn fill_rows<I: EngineInput + ?Sized>(rows: &mut [StoredRow], input: &I, e: usize, settings: &AdvantageSettings) {
    let n = input.step_count(e);
    let success = input.success(e);
    let bonus = if success { efficiency_bonus(input, e, settings) } else { 0.0 };
    // TRL's computation: a sample's reward under the settings' weights.
    let weighted = settings.scale_rewards.and_then(|_| super::trl::row_reward(input, e, settings));
    for (t, row) in rows.iter_mut().enumerate() {
        let last = t + 1 == n;
        let mut reward = match settings.success_reward {
            true if success && last => SUCCESS_REWARD,
            true => 0.0,
            false => input.reward(e, t),
        };
        if let Some(weighted) = weighted {
            reward = weighted;
        }
        if last {
            reward += bonus;
        }
        let invalid = if input.valid(e, t) { 0 } else { INVALID_ROW };
        *row = StoredRow { reward, step_group: row.step_group, counts: input.copies(e, t).min(!INVALID_ROW) | invalid };
    }
}

/// α₁/(mean tokens per step) + α₂/(number of steps), added to the last reward of a successful episode.
/// Steps without a token count count as zero tokens; with no tokens at all the α₁ term is left out rather
/// than made infinite.
fn efficiency_bonus<I: EngineInput + ?Sized>(input: &I, e: usize, settings: &AdvantageSettings) -> f64 {
    let n = input.step_count(e) as f64;
    let mut bonus = 0.0;
    if settings.efficiency_alpha1 != 0.0 {
        let tokens = input.tokens(e);
        let mean_tokens = tokens as f64 / n;
        if mean_tokens > 0.0 {
            bonus += settings.efficiency_alpha1 / mean_tokens;
        }
    }
    if settings.efficiency_alpha2 != 0.0 && n > 0.0 {
        bonus += settings.efficiency_alpha2 / n;
    }
    bonus
}

/// Mean and sample standard deviation (N−1) of `values`; one sample has std 0, none has mean 0.
pub fn mean_std(values: impl Iterator<Item = f64> + Clone) -> (f64, f64, usize) {
    mean_std_counted(values.map(|v| (v, 1)))
}

/// [`mean_std`] of samples that each stand for `count` equal samples (a row the trainer counted several
/// times): the same figures as the samples repeated, N = Σ count. A count of 1 everywhere gives
/// [`mean_std`]'s figures bit for bit.
pub fn mean_std_counted(samples: impl Iterator<Item = (f64, u32)> + Clone) -> (f64, f64, usize) {
    let (n, sum) = samples.clone().fold((0usize, 0.0), |(n, s), (v, c)| (n + c as usize, s + v * f64::from(c)));
    if n == 0 {
        return (0.0, 0.0, 0);
    }
    let mean = sum / n as f64;
    if n == 1 {
        return (mean, 0.0, 1);
    }
    let ss: f64 = samples.map(|(v, c)| (v - mean) * (v - mean) * f64::from(c)).sum();
    (mean, (ss / (n - 1) as f64).sqrt(), n)
}

/// The divisor F for a standard deviation under `norm`.
pub fn norm_factor(norm: Norm, std: f64) -> f64 {
    match norm {
        Norm::MeanNorm => 1.0,
        Norm::MeanStdNorm => std + STD_EPSILON,
    }
}

/// The statistics of a group's episode level (`rows[i]` are the rows of its `i`-th episode, `derived[i]` their
/// scores and returns).
fn episode_level(
    rows: &[&mut [StoredRow]],
    derived: &[Vec<(f64, f64)>],
    group: &mut EpisodeGroup,
    settings: &AdvantageSettings,
) {
    let (mean, std, pool) = match settings.pooling {
        Pooling::Steps => mean_std_counted(
            rows.iter()
                .zip(derived)
                .flat_map(|(rows, derived)| rows.iter().zip(derived).map(|(row, &(score, _))| (score, row.copies()))),
        ),
        Pooling::Trajectories => mean_std_counted(
            rows.iter().zip(derived).filter_map(|(rows, derived)| Some((derived.first()?.0, rows.first()?.copies()))),
        ),
    };
    let total = |r: &[StoredRow]| r.iter().map(|row| row.reward).sum::<f64>();
    let first_total = rows.first().map(|r| total(r));
    group.zero_variance = rows.iter().all(|r| Some(total(r)) == first_total);
    let (baseline, factor) = if pool <= 1 { (0.0, 1.0) } else { (mean, norm_factor(settings.norm, std)) };
    (group.mean, group.std, group.pool_size, group.baseline, group.factor) = (mean, std, pool, baseline, factor);
}

/// The statistics of a group's anchor-state groups over its rows' returns.
fn step_level(
    rows: &[&mut [StoredRow]],
    derived: &[Vec<(f64, f64)>],
    group: &EpisodeGroup,
    anchors: &mut [AnchorGroup],
    settings: &AdvantageSettings,
) {
    // A member's episode is found among the group's episodes, which are in file order.
    let at = |m: &RowRef| {
        let i = group.episodes.binary_search(&m.episode).expect("anchor group member outside its episode group");
        (i, m.step as usize)
    };
    for anchor in anchors {
        let (mean, std, n) = mean_std_counted(anchor.members.iter().map(|m| {
            let (i, t) = at(m);
            (derived[i][t].1, rows[i][t].copies())
        }));
        let factor = norm_factor(settings.norm, std);
        (anchor.mean, anchor.std, anchor.factor) = (mean, std, factor);
        anchor.samples = u32::try_from(n).unwrap_or(u32::MAX);
    }
}

/// Assigns steps to anchor-state clusters by their text, numbered from 0 in order of opening (the estimators'
/// exact groups of one episode group; the engine's own groupings are made by [`super::grouping`]). Page mode
/// sees only recorded pages (a step without one is keyed by its anchor).
pub(super) struct Clusterer<'a> {
    mode: AnchorMode,
    /// Exact and page modes: key → cluster. Similarity mode: every distinct string seen → the cluster it
    /// joined. Clustering is deterministic and clusters are only ever appended, so a repeated string joins
    /// the same cluster again (the clusters before it still fail, and that one — or the one it opened, whose
    /// first member is the string itself, ratio 1 — still matches): the memo cannot change the result, and
    /// clustering a group's distinct strings in order of first appearance gives the same clusters.
    by_key: HashMap<&'a str, u32>,
    clusters: u32,
    similar: SimilarClusters,
}

impl<'a> Clusterer<'a> {
    pub(super) fn new(mode: AnchorMode) -> Self {
        Clusterer { mode, by_key: HashMap::new(), clusters: 0, similar: SimilarClusters::default() }
    }

    pub(super) fn assign(&mut self, step: &'a Step) -> u32 {
        let key = match self.mode {
            AnchorMode::Page => step.page.as_deref().unwrap_or_else(|| step.anchor_key()),
            AnchorMode::Exact | AnchorMode::Similarity(_) => step.anchor_key(),
        };
        if let Some(&c) = self.by_key.get(key) {
            return c;
        }
        let c = match self.mode {
            AnchorMode::Similarity(theta) => self.similar.assign(key, theta),
            AnchorMode::Exact | AnchorMode::Page => {
                self.clusters += 1;
                self.clusters - 1
            }
        };
        self.by_key.insert(key, c);
        c
    }
}

/// GiGPO's greedy similarity clustering of one episode group's anchors, fed in file order: a string joins the
/// first cluster whose first member `b` has `SequenceMatcher(None, string, b).ratio() >= θ`, else opens one.
#[derive(Default)]
pub(super) struct SimilarClusters {
    /// Each cluster's first member, prepared as difflib's `b`.
    references: Vec<Reference>,
    matcher: Matcher,
    /// The string being placed, prepared as difflib's `a`.
    candidate: Candidate,
}

impl SimilarClusters {
    pub(super) fn reset(&mut self) {
        self.references.clear();
    }

    /// The cluster `key` joins (or opens), numbered from 0 in order of opening.
    pub(super) fn assign(&mut self, key: &str, theta: f64) -> u32 {
        self.candidate.set(key);
        let (matcher, candidate) = (&mut self.matcher, &self.candidate);
        match self.references.iter().position(|r| matcher.similar(candidate, r, theta)) {
            Some(c) => c as u32,
            None => {
                self.references.push(Reference::new(key));
                (self.references.len() - 1) as u32
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::synth::{episodes, SynthSpec};
    use crate::run::Episode;

    #[test]
    fn room_made_for_the_projected_run_is_not_moved_by_the_parts_that_fill_it() {
        let run: Vec<Episode> = episodes(&SynthSpec { groups: 8, ..SynthSpec::reference_batch() }).collect();
        let settings = AdvantageSettings::default();
        let (first, rest) = run.split_at(16);
        let mut table = compute(first, &settings);
        table.reserve_for(run.len());
        let unreserved = compute(first, &settings);
        assert_eq!(table, unreserved, "making room changes nothing in the table");
        let arrays = |t: &AdvantageTable| (t.rows.as_ptr(), t.anchor_groups.as_ptr(), t.episode_group_of.as_ptr());
        let before = arrays(&table);
        for part in rest.chunks(16) {
            table.append(compute(part, &settings));
        }
        assert_eq!(arrays(&table), before, "an array was moved: the room made was too small");
        assert_eq!(table, compute(&run, &settings));
    }
}
