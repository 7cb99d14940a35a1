//! Group statistics of a computed [`AdvantageTable`]: how much learning signal the grouping leaves
//! (singleton step groups and zero-variance episode groups carry none) and how far a trainer's recorded
//! advantages are from gigscope's recomputation.

use std::collections::BTreeMap;
use std::ops::Range;

use serde::Serialize;

use super::input::EngineInput;
use super::table::{AdvantageTable, AnchorGroups, RowRef, ZeroVariance};

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunStats {
    pub episodes: usize,
    pub steps: usize,
    pub episode_groups: usize,
    pub step_groups: usize,
    /// Number of step groups of each size, ascending by size.
    pub step_group_sizes: Vec<SizeCount>,
    pub singleton_step_groups: usize,
    /// Share of step groups that are singletons (their A_S is 0); 0 when there are none.
    pub singleton_share: f64,
    /// Rows per step group (the reference trainer's "avg size of step-level group").
    pub mean_step_group_size: f64,
    pub zero_variance_groups: usize,
    /// Share of episode groups whose trajectories all have the same total reward.
    pub zero_variance_share: f64,
    pub groups: Vec<GroupSummary>,
    /// Present when at least one episode carries trainer-recorded `advantages`.
    pub stored: Option<StoredComparison>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SizeCount {
    pub size: usize,
    pub count: usize,
}

/// One episode group's summary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupSummary {
    pub name: String,
    pub episodes: usize,
    pub steps: usize,
    /// Share of its episodes with `outcome.success`; `None` where the run records no success ([`records_success`]).
    pub success_rate: Option<f64>,
    /// Mean and sample std of the episode-baseline pool (row scores), and its size.
    pub mean: f64,
    pub std: f64,
    pub pool_size: usize,
    /// Why its A_E carries no signal, if it carries none (see [`ZeroVariance`]).
    pub zero_variance: Option<ZeroVariance>,
    pub step_groups: usize,
    pub singleton_step_groups: usize,
}

/// Trainer-recorded `advantages` against the recomputed final advantages.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoredComparison {
    /// Rows compared (episodes whose `advantages` has one value per step).
    pub rows: usize,
    /// Ids of episodes whose `advantages` length differs from their step count (not compared).
    pub length_mismatches: Vec<String>,
    /// The largest |stored − recomputed| and where; `None` when no row could be compared.
    pub largest: Option<StoredDifference>,
    /// Rows whose |stored − recomputed| exceeds [`MISMATCH_TOLERANCE`].
    pub mismatched_rows: usize,
    /// The [`LISTED_MISMATCHES`] largest of them, largest first (file order among equals).
    pub mismatches: Vec<StoredDifference>,
}

/// A stored advantage further than this from the recomputed one is a mismatch: the trainers gigscope reads
/// agree to float32 rounding (about 1e-5 at most), so a difference past 1e-4 is other settings or other data.
pub const MISMATCH_TOLERANCE: f64 = 1e-4;
/// How many mismatching rows [`StoredComparison::mismatches`] lists.
pub const LISTED_MISMATCHES: usize = 20;

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoredDifference {
    pub abs_diff: f64,
    /// Episode id, and the row's address in the input.
    pub episode_id: String,
    pub at: RowRef,
    pub stored: f64,
    pub recomputed: f64,
}

/// Statistics of `table`, computed by the engine from `episodes`.
pub fn run_stats<I: EngineInput + ?Sized>(episodes: &I, table: &AdvantageTable) -> RunStats {
    let mut sizes: BTreeMap<usize, usize> = BTreeMap::new();
    count_step_group_sizes(&mut sizes, &table.anchor_groups, 0);
    let mut singletons_per_group = vec![0usize; table.episode_groups.len()];
    let mut step_groups_per_group = vec![0usize; table.episode_groups.len()];
    for (g, size) in table.anchor_episode_groups().zip(table.anchor_groups.sizes()) {
        step_groups_per_group[g as usize] += 1;
        if size == 1 {
            singletons_per_group[g as usize] += 1;
        }
    }
    let success_recorded = records_success(episodes);
    let groups: Vec<GroupSummary> = table
        .episode_groups
        .iter()
        .enumerate()
        .map(|(g, group)| {
            let members = || table.group_episodes(g).iter().map(|e| e as usize);
            let successes = members().filter(|&e| episodes.success(e)).count();
            GroupSummary {
                name: group.name.to_string(),
                episodes: members().len(),
                steps: members().map(|e| episodes.step_count(e)).sum(),
                success_rate: success_recorded.then(|| share(successes, members().len())),
                mean: group.mean,
                std: group.std,
                pool_size: group.pool_size,
                zero_variance: group.zero_variance,
                step_groups: step_groups_per_group[g],
                singleton_step_groups: singletons_per_group[g],
            }
        })
        .collect();
    let singleton_step_groups = sizes.get(&1).copied().unwrap_or(0);
    let zero_variance_groups = groups.iter().filter(|g| g.zero_variance.is_some()).count();
    RunStats {
        episodes: episodes.episode_count(),
        steps: table.row_count(),
        episode_groups: groups.len(),
        step_groups: table.anchor_groups.len(),
        step_group_sizes: sizes.into_iter().map(|(size, count)| SizeCount { size, count }).collect(),
        singleton_step_groups,
        singleton_share: share(singleton_step_groups, table.anchor_groups.len()),
        mean_step_group_size: if table.anchor_groups.is_empty() {
            0.0
        } else {
            table.row_count() as f64 / table.anchor_groups.len() as f64
        },
        zero_variance_groups,
        zero_variance_share: share(zero_variance_groups, groups.len()),
        groups,
        stored: compare_stored(episodes, table),
    }
}

/// Whether the episodes of `input` record success. TRL's completions (episodes with per-function rewards) do
/// not: TRL has no such notion, and its readers write `false`, so a success rate of them would read "0%".
pub fn records_success<I: EngineInput + ?Sized>(input: &I) -> bool {
    (0..input.episode_count()).any(|e| input.recorded_rewards(e).is_none())
}

/// Count `anchor_groups` from group `from` on into `sizes` (step-group size → number of step groups of that
/// size): a histogram kept up to date as anchor groups are appended.
pub fn count_step_group_sizes(sizes: &mut BTreeMap<usize, usize>, anchor_groups: &AnchorGroups, from: usize) {
    for a in from.min(anchor_groups.len())..anchor_groups.len() {
        *sizes.entry(anchor_groups.size(a)).or_insert(0) += 1;
    }
}

fn share(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The largest |stored − recomputed| over episodes that carry `advantages`; the first such row wins ties.
pub fn compare_stored<I: EngineInput + ?Sized>(episodes: &I, table: &AdvantageTable) -> Option<StoredComparison> {
    compare_stored_over(episodes, table, 0..episodes.episode_count())
}

/// [`compare_stored`] over the episodes `range` alone (those just appended to a run).
pub fn compare_stored_over<I: EngineInput + ?Sized>(
    episodes: &I,
    table: &AdvantageTable,
    range: Range<usize>,
) -> Option<StoredComparison> {
    let mut comparison = StoredComparison {
        rows: 0,
        length_mismatches: Vec::new(),
        largest: None,
        mismatched_rows: 0,
        mismatches: Vec::new(),
    };
    let mut any = false;
    for e in range {
        let Some(stored) = episodes.recorded_advantages(e) else { continue };
        any = true;
        if stored.len() != episodes.step_count(e) {
            comparison.length_mismatches.push(episodes.episode_id(e).to_string());
            continue;
        }
        for (t, (&stored, row)) in stored.iter().zip(table.episode_rows(e)).enumerate() {
            comparison.rows += 1;
            let abs_diff = (stored - row.advantage).abs();
            let difference = || StoredDifference {
                abs_diff,
                episode_id: episodes.episode_id(e).to_string(),
                at: RowRef { episode: e as u32, step: t as u32 },
                stored,
                recomputed: row.advantage,
            };
            if comparison.largest.as_ref().is_none_or(|l| abs_diff > l.abs_diff) {
                comparison.largest = Some(difference());
            }
            // A stored NaN is a mismatch, listed as the largest.
            let size = |d: f64| if d.is_nan() { f64::INFINITY } else { d };
            if size(abs_diff) > MISMATCH_TOLERANCE {
                comparison.mismatched_rows += 1;
                let listed = &mut comparison.mismatches;
                let at = listed.partition_point(|l| size(l.abs_diff) >= size(abs_diff));
                if at < LISTED_MISMATCHES {
                    listed.insert(at, difference());
                    listed.truncate(LISTED_MISMATCHES);
                }
            }
        }
    }
    any.then_some(comparison)
}

/// The statistics of a slice of the run (an iteration's episodes and groups): what the run overview shows
/// per iteration.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SliceStats {
    pub episodes: usize,
    /// The episode groups of the slice (by index into the table's), in table order.
    pub groups: Vec<u32>,
    pub success_rate: f64,
    /// Mean total (unshaped) reward per episode.
    pub mean_return: f64,
    /// Steps per episode.
    pub mean_len: f64,
    /// Mean tokens per step over the steps that record a count; `None` when no step does.
    pub tokens_per_step: Option<f64>,
    /// Share of the slice's episode groups whose trajectories all have the same total reward.
    pub zero_variance_share: f64,
    /// Members per anchor-state group, over the slice's groups.
    pub mean_step_group_size: f64,
}

/// Sums over a slice of the run, which its [`SliceStats`] are made from.
#[derive(Clone, Debug, Default, PartialEq)]
struct SliceSums {
    episodes: usize,
    success: usize,
    ret: f64,
    steps: usize,
    tokens: u64,
    token_steps: usize,
    groups: Vec<u32>,
    zero_variance: usize,
    members: usize,
    anchor_groups: usize,
}

impl SliceSums {
    fn stats(&self) -> SliceStats {
        let share = |part: usize, whole: usize| if whole == 0 { 0.0 } else { part as f64 / whole as f64 };
        let n = self.episodes.max(1) as f64;
        SliceStats {
            episodes: self.episodes,
            success_rate: self.success as f64 / n,
            mean_return: self.ret / n,
            mean_len: self.steps as f64 / n,
            tokens_per_step: (self.token_steps > 0).then(|| self.tokens as f64 / self.token_steps as f64),
            zero_variance_share: share(self.zero_variance, self.groups.len()),
            mean_step_group_size: share(self.members, self.anchor_groups),
            groups: self.groups.clone(),
        }
    }
}

/// The run split by a key, kept up to date as episodes are appended with their groups: each episode counts
/// under its own key, each episode group (with its anchor groups) under its first episode's key. Taking in an
/// appended part costs what the part holds, not what the run holds, so a viewer reading a large run part by
/// part keeps its per-iteration statistics at no cost that grows with the run.
#[derive(Clone, Debug, PartialEq)]
pub struct StatsBy<K> {
    sums: BTreeMap<K, SliceSums>,
    /// How many episodes, episode groups and anchor groups were taken in so far.
    episodes: usize,
    groups: usize,
    anchor_groups: usize,
}

impl<K> Default for StatsBy<K> {
    fn default() -> Self {
        StatsBy { sums: BTreeMap::new(), episodes: 0, groups: 0, anchor_groups: 0 }
    }
}

impl<K: Ord + Clone> StatsBy<K> {
    /// Take in what `episodes` and `table` hold beyond what was taken in before: the episodes from the last one
    /// taken in on, the episode groups and anchor groups likewise. What was taken in must not have changed
    /// (episodes are only appended, in new groups, as [`AdvantageTable::append`] appends them).
    pub fn extend<I: EngineInput + ?Sized>(&mut self, episodes: &I, table: &AdvantageTable, key: impl Fn(usize) -> K) {
        for e in self.episodes..episodes.episode_count() {
            let sums = self.sums.entry(key(e)).or_default();
            let steps = episodes.step_count(e);
            sums.episodes += 1;
            sums.success += usize::from(episodes.success(e));
            sums.ret += (0..steps).map(|t| episodes.reward(e, t)).sum::<f64>();
            sums.steps += steps;
            sums.tokens += episodes.tokens(e);
            sums.token_steps += episodes.token_steps(e);
        }
        self.episodes = episodes.episode_count();
        // A group's key is its first episode's, found again where an anchor group needs it: anchor groups come
        // group by group, so each group's key is found once (a list of every group's key cost 2 to 3 bytes a
        // step in a viewer of single-step episodes).
        let group_key = |g: usize| table.group_episodes(g).first().map(|first| key(first as usize));
        for (g, group) in table.episode_groups.iter().enumerate().skip(self.groups) {
            if let Some(sums) = group_key(g).and_then(|k| self.sums.get_mut(&k)) {
                sums.groups.push(g as u32);
                sums.zero_variance += usize::from(group.zero_variance.is_some());
            }
        }
        self.groups = table.episode_groups.len();
        let mut last_group: Option<(u32, Option<K>)> = None;
        for a in self.anchor_groups.min(table.anchor_groups.len())..table.anchor_groups.len() {
            let g = table.anchor_episode_group(a);
            if last_group.as_ref().is_none_or(|&(last, _)| last != g) {
                last_group = Some((g, group_key(g as usize)));
            }
            let slot = last_group.as_ref().and_then(|(_, k)| k.as_ref());
            if let Some(sums) = slot.and_then(|k| self.sums.get_mut(k)) {
                sums.members += table.anchor_groups.size(a);
                sums.anchor_groups += 1;
            }
        }
        self.anchor_groups = table.anchor_groups.len();
    }

    /// The statistics of each key's slice, in key order.
    pub fn stats(&self) -> Vec<(K, SliceStats)> {
        self.sums.iter().map(|(k, sums)| (k.clone(), sums.stats())).collect()
    }
}

/// The run split by `key`, in key order: each episode counts under its own key, each episode group (with its
/// anchor groups) under its first episode's key.
pub fn stats_by<I: EngineInput + ?Sized, K: Ord + Clone>(
    episodes: &I,
    table: &AdvantageTable,
    key: impl Fn(usize) -> K,
) -> Vec<(K, SliceStats)> {
    let mut by = StatsBy::default();
    by.extend(episodes, table, key);
    by.stats()
}

/// The quantile levels [`Quantiles`] holds: the whiskers (5 % and 95 %), the box (25 % and 75 %) and the median.
pub const QUANTILE_LEVELS: [f64; 5] = [0.05, 0.25, 0.5, 0.75, 0.95];

/// Quantiles of a set of values at [`QUANTILE_LEVELS`], each interpolated linearly between the two order
/// statistics around position `(n − 1)·p` of the sorted values (NumPy's default, `method="linear"`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Quantiles {
    /// How many values they are of.
    pub count: usize,
    /// The values at [`QUANTILE_LEVELS`], in that order.
    pub at: [f64; 5],
}

impl Quantiles {
    /// The quantiles of `values` (reordered in place; NaN sorts above every number); `None` when it is empty.
    /// The cost is linear in `values.len()` (order statistics selected, never a full sort): a viewer recomputes
    /// them for every iteration whenever the settings change.
    pub fn of(values: &mut [f64]) -> Option<Quantiles> {
        // Everything before `done` is in its sorted place; `values[done..]` holds the rest, unsorted.
        let mut done = 0;
        Quantiles::from_order_statistics(values.len(), |k| {
            if k >= done {
                values[done..].select_nth_unstable_by(k - done, f64::total_cmp);
                done = k + 1;
            }
            values[k]
        })
    }

    /// The quantiles of `n` values whose `k`-th smallest (from 0) `order_statistic(k)` gives, asked for in
    /// ascending `k`; `None` when `n` is 0.
    fn from_order_statistics(n: usize, mut order_statistic: impl FnMut(usize) -> f64) -> Option<Quantiles> {
        if n == 0 {
            return None;
        }
        let mut at = [0.0; 5];
        for (slot, p) in at.iter_mut().zip(QUANTILE_LEVELS) {
            let h = (n - 1) as f64 * p;
            let below = h.floor() as usize;
            let low = order_statistic(below);
            let fraction = h - below as f64;
            *slot = if fraction > 0.0 && below + 1 < n {
                let high = order_statistic(below + 1);
                low + fraction * (high - low)
            } else {
                low
            };
        }
        Some(Quantiles { count: n, at })
    }

    pub fn median(&self) -> f64 {
        self.at[2]
    }
}

/// The quantiles of a slice of the run's steps (an iteration's), of each of GiGPO's advantage channels under
/// the table's settings: the episode component A_E, the step component A_S and the estimator's advantage A.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct AdvantageQuantiles {
    pub episode: Quantiles,
    pub step: Quantiles,
    pub advantage: Quantiles,
}

impl AdvantageQuantiles {
    /// Over every step of `episodes` (indices into the table's episodes); `None` when they have no step.
    pub fn of_episodes(table: &AdvantageTable, episodes: impl IntoIterator<Item = usize>) -> Option<Self> {
        let [mut a_e, mut a_s, mut a] = channel_values(table, episodes);
        Some(AdvantageQuantiles {
            episode: Quantiles::of(&mut a_e)?,
            step: Quantiles::of(&mut a_s)?,
            advantage: Quantiles::of(&mut a)?,
        })
    }
}

/// A_E, A_S and A of every step of `episodes`, channel by channel.
fn channel_values(table: &AdvantageTable, episodes: impl IntoIterator<Item = usize>) -> [Vec<f64>; 3] {
    let (mut a_e, mut a_s, mut a) = (Vec::new(), Vec::new(), Vec::new());
    for e in episodes {
        for row in table.episode_rows(e) {
            a_e.push(row.episode_advantage);
            a_s.push(row.step_advantage);
            a.push(row.advantage);
        }
    }
    [a_e, a_s, a]
}

/// The advantages of a slice of the run that grows by appended episode groups (a live run's iteration being
/// written), kept in order so that its [`AdvantageQuantiles`] are exact after every part at the cost of the
/// part, not of the slice: appending episode groups leaves the rows before them as they were, so what was
/// sorted stays sorted. 24 bytes a step while it is kept; a viewer keeps it only while the slice grows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct GrowingQuantiles {
    channels: [SortedValues; 3],
}

impl GrowingQuantiles {
    /// Take in every step of `episodes` (indices into the table's episodes, not taken in before).
    pub fn extend(&mut self, table: &AdvantageTable, episodes: impl IntoIterator<Item = usize>) {
        for (channel, values) in self.channels.iter_mut().zip(channel_values(table, episodes)) {
            channel.extend(values);
        }
    }

    /// The quantiles of what was taken in: those [`AdvantageQuantiles::of_episodes`] gives for the same
    /// episodes, bit for bit; `None` before any step.
    pub fn quantiles(&self) -> Option<AdvantageQuantiles> {
        let [episode, step, advantage] = &self.channels;
        Some(AdvantageQuantiles {
            episode: episode.quantiles()?,
            step: step.quantiles()?,
            advantage: advantage.quantiles()?,
        })
    }
}

/// A multiset of values in [`f64::total_cmp`] order (NaN above every number, as [`Quantiles::of`] orders
/// them), kept as two sorted runs: the settled values, and the recent ones, merged into the settled once they
/// are more than a sixteenth of them. An addition costs its own sort, a merge into the recent run (at most a
/// sixteenth of the whole) and, amortised, a constant share of merging the settled run; an order statistic
/// is a binary search over the two runs.
#[derive(Clone, Debug, Default, PartialEq)]
struct SortedValues {
    settled: Vec<f64>,
    recent: Vec<f64>,
}

impl SortedValues {
    fn extend(&mut self, mut values: Vec<f64>) {
        values.sort_unstable_by(f64::total_cmp);
        merge_into(&mut self.recent, &values);
        if self.recent.len() * 16 > self.settled.len() {
            merge_into(&mut self.settled, &self.recent);
            self.recent.clear();
        }
    }

    fn len(&self) -> usize {
        self.settled.len() + self.recent.len()
    }

    /// The `k`-th smallest value (from 0; `k` below [`Self::len`]): `i` values from the settled run and
    /// `k + 1 − i` from the recent one, `i` the least count for which the settled run's next value is not
    /// below the last taken from the recent one.
    fn order_statistic(&self, k: usize) -> f64 {
        use std::cmp::Ordering::Less;
        let (a, b) = (&self.settled, &self.recent);
        let (mut lo, mut hi) = ((k + 1).saturating_sub(b.len()), (k + 1).min(a.len()));
        while lo < hi {
            let i = (lo + hi) / 2;
            if a[i].total_cmp(&b[k - i]) == Less {
                lo = i + 1;
            } else {
                hi = i;
            }
        }
        // The k + 1 smallest are the first `lo` settled and the first `k + 1 - lo` recent values (not both
        // none); the largest of them is the k-th.
        match (lo, k + 1 - lo) {
            (0, j) => b[j - 1],
            (i, 0) => a[i - 1],
            (i, j) => larger(a[i - 1], b[j - 1]),
        }
    }

    fn quantiles(&self) -> Option<Quantiles> {
        Quantiles::from_order_statistics(self.len(), |k| self.order_statistic(k))
    }
}

/// The larger of two values in [`f64::total_cmp`] order.
fn larger(x: f64, y: f64) -> f64 {
    if x.total_cmp(&y) == std::cmp::Ordering::Greater {
        x
    } else {
        y
    }
}

/// Merge the sorted run `more` into the sorted run `into`, in place: from the back, each slot taking the larger
/// of the two runs' last values not yet placed, so nothing is allocated but `into`'s growth.
fn merge_into(into: &mut Vec<f64>, more: &[f64]) {
    let mut i = into.len();
    into.extend_from_slice(more);
    let mut j = more.len();
    // Slots past `i + j` are placed; `into[..i]` and `more[..j]` are still to place.
    while j > 0 {
        if i > 0 && into[i - 1].total_cmp(&more[j - 1]) == std::cmp::Ordering::Greater {
            into[i + j - 1] = into[i - 1];
            i -= 1;
        } else {
            into[i + j - 1] = more[j - 1];
            j -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Quantiles, SortedValues};
    use proptest::prelude::*;

    fn assert_quantiles(values: &mut [f64], expected: [f64; 5]) {
        let q = Quantiles::of(values).unwrap();
        assert_eq!(q.count, values.len());
        for (got, want) in q.at.iter().zip(expected) {
            assert!((got - want).abs() < 1e-12, "{:?} is not {expected:?}", q.at);
        }
    }

    // The expected values are hand-worked; numpy.quantile(values, [.05, .25, .5, .75, .95]) gives the same.
    #[test]
    fn quantiles_interpolate_between_order_statistics_as_numpy_does() {
        // Sorted: 1 2 3 4 10; (n − 1)·p = 0.2, 1, 2, 3, 3.8 → 1.2, 2, 3, 4, 4 + 0.8·6 = 8.8.
        assert_quantiles(&mut [4.0, 1.0, 10.0, 3.0, 2.0], [1.2, 2.0, 3.0, 4.0, 8.8]);
        // Two values: p of the way from −1 to 3.
        assert_quantiles(&mut [3.0, -1.0], [-0.8, 0.0, 1.0, 2.0, 2.8]);
        // Ties: sorted 0 2 2 2; (n − 1)·p = 0.15, 0.75, 1.5, 2.25, 2.85.
        assert_quantiles(&mut [2.0, 2.0, 2.0, 0.0], [0.3, 1.5, 2.0, 2.0, 2.0]);
    }

    #[test]
    fn one_value_is_every_quantile_and_none_is_none() {
        assert_eq!(Quantiles::of(&mut [-0.5]).unwrap().at, [-0.5; 5]);
        assert_eq!(Quantiles::of(&mut []), None);
    }

    /// Values with many ties, both zeros and NaN among them, as advantages have (a zero-variance group's are
    /// all 0).
    fn value() -> impl Strategy<Value = f64> {
        prop_oneof![
            4 => (-3i32..4).prop_map(|v| f64::from(v) / 2.0),
            2 => -10.0f64..10.0,
            1 => Just(-0.0),
            1 => Just(f64::NAN),
        ]
    }

    proptest! {
        /// Added part by part, the sorted values give after every part the quantiles `Quantiles::of` gives for
        /// everything added so far, bit for bit, and each of their order statistics is the sorted values'.
        #[test]
        fn values_added_in_parts_give_the_quantiles_of_all_of_them(
            parts in prop::collection::vec(prop::collection::vec(value(), 0..40), 1..30)
        ) {
            let mut sorted = SortedValues::default();
            let mut all = Vec::new();
            for part in parts {
                all.extend_from_slice(&part);
                sorted.extend(part);
                let mut reference = all.clone();
                let bits = |q: Option<Quantiles>| q.map(|q| (q.count, q.at.map(f64::to_bits)));
                prop_assert_eq!(bits(sorted.quantiles()), bits(Quantiles::of(&mut reference)));
                reference.sort_unstable_by(f64::total_cmp);
                for (k, v) in reference.iter().enumerate() {
                    prop_assert_eq!(sorted.order_statistic(k).to_bits(), v.to_bits());
                }
            }
        }
    }
}
