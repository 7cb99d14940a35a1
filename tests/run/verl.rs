//! verl rollout dumps (`trainer.rollout_data_dir`), read from fixtures made with verl 0.9.1's own dump code
//! (tests/fixtures/verl/make_fixtures.py): sessions and groups, rewards and extras, GRPO advantages equal to
//! verl's `compute_grpo_outcome_advantage`, the CLI on a dump, bad input, and a dump followed live.

use crate::support;

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use support::live::wait_until;
use support::runs::{modified_ago, modified_just_now};

use gigscope::advantage::{compute, AdvantageSettings, Estimator, Norm, Pooling};
use gigscope::live::{self, apply, LiveEvent, LiveFile, WatchOptions, Watcher};
use gigscope::run::source::{open_source, RunSource};
use gigscope::run::{Episode, Layout, Run, SourceOptions};
use serde_json::{json, Value};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/verl")
}

fn open(dir: &Path) -> Run {
    Run::open_as(dir, None, &SourceOptions::default()).unwrap()
}

/// Episode id → verl's advantage, from the fixture script (computed with verl's own functions).
fn expected_advantages(layout: &str) -> HashMap<String, f64> {
    let text = fs::read_to_string(fixtures().join("expected_advantages.json")).unwrap();
    let all: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(all["verl_version"], "0.9.1");
    all[layout].as_object().unwrap().iter().map(|(k, v)| (k.clone(), v.as_f64().unwrap())).collect()
}

/// The rows of a fixture step file, as verl wrote them (Python's NaN read as null).
fn fixture_rows(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(&l.replace("NaN", "null")).unwrap())
        .collect()
}

fn settings_of(run: &Run) -> AdvantageSettings {
    let overrides = run.meta.as_ref().and_then(|m| m.advantage.as_ref()).expect("a verl dump's meta has settings");
    overrides.apply(AdvantageSettings::default())
}

fn groups(run: &Run) -> BTreeMap<&str, Vec<&Episode>> {
    let mut out: BTreeMap<&str, Vec<&Episode>> = BTreeMap::new();
    for episode in &run.episodes {
        out.entry(episode.group.as_str()).or_default().push(episode);
    }
    out
}

fn source_of(episode: &Episode) -> (String, u64) {
    let source = &episode.extra["source"];
    (source["file"].as_str().unwrap().to_string(), source["line"].as_u64().unwrap())
}

#[test]
fn a_v1_dump_reads_one_episode_per_session_grouped_by_prompt() {
    let dir = fixtures().join("v1");
    let run = open(&dir);
    assert_eq!(run.layout, Layout::Verl);
    assert!(run.errors.is_empty(), "{:?}", run.errors);

    let meta = run.meta.as_ref().unwrap();
    assert_eq!(meta.format.as_deref(), Some("verl-rollout-dump"));
    assert_eq!(meta.name.as_deref(), Some("v1"));
    let settings = settings_of(&run);
    assert_eq!(
        (settings.estimator, settings.norm, settings.pooling, settings.gamma, settings.invalid_penalty),
        (Estimator::Grpo, Norm::MeanStdNorm, Pooling::Trajectories, 1.0, 0.0)
    );

    // Step 1: 3 prompts × 4 sessions; step 2: 4 + 3 + 1 sessions. 25 rows in all.
    assert_eq!(run.episodes.len(), 20);
    assert_eq!(run.episodes.iter().map(|e| e.steps.len()).sum::<usize>(), 25);
    assert_eq!(run.episodes.iter().filter(|e| e.iteration == 1).count(), 12);
    let sizes: Vec<usize> = groups(&run).values().map(Vec::len).collect();
    assert_eq!(sizes.iter().filter(|&&n| n == 4).count(), 4, "{sizes:?}");
    assert_eq!(sizes.iter().filter(|&&n| n == 3).count(), 1, "{sizes:?}");
    assert_eq!(sizes.iter().filter(|&&n| n == 1).count(), 1, "{sizes:?}");

    // Every row is a step of the episode of its uid's session, in output order, with its line recorded.
    for (number, name) in [(1, "1.jsonl"), (2, "2.jsonl")] {
        let rows = fixture_rows(&dir.join(name));
        for (at, row) in rows.iter().enumerate() {
            let uid = row["uid"].as_str().unwrap();
            let mut parts = uid.rsplitn(3, '_');
            let (index, session, prompt) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
            let id = format!("s{number}-{prompt}_{session}");
            let episode = run.episodes.iter().find(|e| e.id == id).unwrap_or_else(|| panic!("no episode {id}"));
            assert_eq!(episode.group, format!("s{number}-{prompt}"));
            assert_eq!(episode.iteration, number);
            let step = &episode.steps[index.parse::<usize>().unwrap()];
            assert_eq!(&*step.observation, row["input"].as_str().unwrap());
            assert_eq!(step.action, row["output"].as_str().unwrap());
            assert!(step.valid);
            let source = &episode.extra["source"];
            assert_eq!(source["file"], name);
            let lines = source.get("lines").cloned().unwrap_or_else(|| json!([source["line"]]));
            assert!(lines.as_array().unwrap().contains(&json!(at + 1)), "{id}: {source}");
            assert_eq!(episode.source_file(), Some(name));
            assert_eq!(episode.extra["gts"], row["gts"]);
            assert_eq!(episode.task.as_ref().unwrap().id, prompt);
        }
    }

    // A session of three outputs: the later inputs hold the earlier turns; the session's score is the last
    // step's reward, once.
    let long = run.episodes.iter().find(|e| e.steps.len() == 3).unwrap();
    assert!(long.steps[1].observation.starts_with(&*long.steps[0].observation));
    assert!(long.steps[1].observation.contains(&long.steps[0].action));
    assert_eq!(long.instruction(), &*long.steps[0].observation);
    let rewards: Vec<f64> = long.steps.iter().map(|s| s.reward).collect();
    assert_eq!(rewards, [0.0, 0.0, 1.0]);
    assert_eq!(long.total_reward(), 1.0);
    // Earlier steps keep what differs from the final row (their uid); the episode keeps the final row.
    assert!(long.steps[0].extra["uid"].as_str().unwrap().ends_with("_0"));
    assert!(long.extra["uid"].as_str().unwrap().ends_with("_2"));
    assert_eq!(long.extra["score"], 1.0);
    assert!(!long.extra.contains_key("step"), "the step column equals the file's number");
    let (file, line) = source_of(long);
    assert_eq!(file, "1.jsonl");
    assert_eq!(long.extra["source"]["lines"], json!([line, line + 1, line + 2]));

    // The NaN score: reward 0, the raw value kept, a notice with file and line.
    let nan: Vec<&Episode> =
        run.episodes.iter().filter(|e| e.steps.last().unwrap().extra.contains_key("unread_score")).collect();
    assert_eq!(nan.len(), 1);
    assert_eq!(nan[0].steps[0].reward, 0.0);
    assert_eq!(nan[0].steps[0].extra["unread_score"], "NaN");
    assert_eq!(nan[0].extra["score"], "NaN");
    let (_, nan_line) = source_of(nan[0]);
    let notice = run.notices.iter().find(|n| n.contains("finite")).expect("a NaN notice");
    assert!(notice.starts_with("2.jsonl: ") && notice.contains(&format!("line {nan_line} (\"NaN\")")), "{notice}");
    assert!(run.notices.iter().any(|n| n.starts_with("2.jsonl: groups of unequal size")), "{:?}", run.notices);
    assert!(!run.notices.iter().any(|n| n.contains("legacy")), "{:?}", run.notices);
    let fractional = run.episodes.iter().find(|e| e.total_reward() == 0.25).unwrap();
    // No acc column in a v1 training dump: success is a positive score.
    assert!(fractional.success());
    assert!(run.episodes.iter().any(|e| !e.success()));
    assert!(run.episodes.iter().any(|e| e.success()));
}

#[test]
fn a_legacy_dump_groups_rows_of_equal_input_and_keeps_the_reward_extras() {
    let dir = fixtures().join("legacy");
    let run = open(&dir);
    assert_eq!(run.layout, Layout::Verl);
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    assert_eq!(run.episodes.len(), 20);
    let legacy: Vec<&String> = run.notices.iter().filter(|n| n.contains("no uid column")).collect();
    assert_eq!(legacy.len(), 1, "one notice for the run: {:?}", run.notices);
    assert!(legacy[0].starts_with("1.jsonl: no uid column (verl's legacy trainer)"), "{}", legacy[0]);

    for (number, name) in [(1, "1.jsonl"), (2, "2.jsonl")] {
        let rows = fixture_rows(&dir.join(name));
        // The balancer reordered the rows: a prompt's rows are not contiguous.
        let inputs: Vec<&str> = rows.iter().map(|r| r["input"].as_str().unwrap()).collect();
        assert!(inputs.windows(3).any(|w| w[0] == w[2] && w[0] != w[1]), "groups are interleaved in {name}");
        for (at, row) in rows.iter().enumerate() {
            let line = at + 1;
            let episode = run.episodes.iter().find(|e| e.id == format!("s{number}-r{line}")).unwrap();
            assert_eq!(episode.steps.len(), 1);
            let first = inputs.iter().position(|i| *i == inputs[at]).unwrap() + 1;
            assert_eq!(episode.group, format!("s{number}-r{first}"));
            assert_eq!(episode.iteration, number);
            assert_eq!(source_of(episode), (name.to_string(), line as u64));
            let score = row["score"].as_f64().unwrap();
            assert_eq!(episode.steps[0].reward, score);
            // Reward extras as verl wrote them: numpy scalars as strings, NaN as "NaN", the rest as is.
            for key in ["gts", "acc", "pred", "format_ok", "request_id"] {
                assert_eq!(episode.extra[key], row[key], "{key} of {name}:{line}");
            }
            assert!(row["acc"].is_string());
            let judge = &episode.extra["judge_score"];
            assert!(judge == &row["judge_score"] || (row["judge_score"].is_null() && judge == "NaN"), "{judge}");
            assert_eq!(episode.success(), score > 0.0, "success follows acc");
        }
    }
    let sizes: Vec<usize> = groups(&run).values().map(Vec::len).collect();
    assert_eq!(sizes, [4; 5]);
}

/// gigscope's GRPO under the dump's settings against verl's own advantages for the same rows.
fn assert_advantages_match(run: &Run, expected: &HashMap<String, f64>) {
    let table = compute(&run.episodes, &settings_of(run));
    assert!(!run.episodes.is_empty());
    for (e, episode) in run.episodes.iter().enumerate() {
        let want = expected.get(&episode.id).unwrap_or_else(|| panic!("no expected advantage for {}", episode.id));
        for row in table.episode_rows(e) {
            assert!((row.advantage - want).abs() < 1e-5, "{}: {} vs verl {want}", episode.id, row.advantage);
        }
    }
}

#[test]
fn recomputed_grpo_advantages_equal_verls() {
    let v1 = expected_advantages("v1");
    assert_advantages_match(&open(&fixtures().join("v1")), &v1);
    assert_advantages_match(&open(&fixtures().join("v1-live")), &v1);
    assert_advantages_match(&open(&fixtures().join("legacy")), &expected_advantages("legacy"));
}

fn gigscope(args: &[&str]) -> (String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gigscope")).args(args).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "gigscope {args:?} failed: {stderr}");
    (stdout, stderr)
}

#[test]
fn the_cli_reads_a_dump_detected_or_forced() {
    for layout in ["v1", "legacy"] {
        let dir = fixtures().join(layout);
        let dir = dir.to_str().unwrap();
        let expected = expected_advantages(layout);
        for from in [None, Some("verl")] {
            let mut args = vec!["advantages", dir, "--format", "jsonl"];
            args.extend(from.iter().flat_map(|f| ["--from", f]));
            let (stdout, stderr) = gigscope(&args);
            let rows: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
            assert_eq!(rows.len(), if layout == "v1" { 25 } else { 20 });
            for row in &rows {
                let want = expected[row["episode"].as_str().unwrap()];
                assert!((row["advantage"].as_f64().unwrap() - want).abs() < 1e-5, "{row}");
            }
            if layout == "legacy" {
                assert!(stderr.contains("no uid column"), "{stderr}");
            } else {
                assert!(stderr.contains("2.jsonl: score not a finite number"), "{stderr}");
            }

            let mut args = vec!["stats", dir, "--json"];
            args.extend(from.iter().flat_map(|f| ["--from", f]));
            let (stdout, _) = gigscope(&args);
            let stats: Value = serde_json::from_str(&stdout).unwrap();
            assert_eq!(stats["episodes"], 20);
            assert_eq!(stats["episode_groups"], if layout == "v1" { 6 } else { 5 });
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Bad input, on small dumps written here, polled by hand.

fn row(uid: &str, input: &str, output: &str, score: &str) -> String {
    format!(r#"{{"input": "{input}", "output": "{output}", "gts": "4", "score": {score}, "step": 1, "uid": "{uid}"}}"#)
        + "\n"
}

fn group_rows(prompt: &str, scores: [&str; 2]) -> String {
    let mut text = String::new();
    for (session, score) in scores.iter().enumerate() {
        text += &row(&format!("{prompt}_{session}_0"), &format!("what is {prompt}?"), "4", score);
    }
    text
}

struct Polled {
    episodes: Vec<(u64, Episode)>,
    resets: usize,
    broken: Vec<gigscope::run::LineError>,
    notices: Vec<String>,
    pending: bool,
}

fn poll(source: &mut Box<dyn RunSource>) -> Polled {
    let poll = source.poll();
    let mut out =
        Polled { episodes: Vec::new(), resets: 0, broken: Vec::new(), notices: Vec::new(), pending: poll.pending };
    for event in poll.events {
        match event {
            LiveEvent::Episodes(records) => out.episodes.extend(records),
            LiveEvent::Reset(LiveFile::Episodes) => out.resets += 1,
            LiveEvent::BrokenLines(LiveFile::Episodes, errors) => out.broken.extend(errors),
            LiveEvent::Error(message) => out.notices.push(message),
            LiveEvent::Meta(_) => {}
            other => panic!("unexpected {other:?}"),
        }
    }
    out
}

/// Poll until something is delivered (a complete file needs a second look at an unchanged size).
fn poll_until_delivered(source: &mut Box<dyn RunSource>) -> Polled {
    for _ in 0..20 {
        let polled = poll(source);
        if !polled.episodes.is_empty() || polled.resets > 0 {
            return polled;
        }
        assert!(polled.pending, "nothing delivered and nothing pending");
    }
    panic!("never delivered");
}

fn ids(episodes: &[(u64, Episode)]) -> Vec<&str> {
    episodes.iter().map(|(_, e)| e.id.as_str()).collect()
}

fn verl_source(dir: &Path) -> Box<dyn RunSource> {
    open_source(dir, Layout::Verl, &SourceOptions::default()).unwrap()
}

#[test]
fn a_torn_last_line_is_held_back_until_its_file_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("1.jsonl"), group_rows("a", ["1.0", "0.0"])).unwrap();
    let full = group_rows("b", ["1.0", "0.0"]);
    let path = dir.path().join("2.jsonl");
    fs::write(&path, &full[..full.len() - 20]).unwrap();
    // Recently modified (the future, so that a slow machine cannot make it look abandoned).
    modified_just_now(&path);

    let mut source = verl_source(dir.path());
    let first = poll(&mut source);
    assert_eq!(ids(&first.episodes), ["s1-a_0", "s1-a_1"]);
    assert!(first.pending);
    assert!(first.broken.is_empty(), "a torn line being written is not broken: {:?}", first.broken);
    assert!(first.notices.iter().any(|n| n.starts_with("2.jsonl: still being written")), "{:?}", first.notices);

    let mut file = OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(&full.as_bytes()[full.len() - 20..]).unwrap();
    drop(file);
    let later = poll_until_delivered(&mut source);
    assert_eq!(ids(&later.episodes), ["s2-b_0", "s2-b_1"]);
    assert_eq!(later.resets, 0);
    assert!(later.broken.is_empty());
    let after = poll(&mut source);
    assert!(after.episodes.is_empty() && !after.pending, "nothing read twice");
}

#[test]
fn a_writer_killed_mid_line_leaves_its_complete_rows_and_a_reported_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = group_rows("a", ["1.0", "0.0"]) + r#"{"input": "what is a?", "outp"#;
    let path = dir.path().join("7.jsonl");
    fs::write(&path, text).unwrap();
    modified_ago(&path, Duration::from_secs(3600));
    let run = open(dir.path());
    assert_eq!(run.episodes.len(), 2);
    assert_eq!(run.errors.len(), 1);
    let error = &run.errors[0];
    assert_eq!((error.file.as_deref(), error.line), (Some("7.jsonl"), 3));
    assert!(error.reason.contains("incomplete last line"), "{error}");
    assert_eq!(error.to_string(), format!("7.jsonl: line 3: {}", error.reason));

    // A whole row that only lacks its newline (a file written by hand) is read, with a notice.
    let path = dir.path().join("8.jsonl");
    fs::write(&path, row("b_0_0", "q", "a", "1.0").trim_end()).unwrap();
    modified_ago(&path, Duration::from_secs(3600));
    let run = open(dir.path());
    assert_eq!(run.episodes.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["s7-a_0", "s7-a_1", "s8-b_0"]);
    assert!(run.notices.iter().any(|n| n == "8.jsonl: line 1 has no newline at its end; read as it is"));
}

#[test]
fn a_step_file_that_grows_after_it_was_read_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("1.jsonl");
    fs::write(&path, group_rows("a", ["1.0", "0.0"])).unwrap();
    let mut source = verl_source(dir.path());
    assert_eq!(ids(&poll(&mut source).episodes), ["s1-a_0", "s1-a_1"]);
    // More outputs of the last session: the session is read again whole, after a reset.
    let mut file = OpenOptions::new().append(true).open(&path).unwrap();
    file.write_all(row("a_1_1", "what is a? 4 tool: 4", "4", "0.0").as_bytes()).unwrap();
    drop(file);
    let polled = poll_until_delivered(&mut source);
    assert_eq!((polled.resets, ids(&polled.episodes)), (1, vec!["s1-a_0", "s1-a_1"]));
    assert_eq!(polled.episodes[1].1.steps.len(), 2);
    assert!(polled.notices.iter().any(|n| n == "1.jsonl: grew after it was read: reading the run again"));
}

#[test]
fn broken_lines_are_reported_with_file_and_line_and_the_rest_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = row("p_0_0", "q", "a", "1.0");
    text += "{\"input\": \"q\", \"output\": oops}\n";
    text += "[1, 2]\n";
    text += "\n";
    text += &row("p_1_0", "q", "b", "0.0");
    text += "{\"input\": \"q\", \"score\": NaNa}\n";
    fs::write(dir.path().join("3.jsonl"), text).unwrap();
    let run = open(dir.path());
    assert_eq!(run.episodes.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["s3-p_0", "s3-p_1"]);
    let lines: Vec<&Value> = run.episodes.iter().map(|e| &e.extra["source"]["line"]).collect();
    assert_eq!(lines, [1, 5]);
    let errors: Vec<(Option<&str>, u64)> = run.errors.iter().map(|e| (e.file.as_deref(), e.line)).collect();
    assert_eq!(errors, [(Some("3.jsonl"), 2), (Some("3.jsonl"), 3), (Some("3.jsonl"), 6)]);
    assert!(run.errors[1].reason.contains("must be a JSON object, found an array"), "{}", run.errors[1]);
}

#[test]
fn nan_infinities_and_numbers_written_as_strings_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let text = [
        r#"{"input": "q", "output": "a", "score": "0.5", "step": "4", "uid": "p_0_0", "extra": {"x": NaN}}"#,
        r#"{"input": "q", "output": "b", "score": NaN, "step": 4, "uid": "p_1_0", "note": "NaN Infinity"}"#,
        r#"{"input": "q", "output": "c", "score": -Infinity, "step": 4, "uid": "p_2_0"}"#,
        r#"{"input": "q", "output": "d", "score": "1e0", "step": 5, "uid": "p_3_0", "new_column": [1]}"#,
        r#"{"input": "q", "output": "e", "uid": "p_4_0"}"#,
        r#"{"output": "f", "score": 1}"#,
    ]
    .join("\n")
        + "\n";
    fs::write(dir.path().join("4.jsonl"), text).unwrap();
    let run = open(dir.path());
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    let rewards: Vec<f64> = run.episodes.iter().map(|e| e.steps[0].reward).collect();
    assert_eq!(rewards, [0.5, 0.0, 0.0, 1.0, 0.0, 1.0]);
    let e = &run.episodes;
    assert_eq!(e[0].extra["extra"], json!({"x": "NaN"}));
    assert!(!e[0].extra.contains_key("step"), "\"4\" is the file's step");
    assert_eq!(e[1].steps[0].extra["unread_score"], "NaN");
    assert_eq!(e[1].extra["note"], "NaN Infinity");
    assert_eq!(e[2].steps[0].extra["unread_score"], "-Infinity");
    assert_eq!(e[3].extra["step"], 5, "a step column that differs from the file's number is kept");
    assert_eq!(e[3].extra["new_column"], json!([1]));
    assert_eq!(e[4].steps[0].extra["unread_score"], Value::Null);
    assert_eq!((e[5].id.as_str(), e[5].group.as_str(), &*e[5].steps[0].observation), ("s4-r6", "s4-r6", ""));
    let notice = run.notices.iter().find(|n| n.contains("finite")).unwrap();
    assert!(notice.starts_with("4.jsonl: score not a finite number on line 2 (\"NaN\"), line 3"), "{notice}");
    assert!(notice.contains("line 5 (missing)"), "{notice}");
    assert!(run.notices.iter().any(|n| n == "4.jsonl: 1 rows without uid: grouped with the rows of equal input"));
}

#[test]
fn a_replaced_step_file_resets_and_everything_is_read_again_in_order() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("1.jsonl"), group_rows("a", ["1.0", "0.0"])).unwrap();
    fs::write(dir.path().join("2.jsonl"), group_rows("b", ["1.0", "0.0"])).unwrap();
    let mut source = verl_source(dir.path());
    assert_eq!(ids(&poll(&mut source).episodes), ["s1-a_0", "s1-a_1", "s2-b_0", "s2-b_1"]);

    // Replaced by a rename, with other content.
    let tmp = dir.path().join("1.jsonl.tmp");
    fs::write(&tmp, group_rows("c", ["0.0", "1.0"])).unwrap();
    fs::rename(&tmp, dir.path().join("1.jsonl")).unwrap();
    let polled = poll_until_delivered(&mut source);
    assert_eq!(polled.resets, 1);
    assert_eq!(ids(&polled.episodes), ["s1-c_0", "s1-c_1", "s2-b_0", "s2-b_1"]);
    assert!(polled.notices.iter().any(|n| n == "1.jsonl: was replaced after it was read: reading the run again"));

    // Truncated and rewritten in place (verl's open(..., "w")), shorter.
    fs::write(dir.path().join("2.jsonl"), row("d_0_0", "q", "a", "1.0")).unwrap();
    let polled = poll_until_delivered(&mut source);
    assert_eq!(polled.resets, 1);
    assert_eq!(ids(&polled.episodes), ["s1-c_0", "s1-c_1", "s2-d_0"]);
    assert!(polled.notices.iter().any(|n| n.starts_with("2.jsonl: shrank after it was read")), "{:?}", polled.notices);

    // Removed.
    fs::remove_file(dir.path().join("1.jsonl")).unwrap();
    let polled = poll(&mut source);
    assert_eq!((polled.resets, ids(&polled.episodes)), (1, vec!["s2-d_0"]));
    assert!(polled.notices.iter().any(|n| n.starts_with("1.jsonl: removed after it was read")));

    // A lower step arriving late: read again in step order.
    fs::write(dir.path().join("1.jsonl"), group_rows("e", ["1.0", "1.0"])).unwrap();
    let polled = poll_until_delivered(&mut source);
    assert_eq!((polled.resets, ids(&polled.episodes)), (1, vec!["s1-e_0", "s1-e_1", "s2-d_0"]));
    // New steps are appended without a reset.
    fs::write(dir.path().join("10.jsonl"), group_rows("f", ["1.0", "0.0"])).unwrap();
    let polled = poll_until_delivered(&mut source);
    assert_eq!((polled.resets, ids(&polled.episodes)), (0, vec!["s10-f_0", "s10-f_1"]));
    let quiet = poll(&mut source);
    assert!(quiet.episodes.is_empty() && quiet.resets == 0 && !quiet.pending);

    // Applied to a run, the resets leave exactly the current content.
    let run = open(dir.path());
    assert_eq!(run.episodes.len(), 5);
}

#[test]
fn the_watcher_only_wakes_for_step_files() {
    let source = verl_source(&fixtures().join("v1"));
    assert!(source.watches(Path::new("/x/12.jsonl")));
    assert!(!source.watches(Path::new("/x/12.jsonl.tmp")));
    assert!(!source.watches(Path::new("/x/episodes.jsonl")));
    assert!(!source.watches(Path::new("/x/step_12.jsonl")));
}

// ---------------------------------------------------------------------------------------------------------
// Live.

#[test]
fn new_step_files_are_followed_live() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["1.jsonl", "2.jsonl"] {
        fs::copy(fixtures().join("v1").join(name), dir.path().join(name)).unwrap();
    }
    let (mut run, tails) = live::open_as(dir.path(), None, &SourceOptions::default()).unwrap();
    assert_eq!((tails.layout(), run.episodes.len()), (Layout::Verl, 20));
    let (watcher, rx) = Watcher::spawn(dir.path(), tails, WatchOptions::default()).unwrap();

    // Step 3 arrives as verl writes it: one file, in two pieces, the first ending mid-line.
    let step3 = fs::read(fixtures().join("v1-live/3.jsonl")).unwrap();
    let cut = step3.len() / 2;
    assert_ne!(step3[cut - 1], b'\n');
    let path = dir.path().join("3.jsonl");
    let mut file = File::create(&path).unwrap();
    file.write_all(&step3[..cut]).unwrap();
    file.flush().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    file.write_all(&step3[cut..]).unwrap();
    drop(file);

    let count = |events: &[LiveEvent]| {
        let mut run = Run::empty(dir.path(), Layout::Verl);
        for event in events {
            apply(&mut run, event.clone());
        }
        run.episodes.iter().filter(|e| e.iteration == 3).count()
    };
    let events = wait_until(&rx, |events| count(events) == 8);
    drop(watcher);
    for event in events {
        apply(&mut run, event);
    }
    assert_eq!(run.episodes.iter().filter(|e| e.iteration == 3).count(), 8);
    assert_eq!(run.episodes.len(), 28);
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    assert_advantages_match(&run, &expected_advantages("v1"));
}

// ---------------------------------------------------------------------------------------------------------
// A step file read in parts (`read_in_parts_of`): what one-shot commands and the viewer do on large dumps.

/// Everything a source delivers until it has no more, then its last look (`finish`): the episodes with the
/// polls that delivered them, broken lines and notices; resets are not expected.
struct ReadInParts {
    episodes: Vec<(u64, Episode)>,
    polls_with_episodes: usize,
    broken: Vec<gigscope::run::LineError>,
    notices: Vec<String>,
}

fn read_in_parts(dir: &Path, part_bytes: u64) -> ReadInParts {
    let mut source = verl_source(dir);
    source.read_in_parts_of(part_bytes);
    let mut out = ReadInParts { episodes: Vec::new(), polls_with_episodes: 0, broken: Vec::new(), notices: Vec::new() };
    let take = |events: Vec<LiveEvent>, out: &mut ReadInParts| {
        let before = out.episodes.len();
        for event in events {
            match event {
                LiveEvent::Episodes(records) => out.episodes.extend(records),
                LiveEvent::BrokenLines(LiveFile::Episodes, errors) => out.broken.extend(errors),
                LiveEvent::Error(message) => out.notices.push(message),
                LiveEvent::Meta(_) => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        out.polls_with_episodes += usize::from(out.episodes.len() > before);
    };
    loop {
        let poll = source.poll();
        let more = poll.more;
        take(poll.events, &mut out);
        if !more {
            break;
        }
    }
    take(source.finish(), &mut out);
    out
}

/// Every episode as JSON, in the order delivered.
fn as_json(episodes: &[(u64, Episode)]) -> Vec<(u64, Value)> {
    episodes.iter().map(|(line, e)| (*line, serde_json::to_value(e).unwrap())).collect()
}

#[test]
fn a_step_file_read_in_parts_delivers_what_a_whole_read_does() {
    let dir = tempfile::tempdir().unwrap();
    // Multi-turn sessions whose rows are not together (session b_0's second output comes after other
    // sessions), a duplicate row, a broken line, a row without uid, a non-verl uid, an unreadable score.
    let mut first = String::new();
    first += &row("a_0_0", "what is a?", "one", "0.0");
    first += &row("a_0_1", "what is a? one", "two", "1.0");
    first += &row("b_0_0", "what is b?", "x", "0.0");
    first += &row("a_1_0", "what is a?", "three", "0.0");
    first += &row("a_0_1", "what is a? one", "two again", "1.0");
    first += "{\"input\": \"broken\n";
    first += &row("b_1_0", "what is b?", "y", "\"NaN\"");
    first += &row("b_0_1", "what is b? x", "z", "1.0");
    first += r#"{"input": "no uid", "output": "o", "score": 0.5}"#;
    first += "\n";
    first += &row("plain", "a uid of its own", "o", "1.0");
    fs::write(dir.path().join("1.jsonl"), &first).unwrap();
    fs::write(dir.path().join("2.jsonl"), group_rows("c", ["1.0", "0.0"])).unwrap();
    // Written a while ago, so that the first poll reads them.
    for name in ["1.jsonl", "2.jsonl"] {
        modified_ago(&dir.path().join(name), Duration::from_secs(10));
    }

    let whole = read_in_parts(dir.path(), u64::MAX);
    assert_eq!(whole.polls_with_episodes, 1);
    assert_eq!(
        ids(&whole.episodes),
        ["s1-a_0", "s1-b_0", "s1-a_1", "s1-b_1", "s1-r9", "s1-r10", "s2-c_0", "s2-c_1"],
        "sessions in the order of their first rows"
    );
    let b_0 = &whole.episodes[1].1;
    assert_eq!(b_0.steps.iter().map(|s| s.action.as_str()).collect::<Vec<_>>(), ["x", "z"]);
    let lines: Vec<u64> = whole.broken.iter().map(|e| e.line).collect();
    assert_eq!(lines, [5, 6], "{:?}", whole.broken);
    assert!(whole.broken[0].reason.starts_with("duplicate row"), "{:?}", whole.broken);

    let total = (first.len() + group_rows("c", ["1.0", "0.0"]).len()) as u64;
    for part_bytes in [1, 60, 100, 250, 400, total / 2, total] {
        let parts = read_in_parts(dir.path(), part_bytes);
        assert_eq!(as_json(&parts.episodes), as_json(&whole.episodes), "in parts of {part_bytes} bytes");
        assert_eq!(parts.broken, whole.broken, "in parts of {part_bytes} bytes");
        assert_eq!(parts.notices, whole.notices, "in parts of {part_bytes} bytes");
        if part_bytes < first.len() as u64 / 2 {
            assert!(parts.polls_with_episodes >= 3, "in parts of {part_bytes} bytes: {}", parts.polls_with_episodes);
        }
    }

    // verl's own dumps, the same.
    for layout in ["v1", "legacy"] {
        let dir = fixtures().join(layout);
        let whole = read_in_parts(&dir, u64::MAX);
        for part_bytes in [1, 500, 2000] {
            let parts = read_in_parts(&dir, part_bytes);
            assert_eq!(as_json(&parts.episodes), as_json(&whole.episodes), "{layout} in parts of {part_bytes}");
            assert_eq!(parts.notices, whole.notices, "{layout} in parts of {part_bytes}");
            assert!(parts.polls_with_episodes > 2, "{layout} in parts of {part_bytes}");
        }
    }
}

#[test]
fn a_step_file_replaced_while_read_in_parts_is_read_again_whole() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for prompt in ["a", "b", "c", "d"] {
        text += &group_rows(prompt, ["1.0", "0.0"]);
    }
    let path = dir.path().join("1.jsonl");
    fs::write(&path, &text).unwrap();
    modified_ago(&path, Duration::from_secs(10));
    let mut source = verl_source(dir.path());
    source.read_in_parts_of(200);
    let first = source.poll();
    assert!(first.more, "a part of the file is left");
    let delivered: Vec<String> = first
        .events
        .into_iter()
        .filter_map(|e| match e {
            LiveEvent::Episodes(records) => Some(records),
            _ => None,
        })
        .flatten()
        .map(|(_, e)| e.id.to_string())
        .collect();
    assert!(!delivered.is_empty() && delivered.len() < 8, "{delivered:?}");

    // Replaced by a rename before its next part is read: not read on from where it was.
    source.read_in_parts_of(u64::MAX);
    let tmp = dir.path().join("1.jsonl.tmp");
    fs::write(&tmp, group_rows("e", ["1.0", "0.0"])).unwrap();
    fs::rename(&tmp, &path).unwrap();
    let mut episodes = Vec::new();
    let mut resets = 0;
    for _ in 0..20 {
        let polled = poll(&mut source);
        resets += polled.resets;
        episodes.extend(polled.episodes);
        if resets > 0 && !episodes.is_empty() {
            break;
        }
    }
    assert_eq!(resets, 1);
    assert_eq!(ids(&episodes), ["s1-e_0", "s1-e_1"]);
}
