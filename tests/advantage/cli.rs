//! The real `gigscope` binary on run directories: `advantages`, `stats`, `validate`, settings precedence and
//! error reporting.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_gigscope");

fn worked_example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/engine/worked_example")
}

fn gigscope(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("the gigscope binary runs")
}

fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

fn jsonl(out: &Output) -> Vec<serde_json::Map<String, Value>> {
    stdout(out)
        .lines()
        .map(|l| match serde_json::from_str(l) {
            Ok(Value::Object(m)) => m,
            other => panic!("not a JSON object: {l} ({other:?})"),
        })
        .collect()
}

/// A copy of the worked example with `run.json` holding `advantage`.
fn with_recorded_settings(advantage: Value) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(worked_example().join("episodes.jsonl"), dir.path().join("episodes.jsonl")).expect("copy");
    let meta = serde_json::json!({"format": "gigscope-run/1", "name": "t", "advantage": advantage});
    std::fs::write(dir.path().join("run.json"), meta.to_string()).expect("write run.json");
    dir
}

fn path(dir: &Path) -> &str {
    dir.to_str().expect("UTF-8 temp path")
}

#[test]
fn advantages_jsonl_has_exactly_the_contract_keys_in_file_order() {
    let rows = jsonl(&gigscope(&["advantages", path(&worked_example()), "--format", "jsonl"]));
    assert_eq!(rows.len(), 5);
    let keys: Vec<&str> = rows[0].keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "episode",
            "group",
            "iteration",
            "step",
            "reward",
            "return",
            "episode_advantage",
            "step_advantage",
            "advantage",
            "step_group",
            "step_group_size",
            "stored_advantage",
            "delta"
        ]
    );
    let order: Vec<(String, u64)> = rows
        .iter()
        .map(|r| (r["episode"].as_str().unwrap_or("").to_string(), r["step"].as_u64().unwrap_or(99)))
        .collect();
    assert_eq!(order, [("t1".into(), 0), ("t1".into(), 1), ("t1".into(), 2), ("t2".into(), 0), ("t2".into(), 1)]);
    assert_eq!(rows[0]["iteration"], 3);
    assert_eq!(rows[0]["group"], "g");
    assert_eq!(rows[0]["episode_advantage"], 4.0);
    assert_eq!(rows[3]["episode_advantage"], -6.0);
    assert_eq!(rows[1]["return"], 9.5);
    assert_eq!(rows[2]["reward"], 10.0);
    assert_eq!(rows[0]["step_group"], rows[3]["step_group"]);
    assert_eq!(rows[0]["step_group_size"], 2);
    assert_eq!(rows[4]["step_group_size"], 1);
    let a_s = rows[0]["step_advantage"].as_f64().unwrap_or(f64::NAN);
    assert!((a_s - 4.5125).abs() < 1e-12);
}

#[test]
fn numbers_are_printed_in_shortest_round_trip_form() {
    let out = stdout(&gigscope(&["advantages", path(&worked_example()), "--format", "jsonl", "--gamma", "0.3"]));
    // R_0 of t1 = 0.3 · 0.3 · 10 in double precision.
    let r0 = 0.3 * (0.3 * 10.0);
    let first = out.lines().next().unwrap_or("");
    assert!(first.contains(&format!("\"return\":{}", serde_json::to_string(&r0).unwrap_or_default())), "{first}");
}

#[test]
fn flags_override_run_json_which_overrides_defaults() {
    let dir = with_recorded_settings(serde_json::json!({"omega": 0.0, "gamma": 0.5}));
    let recorded = jsonl(&gigscope(&["advantages", path(dir.path()), "--format", "jsonl"]));
    // ω = 0 from run.json: A = A_E; γ = 0.5: R_0 of t1 = 2.5.
    assert_eq!(recorded[0]["advantage"], 4.0);
    assert_eq!(recorded[0]["return"], 2.5);
    let flagged = jsonl(&gigscope(&["advantages", path(dir.path()), "--format", "jsonl", "--omega", "2"]));
    assert_eq!(flagged[0]["return"], 2.5);
    assert_eq!(flagged[0]["advantage"], 4.0 + 2.0 * 1.25);
}

#[test]
fn estimators_and_anchor_modes_from_flags() {
    let run = worked_example();
    let rloo = jsonl(&gigscope(&["advantages", path(&run), "--format", "jsonl", "--estimator", "rloo"]));
    assert_eq!(rloo[0]["advantage"], 5.0);
    // Page anchors: both results pages are one group, so are both search pages.
    let page = jsonl(&gigscope(&["advantages", path(&run), "--format", "jsonl", "--anchor", "page"]));
    assert_eq!(page[1]["step_group"], page[4]["step_group"]);
    let sim = jsonl(&gigscope(&["advantages", path(&run), "--format", "jsonl", "--similarity", "0.5"]));
    assert!(sim.iter().all(|r| r["step_group_size"].as_u64().unwrap_or(0) >= 1));
    let shaped = jsonl(&gigscope(&[
        "advantages",
        path(&run),
        "--format",
        "jsonl",
        "--success-reward",
        "--efficiency-alpha2",
        "3",
    ]));
    assert_eq!(shaped[2]["reward"], 11.0);
}

#[test]
fn csv_and_table_formats() {
    let csv = stdout(&gigscope(&["advantages", path(&worked_example()), "--format", "csv"]));
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], "episode,group,iteration,step,reward,return,episode_advantage,step_advantage,advantage,step_group,step_group_size,stored_advantage,delta");
    assert_eq!(lines.len(), 6);
    assert!(lines[1].starts_with("t1,g,3,0,0.0,"), "{}", lines[1]);
    let table = stdout(&gigscope(&["advantages", path(&worked_example()), "--format", "table"]));
    assert!(table.lines().next().unwrap_or("").contains("A_E"));
    assert_eq!(table.lines().count(), 6);
}

#[test]
fn stats_json_and_readable() {
    let out = stdout(&gigscope(&["stats", path(&worked_example()), "--json"]));
    let stats: Value = serde_json::from_str(&out).expect("stats JSON");
    assert_eq!(stats["episodes"], 2);
    assert_eq!(stats["steps"], 5);
    assert_eq!(stats["step_groups"], 4);
    assert_eq!(stats["singleton_step_groups"], 3);
    assert_eq!(stats["singleton_share"], 0.75);
    assert_eq!(stats["mean_step_group_size"], 1.25);
    assert_eq!(stats["zero_variance_groups"], 0);
    assert_eq!(stats["step_group_sizes"], serde_json::json!([{"size": 1, "count": 3}, {"size": 2, "count": 1}]));
    assert_eq!(stats["groups"][0]["mean"], 6.0);
    // The fixture's trainer advantages are off by 0.5 on t2's last step.
    assert_eq!(stats["stored"]["rows"], 5);
    assert_eq!(stats["stored"]["largest"]["episode_id"], "t2");
    assert_eq!(stats["stored"]["largest"]["at"]["step"], 1);
    assert_eq!(stats["stored"]["largest"]["abs_diff"], 0.5);

    let text = stdout(&gigscope(&["stats", path(&worked_example())]));
    assert!(text.contains("singletons      3 (75.0%)"), "{text}");
    assert!(text.contains("largest |stored - recomputed| = 0.5 at episode t2 step 1"), "{text}");
}

#[test]
fn validate_lists_every_broken_line_and_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut bytes = Vec::new();
    bytes.extend_from_slice(
        b"{\"id\":\"a\",\"group\":\"g\",\"steps\":[{\"observation\":\"o\",\"action\":\"x\",\"reward\":1}]}\n",
    );
    bytes.extend_from_slice(b"not json\n");
    bytes.extend_from_slice(b"{\"id\":\"b\",\"group\":\"g\",\"steps\":[{\"observation\":\"o\",\"action\":\"x\"}]}\n");
    bytes.extend_from_slice(b"\xff\xfe\n");
    bytes.extend_from_slice(b"{\"id\":\"a\",\"group\":\"h\",\"steps\":[]}\n");
    bytes.extend_from_slice(b"{\"id\":\"torn\",\"gro");
    std::fs::write(dir.path().join("episodes.jsonl"), bytes).expect("write");
    let out = gigscope(&["validate", path(dir.path())]);
    assert_eq!(out.status.code(), Some(1));
    // The problems on standard error (the report, on standard output, counts them).
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(String::from_utf8_lossy(&out.stdout).contains("broken lines     4"));
    let lines: Vec<u64> = text.lines().filter_map(|l| l.split(':').nth(1).and_then(|n| n.parse().ok())).collect();
    assert_eq!(lines, [2, 3, 4, 5], "{text}");
    assert!(text.contains("reward"), "the missing field is named: {text}");
    assert!(text.contains("duplicate episode id \"a\""), "{text}");
    // stats reads the same run as validate: the duplicate is a skipped broken line there too, so one
    // episode (a) is counted, not two.
    let stats = gigscope(&["stats", "--json", path(dir.path())]);
    assert!(stats.status.success(), "{}", String::from_utf8_lossy(&stats.stderr));
    let json: Value = serde_json::from_slice(&stats.stdout).expect("stats json");
    assert_eq!(json["episodes"], 1, "{json}");
    assert!(String::from_utf8_lossy(&stats.stderr).contains("skipped 4 broken line(s)"));

    let ok = gigscope(&["validate", path(&worked_example())]);
    assert_eq!(ok.status.code(), Some(0), "{}", String::from_utf8_lossy(&ok.stdout));
}

#[test]
fn clear_errors_name_the_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("nope");
    for sub in ["advantages", "stats", "validate"] {
        let out = gigscope(&[sub, path(&missing)]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(path(&missing)) && err.contains("no such run directory"), "{sub}: {err}");

        let out = gigscope(&[sub, path(dir.path())]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(path(dir.path())) && err.contains("episodes"), "{sub}: {err}");
    }
    let out = gigscope(&["advantages", path(&worked_example()), "--similarity", "1.5"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("similarity threshold"));
    let out = gigscope(&["advantages", path(&worked_example()), "--anchor", "exact", "--similarity", "0.9"]);
    assert!(!out.status.success());
    let bad = with_recorded_settings(serde_json::json!({"gamma": 2.0}));
    let out = gigscope(&["stats", path(bad.path())]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("gamma"));
}

#[test]
fn help_everywhere() {
    for sub in ["advantages", "stats", "validate"] {
        let out = stdout(&gigscope(&[sub, "--help"]));
        assert!(out.contains("RUN") || out.contains("<RUN>"), "{sub}: {out}");
    }
    let out = stdout(&gigscope(&["advantages", "--help"]));
    for flag in [
        "--estimator",
        "--gamma",
        "--omega",
        "--norm",
        "--pooling",
        "--invalid-penalty",
        "--similarity",
        "--anchor",
        "--format",
        "--success-reward",
        "--efficiency-alpha1",
        "--efficiency-alpha2",
    ] {
        assert!(out.contains(flag), "missing {flag}");
    }
}

#[test]
fn successor_estimators_from_the_command_line() {
    use gigscope::advantage::estimators::{self, EnvInputs, EstimatorKind, EstimatorSettings};
    use gigscope::advantage::AdvantageSettings;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tui/basic");
    let run = gigscope::run::Run::open(&dir).expect("fixture");
    let family = EstimatorSettings { hgpo_history: 1, ..EstimatorSettings::default() };
    let expected = estimators::compute(
        EstimatorKind::Hgpo,
        &run.episodes,
        &AdvantageSettings::default(),
        &family,
        &EnvInputs::default(),
    )
    .expect("hgpo");
    let rows = jsonl(&gigscope(&[
        "advantages",
        "--format",
        "jsonl",
        "--estimator",
        "hgpo",
        "--hgpo-history",
        "1",
        path(&dir),
    ]));
    assert_eq!(rows.len(), expected.advantages.len());
    for (row, want) in rows.iter().zip(&expected.advantages) {
        let got = row["advantage"].as_f64().expect("number");
        assert!((got - want).abs() <= 1e-12, "{row:?} vs {want}");
    }
    // GiGPO's components stay beside the successor's advantage.
    let gigpo = jsonl(&gigscope(&["advantages", "--format", "jsonl", path(&dir)]));
    assert_eq!(rows[0]["episode_advantage"], gigpo[0]["episode_advantage"]);
    // soft-page reads WebShop page types: a run of another environment is refused with the reason.
    let verl = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/verl/v1");
    let out = gigscope(&["advantages", "--estimator", "soft-page", path(&verl)]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("soft-page") && err.contains("page"), "{err}");
    // The other estimators keep working on it.
    assert!(gigscope(&["stats", "--estimator", "proxmo", path(&verl)]).status.success());
}

/// A run trained with a successor records it in `run.json` (`estimator`, with its settings): `advantages` and
/// `stats` compute it without being told, flags apply over the recorded settings, and a malformed record is an
/// error naming the file and the field.
#[test]
fn the_estimator_run_json_records_is_the_default() {
    let dir = with_recorded_settings(serde_json::json!({}));
    let meta_file = dir.path().join("run.json");
    let mut meta: Value = serde_json::from_str(&std::fs::read_to_string(&meta_file).expect("run.json")).expect("json");
    meta["estimator"] = serde_json::json!({"kind": "hgpo", "settings": {"hgpo_history": 1}});
    std::fs::write(&meta_file, meta.to_string()).expect("write run.json");
    let advantage = |args: &[&str]| -> Vec<Value> {
        let mut all = vec!["advantages", "--format", "jsonl"];
        all.extend_from_slice(args);
        all.push(path(dir.path()));
        jsonl(&gigscope(&all)).into_iter().map(|row| row["advantage"].clone()).collect()
    };
    let recorded = advantage(&[]);
    assert_eq!(recorded, advantage(&["--estimator", "hgpo", "--hgpo-history", "1"]));
    assert_ne!(recorded, advantage(&["--estimator", "gigpo"]));
    // A family flag applies over the recorded settings.
    assert_eq!(advantage(&["--hgpo-history", "2"]), advantage(&["--estimator", "hgpo"]));
    assert!(gigscope(&["stats", path(dir.path())]).status.success());

    meta["estimator"] = serde_json::json!({"kind": "no-such-estimator"});
    std::fs::write(&meta_file, meta.to_string()).expect("write run.json");
    let out = gigscope(&["advantages", path(dir.path())]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("run.json") && err.contains("`estimator`"), "{err}");
}

/// The table's episode column against the jsonl's ids, row by row.
fn table_ids_are_whole(dir: &Path) {
    let table = stdout(&gigscope(&["advantages", path(dir), "--format", "table"]));
    let rows = jsonl(&gigscope(&["advantages", path(dir), "--format", "jsonl"]));
    let shown: Vec<&str> = table.lines().skip(1).map(|l| l.split_whitespace().next().unwrap_or("")).collect();
    let ids: Vec<&str> = rows.iter().map(|r| r["episode"].as_str().expect("episode id")).collect();
    assert_eq!(shown, ids, "{table}");
    // The columns stay aligned: every row's last column ends where the header's does.
    let width = table.lines().next().map(|l| l.chars().count());
    assert!(table.lines().all(|l| Some(l.chars().count()) == width), "{table}");
}

#[test]
fn the_table_never_cuts_an_episode_id() {
    // A verl dump (read whole): four rollouts of a group share the first 16 characters of their ids.
    let verl = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/verl/v1");
    table_ids_are_whole(&verl);
    // A gigscope run (streamed) whose ids differ only in their tail.
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(worked_example().join("episodes.jsonl")).expect("read");
    let long = text.replace("\"id\":\"t", "\"id\":\"s1-0ebb4354-0230-4f1e-9c1d-rollout-");
    std::fs::write(dir.path().join("episodes.jsonl"), long).expect("write");
    table_ids_are_whole(dir.path());
}

fn trl_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/trl").join(name)
}

#[test]
fn unscored_completions_have_no_reward_or_return_and_advantage_0() {
    // s1-r1 and s1-r3: both reward functions returned None.
    let dir = trl_fixture("default");
    let rows = jsonl(&gigscope(&["advantages", path(&dir), "--format", "jsonl"]));
    let row = |id: &str| rows.iter().find(|r| r["episode"] == id).expect("row").clone();
    for id in ["s1-r1", "s1-r3"] {
        let r = row(id);
        assert_eq!((&r["reward"], &r["return"]), (&Value::Null, &Value::Null), "{id}");
        assert_eq!(r["advantage"], 0.0, "{id}: TRL gives an unscored row advantage 0");
    }
    assert_eq!(row("s1-r2")["reward"], 0.5);
    let csv = stdout(&gigscope(&["advantages", path(&dir), "--format", "csv"]));
    assert!(csv.lines().any(|l| l.starts_with("s1-r1,s1-g1,1,0,,,0.0,")), "{csv}");
    let table = stdout(&gigscope(&["advantages", path(&dir), "--format", "table"]));
    let line = table.lines().find(|l| l.starts_with("s1-r1 ")).expect("s1-r1's row");
    assert_eq!(line.matches("unscored").count(), 2, "{line}");
    assert!(!table.lines().any(|l| l.starts_with("s1-r2 ") && l.contains("unscored")), "{table}");
}

#[test]
fn stored_advantage_and_delta_columns() {
    let rows = jsonl(&gigscope(&["advantages", path(&worked_example()), "--format", "jsonl"]));
    for r in &rows {
        let (stored, advantage) =
            (r["stored_advantage"].as_f64().expect("stored"), r["advantage"].as_f64().expect("A"));
        assert_eq!(r["delta"].as_f64(), Some(stored - advantage), "{r:?}");
    }
    // The fixture's trainer advantages are off by 0.5 on t2's last step.
    assert_eq!(rows[4]["delta"].as_f64().map(f64::abs), Some(0.5));
    // A run that records none: null, empty, "—".
    let verl = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/verl/v1");
    let rows = jsonl(&gigscope(&["advantages", path(&verl), "--format", "jsonl"]));
    assert!(rows.iter().all(|r| r["stored_advantage"].is_null() && r["delta"].is_null()));
    let table = stdout(&gigscope(&["advantages", path(&verl), "--format", "table"]));
    assert!(table.lines().next().unwrap_or("").ends_with("   stored     delta"), "{table}");
    assert!(table.lines().skip(1).all(|l| l.ends_with("        —         —")), "{table}");
}

#[test]
fn stats_lists_the_mismatching_steps_and_the_settings_that_reproduce_them() {
    // Trained with scale_rewards=batch and reward_weights [2, 0.5], which TRL's log does not record.
    let dir = trl_fixture("batch_weights");
    let stats: Value = serde_json::from_str(&stdout(&gigscope(&["stats", path(&dir), "--json"]))).expect("JSON");
    let stored = &stats["stored"];
    let mismatched = stored["mismatched_rows"].as_u64().expect("count");
    assert!(mismatched > 1, "{stored}");
    let listed: Vec<f64> =
        stored["mismatches"].as_array().expect("list").iter().map(|m| m["abs_diff"].as_f64().unwrap_or(0.0)).collect();
    assert_eq!(listed.len() as u64, mismatched.min(20));
    assert!(listed.windows(2).all(|w| w[0] >= w[1]), "largest first: {listed:?}");
    assert_eq!(listed[0], stored["largest"]["abs_diff"].as_f64().unwrap_or(-1.0));
    let flags = stats["reproducing"]["flags"].as_str().expect("settings found").to_string();
    assert!(flags.starts_with("--scale-rewards batch --reward-weights "), "{flags}");
    // The flags offered do reproduce every stored advantage.
    let mut args = vec!["advantages", path(&dir), "--format", "jsonl"];
    args.extend(flags.split(' '));
    for r in jsonl(&gigscope(&args)) {
        assert!(r["delta"].as_f64().is_some_and(|d| d.abs() <= 1e-4), "{r:?}");
    }
    let text = stdout(&gigscope(&["stats", path(&dir)]));
    assert!(text.contains(&format!("{mismatched} row(s) differ by more than 0.0001")), "{text}");
    assert!(text.contains(&format!("the stored advantages match `{flags}`")), "{text}");
    // With those settings nothing differs and nothing is offered.
    let mut args = vec!["stats", path(&dir), "--json"];
    args.extend(flags.split(' '));
    let stats: Value = serde_json::from_str(&stdout(&gigscope(&args))).expect("JSON");
    assert_eq!(stats["stored"]["mismatched_rows"], 0);
    assert!(stats.get("reproducing").is_none());
}

#[test]
fn stats_shows_no_success_rate_for_trl_completions() {
    let dir = trl_fixture("default");
    let stats: Value = serde_json::from_str(&stdout(&gigscope(&["stats", path(&dir), "--json"]))).expect("JSON");
    assert!(stats["groups"].as_array().expect("groups").iter().all(|g| g["success_rate"].is_null()));
    let text = stdout(&gigscope(&["stats", path(&dir)]));
    let row = text.lines().find(|l| l.starts_with("s1-g1 ")).expect("group row");
    assert!(row.contains(" — ") && !row.contains('%'), "{row}");
    // A run that records success keeps its rate.
    let text = stdout(&gigscope(&["stats", path(&worked_example())]));
    assert!(text.lines().any(|l| l.starts_with("g ") && l.contains('%')), "{text}");
}

#[test]
fn convert_records_the_trl_settings_that_reproduce_the_stored_advantages_or_those_given() {
    // Trained with scale_rewards=batch and reward_weights [2, 0.5], which TRL's log does not record.
    let dir = trl_fixture("batch_weights");
    let work = tempfile::tempdir().expect("tempdir");
    let inferred = work.path().join("inferred");
    let out = gigscope(&["convert", path(&dir), "--out", path(&inferred)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("the stored advantages are reproduced by `--scale-rewards batch --reward-weights"), "{said}");
    let meta: Value =
        serde_json::from_slice(&std::fs::read(inferred.join("run.json")).expect("run.json")).expect("JSON");
    assert_eq!(meta["advantage"]["scale_rewards"], "batch", "{meta}");
    assert!(meta["advantage"]["reward_weights"].as_array().is_some_and(|w| w.len() == 2), "{meta}");
    // The copy reads with its recorded settings, and they reproduce every stored advantage.
    let stats: Value = serde_json::from_str(&stdout(&gigscope(&["stats", path(&inferred), "--json"]))).expect("JSON");
    assert_eq!(stats["stored"]["mismatched_rows"], 0, "{}", stats["stored"]);

    // Flags given are what is recorded, inference or not.
    let given = work.path().join("given");
    let out = gigscope(&["convert", path(&dir), "--out", path(&given), "--scale-rewards", "none"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("reproduced by"));
    let meta: Value = serde_json::from_slice(&std::fs::read(given.join("run.json")).expect("run.json")).expect("JSON");
    assert_eq!(meta["advantage"]["scale_rewards"], "none", "{meta}");

    // A run whose stored advantages match what it records keeps its run.json's settings as they were.
    let plain = work.path().join("plain");
    let source = trl_fixture("default");
    let out = gigscope(&["convert", path(&source), "--out", path(&plain)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("reproduced by"));
}
