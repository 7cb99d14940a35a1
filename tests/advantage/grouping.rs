//! Anchor groupings apart from the numbers ([`group_anchors`], [`regroup`], [`SimilarityJob`]): each must give
//! exactly what [`compute`] gives in one go, on synthetic runs (whose pages repeat and differ in a few fields,
//! so similarity clusters merge exact ones) and on the bundled sample run.

use gigscope::advantage::{
    compute, group_anchors, regroup, AdvantageSettings, AnchorMode, Estimator, Norm, SimilarityJob,
};
use gigscope::run::synth::{episodes, SynthSpec};
use gigscope::run::{Episode, Run};
use proptest::prelude::*;
use std::sync::atomic::AtomicBool;

const MODES: [AnchorMode; 7] = [
    AnchorMode::Exact,
    AnchorMode::Page,
    AnchorMode::ObservationStep,
    AnchorMode::State,
    AnchorMode::Similarity(0.3),
    AnchorMode::Similarity(0.8),
    AnchorMode::Similarity(0.95),
];

fn runs() -> Vec<(&'static str, Vec<Episode>)> {
    let sample = Run::open(std::path::Path::new("sample_runs/webshop-gigpo")).expect("sample run").episodes;
    let synth = episodes(&SynthSpec { groups: 24, seed: 7, ..SynthSpec::reference_batch() }).collect();
    vec![("sample run", sample), ("synthetic", synth)]
}

fn settings(anchor: AnchorMode) -> AdvantageSettings {
    AdvantageSettings { anchor, ..AdvantageSettings::default() }
}

#[test]
fn group_anchors_equals_the_grouping_compute_makes() {
    for (name, run) in runs() {
        for mode in MODES {
            let table = compute(&run, &settings(mode));
            assert_eq!(group_anchors(&run, mode), table.grouping(mode), "{name}, {mode:?}");
        }
    }
}

#[test]
fn similarity_job_clusters_like_the_engine() {
    for (name, run) in runs() {
        let exact = group_anchors(&run, AnchorMode::Exact);
        for theta in [0.3, 0.6, 0.8, 0.9, 0.95] {
            let job = SimilarityJob::new(&run, exact.clone(), theta);
            let grouping = std::thread::spawn(move || job.run()).join().expect("job thread");
            let expected = group_anchors(&run, AnchorMode::Similarity(theta));
            assert_eq!(grouping, expected, "{name}, θ = {theta}");
        }
        // The similarity groups merge exact ones on these runs (else the test would prove little).
        let merged = group_anchors(&run, AnchorMode::Similarity(0.8));
        assert!(merged.episode_group.len() < exact.episode_group.len(), "{name}");
    }
}

#[test]
fn regroup_between_any_two_modes_equals_compute() {
    for (name, run) in runs() {
        for from in MODES {
            for to in MODES {
                let mut table = compute(&run, &settings(from));
                let target = AdvantageSettings { omega: 0.4, norm: Norm::MeanNorm, ..settings(to) };
                regroup(&mut table, &run, &group_anchors(&run, to), &target);
                assert!(table == compute(&run, &target), "{name}: {from:?} → {to:?}");
            }
        }
    }
}

#[test]
#[should_panic(expected = "the grouping was made from other episodes")]
fn regroup_refuses_a_grouping_of_other_episodes() {
    let run: Vec<Episode> = episodes(&SynthSpec::reference_batch()).collect();
    let mut table = compute(&run, &AdvantageSettings::default());
    let other = group_anchors(&run[..8], AnchorMode::Exact);
    regroup(&mut table, &run, &other, &AdvantageSettings::default());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Any synthetic run, any θ and estimator: the background job's grouping, applied with `regroup`, gives
    /// the table `compute` gives.
    #[test]
    fn job_then_regroup_equals_compute(
        seed in 0u64..1000,
        groups in 1usize..6,
        theta in 0.05f64..0.99,
        estimator in prop_oneof![Just(Estimator::Gigpo), Just(Estimator::Grpo), Just(Estimator::Rloo)],
    ) {
        let run: Vec<Episode> = episodes(&SynthSpec { groups, seed, ..SynthSpec::reference_batch() }).collect();
        let target = AdvantageSettings { estimator, ..settings(AnchorMode::Similarity(theta)) };
        let mut table = compute(&run, &AdvantageSettings::default());
        let grouping = SimilarityJob::new(&run, group_anchors(&run, AnchorMode::Exact), theta).run();
        regroup(&mut table, &run, &grouping, &target);
        prop_assert!(table == compute(&run, &target));
    }
}

#[test]
fn a_cancelled_job_gives_up_and_an_uncancelled_one_finishes() {
    let run: Vec<Episode> = episodes(&SynthSpec::reference_batch()).collect();
    let job = SimilarityJob::new(&run, group_anchors(&run, AnchorMode::Exact), 0.9);
    assert_eq!(job.clone().run_unless(&AtomicBool::new(true)), None);
    assert_eq!(job.run_unless(&AtomicBool::new(false)), Some(group_anchors(&run, AnchorMode::Similarity(0.9))));
}
