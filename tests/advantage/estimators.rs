//! The estimator family (`gigscope::advantage::estimators`): golden tests against the Python oracle
//! `tests/fixtures/estimators/oracle.py` (written from the specification, scikit-learn's own TfidfVectorizer for
//! ProxMO), a differential test of the TF-IDF port against scikit-learn, clear errors for missing inputs, and
//! property tests of the invariants the estimators have.
//!
//! The oracle's output is committed beside each fixture (`*.expected.json`): the golden tests need no Python.
//! Where python3 with numpy and scikit-learn is present, and always under CI (`CI` set: then it must be), the
//! oracle is run again and must give the committed values, and the TF-IDF port is compared with scikit-learn.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use gigscope::advantage::estimators::{
    compute, compute_all, compute_with_table, tfidf, EnvInputs, EstimatorError, EstimatorKind, EstimatorOutput,
    EstimatorSettings, Need,
};
use gigscope::advantage::{self, AdvantageOverrides, AdvantageSettings, AnchorMode, Estimator, Norm};
use gigscope::run::{Episode, Step};
use gigscope::webshop::page::classify_observation;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

// ------------------------------------------------------------------------------------------------ fixtures

#[derive(Deserialize)]
struct Fixture {
    episodes: Vec<Episode>,
    #[serde(default)]
    base: AdvantageOverrides,
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    estimator: EstimatorKind,
    #[serde(default)]
    base: AdvantageOverrides,
    #[serde(default)]
    settings: EstimatorSettings,
}

#[derive(Deserialize, PartialEq, Debug)]
struct Expected {
    cases: Vec<ExpectedCase>,
}

#[derive(Deserialize, PartialEq, Debug)]
struct ExpectedCase {
    estimator: String,
    advantages: Vec<Option<f64>>,
    terms: BTreeMap<String, Vec<Option<f64>>>,
}

const FIXTURES: [&str; 2] = ["text_batch", "webshop_batch"];

fn fixture_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/estimators")
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> T {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn fixture(name: &str) -> Fixture {
    read_json(&fixture_dir().join(format!("{name}.json")))
}

fn base_of(fixture: &Fixture, case: &Case) -> AdvantageSettings {
    case.base.apply(fixture.base.apply(AdvantageSettings::default()))
}

fn close(got: f64, want: f64, tol: f64) -> bool {
    (got.is_nan() && want.is_nan()) || (got - want).abs() <= tol * want.abs().max(1.0)
}

/// `got` against the oracle's `want` (None = NaN, a term that does not apply).
fn assert_column(what: &str, got: &[f64], want: &[Option<f64>], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}: number of rows");
    for (row, (&g, w)) in got.iter().zip(want).enumerate() {
        let w = w.unwrap_or(f64::NAN);
        assert!(close(g, w, tol), "{what}, row {row}: gigscope {g}, oracle {w}");
    }
}

// ------------------------------------------------------------------------------------------ golden tests

#[test]
fn every_estimator_matches_the_oracle_on_the_fixtures() {
    for name in FIXTURES {
        let fixture = fixture(name);
        let expected: Expected = read_json(&fixture_dir().join(format!("{name}.expected.json")));
        assert_eq!(expected.cases.len(), fixture.cases.len(), "{name}: regenerate the expected values");
        for (i, (case, want)) in fixture.cases.iter().zip(&expected.cases).enumerate() {
            assert_eq!(case.estimator.name(), want.estimator, "{name} case {i}");
            let base = base_of(&fixture, case);
            let out = compute(case.estimator, &fixture.episodes, &base, &case.settings, &EnvInputs::default())
                .unwrap_or_else(|e| panic!("{name} case {i}: {e}"));
            let what = format!("{name} case {i} ({})", case.estimator);
            assert_column(&format!("{what} advantage"), &out.advantages, &want.advantages, 1e-9);
            for (term, values) in &want.terms {
                let column = out.term_column(term).unwrap_or_else(|| panic!("{what}: no term {term}"));
                assert_column(&format!("{what} term {term}"), &column, values, 1e-9);
            }
        }
    }
}

/// Whether python3 can run the oracle (numpy and scikit-learn importable). Under CI it must.
fn python_with_sklearn() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import numpy, sklearn"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok && std::env::var_os("CI").is_some() {
        panic!("CI: python3 with numpy and scikit-learn is required (./scripts/dev test installs scikit-learn)");
    }
    if !ok {
        eprintln!("python3 with scikit-learn not found: oracle and sklearn comparisons skipped");
    }
    ok
}

#[test]
fn the_committed_expectations_are_what_the_oracle_computes() {
    if !python_with_sklearn() {
        return;
    }
    for name in FIXTURES {
        let path = fixture_dir().join(format!("{name}.json"));
        let output = Command::new("python3")
            .arg(fixture_dir().join("oracle.py"))
            .arg(&path)
            .output()
            .unwrap_or_else(|e| panic!("python3 oracle.py: {e}"));
        assert!(output.status.success(), "oracle.py {name}: {}", String::from_utf8_lossy(&output.stderr));
        let fresh: Expected = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("oracle output: {e}"));
        let committed: Expected = read_json(&fixture_dir().join(format!("{name}.expected.json")));
        assert_eq!(fresh.cases.len(), committed.cases.len(), "{name}: run oracle.py --write");
        for (i, (f, c)) in fresh.cases.iter().zip(&committed.cases).enumerate() {
            let what = format!("{name} case {i} ({})", c.estimator);
            assert_eq!(f.estimator, c.estimator, "{what}");
            let as_f64 = |v: &[Option<f64>]| v.iter().map(|x| x.unwrap_or(f64::NAN)).collect::<Vec<_>>();
            assert_column(&format!("{what}: oracle now vs committed"), &as_f64(&f.advantages), &c.advantages, 1e-12);
            assert_eq!(f.terms.keys().collect::<Vec<_>>(), c.terms.keys().collect::<Vec<_>>(), "{what}");
            for (term, values) in &f.terms {
                assert_column(&format!("{what} term {term}"), &as_f64(values), &c.terms[term], 1e-12);
            }
        }
    }
}

#[test]
fn the_fixtures_exercise_what_they_claim() {
    let text = fixture("text_batch");
    let web = fixture("webshop_batch");
    for f in [&text, &web] {
        let groups: std::collections::BTreeSet<&str> = f.episodes.iter().map(|e| e.group.as_str()).collect();
        assert!(groups.len() >= 3);
        assert!(f.episodes.iter().any(|e| e.steps.iter().any(|s| !s.valid)), "invalid steps");
        assert!(
            f.episodes.iter().any(|e| e.total_reward() > 0.0) && f.episodes.iter().any(|e| e.total_reward() <= 0.0)
        );
        let lengths: std::collections::BTreeSet<usize> = f.episodes.iter().map(|e| e.steps.len()).collect();
        assert!(lengths.len() >= 3, "unequal lengths");
        let iterations: std::collections::BTreeSet<i64> = f.episodes.iter().map(|e| e.iteration).collect();
        assert!(iterations.len() >= 2, "two ProxMO batches");
    }
    // HGPO's deeper levels group something; GraphGPO sees a group without success.
    let case =
        Case { estimator: EstimatorKind::Hgpo, base: Default::default(), settings: EstimatorSettings::default() };
    let out =
        compute(EstimatorKind::Hgpo, &text.episodes, &base_of(&text, &case), &case.settings, &EnvInputs::default())
            .unwrap_or_else(|e| panic!("{e}"));
    let n3 = out.term_column("n_k3").unwrap_or_default();
    assert!(n3.iter().any(|&n| n >= 2.0), "a depth-3 history shared by two rows");
    // Every page type of gigscope appears in the WebShop fixture.
    for page in ["search", "results", "item", "item_sub", "done"] {
        assert!(web.episodes.iter().flat_map(|e| &e.steps).any(|s| s.page.as_deref() == Some(page)), "{page}");
    }
}

// ---------------------------------------------------------------------------------------- the engine four

#[test]
fn the_engine_estimators_are_the_engines_columns() {
    for name in FIXTURES {
        let fixture = fixture(name);
        for anchor in [AnchorMode::Exact, AnchorMode::Similarity(0.9), AnchorMode::Page] {
            let base = AdvantageSettings { anchor, ..AdvantageSettings::default() };
            let all = compute_all(&fixture.episodes, &base, &EstimatorSettings::default(), &EnvInputs::default());
            assert_eq!(all.iter().map(|(k, _)| *k).collect::<Vec<_>>(), EstimatorKind::ALL.to_vec());
            for (kind, column) in &all {
                let Some(estimator) = kind.engine() else { continue };
                let table = advantage::compute(&fixture.episodes, &AdvantageSettings { estimator, ..base });
                let column = column.as_ref().unwrap_or_else(|e| panic!("{e}"));
                let want: Vec<f64> = table.rows().map(|r| r.advantage).collect();
                assert_eq!(column.advantages, want, "{name} {kind} {anchor:?}");
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------ errors

#[test]
fn soft_page_without_page_types_names_what_is_missing_and_the_rest_still_works() {
    let text = fixture("text_batch");
    let all = compute_all(
        &text.episodes,
        &AdvantageSettings::default(),
        &EstimatorSettings::default(),
        &EnvInputs::default(),
    );
    for (kind, column) in &all {
        match (kind, column) {
            (EstimatorKind::SoftPage, Err(e)) => {
                assert!(matches!(e, EstimatorError::Missing { need: Need::PageTypes, .. }), "{e:?}");
                let message = e.to_string();
                assert!(message.contains("soft-page") && message.contains("page"), "{message}");
                assert!(message.contains("episode g1-a"), "names the first step without a page: {message}");
            }
            (EstimatorKind::SoftPage, Ok(_)) => panic!("soft-page computed without page types"),
            (kind, Err(e)) => panic!("{kind} failed: {e}"),
            (_, Ok(out)) => assert!(out.advantages.iter().all(|a| a.is_finite())),
        }
    }
    // An unknown page type is named too.
    let mut web = fixture("webshop_batch").episodes;
    web[1].steps[2].page = Some("checkout".into());
    let err = compute(
        EstimatorKind::SoftPage,
        &web,
        &AdvantageSettings::default(),
        &EstimatorSettings::default(),
        &EnvInputs::default(),
    )
    .err()
    .unwrap_or_else(|| panic!("unknown page accepted"));
    assert!(err.to_string().contains("\"checkout\"") && err.to_string().contains("w1-b"), "{err}");
}

#[test]
fn page_types_classified_by_the_environment_equal_the_recorded_ones() {
    let web = fixture("webshop_batch").episodes;
    let mut bare = web.clone();
    for step in bare.iter_mut().flat_map(|e| e.steps.iter_mut()) {
        // The recorded pages are the classifier's (checked here), so dropping them must change nothing.
        assert_eq!(Some(classify_observation(&step.observation).as_str()), step.page.as_deref());
        step.page = None;
    }
    let page_of = |obs: &str| classify_observation(obs).as_str();
    let env = EnvInputs { page_of: Some(&page_of) };
    let settings = EstimatorSettings::default();
    let base = AdvantageSettings::default();
    let recorded = compute(EstimatorKind::SoftPage, &web, &base, &settings, &EnvInputs::default());
    let classified = compute(EstimatorKind::SoftPage, &bare, &base, &settings, &env);
    assert_eq!(recorded.map(|o| o.advantages), classified.map(|o| o.advantages));
}

#[test]
fn settings_out_of_their_domain_are_refused_by_name() {
    let web = fixture("webshop_batch").episodes;
    let base = AdvantageSettings::default();
    let bad = [
        (EstimatorKind::Graphgpo, EstimatorSettings { graph_gamma: 1.5, ..Default::default() }, "graph_gamma"),
        (
            EstimatorKind::Graphgpo,
            EstimatorSettings { graph_similarity: Some(1.0), ..Default::default() },
            "graph_similarity",
        ),
        (EstimatorKind::Hgpo, EstimatorSettings { hgpo_alpha: f64::NAN, ..Default::default() }, "hgpo_alpha"),
        (EstimatorKind::Hgpo, EstimatorSettings { hgpo_history: 1000, ..Default::default() }, "hgpo_history"),
        (EstimatorKind::Proxmo, EstimatorSettings { psc_alpha: f64::INFINITY, ..Default::default() }, "psc_alpha"),
    ];
    for (kind, settings, name) in bad {
        let err = compute(kind, &web, &base, &settings, &EnvInputs::default()).err();
        assert!(matches!(&err, Some(EstimatorError::Setting { name: n, .. }) if *n == name), "{kind}: {err:?}");
    }
    // A table made from other episodes is refused, not a panic.
    let table = advantage::compute(&web[..2], &base);
    let err = compute_with_table(
        EstimatorKind::Hgpo,
        &web,
        &table,
        &base,
        &EstimatorSettings::default(),
        &EnvInputs::default(),
    );
    assert!(matches!(err, Err(EstimatorError::TableMismatch(_))));
}

#[test]
fn names_and_settings_round_trip() {
    for kind in EstimatorKind::ALL {
        assert_eq!(EstimatorKind::parse(kind.name()), Some(kind));
        let json = serde_json::to_string(&kind).unwrap_or_default();
        assert_eq!(json, format!("\"{}\"", kind.name()));
        assert_eq!(serde_json::from_str::<EstimatorKind>(&json).ok(), Some(kind));
        assert!(!kind.needs().is_empty() && !kind.formula().is_empty());
    }
    assert_eq!(serde_json::from_str::<EstimatorKind>("\"soft_page\"").ok(), Some(EstimatorKind::SoftPage));
    assert_eq!(EstimatorKind::from(Estimator::Rloo), EstimatorKind::Rloo);
    let partial: EstimatorSettings =
        serde_json::from_str(r#"{"hgpo_history": 4, "graph_norm": "mean_norm"}"#).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(partial, EstimatorSettings { hgpo_history: 4, graph_norm: Norm::MeanNorm, ..Default::default() });
    let back: EstimatorSettings =
        serde_json::from_str(&serde_json::to_string(&partial).unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(back, partial);
}

// ---------------------------------------------------------------------------------- TF-IDF vs scikit-learn

#[derive(Deserialize)]
struct SkTfidf {
    vocabulary: Vec<String>,
    idf: Vec<f64>,
    rows: Vec<Vec<(u32, f64)>>,
}

fn sklearn_tfidf(docs: &[String], max_features: usize) -> SkTfidf {
    let script = "import sys, json\n\
                  from sklearn.feature_extraction.text import TfidfVectorizer\n\
                  docs = json.load(sys.stdin)\n\
                  v = TfidfVectorizer(max_features=int(sys.argv[1]))\n\
                  X = v.fit_transform(docs).tocsr()\n\
                  X.sort_indices()\n\
                  rows = [[[int(j), float(x)] for j, x in zip(X.indices[X.indptr[i]:X.indptr[i+1]], X.data[X.indptr[i]:X.indptr[i+1]])] for i in range(X.shape[0])]\n\
                  json.dump({'vocabulary': list(v.get_feature_names_out()), 'idf': [float(x) for x in v.idf_], 'rows': rows}, sys.stdout)\n";
    let mut child = Command::new("python3")
        .args(["-c", script, &max_features.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("python3: {e}"));
    let input = serde_json::to_vec(docs).unwrap_or_default();
    child.stdin.take().map(|mut s| s.write_all(&input)).transpose().unwrap_or_else(|e| panic!("write: {e}"));
    let output = child.wait_with_output().unwrap_or_else(|e| panic!("python3: {e}"));
    assert!(output.status.success(), "sklearn failed: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("sklearn output: {e}"))
}

/// Words whose tokenisation depends on Python's Unicode `\w` and `str.lower()`.
const TRICKY: &[&str] = &[
    "Café",
    "cafe\u{301}",
    "naïve",
    "İstanbul",
    "ΣΟΦΙΑΣ",
    "ὈΔΥΣΣΕΎΣ",
    "ǅemal",
    "x²",
    "½cup",
    "Ⅻ-shaped",
    "٣٤٥",
    "snake_case",
    "__init__",
    "ﬁne",
    "Straße",
    "हिन्दी",
    "ภาษาไทย",
    "中文字符",
    "日本語",
    "한국어",
    "😀emoji😀",
    "a",
    "I",
    "B07ABC1234",
    "$12.99",
    "[SEP]",
    "don't",
    "e-mail",
    "ＦＵＬＬwidth",
    "MiXeD",
    "ǈubljana",
    "ﬀ",
];

fn tricky_docs(rng: &mut ChaCha8Rng, n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            let words = rng.random_range(0..12);
            (0..words).map(|_| TRICKY[rng.random_range(0..TRICKY.len())]).collect::<Vec<_>>().join(" ")
        })
        .collect()
}

fn compare_with_sklearn(docs: &[String], max_features: usize) {
    let ours = tfidf::fit_transform(docs, Some(max_features)).unwrap_or_else(|e| panic!("{e}"));
    let theirs = sklearn_tfidf(docs, max_features);
    assert_eq!(ours.vocabulary, theirs.vocabulary);
    assert_column("idf", &ours.idf, &theirs.idf.iter().map(|&x| Some(x)).collect::<Vec<_>>(), 1e-13);
    assert_eq!(ours.rows.len(), theirs.rows.len());
    for (i, (a, b)) in ours.rows.iter().zip(&theirs.rows).enumerate() {
        assert_eq!(a.iter().map(|e| e.0).collect::<Vec<_>>(), b.iter().map(|e| e.0).collect::<Vec<_>>(), "row {i}");
        for (x, y) in a.iter().zip(b) {
            assert!(close(x.1, y.1, 1e-13), "row {i} column {}: {} vs sklearn {}", x.0, x.1, y.1);
        }
    }
}

#[test]
fn tfidf_equals_scikit_learn_on_unicode_text() {
    if !python_with_sklearn() {
        return;
    }
    let mut rng = ChaCha8Rng::seed_from_u64(20261123);
    let docs = tricky_docs(&mut rng, 60);
    compare_with_sklearn(&docs, 1024);
}

#[test]
fn tfidf_equals_scikit_learn_past_max_features() {
    if !python_with_sklearn() {
        return;
    }
    // 1024 terms occur at least twice, 300 once: the cut falls between counts 2 and 1, with no tie across it.
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut tokens: Vec<String> = Vec::new();
    for i in 0..1024 - 20 {
        let count = rng.random_range(2..5);
        tokens.extend(std::iter::repeat_n(format!("kept{i}w"), count));
    }
    for word in ["Café", "naïve", "Straße", "x²", "ΣΟΦΙΑΣ", "中文字符", "snake_case", "B07ABC1234", "ǅemal", "Ⅻb"]
    {
        tokens.extend(std::iter::repeat_n(word.to_string(), 3));
    }
    for i in 0..10 {
        tokens.extend(std::iter::repeat_n(format!("extra{i}z"), 2));
    }
    for i in 0..300 {
        tokens.push(format!("rare{i}q"));
    }
    // Shuffle into 80 documents.
    for i in (1..tokens.len()).rev() {
        tokens.swap(i, rng.random_range(0..=i));
    }
    let docs: Vec<String> = tokens.chunks(tokens.len() / 80 + 1).map(|c| c.join(" ")).collect();
    let all = tfidf::fit_transform(&docs, None).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(all.vocabulary.len(), 1324, "the words tokenise to one term each");
    compare_with_sklearn(&docs, 1024);
}

// ------------------------------------------------------------------------------------------- properties

const OBSERVATIONS: &[&str] = &[
    "you arrive at cabinet 1",
    "you arrive at cabinet 2",
    "the drawer is open",
    "nothing happens",
    "you see a red apple",
    "café crème",
];
const ACTIONS: &[&str] = &["go", "open", "take", "look"];

/// Random small runs: repeated observations and actions, invalid steps, rewards at random steps.
fn random_run(seed: u64, same_observation: bool) -> Vec<Episode> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut episodes = Vec::new();
    for g in 0..rng.random_range(1..5) {
        for e in 0..rng.random_range(1..5) {
            let steps = (0..rng.random_range(1..7))
                .map(|_| {
                    let obs = if same_observation {
                        OBSERVATIONS[0]
                    } else {
                        OBSERVATIONS[rng.random_range(0..OBSERVATIONS.len())]
                    };
                    let reward = [0.0, 0.0, 0.5, 1.0, 10.0][rng.random_range(0..5)];
                    let mut step = Step::new(obs, ACTIONS[rng.random_range(0..ACTIONS.len())], reward);
                    step.valid = rng.random_bool(0.8);
                    step.page = Some(["search", "results", "item", "item_sub"][rng.random_range(0..4)].into());
                    if same_observation {
                        step.page = Some("item".into());
                    }
                    step
                })
                .collect();
            let mut episode = Episode::new(format!("g{g}-{e}"), format!("g{g}"), steps);
            episode.iteration = rng.random_range(0..2);
            episodes.push(episode);
        }
    }
    episodes
}

fn column(
    kind: EstimatorKind,
    episodes: &[Episode],
    base: &AdvantageSettings,
    settings: &EstimatorSettings,
) -> EstimatorOutput {
    compute(kind, episodes, base, settings, &EnvInputs::default()).unwrap_or_else(|e| panic!("{kind}: {e}"))
}

/// q-minus-v compares actions as the settings' action rule reads them: the same `<action>` with other thoughts
/// is one action (Q over both), and a rule that keeps the whole response tells them apart.
#[test]
fn q_minus_v_compares_extracted_actions() {
    let ep = |id: &str, response: &str, reward: f64| Episode::new(id, "g", vec![Step::new("s", response, reward)]);
    let run = [
        ep("a", "<think>cheap</think><action>buy</action>", 1.0),
        ep("b", "<think>it fits</think><action>buy</action>", 0.0),
        ep("c", "<action>back</action>", 0.0),
    ];
    let base = AdvantageSettings { invalid_penalty: 0.0, ..AdvantageSettings::default() };
    let tagged = column(EstimatorKind::QMinusV, &run, &base, &EstimatorSettings::default());
    // V = 1/3; Q(buy) = 1/2 over a and b, Q(back) = 0.
    let (buy, back) = (0.5 - 1.0 / 3.0, -1.0 / 3.0);
    assert_column("tagged", &tagged.advantages, &[Some(buy), Some(buy), Some(back)], 1e-12);
    let whole = AdvantageSettings { action: advantage::ActionRule::pattern(r"(?s).*").unwrap(), ..base };
    let raw = column(EstimatorKind::QMinusV, &run, &whole, &EstimatorSettings::default());
    assert_column("whole", &raw.advantages, &[Some(1.0 - 1.0 / 3.0), Some(-1.0 / 3.0), Some(back)], 1e-12);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn q_minus_v_sums_to_zero_over_each_anchor_group(seed in any::<u64>(), gamma in 0.0f64..=1.0) {
        let run = random_run(seed, false);
        let base = AdvantageSettings { gamma, ..AdvantageSettings::default() };
        let out = column(EstimatorKind::QMinusV, &run, &base, &EstimatorSettings::default());
        let table = advantage::compute(&run, &base);
        for group in table.anchor_groups() {
            let sum: f64 = group.members.iter().map(|m| out.advantages[table.rows_of(m.episode as usize).start + m.step as usize]).sum();
            prop_assert!(sum.abs() < 1e-9, "sum {}", sum);
        }
    }

    #[test]
    fn hgpo_without_history_is_gigpos_exact_step_advantage(seed in any::<u64>(), alpha in 0.0f64..3.0) {
        let run = random_run(seed, false);
        let base = AdvantageSettings { norm: Norm::MeanNorm, ..AdvantageSettings::default() };
        let settings = EstimatorSettings { hgpo_history: 0, hgpo_alpha: alpha, hgpo_norm: Norm::MeanNorm, ..Default::default() };
        let out = column(EstimatorKind::Hgpo, &run, &base, &settings);
        let table = advantage::compute(&run, &base);
        // One level k = 1, weight 2^α / (2^α + 1e-6).
        let w = 2f64.powf(alpha) / (2f64.powf(alpha) + 1e-6);
        for (row, a) in table.rows().zip(&out.advantages) {
            prop_assert!(close(*a, row.step_advantage * w, 1e-12), "{} vs {}", a, row.step_advantage * w);
        }
    }

    #[test]
    fn hgpo_levels_nest(seed in any::<u64>()) {
        let run = random_run(seed, false);
        let settings = EstimatorSettings { hgpo_history: 3, ..Default::default() };
        let out = column(EstimatorKind::Hgpo, &run, &AdvantageSettings::default(), &settings);
        for k in 2..=4 {
            let (deep, shallow) = (out.term_column(&format!("n_k{k}")), out.term_column(&format!("n_k{}", k - 1)));
            for (d, s) in deep.unwrap_or_default().iter().zip(shallow.unwrap_or_default()) {
                prop_assert!(d.is_nan() || *d <= s);
            }
        }
    }

    #[test]
    fn soft_baselines_over_identical_observations_are_the_group_mean(seed in any::<u64>()) {
        let run = random_run(seed, true);
        let base = AdvantageSettings::default();
        let table = advantage::compute(&run, &base);
        for kind in [EstimatorKind::Proxmo, EstimatorKind::SoftPage] {
            let out = column(kind, &run, &base, &EstimatorSettings::default());
            let a_step = out.term_column("A_step").unwrap_or_default();
            for g in 0..table.episode_groups.len() {
                let rows: Vec<usize> = table.group_episodes(g).iter().flat_map(|e| table.rows_of(e as usize)).collect();
                let mean = rows.iter().map(|&r| table.row_at(r).ret).sum::<f64>() / rows.len() as f64;
                for &r in &rows {
                    prop_assert!(close(a_step[r], table.row_at(r).ret - mean, 1e-9), "{}: {} vs {}", kind, a_step[r], table.row_at(r).ret - mean);
                }
            }
        }
    }

    #[test]
    fn graphgpo_without_success_or_penalty_has_no_step_signal(seed in any::<u64>()) {
        let mut run = random_run(seed, false);
        for step in run.iter_mut().flat_map(|e| e.steps.iter_mut()) {
            step.reward = 0.0;
        }
        let base = AdvantageSettings { invalid_penalty: 0.0, ..AdvantageSettings::default() };
        let out = column(EstimatorKind::Graphgpo, &run, &base, &EstimatorSettings::default());
        prop_assert!(out.term_column("A_step").unwrap_or_default().iter().all(|&a| a == 0.0));
        prop_assert!(out.term_column("d_next").unwrap_or_default().iter().all(|&d| d == 1.0));
    }

    #[test]
    fn every_family_column_is_finite_and_the_size_of_the_run(seed in any::<u64>()) {
        let run = random_run(seed, false);
        let rows: usize = run.iter().map(|e| e.steps.len()).sum();
        for (kind, out) in compute_all(&run, &AdvantageSettings::default(), &EstimatorSettings::default(), &EnvInputs::default()) {
            let out = out.map_err(|e| TestCaseError::fail(format!("{kind}: {e}")))?;
            prop_assert_eq!(out.advantages.len(), rows);
            prop_assert_eq!(out.terms.len(), rows * out.term_names.len());
            prop_assert!(out.advantages.iter().all(|a| a.is_finite()), "{}", kind);
        }
    }
}
