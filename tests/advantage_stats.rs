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
