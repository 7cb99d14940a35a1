//! Group statistics: histogram, singleton and zero-variance shares, stored-vs-recomputed comparison.

use gigscope::advantage::{compute, run_stats, AdvantageSettings, ZeroVariance};
use gigscope::run::synth::{episodes, SynthSpec};
use gigscope::run::{Episode, Step};

fn episode(id: &str, group: &str, rewards: &[f64], anchors: &[&str]) -> Episode {
    let steps = rewards
        .iter()
        .zip(anchors)
        .map(|(&r, a)| {
            let mut s = Step::new(format!("obs {a}"), "act", r);
            s.anchor = Some((*a).into());
            s
        })
        .collect();
    Episode::new(id, group, steps)
}

/// The zero-variance verdict is taken on the scores the engine pooled, not on the recorded totals: an
/// invalid-action penalty spreads equal totals, and scores that differ by less than the epsilon are named so.
#[test]
fn zero_variance_follows_the_engines_pool_and_says_why() {
    let mut penalised = episode("p", "penalty", &[0.0, 1.0], &["s", "t"]);
    penalised.steps[0].valid = false;
    let run = vec![
        // Equal totals (1 and 1), but one row pays the invalid-action penalty: the pool's scores spread.
        penalised,
        episode("q", "penalty", &[1.0, 0.0], &["s", "t"]),
        // Totals 1 and 1 + 1e-9: not equal, std far below 1e-6.
        episode("r", "tiny", &[1.0], &["s"]),
        episode("s", "tiny", &[1.0 + 1e-9], &["s"]),
        // Totals 0 and -0: equal as the engine compares them.
        episode("t", "signed", &[0.0], &["s"]),
        episode("u", "signed", &[-0.0], &["s"]),
    ];
    let settings = AdvantageSettings::default();
    assert!(settings.invalid_penalty > 0.0);
    let table = compute(&run, &settings);
    let verdicts: Vec<_> = table.episode_groups.iter().map(|g| (&*g.name, g.zero_variance)).collect();
    assert_eq!(
        verdicts,
        [("penalty", None), ("tiny", Some(ZeroVariance::StdBelowEpsilon)), ("signed", Some(ZeroVariance::EqualScores))]
    );
    assert!(table.episode_groups[0].std > 0.0, "the penalty gave the pool a spread");
    let stats = run_stats(&run, &table);
    assert_eq!(stats.zero_variance_groups, 2);
    assert_eq!(
        serde_json::to_value(&stats.groups[1]).unwrap()["zero_variance"],
        "std_below_epsilon",
        "JSON names the reason"
    );
}

#[test]
fn shares_and_histogram() {
    let run = vec![
        // Group "same": both trajectories earn 1 → zero variance; anchors s,s / s,u.
        episode("a", "same", &[0.0, 1.0], &["s", "s"]),
        episode("b", "same", &[1.0, 0.0], &["s", "u"]),
        // Group "diff": totals 1 and 0.
        episode("c", "diff", &[1.0], &["s"]),
        episode("d", "diff", &[0.0], &["t"]),
    ];
    let table = compute(&run, &AdvantageSettings::default());
    let stats = run_stats(&run, &table);
    assert_eq!((stats.episodes, stats.steps, stats.episode_groups), (4, 6, 2));
    // Step groups: same/s ×3, same/u, diff/s, diff/t.
    assert_eq!(stats.step_groups, 4);
    let hist: Vec<(usize, usize)> = stats.step_group_sizes.iter().map(|c| (c.size, c.count)).collect();
    assert_eq!(hist, [(1, 3), (3, 1)]);
    assert_eq!(stats.singleton_share, 0.75);
    assert_eq!(stats.mean_step_group_size, 1.5);
    assert_eq!((stats.zero_variance_groups, stats.zero_variance_share), (1, 0.5));
    assert!(stats.groups[0].zero_variance.is_some() && stats.groups[1].zero_variance.is_none());
    assert_eq!(stats.groups[0].singleton_step_groups, 1);
    assert_eq!(stats.groups[1].step_groups, 2);
    assert_eq!(stats.stored, None, "no episode carries trainer advantages");
}

#[test]
fn stored_advantages_are_compared_where_lengths_agree() {
    let mut run: Vec<Episode> = episodes(&SynthSpec::reference_batch()).take(8).collect();
    let table = compute(&run, &AdvantageSettings::default());
    for (e, episode) in run.iter_mut().enumerate() {
        episode.advantages = Some(table.episode_rows(e).iter().map(|r| r.advantage).collect());
    }
    if let Some(a) = run[3].advantages.as_mut() {
        a[0] += 0.25;
    }
    if let Some(a) = run[5].advantages.as_mut() {
        a.push(1.0);
    }
    let stats = run_stats(&run, &table);
    let stored = stats.stored.expect("comparison present");
    assert_eq!(stored.length_mismatches, [run[5].id.clone()]);
    assert_eq!(stored.rows, table.row_count() - run[5].steps.len());
    let largest = stored.largest.expect("rows compared");
    assert_eq!((largest.episode_id.as_str(), largest.at.episode, largest.at.step), (run[3].id.as_str(), 3, 0));
    assert!((largest.abs_diff - 0.25).abs() < 1e-12);
}

/// Per-slice statistics (the overview's iterations): each episode counts under its own key, each group with
/// its anchor groups under its first episode's key.
#[test]
fn statistics_by_iteration() {
    use gigscope::advantage::stats::stats_by;
    let mut run = vec![
        episode("a", "same", &[0.0, 1.0], &["s", "s"]),
        episode("b", "same", &[1.0, 0.0], &["s", "u"]),
        episode("c", "diff", &[1.0], &["s"]),
        episode("d", "diff", &[0.0], &["t"]),
        // A late member of "diff" recorded under iteration 1: it counts there, its group under iteration 0.
        episode("e", "diff", &[2.0, 0.0, 0.0], &["s", "v", "w"]),
    ];
    run[4].iteration = 1;
    for (e, tokens) in [(0, Some(4)), (1, None)] {
        run[0].steps[e].tokens = tokens;
    }
    let table = compute(&run, &AdvantageSettings::default());
    let slices = stats_by(&run, &table, |e| run[e].iteration);
    assert_eq!(slices.iter().map(|(k, _)| *k).collect::<Vec<_>>(), [0, 1]);
    let (zero, one) = (&slices[0].1, &slices[1].1);
    assert_eq!((zero.episodes, zero.groups.clone()), (4, vec![0, 1]));
    assert_eq!((zero.success_rate, zero.mean_return, zero.mean_len), (0.0, 0.75, 1.5));
    assert_eq!(zero.tokens_per_step, Some(4.0), "one step of iteration 0 records 4 tokens");
    assert_eq!(zero.zero_variance_share, 0.5);
    // Anchor groups: same/s ×3, same/u, diff/s ×2 (c, e), diff/t, diff/v, diff/w: 9 members in 6 groups.
    assert_eq!(zero.mean_step_group_size, 1.5);
    assert_eq!((one.episodes, one.groups.len(), one.mean_return, one.mean_len), (1, 0, 2.0, 3.0));
    assert_eq!((one.tokens_per_step, one.zero_variance_share, one.mean_step_group_size), (None, 0.0, 0.0));
}

mod appended_parts {
    use super::episode;
    use gigscope::advantage::stats::{compare_stored, compare_stored_over, count_step_group_sizes, stats_by, StatsBy};
    use gigscope::advantage::{compute, run_stats, AdvantageSettings, AdvantageTable};
    use gigscope::run::Episode;
    use proptest::prelude::*;

    /// A run written group by group (each group's episodes together, as trainers append them), with
    /// iterations, outcomes, tokens and some trainer-recorded advantages.
    fn arb_run() -> impl Strategy<Value = Vec<Episode>> {
        let arb_episode = (
            prop::collection::vec((0..4usize, prop::sample::select(vec![0.0, 1.0, 10.0])), 1..5),
            prop::bool::ANY,
            prop::option::of(0.0..2.0f64),
            0..3i64,
        );
        prop::collection::vec(prop::collection::vec(arb_episode, 1..5), 1..9).prop_map(|groups| {
            let mut run = Vec::new();
            for (g, members) in groups.into_iter().enumerate() {
                for (steps, success, stored, iteration) in members {
                    let rewards: Vec<f64> = steps.iter().map(|&(_, r)| r).collect();
                    let anchors: Vec<String> = steps.iter().map(|&(a, _)| format!("s{a}")).collect();
                    let anchors: Vec<&str> = anchors.iter().map(String::as_str).collect();
                    let mut e = episode(&format!("e{}", run.len()), &format!("g{g}"), &rewards, &anchors);
                    e.iteration = iteration;
                    e.outcome = Some(gigscope::run::Outcome { success, ..Default::default() });
                    e.steps[0].tokens = Some(rewards.len() as u64);
                    e.advantages = stored.map(|a| vec![a; rewards.len()]);
                    run.push(e);
                }
            }
            run
        })
    }

    proptest! {
        /// The statistics a viewer keeps up to date part by part (each part whole groups, its table appended)
        /// equal those computed at once over the whole run.
        #[test]
        fn statistics_taken_in_part_by_part_equal_those_of_the_whole(run in arb_run(), cuts in prop::collection::vec(0..40usize, 0..4)) {
            let settings = AdvantageSettings::default();
            let whole = compute(&run, &settings);
            // Cut only between groups.
            let mut ends: Vec<usize> = cuts.into_iter()
                .map(|c| c % (run.len() + 1))
                .filter(|&c| c == 0 || c == run.len() || run[c - 1].group != run[c].group)
                .collect();
            ends.push(run.len());
            ends.sort_unstable();
            ends.dedup();
            let (mut table, mut by, mut sizes, mut largest) = (AdvantageTable::default(), StatsBy::default(), Default::default(), None::<f64>);
            let mut start = 0;
            for end in ends {
                let anchors_before = table.anchor_groups.len();
                table.append(compute(&run[start..end], &settings));
                count_step_group_sizes(&mut sizes, &table.anchor_groups, anchors_before);
                by.extend(&run[..end], &table, |e| run[e].iteration);
                let part = compare_stored_over(&run[..end], &table, start..end).and_then(|c| c.largest).map(|l| l.abs_diff);
                largest = match (largest, part) {
                    (Some(before), Some(now)) if now > before => Some(now),
                    (None, now) => now,
                    (before, _) => before,
                };
                start = end;
            }
            prop_assert_eq!(&table, &whole);
            prop_assert_eq!(by.stats(), stats_by(&run, &whole, |e| run[e].iteration));
            let at_once = run_stats(&run, &whole);
            let histogram: Vec<(usize, usize)> = at_once.step_group_sizes.iter().map(|s| (s.size, s.count)).collect();
            prop_assert_eq!(sizes.into_iter().collect::<Vec<_>>(), histogram);
            prop_assert_eq!(largest, compare_stored(&run, &whole).and_then(|c| c.largest).map(|l| l.abs_diff));
        }
    }
}
