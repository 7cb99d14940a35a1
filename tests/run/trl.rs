//! TRL GRPOTrainer completion logs: the fixtures in tests/fixtures/trl were written by TRL's own GRPOTrainer
//! (`make_fixtures.py`, beside them). The reader detects and reads them (rows, groups, rewards, extra columns,
//! chat messages), `gigscope advantages` recomputes TRL's logged `advantage` column under the settings each
//! fixture was trained with, and bad input (unequal groups, missing and unknown columns, a half-written file,
//! a rewritten file, repeated batches) gives clear notices without losing what was read. Waits for the live
//! watcher use a generous deadline and never assert on timing.

use crate::support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;
use support::live::wait_until;
use support::runs::{modified_ago, modified_just_now};

use gigscope::advantage::{compute, AdvantageOverrides, AdvantageSettings, Aggregation, ScaleRewards};
use gigscope::live::{self, apply, LiveEvent, LiveFile, WatchOptions, Watcher};
use gigscope::run::source::{detect, open_source, RunSource};
use gigscope::run::{Layout, Run, SourceOptions};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_gigscope");
const TOLERANCE: f64 = 1e-5;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/trl").join(name)
}

fn file(fixture_name: &str, step: u64) -> PathBuf {
    fixture(fixture_name).join(format!("completions/completions_{step:05}.parquet"))
}

fn gigscope(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run gigscope")
}

fn ok_stdout(out: &Output) -> String {
    assert!(out.status.success(), "gigscope failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).expect("UTF-8 output")
}

fn open(dir: &Path) -> Run {
    Run::open_as(dir, None, &SourceOptions::default()).expect("open the TRL log")
}

/// A copy of the fixture's `completions/` with only the given steps, in a fresh output directory.
fn copy_of(fixture_name: &str, steps: &[u64]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("completions")).unwrap();
    for &step in steps {
        let name = format!("completions_{step:05}.parquet");
        fs::copy(file(fixture_name, step), dir.path().join("completions").join(name)).unwrap();
    }
    dir
}

fn target(dir: &Path, step: u64) -> PathBuf {
    dir.join(format!("completions/completions_{step:05}.parquet"))
}

/// The advantages TRL logged, as pandas reads them (`pandas.json`), file by file in step order.
fn pandas_advantages(fixture_name: &str) -> Vec<f64> {
    let view: Value =
        serde_json::from_str(&fs::read_to_string(fixture(fixture_name).join("pandas.json")).unwrap()).unwrap();
    let files = view.as_object().unwrap();
    files.values().flat_map(|rows| rows.as_array().unwrap().iter().map(|r| r["advantage"].as_f64().unwrap())).collect()
}

fn settings_json(fixture_name: &str) -> Value {
    serde_json::from_str(&fs::read_to_string(fixture(fixture_name).join("settings.json")).unwrap()).unwrap()
}

/// The flags that give gigscope the settings `settings.json` records (TRL's defaults need none).
fn flags_for(fixture_name: &str) -> Vec<String> {
    let s = settings_json(fixture_name);
    let mut flags = Vec::new();
    if s["scale_rewards"] != "group" {
        flags.extend(["--scale-rewards".to_string(), s["scale_rewards"].as_str().unwrap().to_string()]);
    }
    if let Some(weights) = s["reward_weights"].as_array() {
        let weights: Vec<String> = weights.iter().map(|w| w.as_f64().unwrap().to_string()).collect();
        flags.extend(["--reward-weights".to_string(), weights.join(",")]);
    }
    if s["multi_objective_aggregation"] != "sum_then_normalize" {
        flags.extend(["--aggregation".to_string(), s["multi_objective_aggregation"].as_str().unwrap().to_string()]);
    }
    flags
}

fn advantages_jsonl(dir: &Path, flags: &[String]) -> Vec<serde_json::Map<String, Value>> {
    let mut args = vec!["advantages", dir.to_str().unwrap(), "--format", "jsonl"];
    args.extend(flags.iter().map(String::as_str));
    ok_stdout(&gigscope(&args)).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

const FIXTURES: [&str; 5] = ["default", "batch_weights", "num_iterations", "normalize_then_sum", "scale_none"];

#[test]
fn detected_as_trl_from_the_output_dir_or_its_completions_dir() {
    for dir in [fixture("default"), fixture("default").join("completions")] {
        assert_eq!(detect(&dir).unwrap(), Some(Layout::Trl), "{}", dir.display());
        let run = open(&dir);
        assert_eq!(run.layout, Layout::Trl);
        assert_eq!(run.episodes.len(), 24);
        // Files are named relative to the directory given.
        let first = run.episodes[0].source_file().unwrap();
        let expected = if dir.ends_with("completions") { "" } else { "completions/" };
        assert_eq!(first, format!("{expected}completions_00001.parquet"));
    }
    // --from trl reads it too, in every command.
    let dir = fixture("default");
    let out = ok_stdout(&gigscope(&["advantages", dir.to_str().unwrap(), "--from", "trl", "--format", "csv"]));
    assert_eq!(out.lines().count(), 25);
    let out = ok_stdout(&gigscope(&["stats", dir.to_str().unwrap(), "--from", "trl", "--json"]));
    let stats: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(stats["episodes"], 24);
    let out = gigscope(&["validate", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

#[test]
fn rows_become_one_step_episodes_with_rewards_groups_and_extras() {
    let run = open(&fixture("default"));
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    let meta = run.meta.as_ref().expect("the source describes the run");
    assert_eq!(meta.format.as_deref(), Some("trl-completions"));
    assert_eq!(meta.name.as_deref(), Some("default"));
    let advantage = meta.advantage.as_ref().unwrap();
    assert_eq!(advantage.scale_rewards, Some(ScaleRewards::Group));
    assert_eq!(advantage.aggregation, Some(Aggregation::SumThenNormalize));
    assert_eq!(meta.extra["reward_functions"], serde_json::json!(["length_reward", "keyword_reward"]));

    let view: Value =
        serde_json::from_str(&fs::read_to_string(fixture("default").join("pandas.json")).unwrap()).unwrap();
    let rows: Vec<&Value> = view.as_object().unwrap().values().flat_map(|r| r.as_array().unwrap()).collect();
    assert_eq!(rows.len(), run.episodes.len());
    for (i, (episode, row)) in run.episodes.iter().zip(&rows).enumerate() {
        let (step, line) = (i / 8 + 1, i % 8 + 1);
        assert_eq!(episode.id, format!("s{step}-r{line}"));
        assert_eq!(episode.group, format!("s{step}-g{}", (line - 1) / 4 + 1));
        assert_eq!(episode.iteration, step as i64);
        // Ids named after file and row cannot repeat: none is kept to look for a duplicate.
        assert_eq!(run.episode_ids.get(&episode.id), None);
        assert_eq!(
            episode.extra["source"],
            serde_json::json!({"file": format!("completions/completions_{step:05}.parquet"), "line": line})
        );
        assert_eq!(episode.steps.len(), 1);
        // Rewards as pandas reads them (NaN as null), in column order; the reward is their nansum.
        let outcome = episode.outcome.as_ref().unwrap();
        assert_eq!(outcome.extra["rewards"], row["rewards"], "{}", episode.id);
        let keys: Vec<&String> = outcome.extra["rewards"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["length_reward", "keyword_reward"]);
        let sum: f64 = row["rewards"].as_object().unwrap().values().filter_map(Value::as_f64).sum();
        assert_eq!(episode.steps[0].reward, sum);
        assert_eq!(episode.advantages.as_deref(), Some(&[row["advantage"].as_f64().unwrap()][..]));
        // The log_extra column is kept.
        assert!(episode.extra["columns"]["overlap"].is_string(), "{}", episode.id);
        assert_eq!(episode.instruction(), &*episode.steps[0].observation);
    }
    // Row 1 of step 1: no reward function scored it.
    assert_eq!(
        run.episodes[0].outcome.as_ref().unwrap().extra["rewards"],
        serde_json::json!({"length_reward": null, "keyword_reward": null})
    );
    assert_eq!(run.episodes[0].steps[0].reward, 0.0);
}

#[test]
fn chat_prompts_render_as_role_blocks_and_keep_their_messages() {
    let run = open(&fixture("batch_weights"));
    let episode = &run.episodes[0];
    let observation = &*episode.steps[0].observation;
    assert!(observation.starts_with("system: find items\n\nuser: "), "{observation:?}");
    assert!(episode.steps[0].action.starts_with("assistant: "), "{:?}", episode.steps[0].action);
    let user = observation.split("user: ").nth(1).unwrap();
    assert_eq!(episode.instruction(), user.trim());
    let messages = &episode.extra["messages"];
    assert_eq!(messages["prompt"][0], serde_json::json!({"role": "system", "content": "find items"}));
    assert_eq!(messages["completion"][0]["role"], "assistant");
    // Groups still come from equal prompts.
    assert_eq!(run.episodes.iter().filter(|e| e.group == "s1-g1").count(), 4);
}

#[test]
fn recomputed_advantages_equal_the_logged_ones() {
    for name in FIXTURES {
        let dir = fixture(name);
        let rows = advantages_jsonl(&dir, &flags_for(name));
        let logged = pandas_advantages(name);
        assert_eq!(rows.len(), logged.len(), "{name}");
        for (row, logged) in rows.iter().zip(&logged) {
            let recomputed = row["advantage"].as_f64().unwrap();
            assert!(
                (recomputed - logged).abs() < TOLERANCE,
                "{name} {}: {recomputed} vs TRL's {logged}",
                row["episode"]
            );
        }
        // stats compares the stored column with the recomputation itself.
        let mut args = vec!["stats", dir.to_str().unwrap(), "--json"];
        let flags = flags_for(name);
        args.extend(flags.iter().map(String::as_str));
        let stats: Value = serde_json::from_str(&ok_stdout(&gigscope(&args))).unwrap();
        assert_eq!(stats["stored"]["rows"], logged.len(), "{name}");
        let largest = stats["stored"]["largest"]["abs_diff"].as_f64().unwrap();
        assert!(largest < TOLERANCE, "{name}: largest stored-vs-recomputed difference {largest}");
    }
}

#[test]
fn wrong_settings_do_not_reproduce_and_bad_weights_are_refused() {
    // The batch fixture under TRL's defaults: the recorded settings are not the trained ones.
    let dir = fixture("batch_weights");
    let rows = advantages_jsonl(&dir, &[]);
    let logged = pandas_advantages("batch_weights");
    let worst = rows.iter().zip(&logged).map(|(r, l)| (r["advantage"].as_f64().unwrap() - l).abs()).fold(0.0, f64::max);
    assert!(worst > 1e-2, "defaults should not reproduce batch scaling with weights ({worst})");
    // Weights must match the reward functions.
    let out = gigscope(&["advantages", dir.to_str().unwrap(), "--reward-weights", "1,2,3"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("3 reward weight(s)") && err.contains("length_reward, keyword_reward"), "{err}");
}

#[test]
fn engine_reproduces_trl_from_the_library() {
    // The same check without the binary: the settings as overrides over TRL's recorded defaults.
    let run = open(&fixture("normalize_then_sum"));
    let recorded = run.meta.as_ref().and_then(|m| m.advantage.as_ref()).unwrap();
    let overrides = AdvantageOverrides {
        aggregation: Some(Aggregation::NormalizeThenSum),
        reward_weights: Some(gigscope::advantage::RewardWeights::new(&[1.0, 0.3]).unwrap()),
        ..AdvantageOverrides::default()
    };
    let settings = overrides.apply(recorded.apply(AdvantageSettings::default()));
    let table = compute(&run.episodes, &settings);
    for (e, episode) in run.episodes.iter().enumerate() {
        let stored = episode.advantages.as_ref().unwrap()[0];
        let recomputed = table.episode_rows(e)[0].advantage;
        assert!((stored - recomputed).abs() < TOLERANCE, "{}: {recomputed} vs {stored}", episode.id);
    }
}

#[test]
fn unequal_groups_are_kept_with_a_notice_and_group_size_overrides() {
    let dir = fixture("bad/unequal");
    let run = open(&dir);
    assert_eq!(run.episodes.len(), 7);
    let sizes: Vec<usize> =
        ["s2-g1", "s2-g2"].iter().map(|g| run.episodes.iter().filter(|e| e.group == *g).count()).collect();
    assert_eq!(sizes, [3, 4]);
    let notice = run.notices.iter().find(|n| n.contains("unequal size")).expect("a notice about unequal groups");
    assert!(notice.contains("completions/completions_00002.parquet") && notice.contains("rows 1 to 3: 3"), "{notice}");

    let run = Run::open_as(&dir, None, &SourceOptions { group_size: Some(4) }).unwrap();
    let groups: Vec<&str> = run.episodes.iter().map(|e| e.group.as_str()).collect();
    assert_eq!(groups, ["s2-g1", "s2-g1", "s2-g1", "s2-g1", "s2-g2", "s2-g2", "s2-g2"]);
    assert!(run.notices.iter().any(|n| n.contains("not a multiple of --group-size 4")), "{:?}", run.notices);
    assert!(
        run.notices.iter().any(|n| n.contains("rows 1 to 4 form a group") && n.contains("different prompts")),
        "{:?}",
        run.notices
    );
    // Every command takes --group-size.
    let out = ok_stdout(&gigscope(&["advantages", dir.to_str().unwrap(), "--group-size", "4", "--format", "jsonl"]));
    let groups: Vec<String> =
        out.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["group"].as_str().unwrap().to_string()).collect();
    assert_eq!(groups.iter().filter(|g| *g == "s2-g1").count(), 4);
}

#[test]
fn missing_columns_are_tolerated_and_unknown_ones_kept() {
    let run = open(&fixture("bad/columns"));
    assert_eq!(run.episodes.len(), 8);
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    let episode = &run.episodes[1];
    assert_eq!(episode.advantages, None);
    assert_eq!(episode.outcome.as_ref().unwrap().extra["rewards"].as_object().unwrap().len(), 1);
    assert_eq!(episode.extra["columns"]["meta"], serde_json::json!({"rank": 1, "tags": ["t", "1"]}));
    assert_eq!(episode.iteration, 2);
    assert!(run.notices.iter().any(|n| n.contains("no numeric `advantage` column")), "{:?}", run.notices);
    // Still computable.
    ok_stdout(&gigscope(&["advantages", fixture("bad/columns").to_str().unwrap()]));
}

#[test]
fn repeated_batches_of_num_iterations_are_marked_with_a_notice() {
    let run = open(&fixture("num_iterations"));
    assert_eq!(run.episodes.len(), 32);
    let repeats: Vec<&str> =
        run.notices.iter().filter(|n| n.contains("repeats the 8 rows")).map(String::as_str).collect();
    assert_eq!(repeats.len(), 2, "{:?}", run.notices);
    assert!(repeats[0].starts_with(
        "completions/completions_00002.parquet repeats the 8 rows of completions/completions_00001.parquet"
    ));
    for episode in &run.episodes {
        let marked = episode.extra.get("repeat_of").and_then(Value::as_str);
        match episode.iteration {
            2 => assert_eq!(marked, Some("completions/completions_00001.parquet")),
            4 => assert_eq!(marked, Some("completions/completions_00003.parquet")),
            _ => assert_eq!(marked, None),
        }
    }
}

/// Poll until the source has delivered what it can (a run comes in parts, `more`; a reset reads it again from
/// the next poll on): every event, and whether a file is still pending.
fn poll_until_quiet(source: &mut Box<dyn RunSource>) -> (Vec<LiveEvent>, bool) {
    let mut events = Vec::new();
    loop {
        let poll = source.poll();
        events.extend(poll.events);
        if !poll.more {
            return (events, poll.pending);
        }
    }
}

fn episodes_of(events: &[LiveEvent]) -> Vec<String> {
    events
        .iter()
        .flat_map(|e| match e {
            LiveEvent::Episodes(records) => records.iter().map(|(_, ep)| ep.id.clone()).collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// Notices and skipped files, as the run says them.
fn errors_of(events: &[LiveEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match e {
            LiveEvent::Error(m) => Some(m.clone()),
            LiveEvent::Skipped { file, reason: Some(reason) } => Some(format!("{file}: {reason}")),
            _ => None,
        })
        .collect()
}

#[test]
fn a_half_written_file_is_pending_then_delivered() {
    let dir = copy_of("default", &[1]);
    let mut source = open_source(dir.path(), Layout::Trl, &SourceOptions::default()).unwrap();
    let (events, pending) = poll_until_quiet(&mut source);
    assert_eq!(episodes_of(&events).len(), 8);
    assert!(!pending);

    let full = fs::read(file("default", 2)).unwrap();
    fs::write(target(dir.path(), 2), &full[..full.len() / 2]).unwrap();
    let (events, pending) = poll_until_quiet(&mut source);
    assert!(pending, "a torn file is pending: {events:?}");
    assert!(episodes_of(&events).is_empty() && errors_of(&events).is_empty(), "{events:?}");
    assert!(!events.iter().any(|e| matches!(e, LiveEvent::Reset(_))), "{events:?}");

    fs::write(target(dir.path(), 2), &full).unwrap();
    let (events, pending) = poll_until_quiet(&mut source);
    assert!(!pending);
    assert_eq!(episodes_of(&events), (1..=8).map(|r| format!("s2-r{r}")).collect::<Vec<_>>());
    assert!(errors_of(&events).is_empty(), "{events:?}");
}

#[test]
fn a_file_that_stays_broken_is_reported_once_naming_it() {
    let dir = copy_of("default", &[1]);
    let full = fs::read(file("default", 2)).unwrap();
    let path = target(dir.path(), 2);
    fs::write(&path, &full[..full.len() - 3]).unwrap();
    // Unchanged for a minute: not being written.
    modified_ago(&path, Duration::from_secs(60));
    let mut source = open_source(dir.path(), Layout::Trl, &SourceOptions::default()).unwrap();
    let (events, pending) = poll_until_quiet(&mut source);
    assert!(!pending);
    assert_eq!(episodes_of(&events).len(), 8, "what can be read is read");
    let errors = errors_of(&events);
    assert_eq!(errors.len(), 1, "{events:?}");
    assert!(errors[0].starts_with("completions/completions_00002.parquet: cannot be read"), "{}", errors[0]);
    let (events, pending) = poll_until_quiet(&mut source);
    assert!(events.is_empty() && !pending, "reported once: {events:?}");
    // The one-shot readers report it as a notice.
    let run = open(dir.path());
    assert!(run.notices.iter().any(|n| n.contains("completions_00002.parquet: cannot be read")), "{:?}", run.notices);
    // Repaired: read.
    fs::write(&path, &full).unwrap();
    let (events, _) = poll_until_quiet(&mut source);
    assert_eq!(episodes_of(&events).len(), 8);
}

#[test]
fn a_rewritten_step_file_resets_with_a_notice() {
    let dir = copy_of("default", &[1, 2, 3]);
    let mut source = open_source(dir.path(), Layout::Trl, &SourceOptions::default()).unwrap();
    let mut run = Run::empty(dir.path(), Layout::Trl);
    let (events, _) = poll_until_quiet(&mut source);
    for event in events {
        apply(&mut run, event);
    }
    assert_eq!(run.episodes.len(), 24);
    // As TRL does after an evaluation at the same step: the file is written again with other rows.
    fs::write(target(dir.path(), 2), fs::read(file("bad/unequal", 2)).unwrap()).unwrap();
    let (events, _) = poll_until_quiet(&mut source);
    let errors = errors_of(&events);
    assert!(
        errors
            .iter()
            .any(|e| e.starts_with("completions/completions_00002.parquet was rewritten") && e.contains("evaluation")),
        "{events:?}"
    );
    let reset = events.iter().position(|e| *e == LiveEvent::Reset(LiveFile::Episodes)).expect("a reset");
    let ids = episodes_of(&events[reset..]);
    assert_eq!(ids.len(), 8 + 7 + 8, "the whole run again, in order");
    assert!(ids[0] == "s1-r1" && ids[8] == "s2-r1" && ids[15] == "s3-r1", "{ids:?}");
    for event in events {
        apply(&mut run, event);
    }
    assert_eq!(run.episodes.len(), 23);
    // A file that appears before the ones delivered also re-reads the run in order.
    let dir = copy_of("default", &[2]);
    let mut source = open_source(dir.path(), Layout::Trl, &SourceOptions::default()).unwrap();
    assert_eq!(episodes_of(&source.poll().events).len(), 8);
    fs::copy(file("default", 1), target(dir.path(), 1)).unwrap();
    let (events, _) = poll_until_quiet(&mut source);
    assert_eq!(events.iter().filter(|e| matches!(e, LiveEvent::Reset(_))).count(), 1);
    assert_eq!(episodes_of(&events)[0], "s1-r1");
}

#[test]
fn the_watcher_delivers_a_new_step_file() {
    for notify in [true, false] {
        let dir = copy_of("default", &[1, 2]);
        let (mut run, tails) = live::open(dir.path()).unwrap();
        assert_eq!(tails.layout(), Layout::Trl);
        assert_eq!(run.episodes.len(), 16);
        let options = WatchOptions { notify, ..WatchOptions::default() };
        let (_watcher, rx) = Watcher::spawn(dir.path(), tails, options).unwrap();
        // Written the way pandas writes: the file grows, then its footer arrives.
        let full = fs::read(file("default", 3)).unwrap();
        fs::write(target(dir.path(), 3), &full[..full.len() / 3]).unwrap();
        // Still being written however late the watcher reads it (under load, seconds after the write).
        modified_just_now(&target(dir.path(), 3));
        std::thread::sleep(Duration::from_millis(50));
        fs::write(target(dir.path(), 3), &full).unwrap();
        let events = wait_until(&rx, |seen| episodes_of(seen).len() >= 8);
        assert!(errors_of(&events).is_empty(), "no error for a file being written: {events:?}");
        for event in events {
            apply(&mut run, event);
        }
        assert_eq!(run.episodes.len(), 24);
        assert_eq!(run.episodes[16].id, "s3-r1");
    }
}

#[test]
fn the_watcher_finds_completions_created_later() {
    let dir = tempfile::tempdir().unwrap();
    let (run, tails) = live::open_as(dir.path(), Some(Layout::Trl), &SourceOptions::default()).unwrap();
    assert!(run.episodes.is_empty());
    let (_watcher, rx) = Watcher::spawn(dir.path(), tails, WatchOptions::default()).unwrap();
    fs::create_dir(dir.path().join("completions")).unwrap();
    fs::copy(file("default", 1), target(dir.path(), 1)).unwrap();
    wait_until(&rx, |seen| episodes_of(seen).len() >= 8);
}

/// The fuzzing findings kept as tests (tests/fuzz/regressions/trainer_files, the TRL ones): a 5 KB completions
/// file whose footer declares a list of billions of entries, which the parquet decoder walks for a while before it
/// fails; one whose footer places a column chunk at a negative offset, on which parquet's reader panics; one whose
/// dictionary page declares billions of values (an abort in parquet's decoder); one with a dictionary-encoded data
/// page and no dictionary page (a panic in parquet's column reader); one whose pages make parquet's row reader
/// index a definition level past its batch (a panic, contained). Each file is skipped, or its rows from the damage
/// on reported as lost, with its name; the good file beside it is read whole, and nothing panics or hangs.
#[test]
fn trl_files_found_by_fuzzing_are_skipped_naming_them() {
    let findings = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz/regressions/trainer_files");
    let mut tried = 0;
    for finding in fs::read_dir(findings).unwrap() {
        let bytes = fs::read(finding.unwrap().path()).unwrap();
        // The fuzz target's first byte picks the trainer (odd: TRL); the file is the rest.
        if bytes.first().is_none_or(|b| b % 2 == 0) {
            continue;
        }
        tried += 1;
        let dir = copy_of("default", &[2]);
        let path = target(dir.path(), 1);
        fs::write(&path, &bytes[1..]).unwrap();
        modified_ago(&path, Duration::from_secs(60));
        let run = open(dir.path());
        assert_eq!(run.episodes.iter().filter(|e| e.iteration == 2).count(), 8, "the good file is read whole");
        let skipped = run.notices.iter().any(|n| n.contains("completions_00001.parquet: cannot be read"));
        let lost = run.errors.iter().any(|e| {
            e.file.as_deref() == Some("completions/completions_00001.parquet") && e.reason.contains("could not be read")
        });
        assert!(skipped || lost, "the damaged file is named: {:?} {:?}", run.notices, run.errors);
    }
    assert!(tried >= 5, "the TRL findings are there");
}
