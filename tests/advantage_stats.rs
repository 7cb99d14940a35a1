//! Group statistics: histogram, singleton and zero-variance shares, stored-vs-recomputed comparison.

use gigscope::advantage::{compute, run_stats, AdvantageSettings};
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
    assert!(stats.groups[0].zero_variance && !stats.groups[1].zero_variance);
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
    assert_eq!(stored.rows, table.rows.len() - run[5].steps.len());
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
