//! The TRL settings that reproduce a run's stored advantages, where the stored ones disagree with the
//! recomputation: TRL's log records neither `scale_rewards`, nor the reward weights, nor the aggregation, so a
//! run trained with others reads with TRL's defaults and its stored advantages differ.
//!
//! A small search: `scale_rewards` (group, batch, none) × aggregation (sum_then_normalize, normalize_then_sum,
//! whose result `scale_rewards` does not change) × weight vectors (the settings' own, then every vector of
//! [`WEIGHTS`] per reward function, for up to [`MAX_SEARCHED_FUNCTIONS`] functions; a vector of zeros is no
//! candidate). Each candidate is tried on the first iteration that has stored advantages (a TRL batch: the
//! settings act within one), in that order, and the first that reproduces them to
//! [`super::stats::MISMATCH_TOLERANCE`] is checked on the whole run. The search changes only these three
//! settings; none is found when other settings (groups of another size, another estimator) or the data differ.
//! Under scaling, weight vectors in proportion give the same advantages (up to TRL's ε): the first found wins.

use std::borrow::Borrow;

use super::engine::compute_grouped;
use super::grouping::{group_anchors, group_lean, AnchorGrouping};
use super::input::EngineInput;
use super::settings::{AdvantageSettings, Aggregation, RewardWeights, ScaleRewards};
use super::stats::{compare_stored, StoredComparison};
use crate::run::{Episode, LeanEpisodes};

/// Weight vectors are searched for runs of at most this many reward functions (11³ vectors).
pub const MAX_SEARCHED_FUNCTIONS: usize = 3;
/// The values each weight takes in the search.
pub const WEIGHTS: [f64; 11] = [0.0, 0.1, 0.2, 0.25, 0.3, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0];

/// TRL settings that reproduce every stored advantage of `episodes`, differing from `settings` only in
/// `scale_rewards`, `reward_weights` and `aggregation`; `None` when the stored advantages already match under
/// `settings`, when the run has none or is no TRL run (`settings` without `scale_rewards`), or when no
/// candidate reproduces them.
pub fn reproducing_trl_settings(episodes: &[Episode], settings: &AdvantageSettings) -> Option<AdvantageSettings> {
    let group = |episodes: &[Episode]| Some(group_anchors(episodes, settings.anchor));
    search(episodes, settings, group, |episodes, members| members.map(|e| episodes[e].clone()).collect::<Vec<_>>())
}

/// [`reproducing_trl_settings`] of lean episodes (a viewer's, whose text stays on disk): `None` too when a
/// similarity grouping cannot read their text back.
pub fn reproducing_trl_settings_lean(
    episodes: &LeanEpisodes,
    settings: &AdvantageSettings,
) -> Option<AdvantageSettings> {
    let group = |episodes: &LeanEpisodes| group_lean(episodes, settings.anchor).ok();
    search(episodes, settings, group, |episodes, members| {
        let mut probe = LeanEpisodes::default();
        probe.extend(members.map(|e| episodes.at(e)), &[]);
        probe
    })
}

/// The search, over `episodes` grouped by `group` (the candidates change no anchor: each set of episodes is
/// grouped once); `select` copies the episodes it is given the indices of (the probe).
fn search<C: EngineInput + ?Sized, P: Borrow<C>>(
    episodes: &C,
    settings: &AdvantageSettings,
    group: impl Fn(&C) -> Option<AnchorGrouping>,
    select: impl Fn(&C, &mut dyn Iterator<Item = usize>) -> P,
) -> Option<AdvantageSettings> {
    settings.scale_rewards?;
    let grouping = group(episodes)?;
    if reproduces(episodes, &grouping, settings)? {
        return None;
    }
    let n = episodes.episode_count();
    let mut facts = ProbeFacts::default();
    facts.add(episodes);
    let first = facts.first_stored_iteration?;
    let probe = select(episodes, &mut (0..n).filter(|&e| episodes.iteration(e) == first));
    let probe: &C = probe.borrow();
    let whole = probe.episode_count() == n;
    let probe_grouping = if whole { grouping.clone() } else { group(probe)? };
    candidates(settings, facts.reward_functions()).filter(|c| c != settings).find(|c| {
        reproduces(probe, &probe_grouping, c) == Some(true)
            && (whole || reproduces(episodes, &grouping, c) == Some(true))
    })
}

/// What the search needs to know of a run before it looks at any candidate, counted episode by episode (a run
/// streamed by needs no more of it held).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ProbeFacts {
    /// The first iteration (the lowest) whose episodes carry stored advantages: the candidates' probe.
    pub first_stored_iteration: Option<i64>,
    /// The most reward functions an episode records, among those that record them.
    most_functions: Option<usize>,
}

impl ProbeFacts {
    pub fn add<I: EngineInput + ?Sized>(&mut self, episodes: &I) {
        for e in 0..episodes.episode_count() {
            if episodes.recorded_advantages(e).is_some() {
                let iteration = episodes.iteration(e);
                let first = self.first_stored_iteration.get_or_insert(iteration);
                *first = (*first).min(iteration);
            }
            if let Some(rewards) = episodes.recorded_rewards(e) {
                self.most_functions = Some(self.most_functions.map_or(rewards.len(), |n| n.max(rewards.len())));
            }
        }
    }

    /// The reward functions whose weights are searched: the most an episode records (1 where none does).
    pub fn reward_functions(&self) -> usize {
        self.most_functions.unwrap_or(1)
    }
}

/// How many candidates that reproduce the probe are checked on the whole run at once ([`reproducing_among`]):
/// a run that is not held is read once for each such batch.
pub const CHECKED_AT_ONCE: usize = 8;

/// The first candidate (in search order, `settings` left out) that reproduces the stored advantages of `probe`
/// (the episodes of the run's first iteration with stored advantages) and, unless the probe is the `whole` run,
/// of the whole run: `check_whole` says that for a batch of candidates, in their order (at most
/// [`CHECKED_AT_ONCE`]), so that a caller that streams the run reads it once a batch.
pub fn reproducing_among(
    settings: &AdvantageSettings,
    probe: &[Episode],
    whole: bool,
    reward_functions: usize,
    mut check_whole: impl FnMut(&[AdvantageSettings]) -> Vec<bool>,
) -> Option<AdvantageSettings> {
    let grouping = group_anchors(probe, settings.anchor);
    let mut passing = candidates(settings, reward_functions)
        .filter(|c| c != settings)
        .filter(|c| reproduces(probe, &grouping, c) == Some(true));
    if whole {
        return passing.next();
    }
    loop {
        let batch: Vec<AdvantageSettings> = passing.by_ref().take(CHECKED_AT_ONCE).collect();
        if batch.is_empty() {
            return None;
        }
        let checked = check_whole(&batch);
        if let Some(found) = batch.iter().zip(checked).find_map(|(c, ok)| ok.then_some(*c)) {
            return Some(found);
        }
    }
}

/// Whether `settings` reproduce the stored advantages of `episodes`, grouped as `grouping` (`None`: no row to
/// compare).
fn reproduces<I: EngineInput + ?Sized>(
    episodes: &I,
    grouping: &AnchorGrouping,
    settings: &AdvantageSettings,
) -> Option<bool> {
    let comparison = compare_stored(episodes, &compute_grouped(episodes, grouping, settings))?;
    (comparison.rows > 0).then_some(comparison.mismatched_rows == 0 && comparison.length_mismatches.is_empty())
}

/// Whether settings reproduce the stored advantages of a run, summed part by part (the run's episode groups,
/// or its iterations under TRL's batch statistics: parts whose advantages do not depend on each other).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reproduction {
    /// Some episode carries stored advantages.
    any: bool,
    rows: usize,
    mismatched_rows: usize,
    length_mismatches: bool,
}

impl Reproduction {
    /// A part's comparison ([`compare_stored`] of its episodes and their table).
    pub fn add(&mut self, comparison: Option<StoredComparison>) {
        let Some(comparison) = comparison else { return };
        self.any = true;
        self.rows += comparison.rows;
        self.mismatched_rows += comparison.mismatched_rows;
        self.length_mismatches |= !comparison.length_mismatches.is_empty();
    }

    /// Whether every stored advantage is reproduced; `None` when no row could be compared.
    pub fn verdict(&self) -> Option<bool> {
        (self.any && self.rows > 0).then_some(self.mismatched_rows == 0 && !self.length_mismatches)
    }
}

/// The candidates in search order: the settings' own scale, aggregation and weights first.
fn candidates(settings: &AdvantageSettings, functions: usize) -> impl Iterator<Item = AdvantageSettings> {
    let own_scale = settings.scale_rewards.unwrap_or(ScaleRewards::Group);
    let scales: Vec<ScaleRewards> = std::iter::once(own_scale)
        .chain([ScaleRewards::Group, ScaleRewards::Batch, ScaleRewards::None].into_iter().filter(|s| *s != own_scale))
        .collect();
    let mut weights: Vec<Option<RewardWeights>> = vec![settings.reward_weights];
    if functions <= MAX_SEARCHED_FUNCTIONS {
        let mut vector = vec![0usize; functions];
        loop {
            let values: Vec<f64> = vector.iter().map(|&i| WEIGHTS[i]).collect();
            if values.iter().any(|&w| w != 0.0) {
                weights.extend(RewardWeights::new(&values).ok().map(Some));
            }
            // The next vector, counting in base WEIGHTS.len().
            let Some(k) = vector.iter().rposition(|&i| i + 1 < WEIGHTS.len()) else { break };
            vector[k] += 1;
            vector[k + 1..].iter_mut().for_each(|i| *i = 0);
        }
    }
    let base = *settings;
    let aggregations = [settings.aggregation, other(settings.aggregation)];
    aggregations.into_iter().flat_map(move |aggregation| {
        // Under normalize_then_sum the scale changes nothing: one candidate per weight vector.
        let scales = if aggregation == Aggregation::NormalizeThenSum { vec![own_scale] } else { scales.clone() };
        let weights = weights.clone();
        scales.into_iter().flat_map(move |scale| {
            weights.clone().into_iter().map(move |reward_weights| AdvantageSettings {
                scale_rewards: Some(scale),
                reward_weights,
                aggregation,
                ..base
            })
        })
    })
}

fn other(aggregation: Aggregation) -> Aggregation {
    match aggregation {
        Aggregation::SumThenNormalize => Aggregation::NormalizeThenSum,
        Aggregation::NormalizeThenSum => Aggregation::SumThenNormalize,
    }
}

/// The command-line flags that select `settings`' TRL options, as `gigscope advantages` and `stats` take them.
pub fn trl_flags(settings: &AdvantageSettings) -> String {
    let mut flags = Vec::new();
    if let Some(scale) = settings.scale_rewards {
        flags.push(format!("--scale-rewards {}", scale.name()));
    }
    if let Some(w) = settings.reward_weights {
        let list: Vec<String> = w.as_slice().iter().map(|x| x.to_string()).collect();
        flags.push(format!("--reward-weights {}", list.join(",")));
    }
    flags.push(format!("--aggregation {}", settings.aggregation.name()));
    flags.join(" ")
}
