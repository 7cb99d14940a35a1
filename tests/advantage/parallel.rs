//! The parallel engine against the sequential one it replaced, and its other entry points:
//!
//! - fingerprints (SHA-256 of every number's bits and every index of the table) of synthetic runs under many
//!   settings, recorded with the sequential engine of commit 591a4b8 before it was parallelised: the
//!   parallel engine must give bit-identical tables;
//! - the same table whatever the number of threads;
//! - [`recompute`] on a table equals [`compute`] when the anchor mode is unchanged;
//! - [`AdvantageTable::append`] of a table computed for new groups equals computing everything at once.

use gigscope::advantage::{
    compute, recompute, AdvantageSettings, AdvantageTable, AnchorMode, Estimator, Norm, Pooling,
};
use gigscope::run::synth::{episodes, SynthSpec};
use gigscope::run::Episode;
use proptest::prelude::*;
use sha2::{Digest, Sha256};

/// SHA-256 over the bits of every field of `table`, in a fixed order.
fn fingerprint(table: &AdvantageTable) -> String {
    let mut h = Sha256::new();
    let mut put = |x: u64| h.update(x.to_le_bytes());
    // The row offsets, from the first episode's start (0).
    put(0);
    for e in 0..table.episode_count() {
        put(table.rows_of(e).end as u64);
    }
    for r in table.rows() {
        for v in [r.reward, r.score, r.ret, r.episode_advantage, r.step_advantage, r.advantage] {
            put(v.to_bits());
        }
        put(r.step_group.into());
        // Only where a row counts other than once, so that the recorded fingerprints of runs without copies stand.
        if r.copies != 1 {
            put(r.copies.into());
        }
    }
    for a in table.anchor_groups() {
        put(a.episode_group.into());
        put(a.members.len() as u64);
        for m in a.members {
            put((u64::from(m.episode) << 32) | u64::from(m.step));
        }
        for v in [a.mean, a.std, a.factor] {
            put(v.to_bits());
        }
    }
    for (i, g) in table.episode_groups.iter().enumerate() {
        put(g.name.len() as u64);
        for b in g.name.bytes() {
            put(b.into());
        }
        let members = table.group_episodes(i);
        put(members.len() as u64);
        for e in members.iter() {
            put(e.into());
        }
        for v in [g.mean, g.std, g.baseline, g.factor] {
            put(v.to_bits());
        }
        put(g.pool_size as u64);
        put(g.zero_variance.map_or(0, |z| z as u64 + 1));
    }
    for g in (0..table.episode_count()).filter_map(|e| table.episode_group_index(e)) {
        put(g.into());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// Synthetic runs: the reference batch, and 96 groups with their trajectories interleaved in the file
/// (trajectory k of every group, then trajectory k + 1, ...), so that groups are not contiguous.
fn runs() -> Vec<(&'static str, Vec<Episode>)> {
    let batch: Vec<Episode> = episodes(&SynthSpec::reference_batch()).collect();
    let spec = SynthSpec { groups: 96, trajectories: 6, steps: 1..=16, groups_per_iteration: 8, seed: 11 };
    let mut interleaved: Vec<(usize, Episode)> = episodes(&spec).enumerate().collect();
    interleaved.sort_by_key(|(i, _)| (i % 6, i / 6));
    let mut interleaved: Vec<Episode> = interleaved.into_iter().map(|(_, e)| e).collect();
    // More invalid steps than the generator makes, for the penalty.
    for (i, step) in interleaved.iter_mut().flat_map(|e| e.steps.iter_mut()).enumerate() {
        if i % 7 == 3 {
            step.valid = false;
        }
    }
    vec![("reference_batch", batch), ("interleaved", interleaved)]
}

fn settings_cases() -> Vec<(&'static str, AdvantageSettings)> {
    let d = AdvantageSettings::default();
    vec![
        ("default", d),
        ("page", AdvantageSettings { anchor: AnchorMode::Page, ..d }),
        ("similarity_0.9", AdvantageSettings { anchor: AnchorMode::Similarity(0.9), ..d }),
        (
            "std_trajectories_rloo",
            AdvantageSettings {
                norm: Norm::MeanStdNorm,
                pooling: Pooling::Trajectories,
                estimator: Estimator::Rloo,
                ..d
            },
        ),
        (
            "shaped_step_gamma1",
            AdvantageSettings {
                estimator: Estimator::Step,
                gamma: 1.0,
                success_reward: true,
                efficiency_alpha1: 2.5,
                efficiency_alpha2: 0.75,
                invalid_penalty: 0.3,
                ..d
            },
        ),
        (
            "std_omega_gamma_similarity_0.6",
            AdvantageSettings {
                norm: Norm::MeanStdNorm,
                omega: 0.37,
                gamma: 0.5,
                anchor: AnchorMode::Similarity(0.6),
                ..d
            },
        ),
        (
            "grpo_page_std",
            AdvantageSettings { estimator: Estimator::Grpo, anchor: AnchorMode::Page, norm: Norm::MeanStdNorm, ..d },
        ),
    ]
}

/// Recorded with the sequential engine (commit 591a4b8); the rows whose zero-variance verdict changed when it
/// became the verdict on the engine's own pool of scores (issue 26: shaped or penalised scores, not raw totals)
/// re-recorded then, every number of the tables unchanged.
const GOLDEN: &[(&str, &str, &str)] = &[
    ("reference_batch", "default", "a7779695252703a0e2049aa5dd91b6e747f080b73a1e6f7f31ff124197dfa3f6"),
    ("reference_batch", "page", "a8f6571bbc62b88f1baecac254a96a3a2d5bcf84236eb7c3c85129c6c40041d3"),
    ("reference_batch", "similarity_0.9", "6216b36713a84ffb593ae9ddd6e2eb2acdc27f1f7514af3288bb9148ba3f3cc8"),
    ("reference_batch", "std_trajectories_rloo", "7b8351080e4346249a6f4b61c200407e05b32b02825644c615073bde30d1e597"),
    ("reference_batch", "shaped_step_gamma1", "c16f51ea312de34f66fc8e73be16b2018c32279fe6825a2a3785777b9309b865"),
    (
        "reference_batch",
        "std_omega_gamma_similarity_0.6",
        "c8f1237cb8e3902724729e049b78112fe1435da4cd8ab67505ed4b70b92120c7",
    ),
    ("reference_batch", "grpo_page_std", "5c28f451add64860d94147418e98bb301e8a05d17a00537723075ef2c13f39c7"),
    ("interleaved", "default", "3a8353d91413f6258edc8c76380a4f10c354d36eeec36f01f0cccb7823e88c31"),
    ("interleaved", "page", "20f129d9a58167eff58d30b29f3207a01e102a46f24917ac571953c073cbb771"),
    ("interleaved", "similarity_0.9", "d1a7a3f5b2e78369c5ecd197ac0f4841d311484a308b9a105353832d965dcc86"),
    ("interleaved", "std_trajectories_rloo", "1e6666419b2451708755c611cdefb0033348387b49469366c87da3bf08827b7e"),
    ("interleaved", "shaped_step_gamma1", "a6a89688a7915fca4cfaecce7cac4a3087742b13cf7f047dcafa7f63222c90a5"),
    (
        "interleaved",
        "std_omega_gamma_similarity_0.6",
        "33eff41a3be6f67a0a118d712c151b6c19ea13bd9a6fbab8616a1c6faac5b890",
    ),
    ("interleaved", "grpo_page_std", "44b7d4882b5c8f17a9f0a58ddc2520af20e4cbcd3a3b851cfec8c7b0b1f2dc44"),
];

#[test]
fn tables_are_bit_identical_to_the_sequential_engine() {
    let mut got = Vec::new();
    for (run, episodes) in runs() {
        for (name, settings) in settings_cases() {
            got.push((run, name, fingerprint(&compute(&episodes, &settings))));
        }
    }
    let want: Vec<(&str, &str, String)> = GOLDEN.iter().map(|&(r, n, f)| (r, n, f.to_string())).collect();
    assert_eq!(got, want);
}

/// A small synthetic run: its groups' trajectories shuffled together, some episodes emptied (no steps).
fn arb_run() -> impl Strategy<Value = Vec<Episode>> {
    (1..5usize, 1..5usize, 1..9usize, any::<u64>(), prop::collection::vec(any::<u8>(), 1..24)).prop_map(
        |(groups, trajectories, max_steps, seed, order)| {
            let spec = SynthSpec { groups, trajectories, steps: 1..=max_steps, groups_per_iteration: 2, seed };
            let mut run: Vec<(u8, Episode)> =
                episodes(&spec).enumerate().map(|(i, e)| (order[i % order.len()], e)).collect();
            run.sort_by_key(|(key, _)| *key);
            run.into_iter()
                .map(|(key, mut e)| {
                    if key % 11 == 0 {
                        e.steps.clear();
                    }
                    // Some rows the trainer counted more than once (verl-agent's padding), which the table keeps
                    // apart by row.
                    if let Some(step) = e.steps.last_mut().filter(|_| key % 5 == 0) {
                        step.extra.insert(gigscope::run::COPIES_KEY.into(), (2 + key % 2).into());
                    }
                    e
                })
                .collect()
        },
    )
}

fn arb_settings() -> impl Strategy<Value = AdvantageSettings> {
    (
        prop::sample::select(vec![Estimator::Gigpo, Estimator::Grpo, Estimator::Rloo, Estimator::Step]),
        prop::sample::select(vec![Norm::MeanNorm, Norm::MeanStdNorm]),
        prop::sample::select(vec![Pooling::Steps, Pooling::Trajectories]),
        prop::sample::select(vec![0.0, 0.9, 1.0]),
        prop::sample::select(vec![0.0, 0.5, 1.0]),
        prop::sample::select(vec![AnchorMode::Exact, AnchorMode::Page, AnchorMode::Similarity(0.8)]),
        any::<bool>(),
        prop::sample::select(vec![0.0, 1.5]),
    )
        .prop_map(|(estimator, norm, pooling, gamma, omega, anchor, success_reward, alpha)| AdvantageSettings {
            estimator,
            gamma,
            omega,
            norm,
            pooling,
            invalid_penalty: 0.2,
            anchor,
            success_reward,
            efficiency_alpha1: alpha,
            efficiency_alpha2: alpha / 3.0,
            ..AdvantageSettings::default()
        })
}

fn pool(threads: usize) -> &'static rayon::ThreadPool {
    static POOLS: std::sync::OnceLock<[rayon::ThreadPool; 2]> = std::sync::OnceLock::new();
    let build = |n| rayon::ThreadPoolBuilder::new().num_threads(n).build().expect("thread pool");
    &POOLS.get_or_init(|| [build(1), build(3)])[usize::from(threads > 1)]
}

/// `run` with its group names (and episode ids) prefixed, so that they are new to any other run.
fn renamed(run: Vec<Episode>, prefix: &str) -> Vec<Episode> {
    run.into_iter()
        .map(|mut e| {
            e.group = format!("{prefix}{}", e.group);
            e.id = format!("{prefix}{}", e.id);
            e
        })
        .collect()
}

#[test]
fn append_to_an_empty_table_gives_the_appended_table() {
    let run: Vec<Episode> = episodes(&SynthSpec::reference_batch()).collect();
    let settings = AdvantageSettings::default();
    let mut table = AdvantageTable::default();
    table.append(compute(&run, &settings));
    assert_eq!(table, compute(&run, &settings));
    let mut table = compute(&run, &settings);
    table.append(compute(&[], &settings));
    assert_eq!(table, compute(&run, &settings));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn one_thread_and_three_threads_give_the_same_table(run in arb_run(), s in arb_settings()) {
        let one = pool(1).install(|| compute(&run, &s));
        let three = pool(3).install(|| compute(&run, &s));
        prop_assert_eq!(fingerprint(&one), fingerprint(&three));
    }

    #[test]
    fn recompute_equals_compute(run in arb_run(), before in arb_settings(), after in arb_settings()) {
        let before = AdvantageSettings { anchor: after.anchor, ..before };
        let mut table = compute(&run, &before);
        recompute(&mut table, &run, &after);
        prop_assert_eq!(fingerprint(&table), fingerprint(&compute(&run, &after)));
    }

    #[test]
    fn appending_new_groups_equals_computing_at_once(a in arb_run(), b in arb_run(), s in arb_settings()) {
        let b = renamed(b, "new-");
        let mut table = compute(&a, &s);
        // A clone shares the table's data (a background job's snapshot) until one of them changes.
        let snapshot = table.clone();
        prop_assert!(snapshot.shares_data_with(&table));
        table.append(compute(&b, &s));
        prop_assert!(!snapshot.shares_data_with(&table));
        prop_assert_eq!(&snapshot, &compute(&a, &s));
        let all: Vec<Episode> = a.iter().chain(&b).cloned().collect();
        let want = compute(&all, &s);
        prop_assert_eq!(fingerprint(&table), fingerprint(&want));
        prop_assert_eq!(&table, &want);
        // Giving back the room appending grew changes nothing the table holds.
        table.shrink_slack();
        prop_assert_eq!(fingerprint(&table), fingerprint(&want));
        prop_assert_eq!(table, want);
    }
}
