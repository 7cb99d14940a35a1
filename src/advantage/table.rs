//! The advantage table: what the engine computes for a list of episodes, as data. Rows (one per step, in
//! episode and step order), the anchor-state groups and episode groups with their statistics, and the rules
//! that derive a row's values (and a lone anchor group's statistics) from what the table keeps. The engine ([`super::compute`]) fills it, the
//! groupings ([`super::grouping`]) give its anchor groups, TRL's computation ([`super::trl`]) its episode
//! terms; views, statistics and the estimators read it.

use std::sync::Arc;

use foldhash::{HashMap, HashMapExt};

use super::input::EngineInput;
use super::settings::{AdvantageSettings, Estimator, Norm};
use crate::run::{F64Column, OffsetColumn, U32Column};

/// Everything computed for one step row. The table keeps only what the rest is made from ([`StoredRow`]: the
/// shaped reward, the anchor group and validity; the copies apart, for the rows counted other than once) and the
/// statistics of its groups, and derives a row's values when asked ([`AdvantageTable::episode_rows`]), with the
/// operations the computation used, in the same order: the values are those the engine computed, bit for bit.
/// The table holds 12 bytes a row instead of 56.
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

/// What the table keeps of a row: the rest of its [`RowAdvantage`] is derived from it, its groups and the
/// table's copies ([`TableData::copies`]). Packed to 12 bytes (4 of padding after the anchor group otherwise):
/// fields are read by value, never borrowed.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C, packed(4))]
pub(super) struct StoredRow {
    /// Reward after shaping.
    pub(super) reward: f64,
    /// The index into [`AdvantageTable::anchor_groups`] in the low 31 bits, [`INVALID_ROW`] set for a step that
    /// was not valid.
    tagged_group: u32,
}

const _: () = assert!(std::mem::size_of::<StoredRow>() == 12);

/// The bit of [`StoredRow::tagged_group`] that marks an invalid step: anchor groups number below 2³¹ (a table
/// of 2³¹ rows would take more than 24 GiB).
const INVALID_ROW: u32 = 1 << 31;

impl StoredRow {
    pub(super) fn new(reward: f64, step_group: u32, valid: bool) -> StoredRow {
        assert!(step_group < INVALID_ROW, "StoredRow: anchor group {step_group} is past 2³¹");
        StoredRow { reward, tagged_group: step_group | if valid { 0 } else { INVALID_ROW } }
    }

    pub(super) fn step_group(self) -> u32 {
        self.tagged_group & !INVALID_ROW
    }

    pub(super) fn set_step_group(&mut self, step_group: u32) {
        *self = StoredRow::new(self.reward, step_group, self.valid());
    }

    fn valid(self) -> bool {
        self.tagged_group & INVALID_ROW == 0
    }
}

/// The table's rows by column: each row's anchor group with its validity bit (4 bytes) and its shaped reward, by
/// dictionary while the rewards take few distinct values (an [`F64Column`]: 1 byte a row for rewards of 0 and
/// 1, a handful of shaped values), 5 bytes a row where a [`StoredRow`] each took 12. The engine fills rows in
/// parallel in a plain list of [`StoredRow`]s ([`StoredRows::to_vec`]) and the table keeps them so.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct StoredRows {
    tagged_groups: Vec<u32>,
    rewards: F64Column,
}

impl StoredRows {
    pub(super) fn len(&self) -> usize {
        self.tagged_groups.len()
    }

    /// Row `r`; panics when `r` is not below [`Self::len`], as indexing does.
    pub(super) fn get(&self, r: usize) -> StoredRow {
        StoredRow { reward: self.rewards.get(r), tagged_group: self.tagged_groups[r] }
    }

    /// Rows `range`, in order.
    pub(super) fn range(
        &self,
        range: std::ops::Range<usize>,
    ) -> impl ExactSizeIterator<Item = StoredRow> + DoubleEndedIterator + Clone + '_ {
        assert!(range.end <= self.len(), "StoredRows::range: out of range");
        range.map(|r| self.get(r))
    }

    /// Every row's anchor group, in order.
    pub(super) fn step_groups(&self) -> impl ExactSizeIterator<Item = u32> + '_ {
        self.tagged_groups.iter().map(|&g| g & !INVALID_ROW)
    }

    pub(super) fn set_step_group(&mut self, r: usize, step_group: u32) {
        let mut row = self.get(r);
        row.set_step_group(step_group);
        self.tagged_groups[r] = row.tagged_group;
    }

    pub(super) fn push(&mut self, row: StoredRow) {
        self.tagged_groups.push(row.tagged_group);
        self.rewards.push(row.reward);
    }

    /// The rows as a plain list, for the engine to fill in parallel.
    pub(super) fn to_vec(&self) -> Vec<StoredRow> {
        self.range(0..self.len()).collect()
    }

    pub(super) fn reserve_exact(&mut self, more: usize) {
        self.tagged_groups.reserve_exact(more);
        self.rewards.reserve_exact(more);
    }

    /// The room the anchor groups' column has (what the rows' room is judged by).
    pub(super) fn capacity(&self) -> usize {
        self.tagged_groups.capacity()
    }

    pub(super) fn shrink_slack(&mut self) {
        crate::run::shrink_slack(&mut self.tagged_groups);
        self.rewards.shrink_slack();
    }
}

impl FromIterator<StoredRow> for StoredRows {
    fn from_iter<I: IntoIterator<Item = StoredRow>>(rows: I) -> StoredRows {
        let mut stored = StoredRows::default();
        rows.into_iter().for_each(|row| stored.push(row));
        stored
    }
}

/// A column [`AdvantageTable::reserve_for`] makes room in: its length, its room, and more room.
trait Room {
    fn len(&self) -> usize;
    fn capacity(&self) -> usize;
    fn reserve_exact(&mut self, more: usize);
}

/// Room in `column` for `ratio` times what it holds, where it has less.
fn reserve(column: &mut impl Room, ratio: f64) {
    let (len, target) = (column.len(), (column.len() as f64 * ratio) as usize);
    if column.capacity() < target {
        column.reserve_exact(target - len);
    }
}

/// [`Room`] for each kind of column the table keeps, by its own methods.
macro_rules! room_by_own_methods {
    ($([$($generic:tt)*] $column:ty),*) => {$(
        impl<$($generic)*> Room for $column {
            fn len(&self) -> usize {
                <$column>::len(self)
            }
            fn capacity(&self) -> usize {
                <$column>::capacity(self)
            }
            fn reserve_exact(&mut self, more: usize) {
                <$column>::reserve_exact(self, more)
            }
        }
    )*};
}

room_by_own_methods!([T] Vec<T>, [] StoredRows, [] OffsetColumn, [] U32Column, [] EpisodeTermsColumn);

/// The settings a row's values are derived with.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct RowRule {
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
    pub(super) fn of(settings: &AdvantageSettings) -> RowRule {
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

/// [`EpisodeTerms`], one per episode, by column: each by dictionary ([`F64Column`]). A TRL log's rewards take a
/// few distinct values, and so do the terms made from them (1 byte each, where the pair took 16).
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct EpisodeTermsColumn {
    episode_advantages: F64Column,
    rloos: F64Column,
}

impl EpisodeTermsColumn {
    /// Episode `e`'s terms, if TRL's computation gave the table any.
    fn get(&self, e: usize) -> Option<EpisodeTerms> {
        (e < self.len())
            .then(|| EpisodeTerms { episode_advantage: self.episode_advantages.get(e), rloo: self.rloos.get(e) })
    }

    fn len(&self) -> usize {
        self.rloos.len()
    }

    fn capacity(&self) -> usize {
        self.rloos.capacity().min(self.episode_advantages.capacity())
    }

    fn reserve_exact(&mut self, more: usize) {
        self.episode_advantages.reserve_exact(more);
        self.rloos.reserve_exact(more);
    }

    fn shrink_slack(&mut self) {
        self.episode_advantages.shrink_slack();
        self.rloos.shrink_slack();
    }
}

impl Extend<EpisodeTerms> for EpisodeTermsColumn {
    fn extend<I: IntoIterator<Item = EpisodeTerms>>(&mut self, terms: I) {
        for EpisodeTerms { episode_advantage, rloo } in terms {
            self.episode_advantages.push(episode_advantage);
            self.rloos.push(rloo);
        }
    }
}

/// A row is addressed by its episode's index in the input and its step index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct RowRef {
    pub episode: u32,
    pub step: u32,
}

/// Steps of one episode group that share an anchor state (GiGPO's step group), as the table gives it
/// ([`AdvantageTable::anchor_group`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AnchorGroup<'a> {
    pub episode_group: u32,
    /// The samples its statistics counted: Σ copies over the members (a group of one sample gives A_S = 0).
    pub samples: u32,
    /// Members in file order; the first one is the cluster representative in similarity mode.
    pub members: Members<'a>,
    /// Mean and sample std (N−1; 0 for a singleton) of the members' returns.
    pub mean: f64,
    pub std: f64,
    /// The divisor F_S used for A_S (1 under `mean_norm`, std + 1e-6 under `mean_std_norm`).
    pub factor: f64,
}

/// An anchor group's members, borrowed from the table: each a [`RowRef`], given by value (the table keeps the
/// members' rows as table-wide indices, 4 bytes each, and finds each one's episode among its episodes' rows).
#[derive(Clone, Copy)]
pub struct Members<'a> {
    rows: &'a [u32],
    /// The table's `row_offsets`.
    row_offsets: &'a OffsetColumn,
}

impl<'a> Members<'a> {
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Member `i`; panics when `i` is not below [`Self::len`], as indexing does.
    pub fn at(&self, i: usize) -> RowRef {
        row_ref(self.row_offsets, self.rows[i])
    }

    /// Member `i`, when there is one.
    pub fn get(&self, i: usize) -> Option<RowRef> {
        (i < self.len()).then(|| self.at(i))
    }

    pub fn first(&self) -> Option<RowRef> {
        self.get(0)
    }

    /// The members in file order.
    pub fn iter(&self) -> MembersIter<'a> {
        MembersIter { members: *self, next: 0..self.len() }
    }
}

/// Table-wide row `row` as its episode and step, by the table's `row_offsets`: its episode is the last one whose
/// rows start at or before it (an episode without rows starts where the next one does).
pub(super) fn row_ref(row_offsets: &OffsetColumn, row: u32) -> RowRef {
    let (episode, start) = row_offsets.last_at_or_below(row).expect("row_ref: a row before the first episode");
    RowRef { episode: episode as u32, step: row - start }
}

/// [`Members::iter`].
#[derive(Clone)]
pub struct MembersIter<'a> {
    members: Members<'a>,
    next: std::ops::Range<usize>,
}

impl Iterator for MembersIter<'_> {
    type Item = RowRef;

    fn next(&mut self) -> Option<RowRef> {
        self.next.next().map(|i| self.members.at(i))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.next.size_hint()
    }
}

impl DoubleEndedIterator for MembersIter<'_> {
    fn next_back(&mut self) -> Option<RowRef> {
        self.next.next_back().map(|i| self.members.at(i))
    }
}

impl ExactSizeIterator for MembersIter<'_> {}

impl<'a> IntoIterator for Members<'a> {
    type Item = RowRef;
    type IntoIter = MembersIter<'a>;

    fn into_iter(self) -> MembersIter<'a> {
        self.iter()
    }
}

/// Members are the same when they are the same rows, wherever they are kept.
impl PartialEq for Members<'_> {
    fn eq(&self, other: &Members<'_>) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl std::fmt::Debug for Members<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The statistics the engine computed for one anchor group.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct AnchorStats {
    pub(super) samples: u32,
    pub(super) mean: f64,
    pub(super) std: f64,
    pub(super) factor: f64,
}

impl AnchorStats {
    /// Whether `other` is these statistics bit for bit (−0.0 is not 0.0, a NaN is itself).
    pub(super) fn same_bits(&self, other: &AnchorStats) -> bool {
        let bits = |s: &AnchorStats| (s.samples, s.mean.to_bits(), s.std.to_bits(), s.factor.to_bits());
        bits(self) == bits(other)
    }
}

/// A table's anchor groups, stored by column: a viewer of a run of short episodes holds almost one anchor group
/// per row (most have one member), and 48 bytes a group, with a heap block for each group of several, were a
/// sixth of all it held. Each group's members are in one array, as the table-wide indices of their rows (group
/// `a`'s are `members[starts[a]..starts[a + 1]]`, in file order; the table gives them as [`RowRef`]s,
/// [`Members`]), its episode group is its first member's, and its
/// statistics are kept only where they cannot be told from a lone member: a group of one member counted once
/// has one sample, the member's return as its mean (derived from the rows, as the engine derived it), std 0 and
/// the divisor of std 0 under the table's normalisation. Statistics are kept for every other group, and for a
/// lone one whose mean is not its return bit for bit (a return of −0.0: the mean's sum starts at +0.0), without
/// their divisor, which is the normalisation's of their std. 8 bytes a group of one (its start and its member),
/// 4 more a member, 24 more a group whose statistics are kept.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AnchorGroups {
    /// One more than there are groups, from 0 (empty while there are none).
    pub(super) starts: OffsetColumn,
    /// The members' rows (table-wide indices).
    pub(super) members: Vec<u32>,
    /// The statistics of the groups whose statistics are kept, by group.
    pub(super) kept: Vec<KeptStats>,
    /// The normalisation the divisors F_S are of.
    pub(super) norm: Norm,
}

/// An anchor group's [`AnchorStats`] as [`AnchorGroups`] keeps them: the divisor is derived from the std.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct KeptStats {
    group: u32,
    samples: u32,
    mean: f64,
    std: f64,
}

impl AnchorGroups {
    /// Groups whose members are `members`, group `a`'s from `starts[a]` (one more start than groups), their
    /// statistics not computed yet.
    pub(super) fn unfilled(starts: Vec<u32>, members: Vec<u32>) -> AnchorGroups {
        AnchorGroups { starts: starts.into_iter().collect(), members, kept: Vec::new(), norm: Norm::MeanNorm }
    }

    pub fn len(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Group `a`'s members' rows (table-wide indices), in file order.
    pub(super) fn member_rows(&self, a: usize) -> &[u32] {
        &self.members[self.starts.part(a)]
    }

    /// How many members group `a` has (`a` below [`Self::len`]).
    pub fn size(&self, a: usize) -> usize {
        self.starts.part_len(a) as usize
    }

    /// How many members group `a` has, if there is a group `a`.
    pub fn get_size(&self, a: usize) -> Option<usize> {
        (a < self.len()).then(|| self.size(a))
    }

    /// Every group's number of members, group by group.
    pub fn sizes(&self) -> impl ExactSizeIterator<Item = usize> + '_ {
        (0..self.len()).map(|a| self.size(a))
    }

    /// The statistics kept for group `a`, if they are.
    fn kept(&self, a: usize) -> Option<AnchorStats> {
        let found = self.kept.binary_search_by_key(&(a as u32), |k| k.group).ok()?;
        let KeptStats { samples, mean, std, .. } = self.kept[found];
        Some(AnchorStats { samples, mean, std, factor: self.norm.factor(std) })
    }

    /// Keep group `a`'s statistics `stats` (groups in order), whose divisor is the normalisation's of their std.
    pub(super) fn keep(&mut self, a: u32, stats: AnchorStats) {
        debug_assert!(stats.factor.to_bits() == self.norm.factor(stats.std).to_bits());
        self.kept.push(KeptStats { group: a, samples: stats.samples, mean: stats.mean, std: stats.std });
    }

    /// Append `extra`'s groups, their members' rows moved on by `row_base`.
    fn append(&mut self, extra: AnchorGroups, row_base: u32) {
        let (group_base, member_base) = (self.len() as u32, self.members.len() as u32);
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        self.starts.extend(extra.starts.iter().skip(1).map(|s| s + member_base));
        self.members.extend(extra.members.iter().map(|row| row + row_base));
        self.kept.extend(extra.kept.iter().map(|&k| KeptStats { group: k.group + group_base, ..k }));
        self.norm = extra.norm;
    }
}

/// One episode group (same task, same start state).
#[derive(Clone, Debug, PartialEq)]
pub struct EpisodeGroup {
    /// Shared with the episodes where they keep their group names so (a viewer's columns).
    pub name: Arc<str>,
    /// Mean and sample std of the pool the episode baseline was taken over (std 0 for one sample).
    pub mean: f64,
    pub std: f64,
    pub pool_size: usize,
    /// The baseline and divisor actually used for A_E: (mean, F), or (0, 1) for a pool of one sample.
    pub baseline: f64,
    pub factor: f64,
    /// Why the pool A_E was taken over carries no learning signal, judged on the numbers the engine used (the
    /// pool's scores and std); `None` where the scores spread.
    pub zero_variance: Option<ZeroVariance>,
}

/// Every episode group's episodes, group by group ([`AdvantageTable::group_episodes`]): the groups' starts, and
/// the episodes in that order only where they are not already so. A trainer that writes each group's episodes
/// together, groups one after another (verl, TRL, gigscope's own bursts), has group `g`'s episodes from
/// `starts[g]` to `starts[g + 1]`: nothing is kept but the starts (about a byte a group), where a list of each
/// group's episodes took 4 bytes an episode and a heap block a group.
#[derive(Clone, Debug, Default, PartialEq)]
pub(super) struct GroupMembers {
    /// One more than there are groups, from 0 (empty while there are none).
    starts: OffsetColumn,
    /// The episodes group by group; empty while they are 0, 1, 2, … (then group `g`'s are the numbers from
    /// `starts[g]`).
    listed: Vec<u32>,
}

impl GroupMembers {
    /// The members of `groups` groups, episode `e` in group `group_of[e]`, each group's in file order.
    pub(super) fn of(group_of: &U32Column, groups: usize) -> GroupMembers {
        let mut counts = vec![0u32; groups + 1];
        group_of.iter().for_each(|g| counts[g as usize + 1] += 1);
        for g in 0..groups {
            counts[g + 1] += counts[g];
        }
        let starts: OffsetColumn = counts.iter().copied().collect();
        // Sorted by group, stably, the episodes stay in file order exactly where their groups never go back.
        let consecutive = group_of.iter().zip(group_of.iter().skip(1)).all(|(g, next)| g <= next);
        let listed = if consecutive {
            Vec::new()
        } else {
            let mut next = counts;
            let mut listed = vec![0u32; group_of.len()];
            for (e, g) in group_of.iter().enumerate() {
                listed[next[g as usize] as usize] = e as u32;
                next[g as usize] += 1;
            }
            listed
        };
        GroupMembers { starts: if groups == 0 { OffsetColumn::default() } else { starts }, listed }
    }

    /// How many groups there are.
    pub(super) fn groups(&self) -> usize {
        self.starts.len().saturating_sub(1)
    }

    /// Group `g`'s episodes.
    pub(super) fn get(&self, g: usize) -> GroupEpisodes<'_> {
        let part = self.starts.part(g);
        if self.listed.is_empty() {
            GroupEpisodes { episodes: Episodes::Consecutive(part.start as u32, part.len() as u32) }
        } else {
            GroupEpisodes { episodes: Episodes::Listed(&self.listed[part]) }
        }
    }

    /// Append `extra`'s groups, their episodes moved on by `episode_base` (the episodes this one holds).
    fn append(&mut self, extra: GroupMembers, episode_base: u32) {
        let extra_listed = !extra.listed.is_empty();
        if !self.listed.is_empty() || extra_listed {
            if self.listed.is_empty() {
                self.listed = (0..episode_base).collect();
            }
            match extra_listed {
                true => self.listed.extend(extra.listed.iter().map(|e| e + episode_base)),
                false => self.listed.extend(extra.starts.last().map_or(0..0, |end| episode_base..episode_base + end)),
            }
        }
        if self.starts.is_empty() {
            self.starts.push(0);
        }
        self.starts.extend(extra.starts.iter().skip(1).map(|s| s + episode_base));
    }

    fn shrink_slack(&mut self) {
        self.starts.shrink_slack();
        crate::run::shrink_slack(&mut self.listed);
    }
}

/// An episode group's episodes (indices into the input), in file order ([`AdvantageTable::group_episodes`]);
/// none by default.
#[derive(Clone, Copy, Debug)]
pub struct GroupEpisodes<'a> {
    episodes: Episodes<'a>,
}

impl Default for GroupEpisodes<'_> {
    fn default() -> Self {
        GroupEpisodes { episodes: Episodes::Consecutive(0, 0) }
    }
}

#[derive(Clone, Copy, Debug)]
enum Episodes<'a> {
    /// (first, count): the episodes from `first` on.
    Consecutive(u32, u32),
    Listed(&'a [u32]),
}

impl<'a> GroupEpisodes<'a> {
    pub fn len(self) -> usize {
        match self.episodes {
            Episodes::Consecutive(_, count) => count as usize,
            Episodes::Listed(episodes) => episodes.len(),
        }
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    /// The `i`th episode, if the group has that many.
    pub fn get(self, i: usize) -> Option<u32> {
        (i < self.len()).then(|| self.at(i))
    }

    pub fn first(self) -> Option<u32> {
        self.get(0)
    }

    /// The `i`th episode (`i` below [`Self::len`]).
    fn at(self, i: usize) -> u32 {
        match self.episodes {
            Episodes::Consecutive(first, _) => first + i as u32,
            Episodes::Listed(episodes) => episodes[i],
        }
    }

    /// The episodes in file order.
    pub fn iter(self) -> impl ExactSizeIterator<Item = u32> + DoubleEndedIterator + Clone + 'a {
        (0..self.len()).map(move |i| self.at(i))
    }

    /// Where `episode` is among them, if it is one.
    pub fn position(self, episode: u32) -> Option<usize> {
        match self.episodes {
            Episodes::Consecutive(first, count) => {
                (first..first + count).contains(&episode).then(|| (episode - first) as usize)
            }
            Episodes::Listed(episodes) => episodes.binary_search(&episode).ok(),
        }
    }
}

/// Why an episode group's A_E carries no learning signal, by the numbers the engine divided: the scores of
/// the pool it took the baseline over and their standard deviation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ZeroVariance {
    /// Every score in the pool is exactly equal (f64 `==`, so −0.0 equals 0.0), trivially so for a pool of
    /// one sample: A_E = 0 (for a pool of one, the raw score, with no spread to learn from).
    EqualScores,
    /// The scores differ, but their standard deviation is below the epsilon the engine adds to it: A_E is
    /// nearly 0 rather than exactly.
    StdBelowEpsilon,
}

impl ZeroVariance {
    /// The verdict for a pool of `scores` whose standard deviation is `std`, against the `epsilon` the
    /// engine adds to it.
    pub fn of(mut scores: impl Iterator<Item = f64>, std: f64, epsilon: f64) -> Option<ZeroVariance> {
        let first = scores.next();
        if first.is_none_or(|first| scores.all(|s| s == first)) {
            Some(ZeroVariance::EqualScores)
        } else if std < epsilon {
            Some(ZeroVariance::StdBelowEpsilon)
        } else {
            None
        }
    }

    /// What the verdict means, as a clause for reports ("zero-variance: …").
    pub fn describe(self) -> &'static str {
        match self {
            ZeroVariance::EqualScores => "every score in the episode pool is equal, so A_E = 0",
            ZeroVariance::StdBelowEpsilon => "the episode pool's std is below the engine's epsilon, so A_E ≈ 0",
        }
    }

    /// A short tag for tables.
    pub fn tag(self) -> &'static str {
        match self {
            ZeroVariance::EqualScores => "zero-variance (equal scores)",
            ZeroVariance::StdBelowEpsilon => "zero-variance (std < epsilon)",
        }
    }
}

/// The engine's output for a list of episodes: its [`TableData`], shared by the table's clones until one of
/// them changes (copy on write). A snapshot for a background job (the trajectory index's update) is a clone,
/// not a copy of every row; the viewer's next change copies the data only if the job still holds it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AdvantageTable {
    data: Arc<TableData>,
}

impl std::ops::Deref for AdvantageTable {
    type Target = TableData;

    fn deref(&self) -> &TableData {
        &self.data
    }
}

impl std::ops::DerefMut for AdvantageTable {
    /// The data to change: copied first if a clone of the table shares it.
    fn deref_mut(&mut self) -> &mut TableData {
        Arc::make_mut(&mut self.data)
    }
}

impl From<TableData> for AdvantageTable {
    fn from(data: TableData) -> AdvantageTable {
        AdvantageTable { data: Arc::new(data) }
    }
}

impl AdvantageTable {
    /// Whether `other` shares this table's data (a clone neither has changed since).
    pub fn shares_data_with(&self, other: &AdvantageTable) -> bool {
        Arc::ptr_eq(&self.data, &other.data)
    }

    /// The data, taken from the table (copied only if a clone shares it).
    pub(super) fn into_data(self) -> TableData {
        Arc::unwrap_or_clone(self.data)
    }
}

/// What an [`AdvantageTable`] holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TableData {
    /// `row_offsets[e]..row_offsets[e + 1]` are episode `e`'s rows (table-wide row indices; u32, as a table of
    /// 2³² rows would take more than 64 GiB): [`AdvantageTable::rows_of`].
    pub(super) row_offsets: OffsetColumn,
    pub(super) rows: StoredRows,
    /// The rows the trainer counted other than once ([`RowAdvantage::copies`] ≠ 1: verl-agent's padding), as
    /// (row, copies) by row; every other row counts once. Empty for gigscope's own runs.
    pub(super) copies: Vec<(u32, u32)>,
    /// Anchor groups, episode group by episode group, each in order of first appearance.
    pub anchor_groups: AnchorGroups,
    /// Episode groups in order of first appearance in the file.
    pub episode_groups: Vec<EpisodeGroup>,
    /// Episode index → index into `episode_groups` ([`AdvantageTable::episode_group_index`]), as narrow as the
    /// number of groups allows.
    pub(super) episode_group_of: U32Column,
    /// Each episode group's episodes ([`AdvantageTable::group_episodes`]).
    pub(super) group_members: GroupMembers,
    pub(super) rule: RowRule,
    /// TRL's episode terms, one per episode, when the settings ask for TRL's computation; else empty.
    pub(super) episode_terms: EpisodeTermsColumn,
    /// Advantages put in place of the estimator's, one per row ([`AdvantageTable::replace_advantages`]); else
    /// empty.
    pub(super) replaced: Vec<f64>,
}

impl AdvantageTable {
    /// The number of rows (steps).
    pub fn row_count(&self) -> usize {
        self.rows.len()
    }

    /// The table-wide indices of episode `e`'s rows.
    pub fn rows_of(&self, e: usize) -> std::ops::Range<usize> {
        self.row_offsets.part(e)
    }

    /// The number of episodes.
    pub fn episode_count(&self) -> usize {
        self.row_offsets.len().saturating_sub(1)
    }

    /// Episode `e`'s rows, in step order.
    pub fn episode_rows(&self, e: usize) -> Vec<RowAdvantage> {
        let range = self.rows_of(e);
        let start = range.start;
        let stored = self.rows.range(range);
        let group = &self.episode_groups[self.episode_group_of.get(e) as usize];
        let terms = self.episode_terms.get(e);
        let rule = &self.rule;
        let rloo_scale = rloo_scale(group.pool_size);
        let mut rows = Vec::with_capacity(stored.len());
        for (t, (row, (score, ret))) in stored.clone().zip(scores_and_returns(stored, rule)).enumerate() {
            // The row is the member of a lone anchor group.
            let step_advantage = step_advantage(ret, self.anchor_stats(row.step_group() as usize, |_| ret));
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
                step_group: row.step_group(),
                copies: self.copies_of(start + t),
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
        if episode >= self.episode_count() {
            return None;
        }
        self.episode_rows(episode).get(step).copied()
    }

    /// The row of table-wide index `row` (see [`AdvantageTable::rows_of`]).
    pub fn row_at(&self, row: usize) -> RowAdvantage {
        let at = row_ref(&self.row_offsets, u32::try_from(row).expect("row_at: a row past 2³²"));
        self.episode_rows(at.episode as usize)[at.step as usize]
    }

    /// The anchor group of every row, in table order.
    pub fn step_groups(&self) -> impl ExactSizeIterator<Item = u32> + '_ {
        self.rows.step_groups()
    }

    /// How many times the trainer counted table-wide row `row` ([`RowAdvantage::copies`]).
    fn copies_of(&self, row: usize) -> u32 {
        copies_at(&self.copies, row as u32)
    }

    pub fn anchor_group_of(&self, at: RowRef) -> AnchorGroup<'_> {
        self.anchor_group(self.step_group_of(at))
    }

    /// The members of the anchor group of row `at` (its statistics not derived: what a list of the members
    /// needs).
    pub fn anchor_members_of(&self, at: RowRef) -> Members<'_> {
        self.anchor_members(self.step_group_of(at))
    }

    /// Anchor group `a`'s members, in file order.
    pub fn anchor_members(&self, a: usize) -> Members<'_> {
        Members { rows: self.anchor_groups.member_rows(a), row_offsets: &self.row_offsets }
    }

    /// Every anchor group's members, group by group.
    pub fn all_anchor_members(&self) -> impl ExactSizeIterator<Item = Members<'_>> + '_ {
        (0..self.anchor_groups.len()).map(|a| self.anchor_members(a))
    }

    fn step_group_of(&self, at: RowRef) -> usize {
        self.rows.get(self.rows_of(at.episode as usize).start + at.step as usize).step_group() as usize
    }

    /// Anchor group `a`, its statistics derived where the table does not keep them ([`AnchorGroups`]).
    pub fn anchor_group(&self, a: usize) -> AnchorGroup<'_> {
        let (members, episode_group) = (self.anchor_members(a), self.anchor_episode_group(a));
        let AnchorStats { samples, mean, std, factor } = self.anchor_stats(a, |lone| self.row_return(lone));
        AnchorGroup { episode_group, samples, members, mean, std, factor }
    }

    /// Every anchor group, in order ([`AdvantageTable::anchor_group`]).
    pub fn anchor_groups(&self) -> impl ExactSizeIterator<Item = AnchorGroup<'_>> + '_ {
        (0..self.anchor_groups.len()).map(|a| self.anchor_group(a))
    }

    /// The episode group of every anchor group, in order.
    pub fn anchor_episode_groups(&self) -> impl ExactSizeIterator<Item = u32> + '_ {
        (0..self.anchor_groups.len()).map(|a| self.anchor_episode_group(a))
    }

    /// The episode group of anchor group `a`: its first member's.
    pub fn anchor_episode_group(&self, a: usize) -> u32 {
        self.anchor_members(a).first().map_or(0, |m| self.episode_group_of.get(m.episode as usize))
    }

    /// Anchor group `a`'s statistics: kept, or those of its lone member, whose return `lone_return` gives.
    fn anchor_stats(&self, a: usize, lone_return: impl FnOnce(RowRef) -> f64) -> AnchorStats {
        if let Some(stats) = self.anchor_groups.kept(a) {
            return stats;
        }
        let members = self.anchor_members(a);
        let mean = match members.len() {
            1 => lone_return(members.at(0)),
            _ => 0.0,
        };
        AnchorStats { samples: 1, mean, std: 0.0, factor: self.anchor_groups.norm.factor(0.0) }
    }

    /// Row `at`'s return, derived as the engine derived it.
    fn row_return(&self, at: RowRef) -> f64 {
        scores_and_returns(self.rows.range(self.rows_of(at.episode as usize)), &self.rule)[at.step as usize].1
    }

    /// The index of episode `episode`'s group in [`TableData::episode_groups`], if the table has the episode.
    pub fn episode_group_index(&self, episode: usize) -> Option<u32> {
        (episode < self.episode_group_of.len()).then(|| self.episode_group_of.get(episode))
    }

    pub fn episode_group_of(&self, episode: usize) -> &EpisodeGroup {
        &self.episode_groups[self.episode_group_of.get(episode) as usize]
    }

    /// The episodes of episode group `g` (below the number of groups), in file order.
    pub fn group_episodes(&self, g: usize) -> GroupEpisodes<'_> {
        self.group_members.get(g)
    }

    /// The episodes of episode group `g`, if the table has that group.
    pub fn get_group_episodes(&self, g: usize) -> Option<GroupEpisodes<'_>> {
        (g < self.episode_groups.len()).then(|| self.group_members.get(g))
    }

    /// Put `advantages` (one per row, in table order) in place of the estimator's final advantages: a family
    /// estimator's column ([`super::estimators`]); A_E and A_S stay GiGPO's components.
    pub fn replace_advantages(&mut self, advantages: Vec<f64>) {
        assert_eq!(advantages.len(), self.rows.len(), "replace_advantages: one advantage per row");
        self.replaced = advantages;
    }

    /// Append `extra`, the table [`super::compute`]d alone for episodes that follow this table's episodes in the input
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
        let extra = extra.into_data();
        if self.row_offsets.is_empty() {
            self.row_offsets.push(0);
        }
        let episode_base = self.episode_group_of.len() as u32;
        let row_base = self.row_offsets.last().unwrap_or(0);
        let group_base = self.episode_groups.len() as u32;
        self.row_offsets.extend(extra.row_offsets.iter().skip(1).map(|o| o + row_base));
        let anchor_base = self.anchor_groups.len() as u32;
        for mut row in extra.rows.range(0..extra.rows.len()) {
            row.set_step_group(row.step_group() + anchor_base);
            self.rows.push(row);
        }
        self.copies.extend(extra.copies.into_iter().map(|(row, copies)| (row + row_base, copies)));
        self.anchor_groups.append(extra.anchor_groups, row_base);
        self.episode_groups.extend(extra.episode_groups);
        self.group_members.append(extra.group_members, episode_base);
        self.episode_group_of.extend(extra.episode_group_of.iter().map(|g| g + group_base));
        self.episode_terms.extend((0..extra.episode_terms.len()).filter_map(|e| extra.episode_terms.get(e)));
        self.rule = extra.rule;
    }

    /// Room for about `episodes` episodes in all, projected from what the table holds per episode so far (10%
    /// more, so that a projection that creeps up does not move the arrays again). A viewer that appends a
    /// large run part by part calls it once it can tell the run's size: grown by doubling instead, the largest
    /// arrays (rows and anchor groups) are moved time and again, each move holding the viewer's thread. Room
    /// never written to takes address space, not memory.
    pub fn reserve_for(&mut self, episodes: usize) {
        let now = self.episode_group_of.len();
        if now == 0 || episodes <= now {
            return;
        }
        let ratio = episodes as f64 / now as f64 * 1.1;
        let data: &mut TableData = self;
        reserve(&mut data.rows, ratio);
        reserve(&mut data.row_offsets, ratio);
        reserve(&mut data.anchor_groups.starts, ratio);
        reserve(&mut data.anchor_groups.members, ratio);
        reserve(&mut data.episode_groups, ratio);
        reserve(&mut data.episode_group_of, ratio);
        reserve(&mut data.episode_terms, ratio);
    }

    /// Give back the room the table's arrays hold beyond their rows, where that is more than a quarter: appended
    /// part by part, and reserved ahead for the size the run was expected to have ([`AdvantageTable::reserve_for`]),
    /// they can end up to twice their size.
    pub fn shrink_slack(&mut self) {
        use crate::run::shrink_slack;
        self.rows.shrink_slack();
        shrink_slack(&mut self.copies);
        self.row_offsets.shrink_slack();
        self.anchor_groups.starts.shrink_slack();
        shrink_slack(&mut self.anchor_groups.members);
        shrink_slack(&mut self.anchor_groups.kept);
        shrink_slack(&mut self.episode_groups);
        self.episode_group_of.shrink_slack();
        self.group_members.shrink_slack();
        self.episode_terms.shrink_slack();
    }

    /// TRL's terms for each episode (the table then derives A_E and the RLOO advantage from them).
    pub(super) fn set_episode_terms(&mut self, terms: Vec<EpisodeTerms>) {
        self.episode_terms = EpisodeTermsColumn::default();
        self.episode_terms.extend(terms);
    }
}

/// How many times the trainer counted table-wide row `row`, from the rows counted other than once (`copies`:
/// [`TableData::copies`]).
pub(super) fn copies_at(copies: &[(u32, u32)], row: u32) -> u32 {
    match copies.binary_search_by_key(&row, |&(r, _)| r) {
        Ok(i) => copies[i].1,
        Err(_) => 1,
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
pub(super) fn scores_and_returns(
    rows: impl ExactSizeIterator<Item = StoredRow> + DoubleEndedIterator + Clone,
    rule: &RowRule,
) -> Vec<(f64, f64)> {
    let mut total = 0.0;
    for row in rows.clone() {
        total += row.reward;
    }
    let mut out = vec![(0.0, 0.0); rows.len()];
    let mut running = 0.0;
    for (row, slot) in rows.zip(out.iter_mut()).rev() {
        running = row.reward + rule.gamma * running;
        let penalty = rule.penalty(row);
        *slot = (total - penalty, running - penalty);
    }
    out
}

/// A_S of a row with return `ret` in an anchor group of statistics `anchor`: 0 in a group of one sample.
fn step_advantage(ret: f64, anchor: AnchorStats) -> f64 {
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

/// Whether to compute `rows` rows on rayon's pool. A small input is computed on the calling thread: starting the
/// pool (in a short-lived process such as `gigscope advantages`) and waking its threads (spinning, yielding)
/// costs more than the work below this size.
pub(super) fn in_parallel(rows: usize) -> bool {
    rows >= 20_000
}

pub(super) const EMPTY_ROW: StoredRow = StoredRow { reward: 0.0, tagged_group: 0 };

/// Episode groups in order of first appearance (statistics left at their empty values), each episode's group,
/// and each group's episodes.
pub(super) fn group_episodes<I: EngineInput + ?Sized>(input: &I) -> (Vec<EpisodeGroup>, U32Column, GroupMembers) {
    let mut groups: Vec<EpisodeGroup> = Vec::new();
    let mut group_of = U32Column::default();
    let mut index: HashMap<&str, u32> = HashMap::new();
    for e in 0..input.episode_count() {
        let name = input.group(e);
        let g = *index.entry(name).or_insert_with(|| {
            groups.push(EpisodeGroup {
                name: input.group_name(e),
                mean: 0.0,
                std: 0.0,
                pool_size: 0,
                baseline: 0.0,
                factor: 1.0,
                zero_variance: Some(ZeroVariance::EqualScores),
            });
            (groups.len() - 1) as u32
        });
        group_of.push(g);
    }
    let members = GroupMembers::of(&group_of, groups.len());
    (groups, group_of, members)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A member's row is found in its episode, episodes without rows (which start where the next one does)
    /// passed over.
    #[test]
    fn members_rows_are_found_in_their_episodes_past_episodes_without_rows() {
        let row_offsets: OffsetColumn = [0, 2, 2, 5, 5, 6].into_iter().collect();
        let rows = [0, 1, 2, 4, 5];
        let members = Members { rows: &rows, row_offsets: &row_offsets };
        let at = |episode, step| RowRef { episode, step };
        let want = [at(0, 0), at(0, 1), at(2, 0), at(2, 2), at(4, 0)];
        assert_eq!(members.iter().collect::<Vec<_>>(), want);
        assert_eq!(members.iter().rev().collect::<Vec<_>>(), want.iter().rev().copied().collect::<Vec<_>>());
        assert_eq!((members.len(), members.first(), members.get(5)), (5, Some(at(0, 0)), None));
    }

    /// Each group's episodes as a list of lists, in file order, from each episode's group.
    fn listed(group_of: &[u32], groups: usize) -> Vec<Vec<u32>> {
        let mut want = vec![Vec::new(); groups];
        group_of.iter().enumerate().for_each(|(e, &g)| want[g as usize].push(e as u32));
        want
    }

    fn held(members: &GroupMembers, groups: usize) -> Vec<Vec<u32>> {
        (0..groups).map(|g| members.get(g).iter().collect()).collect()
    }

    /// Groups numbered by first appearance, each episode's drawn from `draws`: a draw of 0 keeps the group of
    /// the episode before, so runs of consecutive episodes are common, as a trainer writes them.
    fn first_appearance(draws: &[u8]) -> (Vec<u32>, usize) {
        let (mut group_of, mut groups) = (Vec::new(), 0u32);
        for &d in draws {
            let g = match (d, group_of.last()) {
                (0, Some(&last)) => last,
                (1, _) | (_, None) => {
                    groups += 1;
                    groups - 1
                }
                (d, _) => u32::from(d) % groups,
            };
            group_of.push(g);
        }
        (group_of, groups as usize)
    }

    proptest::proptest! {
        /// Every group's episodes are given back in file order, kept as a list or as consecutive numbers alone,
        /// and stay so when a table of new groups is appended.
        #[test]
        fn group_members_give_each_groups_episodes_in_file_order(
            draws in proptest::collection::vec(0u8..6, 0..60),
            more in proptest::collection::vec(0u8..6, 0..30),
        ) {
            let (group_of, groups) = first_appearance(&draws);
            let column: U32Column = group_of.iter().copied().collect();
            let mut members = GroupMembers::of(&column, groups);
            proptest::prop_assert_eq!(held(&members, groups), listed(&group_of, groups));
            let consecutive = group_of.windows(2).all(|w| w[0] <= w[1]);
            proptest::prop_assert_eq!(members.listed.is_empty(), consecutive, "kept as a list only where needed");
            for g in 0..groups {
                let got = members.get(g);
                for (i, e) in got.iter().enumerate() {
                    proptest::prop_assert_eq!(got.position(e), Some(i));
                }
                proptest::prop_assert!(got.position(group_of.len() as u32).is_none());
            }
            // A part of new groups after them.
            let (extra_of, extra_groups) = first_appearance(&more);
            let extra: U32Column = extra_of.iter().copied().collect();
            members.append(GroupMembers::of(&extra, extra_groups), group_of.len() as u32);
            let mut all = group_of.clone();
            all.extend(extra_of.iter().map(|g| g + groups as u32));
            proptest::prop_assert_eq!(held(&members, groups + extra_groups), listed(&all, groups + extra_groups));
        }
    }
}
