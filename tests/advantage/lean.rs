//! The engine on lean episodes (no text in memory: anchors as 128-bit hashes and page ids, similarity anchors
//! read back from the file) gives the same table, bit for bit, as on the episodes with their text.

use gigscope::advantage::{
    compute, compute_grouped, group_keyed, AdvantageSettings, AnchorMode, Estimator, KeyedAnchor, Norm, Pooling,
    SimilarityJob,
};
use gigscope::env::{fill_page_anchors, PageAnchor};
use gigscope::run::text_on_disk::{EpisodeText, LeanEpisode, PageIds, TextStore};
use gigscope::run::{Episode, Run, Step, EPISODES_FILE};
use gigscope::webshop::page::{classify_observation, page_anchor};
use proptest::prelude::*;

const OBSERVATIONS: &[&str] = &[
    "WebShop [SEP] Instruction: [SEP] i need shoes [SEP] Search",
    "Back to Search [SEP] Page 1 (Total results: 50) [SEP] Next > [SEP] B01 [SEP] red shoes",
    "Back to Search [SEP] Page 1 (Total results: 50) [SEP] Next > [SEP] B01 [SEP] navy shoes",
    "Back to Search [SEP] < Prev [SEP] size [SEP] small [SEP] large [SEP] Buy Now",
    "Back to Search [SEP] < Prev [SEP] Description [SEP] soft \"quoted\" leather\nsecond line",
    "Thank you for shopping with us! [SEP] Your score (min 0.0, max 1.0) [SEP] 0.5",
];

fn arb_step() -> impl Strategy<Value = Step> {
    (
        0..OBSERVATIONS.len(),
        prop::option::of(0..OBSERVATIONS.len()),
        prop::sample::select(vec![0.0, 0.5, 1.0, 10.0, -1.0]),
        prop::bool::weighted(0.85),
        prop::option::of(0u64..40),
        prop::option::of(prop::sample::select(vec!["search", "results", "item"])),
        prop::option::of(1u64..4),
        prop::option::of(0..3u8),
    )
        .prop_map(|(obs, anchor, reward, valid, tokens, page, copies, state)| {
            let mut s = Step::new(OBSERVATIONS[obs], format!("act{obs}"), reward);
            s.anchor = anchor.map(|a| OBSERVATIONS[a].into());
            s.valid = valid;
            s.tokens = tokens;
            s.page = page.map(String::from);
            s.state = state.map(|x| format!("state {x}"));
            if let Some(c) = copies {
                s.extra.insert(gigscope::run::COPIES_KEY.into(), c.into());
            }
            s
        })
}

fn arb_episodes() -> impl Strategy<Value = Vec<Episode>> {
    prop::collection::vec((0..4usize, 0..3i64, any::<bool>(), prop::collection::vec(arb_step(), 1..7)), 1..14).prop_map(
        |eps| {
            eps.into_iter()
                .enumerate()
                .map(|(i, (g, iteration, success, steps))| {
                    let mut e = Episode::new(format!("e{i}"), format!("group{g}"), steps);
                    e.iteration = iteration;
                    e.outcome = Some(gigscope::run::Outcome { success, score: 0.5, extra: Default::default() });
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
        prop::sample::select(vec![0.5, 0.95, 1.0]),
        prop::sample::select(vec![
            AnchorMode::Exact,
            AnchorMode::Page,
            AnchorMode::ObservationStep,
            AnchorMode::State,
            AnchorMode::Similarity(0.6),
            AnchorMode::Similarity(0.9),
        ]),
        any::<bool>(),
        prop::sample::select(vec![0.0, 0.1]),
        prop::sample::select(vec![0.0, 2.5]),
    )
        .prop_map(|(estimator, norm, pooling, gamma, anchor, success_reward, invalid_penalty, alpha)| {
            AdvantageSettings {
                estimator,
                norm,
                pooling,
                gamma,
                anchor,
                success_reward,
                invalid_penalty,
                efficiency_alpha1: alpha,
                efficiency_alpha2: alpha,
                ..AdvantageSettings::default()
            }
        })
}

/// `episodes` written to a run directory and read back, each with the span of its line.
fn written(episodes: &[Episode]) -> (tempfile::TempDir, Vec<Episode>) {
    let tmp = tempfile::tempdir().unwrap();
    let lines: String = episodes.iter().map(|e| serde_json::to_string(e).unwrap() + "\n").collect();
    std::fs::write(tmp.path().join(EPISODES_FILE), lines).unwrap();
    let run = Run::open(tmp.path()).unwrap();
    (tmp, run.episodes)
}

fn lean(episodes: &[Episode], store: &TextStore) -> Vec<LeanEpisode> {
    let mut pages = PageIds::default();
    let classify = |o: &str| classify_observation(o).as_str();
    episodes.iter().map(|e| LeanEpisode::new(e.clone(), store, &mut pages, Some(&classify))).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn lean_and_full_engines_agree_bit_for_bit(episodes in arb_episodes(), settings in arb_settings()) {
        let (tmp, mut read) = written(&episodes);
        let store = TextStore::new(&tmp.path().join(EPISODES_FILE));
        let lean = lean(&read, &store);
        let on_disk = lean.iter().all(|e| matches!(e.text, EpisodeText::OnDisk { .. }));
        prop_assert!(on_disk, "every episode keeps its text on disk");
        let grouping = match settings.anchor {
            AnchorMode::Exact => group_keyed(lean.as_slice(), KeyedAnchor::Exact),
            AnchorMode::Page => group_keyed(lean.as_slice(), KeyedAnchor::Page),
            AnchorMode::ObservationStep => group_keyed(lean.as_slice(), KeyedAnchor::ObservationStep),
            AnchorMode::State => group_keyed(lean.as_slice(), KeyedAnchor::State),
            AnchorMode::Similarity(theta) => {
                // The anchors' text is read back from the file while the job runs.
                SimilarityJob::lean(lean.as_slice(), group_keyed(lean.as_slice(), KeyedAnchor::Exact), theta).try_run().unwrap()
            }
        };
        let from_lean = compute_grouped(lean.as_slice(), &grouping, &settings);
        // The lean reader was handed WebShop's page anchor for steps without a page; the full episodes get it
        // filled in, as every caller does before computing page anchors on recorded text.
        fill_page_anchors(&mut read, Some(PageAnchor::new("webshop", page_anchor)));
        prop_assert_eq!(from_lean, compute(&read, &settings));
    }
}
