//! TRL GRPOTrainer's advantage (`GRPOTrainer._generate_and_score_completions`, TRL 1.16), selected by the
//! setting `scale_rewards`. It replaces GiGPO's episode component A_E; the step component A_S and the
//! estimators are left as they are (a TRL log is read with estimator `grpo`, so A = A_E).
//!
//! Each episode is one sample with one reward per reward function, r_k: the numbers of
//! `outcome.extra["rewards"]` ([`REWARDS_KEY`], an object `{name: number or null}` in reward-function order, as
//! the TRL reader writes it; null is a function that returned None, TRL's NaN), else a single reward, the
//! episode's total (shaped) reward. Groups are the episode groups; the batch is every episode of the same
//! `iteration` (a TRL log's step file). With weights w_k (`reward_weights`, 1.0 each by default) and ε = 1e-4:
//!
//! - `sum_then_normalize` (TRL's default): R = Σ_k w_k·r_k over the non-null rewards (NaN when every reward is
//!   null: the row is unscorable); A = (R − mean_g R) / F with F = std_g R + ε (`scale_rewards = group`),
//!   std_batch R + ε (`batch`; the mean is still the group's) or 1 (`none`);
//! - `normalize_then_sum`: z_k = (r_k − mean_g r_k) / (std_g r_k + ε) per function, R = Σ_k w_k·z_k over the
//!   non-NaN z (NaN when every r_k is null), A = (R − mean_batch R) / (std_batch R + ε); `scale_rewards` does not
//!   matter;
//!
//! where means and standard deviations skip NaN (`torch.nanmean`, TRL's `nanstd`: the sample standard deviation,
//! N−1, NaN for fewer than two values). A NaN advantage (an unscorable row, a group with fewer than two scorable
//! rows under `group`) becomes 0, as TRL's `nan_to_num` makes it.
//!
//! TRL computes in float32; this is float64, so the recomputed advantages equal the logged ones to float32
//! rounding (about 1e-7 relative).
//!
//! Rows: an episode of one step that carries per-function rewards gets R (0 when unscorable) as its reward,
//! score and return, so the weights show in every view. Every row of an episode gets its episode's A as A_E.
//! Episode groups get TRL's statistics: `mean`/`std`/`pool_size` of the group's scorable R, `baseline` the
//! mean subtracted, `factor` the divisor (1 where the standard deviation is undefined; those advantages are 0).

use std::collections::BTreeMap;

use super::input::EngineInput;
use super::settings::{AdvantageSettings, Aggregation, ScaleRewards};
use super::table::{rloo_scale, AdvantageTable, EpisodeTerms, ZeroVariance};
use crate::run::Episode;

/// Added to the standard deviation by TRL's GRPO normalisation.
pub const TRL_STD_EPSILON: f64 = 1e-4;

/// The names of the per-function rewards recorded on `episode`, in order.
pub fn reward_names(episode: &Episode) -> Option<Vec<String>> {
    episode.reward_functions().map(|(names, _)| names)
}

/// Whether per-function rewards `rewards` leave their completion unscored: every reward function returned None
/// (TRL's NaN). TRL (and so the engine) leaves such a row out of its group's mean and standard deviation and
/// gives it advantage 0; its reward and return are no number, and the views say "unscored" instead of 0.
pub fn is_unscored(rewards: &[f64]) -> bool {
    !rewards.is_empty() && rewards.iter().all(|r| r.is_nan())
}

/// Whether episode `e` of `input` is an unscored completion ([`is_unscored`]).
pub fn unscored<I: EngineInput + ?Sized>(input: &I, e: usize) -> bool {
    input.recorded_rewards(e).is_some_and(|r| is_unscored(&r))
}

/// Weight of reward function `k`: the given one, else 1.0 (also past the end of a list that is too short;
/// the CLI refuses a list whose length differs from the number of reward functions).
fn weight(settings: &AdvantageSettings, k: usize) -> f64 {
    settings.reward_weights.and_then(|w| w.as_slice().get(k).copied()).unwrap_or(1.0)
}

/// Σ w_k·r_k over the non-NaN terms (torch's `nansum`: 0 when there is none); NaN when every r_k is NaN
/// (TRL's unscorable row).
pub fn weighted_nansum(rewards: &[f64], weights: impl Fn(usize) -> f64) -> f64 {
    if is_unscored(rewards) || rewards.is_empty() {
        return f64::NAN;
    }
    rewards.iter().enumerate().map(|(k, &r)| r * weights(k)).filter(|x| !x.is_nan()).sum()
}

/// The reward of a single-step episode with per-function rewards under `settings`' weights (0 when unscorable),
/// for its row's reward, score and return; `None` for other episodes.
pub(super) fn row_reward<I: EngineInput + ?Sized>(input: &I, e: usize, settings: &AdvantageSettings) -> Option<f64> {
    if input.step_count(e) != 1 {
        return None;
    }
    let rewards = input.recorded_rewards(e)?;
    let r = weighted_nansum(&rewards, |k| weight(settings, k));
    Some(if r.is_nan() { 0.0 } else { r })
}

/// NaN-skipping mean (`torch.nanmean`: NaN when every value is NaN) and sample standard deviation (TRL's
/// `nanstd`: NaN for fewer than two values), and the number of values used.
pub fn nan_mean_std(values: impl Iterator<Item = f64> + Clone) -> (f64, f64, usize) {
    let (n, sum) = values.clone().filter(|v| !v.is_nan()).fold((0usize, 0.0), |(n, s), v| (n + 1, s + v));
    if n == 0 {
        return (f64::NAN, f64::NAN, 0);
    }
    let mean = sum / n as f64;
    if n == 1 {
        return (mean, f64::NAN, 1);
    }
    let ss: f64 = values.filter(|v| !v.is_nan()).map(|v| (v - mean) * (v - mean)).sum();
    (mean, (ss / (n - 1) as f64).sqrt(), n)
}

/// TRL's advantage of every episode of `episodes` grouped as in `table`, written into the table as A_E (and
/// the final advantage, by estimator), with TRL's group statistics.
pub(super) fn apply<I: EngineInput + ?Sized>(table: &mut AdvantageTable, input: &I, settings: &AdvantageSettings) {
    let Some(scale) = settings.scale_rewards else { return };
    let n = input.episode_count();
    // Per-function rewards of each episode; a single reward (its total) where none are recorded.
    let rewards: Vec<Vec<f64>> = (0..n)
        .map(|e| match input.recorded_rewards(e) {
            Some(r) => r.into_owned(),
            None => vec![table.episode_rows(e).iter().map(|r| r.reward).sum()],
        })
        .collect();
    let mut batches: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for e in 0..n {
        batches.entry(input.iteration(e)).or_default().push(e);
    }
    let groups: Vec<Vec<usize>> =
        (0..table.episode_groups.len()).map(|g| table.group_episodes(g).iter().map(|e| e as usize).collect()).collect();

    // R per episode, and for each group the baseline subtracted and the divisor.
    let mut reward = vec![f64::NAN; n];
    let mut baseline_of = vec![f64::NAN; groups.len()];
    let mut factor_of = vec![1.0; groups.len()];
    match settings.aggregation {
        Aggregation::SumThenNormalize => {
            for (e, r) in rewards.iter().enumerate() {
                reward[e] = weighted_nansum(r, |k| weight(settings, k));
            }
            let batch_std: BTreeMap<i64, f64> =
                batches.iter().map(|(&it, members)| (it, nan_mean_std(members.iter().map(|&e| reward[e])).1)).collect();
            for (g, members) in groups.iter().enumerate() {
                let (mean, std, _) = nan_mean_std(members.iter().map(|&e| reward[e]));
                baseline_of[g] = mean;
                factor_of[g] = match scale {
                    ScaleRewards::Group => std + TRL_STD_EPSILON,
                    ScaleRewards::Batch => {
                        let it = members.first().map(|&e| input.iteration(e));
                        it.and_then(|it| batch_std.get(&it)).copied().unwrap_or(f64::NAN) + TRL_STD_EPSILON
                    }
                    ScaleRewards::None => 1.0,
                };
            }
        }
        Aggregation::NormalizeThenSum => {
            let width = rewards.iter().map(Vec::len).max().unwrap_or(0);
            let at = |e: usize, k: usize| rewards[e].get(k).copied().unwrap_or(f64::NAN);
            for members in &groups {
                let stats: Vec<(f64, f64)> = (0..width)
                    .map(|k| {
                        let (mean, std, _) = nan_mean_std(members.iter().map(|&e| at(e, k)));
                        (mean, std)
                    })
                    .collect();
                for &e in members {
                    let unscorable = rewards[e].iter().all(|r| r.is_nan());
                    reward[e] = if unscorable {
                        f64::NAN
                    } else {
                        stats
                            .iter()
                            .enumerate()
                            .map(|(k, (mean, std))| (at(e, k) - mean) / (std + TRL_STD_EPSILON) * weight(settings, k))
                            .filter(|x| !x.is_nan())
                            .sum()
                    };
                }
            }
            let batch_stats: BTreeMap<i64, (f64, f64)> = batches
                .iter()
                .map(|(&it, members)| {
                    let (mean, std, _) = nan_mean_std(members.iter().map(|&e| reward[e]));
                    (it, (mean, std))
                })
                .collect();
            for (g, members) in groups.iter().enumerate() {
                let it = members.first().map(|&e| input.iteration(e));
                let (mean, std) = it.and_then(|it| batch_stats.get(&it)).copied().unwrap_or((f64::NAN, f64::NAN));
                baseline_of[g] = mean;
                factor_of[g] = std + TRL_STD_EPSILON;
            }
        }
    }

    let mut terms = vec![EpisodeTerms { episode_advantage: 0.0, rloo: 0.0 }; n];
    for (g, members) in groups.iter().enumerate() {
        let (mean, std, n) = nan_mean_std(members.iter().map(|&e| reward[e]));
        let (baseline, factor) = (baseline_of[g], factor_of[g]);
        let rloo_scale = rloo_scale(n);
        for &e in members {
            let a = (reward[e] - baseline) / factor;
            let a = if a.is_nan() { 0.0 } else { a };
            let rloo = rloo_scale * (reward[e] - mean);
            let rloo = if rloo.is_nan() { 0.0 } else { rloo };
            terms[e] = EpisodeTerms { episode_advantage: a, rloo };
        }
        let group = &mut table.episode_groups[g];
        let scorable: Vec<f64> = members.iter().map(|&e| reward[e]).filter(|r| !r.is_nan()).collect();
        group.mean = if mean.is_nan() { 0.0 } else { mean };
        group.std = if std.is_nan() { 0.0 } else { std };
        group.pool_size = n;
        group.baseline = if baseline.is_nan() { 0.0 } else { baseline };
        group.factor = if factor.is_nan() { 1.0 } else { factor };
        group.zero_variance = ZeroVariance::of(scorable.iter().copied(), group.std, TRL_STD_EPSILON);
    }
    table.set_episode_terms(terms);
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::advantage::{compute, RewardWeights};
    use crate::run::{Outcome, Step, REWARDS_KEY};

    /// A TRL sample: one step, per-function rewards (`None`: the function returned None).
    fn sample(id: &str, group: &str, iteration: i64, rewards: &[Option<f64>]) -> Episode {
        let names = ["a", "b", "c"];
        let map: serde_json::Map<String, Value> =
            rewards.iter().zip(names).map(|(r, n)| (n.to_string(), json!(r))).collect();
        let mut outcome = Outcome::default();
        outcome.extra.insert(REWARDS_KEY.into(), Value::Object(map));
        let mut episode = Episode::new(id, group, vec![Step::new("prompt", "completion", 0.0)]);
        episode.iteration = iteration;
        episode.outcome = Some(outcome);
        episode
    }

    fn trl(scale: ScaleRewards) -> AdvantageSettings {
        AdvantageSettings {
            estimator: crate::run::settings::Estimator::Grpo,
            scale_rewards: Some(scale),
            ..AdvantageSettings::default()
        }
    }

    fn advantages(episodes: &[Episode], settings: &AdvantageSettings) -> Vec<f64> {
        compute(episodes, settings).rows().map(|r| r.advantage).collect()
    }

    fn close(got: &[f64], want: &[f64]) {
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{got:?} vs {want:?}");
        }
    }

    /// Two groups of one step: rewards [0, 2] and [5, 5].
    fn two_groups() -> Vec<Episode> {
        vec![
            sample("1", "g1", 1, &[Some(0.0)]),
            sample("2", "g1", 1, &[Some(2.0)]),
            sample("3", "g2", 1, &[Some(5.0)]),
            sample("4", "g2", 1, &[Some(5.0)]),
        ]
    }

    #[test]
    fn scale_group_divides_by_the_group_std_plus_1e_4() {
        let a = 1.0 / (2f64.sqrt() + 1e-4);
        close(&advantages(&two_groups(), &trl(ScaleRewards::Group)), &[-a, a, 0.0, 0.0]);
        let table = compute(&two_groups(), &trl(ScaleRewards::Group));
        let g = &table.episode_groups[0];
        assert_eq!((g.mean, g.pool_size, g.baseline, g.zero_variance), (1.0, 2, 1.0, None));
        assert!((g.std - 2f64.sqrt()).abs() < 1e-12 && (g.factor - 2f64.sqrt() - 1e-4).abs() < 1e-12);
        assert_eq!(table.episode_groups[1].zero_variance, Some(ZeroVariance::EqualScores));
    }

    #[test]
    fn scale_batch_keeps_the_group_mean_and_divides_by_the_iteration_std() {
        // Batch [0, 2, 5, 5]: mean 3, squares 9 + 1 + 4 + 4 = 18, sample variance 6.
        let f = 6f64.sqrt() + 1e-4;
        close(&advantages(&two_groups(), &trl(ScaleRewards::Batch)), &[-1.0 / f, 1.0 / f, 0.0, 0.0]);
        // Another iteration is another batch.
        let mut episodes = two_groups();
        episodes.extend([sample("5", "g3", 2, &[Some(1.0)]), sample("6", "g3", 2, &[Some(3.0)])]);
        let got = advantages(&episodes, &trl(ScaleRewards::Batch));
        let f2 = 2f64.sqrt() + 1e-4;
        close(&got[4..], &[-1.0 / f2, 1.0 / f2]);
    }

    #[test]
    fn scale_none_only_subtracts_the_group_mean() {
        close(&advantages(&two_groups(), &trl(ScaleRewards::None)), &[-1.0, 1.0, 0.0, 0.0]);
    }

    #[test]
    fn nan_rewards_are_skipped_and_unscorable_rows_get_zero() {
        let episodes = vec![
            sample("1", "g", 1, &[None, None]),
            sample("2", "g", 1, &[Some(1.0), None]),
            sample("3", "g", 1, &[Some(3.0), Some(1.0)]),
            sample("4", "g", 1, &[None, Some(2.0)]),
        ];
        // R = [NaN, 1, 4, 2]: mean 7/3, squares 16/9 + 25/9 + 1/9 = 42/9, sample variance 7/3.
        let (mean, f) = (7.0 / 3.0, (7.0f64 / 3.0).sqrt() + 1e-4);
        let want = [0.0, (1.0 - mean) / f, (4.0 - mean) / f, (2.0 - mean) / f];
        close(&advantages(&episodes, &trl(ScaleRewards::Group)), &want);
        // The rows show TRL's reward: the nansum, 0 when unscorable.
        let rewards: Vec<f64> = compute(&episodes, &trl(ScaleRewards::Group)).rows().map(|r| r.reward).collect();
        assert_eq!(rewards, [0.0, 1.0, 4.0, 2.0]);
        // Weights: R = [NaN, 2, 6.5, 1]; mean 19/6.
        let weighted = AdvantageSettings {
            reward_weights: Some(RewardWeights::new(&[2.0, 0.5]).unwrap()),
            ..trl(ScaleRewards::None)
        };
        let m = 19.0 / 6.0;
        close(&advantages(&episodes, &weighted), &[0.0, 2.0 - m, 6.5 - m, 1.0 - m]);
        let rewards: Vec<f64> = compute(&episodes, &weighted).rows().map(|r| r.reward).collect();
        assert_eq!(rewards, [0.0, 2.0, 6.5, 1.0]);
    }

    #[test]
    fn fewer_than_two_scorable_rows_give_zero_under_group_scaling() {
        let episodes =
            vec![sample("1", "g", 1, &[Some(3.0)]), sample("2", "g", 1, &[None]), sample("3", "h", 1, &[Some(1.0)])];
        close(&advantages(&episodes, &trl(ScaleRewards::Group)), &[0.0, 0.0, 0.0]);
    }

    #[test]
    fn normalize_then_sum_normalises_each_reward_in_its_group_then_over_the_batch() {
        let episodes = vec![
            sample("1", "g", 1, &[Some(1.0), Some(0.0)]),
            sample("2", "g", 1, &[Some(2.0), None]),
            sample("3", "g", 1, &[Some(3.0), Some(4.0)]),
        ];
        // a: mean 2, std 1; b: [0, 4], mean 2, std 2√2. Row 2's b is NaN and left out of its sum.
        let x = 1.0 / (1.0 + 1e-4) + 2.0 / (2.0 * 2f64.sqrt() + 1e-4);
        // R' = [−x, 0, x]: batch mean 0, sample std x.
        let want = [-x / (x + 1e-4), 0.0, x / (x + 1e-4)];
        let settings = AdvantageSettings { aggregation: Aggregation::NormalizeThenSum, ..trl(ScaleRewards::Group) };
        close(&advantages(&episodes, &settings), &want);
        // scale_rewards does not matter there.
        let batch = AdvantageSettings { scale_rewards: Some(ScaleRewards::None), ..settings };
        close(&advantages(&episodes, &batch), &want);
    }

    #[test]
    fn episodes_without_per_function_rewards_use_their_total_reward() {
        let mut episodes = Vec::new();
        for (id, rewards) in [("1", [0.0, 1.0]), ("2", [1.0, 2.0])] {
            let steps = rewards.iter().map(|&r| Step::new("o", "a", r)).collect();
            episodes.push(Episode::new(id, "g", steps));
        }
        // Totals 1 and 3: ∓1 / (√2 + 1e-4) on every row.
        let a = 1.0 / (2f64.sqrt() + 1e-4);
        close(&advantages(&episodes, &trl(ScaleRewards::Group)), &[-a, -a, a, a]);
    }

    #[test]
    fn nan_helpers_follow_torch() {
        assert!(weighted_nansum(&[f64::NAN, f64::NAN], |_| 1.0).is_nan());
        assert_eq!(weighted_nansum(&[f64::NAN, 2.0], |k| [5.0, 3.0][k]), 6.0);
        assert_eq!(weighted_nansum(&[1.0, 2.0], |_| 0.0), 0.0);
        let (mean, std, n) = nan_mean_std([1.0, f64::NAN].into_iter());
        assert_eq!((mean, n), (1.0, 1));
        assert!(std.is_nan());
        assert!(nan_mean_std([f64::NAN].into_iter()).0.is_nan());
    }
}
