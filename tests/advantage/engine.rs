//! The advantage engine against the worked example, hand-computed cases and properties.

use gigscope::advantage::{compute, AdvantageSettings, AdvantageTable, AnchorMode, Estimator, Norm, Pooling, RowRef};
use gigscope::run::{Episode, Outcome, Step};
use gigscope::text::difflib::ratio;
use proptest::prelude::*;

fn step(anchor: &str, reward: f64) -> Step {
    let mut s = Step::new(format!("observation of {anchor}"), "click[x]", reward);
    s.anchor = Some(anchor.into());
    s
}

fn episode(id: &str, group: &str, steps: Vec<Step>) -> Episode {
    Episode::new(id, group, steps)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

/// The golden example: mean_norm, γ = 0.95, pooling steps.
fn worked_example() -> Vec<Episode> {
    vec![
        episode("t1", "g", vec![step("Search", 0.0), step("results a", 0.0), step("item a", 10.0)]),
        episode("t2", "g", vec![step("Search", 0.0), step("results b", 0.0)]),
    ]
}

#[test]
fn golden_worked_example() {
    let table = compute(&worked_example(), &AdvantageSettings::default());
    let t1 = table.episode_rows(0);
    let t2 = table.episode_rows(1);
    assert_eq!(t1.iter().map(|r| r.score).collect::<Vec<_>>(), [10.0, 10.0, 10.0]);
    assert_eq!(t2.iter().map(|r| r.score).collect::<Vec<_>>(), [0.0, 0.0]);
    assert_eq!(table.episode_groups[0].mean, 6.0);
    assert!(t1.iter().all(|r| r.episode_advantage == 4.0));
    assert!(t2.iter().all(|r| r.episode_advantage == -6.0));
    for (row, want) in t1.iter().zip([9.025, 9.5, 10.0]) {
        assert!(close(row.ret, want), "{} vs {want}", row.ret);
    }
    assert_eq!(t2.iter().map(|r| r.ret).collect::<Vec<_>>(), [0.0, 0.0]);
    assert!(close(t1[0].step_advantage, 4.5125));
    assert!(close(t2[0].step_advantage, -4.5125));
    assert_eq!(t1[0].step_group, t2[0].step_group);
    assert_eq!(table.anchor_group_of(RowRef { episode: 0, step: 0 }).members.len(), 2);
    for row in [t1[1], t1[2], t2[1]] {
        assert_eq!(row.step_advantage, 0.0);
    }
    assert!(close(t1[0].advantage, 4.0 + 4.5125));
    assert!(close(t2[0].advantage, -6.0 - 4.5125));
    assert_eq!(t1[2].advantage, 4.0);
    assert_eq!(table.anchor_groups.len(), 4);
}

#[test]
fn pooling_trajectories_uses_first_rows_for_the_baseline_only() {
    let mut episodes = worked_example();
    episodes[1].steps[1].valid = false;
    let settings = AdvantageSettings { pooling: Pooling::Trajectories, ..AdvantageSettings::default() };
    let table = compute(&episodes, &settings);
    // Pool = first rows' scores {10, 0}: mean 5.
    assert_eq!(table.episode_groups[0].pool_size, 2);
    assert_eq!(table.episode_groups[0].mean, 5.0);
    assert!(table.episode_rows(0).iter().all(|r| r.episode_advantage == 5.0));
    // The invalid row keeps its own (penalised) score: −0.1 − 5.
    assert_eq!(table.episode_rows(1)[0].episode_advantage, -5.0);
    assert!(close(table.episode_rows(1)[1].episode_advantage, -5.1));
    assert!(close(table.episode_rows(1)[1].ret, -0.1));
}

#[test]
fn mean_std_norm_and_single_sample_groups() {
    let settings = AdvantageSettings { norm: Norm::MeanStdNorm, ..AdvantageSettings::default() };
    let table = compute(&worked_example(), &settings);
    // Pool {10,10,10,0,0}: sample std = sqrt(120/4).
    let std = 30f64.sqrt();
    assert!(close(table.episode_groups[0].std, std));
    assert!(close(table.episode_rows(0)[0].episode_advantage, 4.0 / (std + 1e-6)));
    // Step group {9.025, 0}: std = 9.025/√2.
    let s = 9.025 / 2f64.sqrt();
    assert!(close(table.episode_rows(1)[0].step_advantage, -4.5125 / (s + 1e-6)));

    // A group with a single sample: mean 0 and F 1, the advantage is the raw score.
    let lone = vec![episode("solo", "h", vec![step("a", 3.0)])];
    let table = compute(&lone, &settings);
    assert_eq!(table.row_at(0).episode_advantage, 3.0);
    assert_eq!(table.row_at(0).step_advantage, 0.0);
    let rloo = compute(&lone, &AdvantageSettings { estimator: Estimator::Rloo, ..settings });
    assert_eq!(rloo.row_at(0).advantage, 0.0);
}

#[test]
fn a_step_the_trainer_counted_twice_counts_twice_in_every_pool() {
    // verl-agent pads its batch with copies of rows (`adjust_batch`); the exporter records `copies`. Scores and
    // returns [1, 0, 0] (b's step twice): mean 1/3, sample std √(1/3) over N = 3.
    let mut copied = step("o", 0.0);
    copied.extra.insert("copies".into(), 2.into());
    let episodes = vec![episode("a", "g", vec![step("o", 1.0)]), episode("b", "g", vec![copied])];
    assert_eq!(episodes[1].steps[0].copies(), 2);
    let t = compute(&episodes, &AdvantageSettings::default());
    let (a, b) = (t.episode_rows(0)[0], t.episode_rows(1)[0]);
    assert!(close(a.episode_advantage, 2.0 / 3.0) && close(b.episode_advantage, -1.0 / 3.0), "{a:?} {b:?}");
    assert!(close(a.step_advantage, 2.0 / 3.0) && close(b.step_advantage, -1.0 / 3.0), "{a:?} {b:?}");
    assert_eq!(t.episode_groups[0].pool_size, 3);
    let std = compute(&episodes, &AdvantageSettings { norm: Norm::MeanStdNorm, ..AdvantageSettings::default() });
    assert!(close(std.episode_groups[0].std, (1.0f64 / 3.0).sqrt()));
    let rloo = compute(&episodes, &AdvantageSettings { estimator: Estimator::Rloo, ..AdvantageSettings::default() });
    assert!(close(rloo.episode_rows(0)[0].advantage, 1.5 * (1.0 - 1.0 / 3.0)), "RLOO's n counts the copy too");
    // Without the record every row counts once, as before.
    let once = compute(
        &[episode("a", "g", vec![step("o", 1.0)]), episode("b", "g", vec![step("o", 0.0)])],
        &AdvantageSettings::default(),
    );
    assert_eq!(once.episode_rows(0)[0].episode_advantage, 0.5);
}

#[test]
fn rloo_and_component_estimators() {
    let episodes = worked_example();
    let base = AdvantageSettings::default();
    let rloo = compute(&episodes, &AdvantageSettings { estimator: Estimator::Rloo, ..base });
    // n = 5 rows, mean 6: 5/4·(10 − 6) = 5 and 5/4·(0 − 6) = −7.5.
    assert_eq!(rloo.episode_rows(0)[0].advantage, 5.0);
    assert_eq!(rloo.episode_rows(1)[1].advantage, -7.5);
    let step = compute(&episodes, &AdvantageSettings { estimator: Estimator::Step, ..base });
    assert!(step.rows().all(|r| r.advantage == r.step_advantage));
    let grpo = compute(&episodes, &AdvantageSettings { estimator: Estimator::Grpo, ..base });
    assert!(grpo.rows().all(|r| r.advantage == r.episode_advantage));
    // The components are GiGPO's whatever the estimator.
    assert_eq!(rloo.episode_rows(0)[0].episode_advantage, 4.0);
}

#[test]
fn reward_shaping() {
    let mut episodes = worked_example();
    episodes[0].outcome = Some(Outcome { success: true, score: 1.0, ..Outcome::default() });
    for (t, s) in episodes[0].steps.iter_mut().enumerate() {
        s.tokens = Some(10 * (t as u64 + 1)); // mean 20 tokens per step
    }
    episodes[1].steps[1].reward = 0.5; // dropped by the binary success reward
    let settings = AdvantageSettings {
        success_reward: true,
        efficiency_alpha1: 4.0,
        efficiency_alpha2: 3.0,
        ..AdvantageSettings::default()
    };
    let table = compute(&episodes, &settings);
    let rewards: Vec<f64> = table.rows().map(|r| r.reward).collect();
    // 10 + 4/20 + 3/3 on the last step of the successful episode, 0 everywhere else.
    assert_eq!(rewards, [0.0, 0.0, 11.2, 0.0, 0.0]);
    let unshaped = compute(&episodes, &AdvantageSettings::default());
    assert_eq!(unshaped.episode_rows(1)[1].reward, 0.5);
}

#[test]
fn page_mode_groups_by_page_field_filled_from_the_environment() {
    let mut a = Step::new("WebShop [SEP] Instruction: [SEP] i need shoes [SEP] Search", "search[shoes]", 0.0);
    let mut b = Step::new("anything", "search[boots]", 0.0);
    b.page = Some("search".to_string());
    a.anchor = Some("distinct anchor".into());
    let c = Step::new(
        "Instruction: [SEP] i need shoes [SEP] Back to Search [SEP] Page 1 (Total results: 50) [SEP] Next >",
        "click[b01]",
        1.0,
    );
    let mut episodes = vec![episode("1", "g", vec![a, c]), episode("2", "g", vec![b])];
    let page = AdvantageSettings { anchor: AnchorMode::Page, ..AdvantageSettings::default() };
    // The engine reads pages only as recorded: the two steps without one share a group.
    let unfilled = compute(&episodes, &page);
    assert_eq!(unfilled.anchor_groups.len(), 2);
    assert_eq!(unfilled.episode_rows(0)[0].step_group, unfilled.episode_rows(0)[1].step_group);
    // WebShop's page anchors of their observations, filled in: search and results.
    let webshop = gigscope::env::PageAnchor::new("webshop", gigscope::webshop::page::page_anchor);
    gigscope::env::fill_page_anchors(&mut episodes, Some(webshop));
    assert_eq!(episodes[1].steps[0].page.as_deref(), Some("search"), "a recorded page is kept");
    let table = compute(&episodes, &page);
    assert_eq!(table.anchor_groups.len(), 2);
    assert_eq!(table.episode_rows(0)[0].step_group, table.episode_rows(1)[0].step_group);
    assert_ne!(table.episode_rows(0)[0].step_group, table.episode_rows(0)[1].step_group);
}

// ---------------------------------------------------------------------------------------------------------
// Properties

const ANCHORS: &[&str] = &[
    "Search",
    "Page 1 (Total results: 50) [SEP] B01 red shoes [SEP] B02 blue shoes",
    "Page 1 (Total results: 50) [SEP] B01 red shoes [SEP] B02 navy shoes",
    "Page 2 (Total results: 50) [SEP] B03 red boots [SEP] B04 blue boots",
    "red shoes [SEP] size [SEP] small [SEP] large [SEP] Buy Now",
    "red shoes [SEP] size [SEP] small [SEP] medium [SEP] Buy Now",
    "",
];

fn arb_step() -> impl Strategy<Value = Step> {
    (0..ANCHORS.len(), prop::sample::select(vec![0.0, 0.5, 1.0, 10.0, -1.0]), prop::bool::weighted(0.85)).prop_map(
        |(a, reward, valid)| {
            let mut s = step(ANCHORS[a], reward);
            s.valid = valid;
            s
        },
    )
}

fn arb_episodes() -> impl Strategy<Value = Vec<Episode>> {
    prop::collection::vec((0..4usize, prop::collection::vec(arb_step(), 1..7)), 1..14).prop_map(|eps| {
        eps.into_iter()
            .enumerate()
            .map(|(i, (g, steps))| episode(&format!("e{i}"), &format!("group{g}"), steps))
            .collect()
    })
}

fn arb_settings() -> impl Strategy<Value = AdvantageSettings> {
    (
        prop::sample::select(vec![Norm::MeanNorm, Norm::MeanStdNorm]),
        prop::sample::select(vec![Pooling::Steps, Pooling::Trajectories]),
        prop::sample::select(vec![0.0, 0.5, 0.95, 1.0]),
        prop::sample::select(vec![
            AnchorMode::Exact,
            AnchorMode::Page,
            AnchorMode::Similarity(0.5),
            AnchorMode::Similarity(0.9),
        ]),
    )
        .prop_map(|(norm, pooling, gamma, anchor)| AdvantageSettings {
            norm,
            pooling,
            gamma,
            anchor,
            ..AdvantageSettings::default()
        })
}

/// Rows of the pool each group's baseline was taken over.
fn pool_rows(table: &AdvantageTable, g: usize, pooling: Pooling) -> Vec<usize> {
    let mut rows = Vec::new();
    for e in table.group_episodes(g).iter() {
        let range = table.rows_of(e as usize);
        match pooling {
            Pooling::Steps => rows.extend(range),
            Pooling::Trajectories => rows.extend(range.take(1)),
        }
    }
    rows
}

/// The greedy clustering written the plain way: compare with every cluster's first member in turn.
fn naive_similarity_partition(episodes: &[Episode], group: &str, theta: f64) -> Vec<Vec<(usize, usize)>> {
    let mut clusters: Vec<Vec<(usize, usize)>> = Vec::new();
    for (e, episode) in episodes.iter().enumerate().filter(|(_, e)| e.group == group) {
        for (t, s) in episode.steps.iter().enumerate() {
            let first = |c: &Vec<(usize, usize)>| episodes[c[0].0].steps[c[0].1].anchor_key();
            match clusters.iter_mut().find(|c| ratio(s.anchor_key(), first(c)) >= theta) {
                Some(c) => c.push((e, t)),
                None => clusters.push(vec![(e, t)]),
            }
        }
    }
    clusters
}

proptest! {
    #[test]
    fn mean_norm_episode_advantages_sum_to_zero_over_the_pool(episodes in arb_episodes(), s in arb_settings()) {
        let s = AdvantageSettings { norm: Norm::MeanNorm, ..s };
        let table = compute(&episodes, &s);
        for g in 0..table.episode_groups.len() {
            let pool = pool_rows(&table, g, s.pooling);
            if pool.len() > 1 {
                let sum: f64 = pool.iter().map(|&r| table.row_at(r).episode_advantage).sum();
                let scale: f64 = pool.iter().map(|&r| table.row_at(r).score.abs()).sum::<f64>() + 1.0;
                prop_assert!(sum.abs() <= 1e-9 * scale, "group {g}: sum {sum}");
            }
        }
    }

    #[test]
    fn step_groups_are_centred_and_singletons_give_zero(episodes in arb_episodes(), s in arb_settings()) {
        let table = compute(&episodes, &s);
        for anchor in table.anchor_groups() {
            let values: Vec<f64> = anchor.members.iter().map(|m| table.row(m).step_advantage).collect();
            if values.len() == 1 {
                prop_assert_eq!(values[0], 0.0);
            } else {
                let sum: f64 = values.iter().sum();
                prop_assert!(sum.abs() <= 1e-6, "sum {}", sum);
            }
            for m in anchor.members {
                prop_assert_eq!(table.episode_group_index(m.episode as usize), Some(anchor.episode_group));
            }
        }
        prop_assert_eq!(table.anchor_groups.sizes().sum::<usize>(), table.row_count());
    }

    #[test]
    fn omega_zero_equals_grpo(episodes in arb_episodes(), s in arb_settings()) {
        let gigpo = compute(&episodes, &AdvantageSettings { omega: 0.0, estimator: Estimator::Gigpo, ..s });
        let grpo = compute(&episodes, &AdvantageSettings { estimator: Estimator::Grpo, ..s });
        let a: Vec<f64> = gigpo.rows().map(|r| r.advantage).collect();
        let b: Vec<f64> = grpo.rows().map(|r| r.advantage).collect();
        prop_assert_eq!(a, b);
    }

    #[test]
    fn exact_mode_ignores_the_order_of_groups(
        episodes in arb_episodes(),
        s in arb_settings(),
        order in prop::collection::vec(any::<u32>(), 4),
    ) {
        let s = AdvantageSettings { anchor: AnchorMode::Exact, ..s };
        // Move whole groups around, keeping each group's episodes in their order.
        let mut shuffled = episodes.clone();
        shuffled.sort_by_key(|e| order[e.group.trim_start_matches("group").parse::<usize>().unwrap_or(0)]);
        let a = compute(&episodes, &s);
        let b = compute(&shuffled, &s);
        for (i, episode) in episodes.iter().enumerate() {
            let j = shuffled.iter().position(|x| x.id == episode.id).unwrap_or(usize::MAX);
            for (t, (ra, rb)) in a.episode_rows(i).iter().zip(b.episode_rows(j)).enumerate() {
                prop_assert_eq!((ra.score, ra.ret, ra.episode_advantage), (rb.score, rb.ret, rb.episode_advantage));
                prop_assert_eq!((ra.step_advantage, ra.advantage), (rb.step_advantage, rb.advantage));
                let size = |tab: &AdvantageTable, e: usize| {
                    tab.anchor_group_of(RowRef { episode: e as u32, step: t as u32 }).members.len()
                };
                prop_assert_eq!(size(&a, i), size(&b, j));
            }
        }
    }

    #[test]
    fn exact_groups_are_identical_anchors(episodes in arb_episodes()) {
        let table = compute(&episodes, &AdvantageSettings::default());
        for anchor in table.anchor_groups() {
            let key = |m: &RowRef| episodes[m.episode as usize].steps[m.step as usize].anchor_key();
            let first = key(&anchor.members.at(0));
            prop_assert!(anchor.members.iter().all(|m| key(&m) == first));
        }
        // Distinct groups of one episode group have distinct anchors.
        for (i, x) in table.anchor_groups().enumerate() {
            for y in table.anchor_groups().skip(i + 1) {
                let k = |a: &gigscope::advantage::AnchorGroup<'_>| {
                    episodes[a.members.at(0).episode as usize].steps[a.members.at(0).step as usize].anchor_key()
                };
                prop_assert!(x.episode_group != y.episode_group || k(&x) != k(&y));
            }
        }
    }

    #[test]
    fn similarity_clusters_match_the_plain_greedy_algorithm(
        episodes in arb_episodes(),
        theta in prop::sample::select(vec![0.3, 0.6, 0.8, 0.9, 0.95]),
    ) {
        let s = AdvantageSettings { anchor: AnchorMode::Similarity(theta), ..AdvantageSettings::default() };
        let table = compute(&episodes, &s);
        for group in &table.episode_groups {
            let want = naive_similarity_partition(&episodes, &group.name, theta);
            let got: Vec<Vec<(usize, usize)>> = table
                .anchor_groups()
                .filter(|a| table.episode_groups[a.episode_group as usize].name == group.name)
                .map(|a| a.members.iter().map(|m| (m.episode as usize, m.step as usize)).collect())
                .collect();
            prop_assert_eq!(got, want);
        }
    }
}
