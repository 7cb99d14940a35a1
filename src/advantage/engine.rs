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

use rayon::prelude::*;

use super::grouping::{group_anchors, AnchorGrouping};
use super::input::EngineInput;
use super::settings::{AdvantageSettings, Pooling};
use super::table::{
    copies_at, group_episodes, in_parallel, row_ref, scores_and_returns, AdvantageTable, AnchorGroups, AnchorStats,
    EpisodeGroup, GroupEpisodes, GroupMembers, RowRule, StoredRow, TableData, ZeroVariance, EMPTY_ROW,
};
use crate::run::{Episode, OffsetColumn, U32Column};

pub use crate::run::settings::STD_EPSILON;

/// Reward given to the last step of a successful episode by the binary success shaping (WebShop training
/// convention); every other step gets 0.
pub const SUCCESS_REWARD: f64 = 10.0;

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
    let (episode_groups, episode_group_of, group_members) = group_episodes(input);
    let n = input.episode_count();
    let mut row_offsets = OffsetColumn::default();
    let mut end = 0;
    row_offsets.push(0);
    for e in 0..n {
        end += input.step_count(e);
        // A table of 2³² rows would take more than 64 GiB: more is a bug, not input to report.
        row_offsets.push(u32::try_from(end).expect("an advantage table of more than 2³² rows"));
    }
    let rows = std::iter::repeat_n(EMPTY_ROW, end).collect();
    let mut table = AdvantageTable::from(TableData {
        row_offsets,
        rows,
        copies: copies_apart(input),
        anchor_groups: AnchorGroups::default(),
        episode_groups,
        episode_group_of,
        group_members,
        rule: RowRule::of(settings),
        episode_terms: Default::default(),
        replaced: Vec::new(),
    });
    regroup(&mut table, input, grouping, settings);
    table
}

/// The rows `input` counts other than once, as the table keeps them ([`TableData::copies`]).
fn copies_apart<I: EngineInput + ?Sized>(input: &I) -> Vec<(u32, u32)> {
    let mut apart = Vec::new();
    let mut row = 0u32;
    for e in 0..input.episode_count() {
        for t in 0..input.step_count(e) {
            let copies = input.copies(e, t);
            if copies != 1 {
                apart.push((row, copies));
            }
            row += 1;
        }
    }
    apart
}

/// Recompute `table`, which [`compute`] made from this `input` under settings with the same
/// [`AdvantageSettings::anchor`] mode, for new `settings`: the anchor-state groups (the costly part: hashing or
/// comparing every anchor string) are kept, everything numeric is computed again. The result equals
/// `compute(input, settings)` bit for bit. With another anchor mode it would keep the old grouping: call
/// [`compute`] (or [`regroup`]) then.
pub fn recompute<I: EngineInput + ?Sized>(table: &mut AdvantageTable, input: &I, settings: &AdvantageSettings) {
    let same_shape = table.episode_count() == input.episode_count()
        && (0..table.episode_count()).all(|e| input.step_count(e) == table.rows_of(e).len());
    assert!(same_shape, "recompute: the table was computed from other episodes");
    table.rule = RowRule::of(settings);
    table.episode_terms = Default::default();
    table.replaced = Vec::new();
    let TableData {
        row_offsets,
        rows,
        copies,
        anchor_groups,
        episode_groups,
        episode_group_of,
        group_members,
        rule,
        ..
    } = &mut **table;
    let parallel = in_parallel(rows.len());
    // The rows are filled in parallel in a plain list, then kept by column again.
    let mut filled = rows.to_vec();
    // Anchor groups are stored episode group by episode group: each episode group's are a range of them.
    let mut anchors_by_group = vec![0..0; episode_groups.len()];
    let mut a = 0;
    for (g, range) in anchors_by_group.iter_mut().enumerate() {
        let start = a;
        let of_group = |a: usize| {
            let first = anchor_groups.member_rows(a).first();
            first.is_some_and(|&row| episode_group_of.get(row_ref(row_offsets, row).episode as usize) as usize == g)
        };
        while a < anchor_groups.len() && of_group(a) {
            a += 1;
        }
        *range = start..a;
    }
    let mut parts = rows_by_group(&mut filled, row_offsets, episode_group_of, group_members);
    let rule = *rule;
    let lone_factor = settings.norm.factor(0.0);
    let (groups, row_offsets, copies, group_members): (&AnchorGroups, &OffsetColumn, &[(u32, u32)], &GroupMembers) =
        (anchor_groups, row_offsets, copies, group_members);
    type Part<'p, 'r> = ((usize, (&'p mut Vec<&'r mut [StoredRow]>, &'p mut EpisodeGroup)), std::ops::Range<usize>);
    let fill = |((g, (rows, group)), range): Part<'_, '_>| {
        let anchors = GroupAnchors { groups, row_offsets, copies, range, lone_factor };
        fill_group(rows, (group, group_members.get(g)), anchors, input, settings, &rule)
    };
    let kept: Vec<Vec<(u32, AnchorStats)>> = if parallel {
        parts.par_iter_mut().zip(episode_groups.par_iter_mut()).enumerate().zip(anchors_by_group).map(fill).collect()
    } else {
        parts.iter_mut().zip(episode_groups.iter_mut()).enumerate().zip(anchors_by_group).map(fill).collect()
    };
    drop(parts);
    *rows = filled.into_iter().collect();
    anchor_groups.norm = settings.norm;
    anchor_groups.kept = Vec::with_capacity(kept.iter().map(Vec::len).sum());
    kept.into_iter().flatten().for_each(|(a, stats)| anchor_groups.keep(a, stats));
    super::trl::apply(table, input, settings);
}

/// Put `table` (computed from `input`) into `grouping`'s anchor groups (made from the same episodes) and
/// recompute it under `settings`, whose anchor mode should be `grouping.mode`: the result equals
/// `compute(input, settings)` bit for bit.
pub fn regroup<I: EngineInput + ?Sized>(
    table: &mut AdvantageTable,
    input: &I,
    grouping: &AnchorGrouping,
    settings: &AdvantageSettings,
) {
    assert_eq!(grouping.row_group.len(), table.row_count(), "regroup: the grouping was made from other episodes");
    let groups = grouping.episode_group.len();
    // Each anchor group's members, in one array (a counting sort by group; rows are in file order, so members
    // are too), then handed to the groups.
    let mut starts = vec![0u32; groups + 1];
    for (r, &a) in grouping.row_group.iter().enumerate() {
        table.rows.set_step_group(r, a);
        starts[a as usize + 1] += 1;
    }
    for a in 0..groups {
        starts[a + 1] += starts[a];
    }
    let mut next = starts.clone();
    let mut members = vec![0u32; table.row_count()];
    for (r, a) in table.rows.step_groups().enumerate() {
        let at = &mut next[a as usize];
        members[*at as usize] = r as u32;
        *at += 1;
    }
    table.anchor_groups = AnchorGroups::unfilled(starts, members);
    recompute(table, input, settings);
}

/// `rows` cut into episodes and dealt out to their groups: `parts[g][i]` are the rows of the `i`-th episode of
/// group `g`.
fn rows_by_group<'r>(
    mut rows: &'r mut [StoredRow],
    row_offsets: &OffsetColumn,
    episode_group_of: &U32Column,
    group_members: &GroupMembers,
) -> Vec<Vec<&'r mut [StoredRow]>> {
    let mut parts: Vec<Vec<&mut [StoredRow]>> =
        (0..group_members.groups()).map(|g| Vec::with_capacity(group_members.get(g).len())).collect();
    for (e, g) in episode_group_of.iter().enumerate() {
        let (episode, rest) = rows.split_at_mut(row_offsets.part_len(e) as usize);
        parts[g as usize].push(episode);
        rows = rest;
    }
    parts
}

/// One episode group's anchor-state groups: `range` of the table's `groups`, and the factor a lone member's
/// figures are derived with (what decides which statistics the table keeps); with the table's arrays that place
/// a row and give its copies.
struct GroupAnchors<'a> {
    groups: &'a AnchorGroups,
    /// The table's `row_offsets`, to find the members' episodes.
    row_offsets: &'a OffsetColumn,
    /// The table's rows counted other than once ([`TableData::copies`]).
    copies: &'a [(u32, u32)],
    range: std::ops::Range<usize>,
    lone_factor: f64,
}

/// Everything numeric of one episode group, given its anchor-state groups: the shaped rewards of its rows,
/// then the statistics of the episode level and of the step level over their scores and returns; the anchor
/// groups' statistics the table keeps ([`AnchorGroups`]).
fn fill_group<I: EngineInput + ?Sized>(
    rows: &mut [&mut [StoredRow]],
    (group, episodes): (&mut EpisodeGroup, GroupEpisodes<'_>),
    anchors: GroupAnchors<'_>,
    input: &I,
    settings: &AdvantageSettings,
    rule: &RowRule,
) -> Vec<(u32, AnchorStats)> {
    for (rows, e) in rows.iter_mut().zip(episodes.iter()) {
        fill_rows(rows, input, e as usize, settings);
    }
    // Scores and returns, episode by episode, as the table derives them when asked.
    let derived: Vec<Vec<(f64, f64)>> =
        rows.iter().map(|rows| scores_and_returns(rows.iter().copied(), rule)).collect();
    episode_level(&derived, (group, episodes), &anchors, settings);
    step_level(&derived, episodes, anchors, settings)
}

/// Shaped rewards and validity of episode `e`'s rows.
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
        *row = StoredRow::new(reward, row.step_group(), input.valid(e, t));
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

/// The statistics of a group's episode level (`derived[i]` are the scores and returns of the rows of its `i`-th
/// episode; their copies are the table's).
fn episode_level(
    derived: &[Vec<(f64, f64)>],
    (group, episodes): (&mut EpisodeGroup, GroupEpisodes<'_>),
    anchors: &GroupAnchors<'_>,
    settings: &AdvantageSettings,
) {
    // The copies of step `t` of the group's `i`-th episode.
    let copies = |i: usize, t: usize| {
        let e = episodes.get(i).expect("a row of an episode outside its group");
        copies_at(anchors.copies, anchors.row_offsets.get(e as usize) + t as u32)
    };
    // The pool's (score, copies) samples, kept for the zero-variance verdict on the same numbers.
    let samples: Vec<(f64, u32)> = match settings.pooling {
        Pooling::Steps => derived
            .iter()
            .enumerate()
            .flat_map(|(i, derived)| derived.iter().enumerate().map(move |(t, &(score, _))| (score, copies(i, t))))
            .collect(),
        Pooling::Trajectories => {
            derived.iter().enumerate().filter_map(|(i, derived)| Some((derived.first()?.0, copies(i, 0)))).collect()
        }
    };
    let (mean, std, pool) = mean_std_counted(samples.iter().copied());
    group.zero_variance = ZeroVariance::of(samples.iter().map(|&(score, _)| score), std, STD_EPSILON);
    let (baseline, factor) = if pool <= 1 { (0.0, 1.0) } else { (mean, settings.norm.factor(std)) };
    (group.mean, group.std, group.pool_size, group.baseline, group.factor) = (mean, std, pool, baseline, factor);
}

/// The statistics of a group's anchor-state groups over its rows' returns: those the table keeps, each with its
/// group's number (not a lone member's whose figures are its own).
fn step_level(
    derived: &[Vec<(f64, f64)>],
    episodes: GroupEpisodes<'_>,
    GroupAnchors { groups, row_offsets, copies, range, lone_factor }: GroupAnchors<'_>,
    settings: &AdvantageSettings,
) -> Vec<(u32, AnchorStats)> {
    // A member's episode is found among the group's episodes, which are in file order.
    let at = |row: u32| {
        let m = row_ref(row_offsets, row);
        let i = episodes.position(m.episode).expect("anchor group member outside its episode group");
        (i, m.step as usize)
    };
    let mut kept = Vec::new();
    for a in range {
        let members = groups.member_rows(a);
        let (mean, std, n) = mean_std_counted(members.iter().map(|&row| {
            let (i, t) = at(row);
            (derived[i][t].1, copies_at(copies, row))
        }));
        let factor = settings.norm.factor(std);
        let stats = AnchorStats { samples: u32::try_from(n).unwrap_or(u32::MAX), mean, std, factor };
        let lone = match members {
            [row] => {
                let (i, t) = at(*row);
                let derived = AnchorStats { samples: 1, mean: derived[i][t].1, std: 0.0, factor: lone_factor };
                stats.same_bits(&derived)
            }
            _ => false,
        };
        if !lone {
            kept.push((a as u32, stats));
        }
    }
    kept
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
        let arrays = |t: &AdvantageTable| {
            (
                t.rows.capacity(),
                t.anchor_groups.members.as_ptr(),
                t.anchor_groups.starts.capacity(),
                t.episode_group_of.capacity(),
            )
        };
        let before = arrays(&table);
        for part in rest.chunks(16) {
            table.append(compute(part, &settings));
        }
        assert_eq!(arrays(&table), before, "an array was moved: the room made was too small");
        assert_eq!(table, compute(&run, &settings));
    }
}
