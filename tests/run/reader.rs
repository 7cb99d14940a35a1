//! The run reader on real files: broken lines are reported and skipped, torn lines wait for their newline,
//! truncation and replacement are noticed, and writers append whole lines.

use std::io::Write;
use std::path::Path;

use gigscope::run::{Episode, JsonlTail, Run, RunError, RunMeta, RunWriter, Step, EPISODES_FILE};
use proptest::prelude::*;

fn episode(id: &str, group: &str, rewards: &[f64]) -> Episode {
    let steps =
        rewards.iter().enumerate().map(|(t, &r)| Step::new(format!("obs {t}"), format!("act {t}"), r)).collect();
    Episode::new(id, group, steps)
}

fn append_raw(path: &Path, bytes: &[u8]) {
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    file.write_all(bytes).unwrap();
}

#[test]
fn broken_lines_are_reported_with_numbers_and_good_lines_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(EPISODES_FILE);
    let good = serde_json::to_string(&episode("a", "g", &[0.0, 1.0])).unwrap();
    let mut text = Vec::new();
    text.extend_from_slice(format!("{good}\n").as_bytes());
    text.extend_from_slice(b"{not json\n");
    text.extend_from_slice(b"{\"id\":\"b\",\"steps\":[]}\n"); // missing group
    text.extend_from_slice(
        b"{\"id\":\"c\",\"group\":\"g\",\"steps\":[{\"observation\":\"o\",\"action\":\"x\",\"reward\":\"high\"}]}\n",
    );
    text.extend_from_slice(b"\xff\xfe\n");
    text.extend_from_slice(b"\n");
    text.extend_from_slice(format!("{}\n", good.replace("\"a\"", "\"d\"")).as_bytes());
    std::fs::write(&path, &text).unwrap();

    let run = Run::open(dir.path()).unwrap();
    let ids: Vec<&str> = run.episodes.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["a", "d"]);
    assert_eq!(run.episodes.iter().map(|e| run.episode_ids.get(&e.id)).collect::<Vec<_>>(), [Some(1), Some(7)]);
    let lines: Vec<u64> = run.errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, [2, 3, 4, 5]);
    assert!(run.errors[1].reason.contains("missing field `group`"), "{}", run.errors[1].reason);
    assert!(run.errors[2].reason.contains("invalid type"), "{}", run.errors[2].reason);
    assert!(run.errors[3].reason.contains("UTF-8"), "{}", run.errors[3].reason);
}

#[test]
fn torn_last_line_waits_for_its_newline() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(EPISODES_FILE);
    let line = serde_json::to_string(&episode("a", "g", &[1.0])).unwrap();
    let (head, rest) = line.split_at(10);
    append_raw(&path, head.as_bytes());
    let mut tail = JsonlTail::<Episode>::new(path.clone());
    let batch = tail.poll().unwrap();
    assert!(batch.records.is_empty() && batch.errors.is_empty() && !batch.reset);
    append_raw(&path, format!("{rest}\n").as_bytes());
    let batch = tail.poll().unwrap();
    assert_eq!(batch.records.len(), 1);
    assert_eq!(batch.records[0].0, 1);
    assert_eq!(batch.records[0].1.id, "a");
    assert!(tail.poll().unwrap().records.is_empty(), "a line is read once");
}

#[test]
fn truncation_and_replacement_reset_the_tail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(EPISODES_FILE);
    let mut writer = RunWriter::create(dir.path()).unwrap();
    for id in ["a", "b", "c"] {
        writer.append_episode(&episode(id, "g", &[0.0])).unwrap();
    }
    let mut tail = JsonlTail::<Episode>::new(path.clone());
    assert_eq!(tail.poll().unwrap().records.len(), 3);

    // Truncated to one line.
    let one = format!("{}\n", serde_json::to_string(&episode("x", "g", &[0.0])).unwrap());
    std::fs::OpenOptions::new().write(true).truncate(true).open(&path).unwrap().write_all(one.as_bytes()).unwrap();
    let batch = tail.poll().unwrap();
    assert!(batch.reset);
    assert_eq!(batch.records.iter().map(|(_, e)| e.id.as_str()).collect::<Vec<_>>(), ["x"]);

    // Replaced by a new file through a rename.
    let other = dir.path().join("new.jsonl");
    let two: String = ["p", "q"]
        .iter()
        .map(|id| format!("{}\n", serde_json::to_string(&episode(id, "g", &[1.0])).unwrap()))
        .collect();
    std::fs::write(&other, two).unwrap();
    std::fs::rename(&other, &path).unwrap();
    let batch = tail.poll().unwrap();
    assert!(batch.reset);
    assert_eq!(batch.records.iter().map(|(l, e)| (*l, e.id.as_str())).collect::<Vec<_>>(), [(1, "p"), (2, "q")]);
}

#[test]
fn rewritten_in_place_with_same_length_is_noticed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(EPISODES_FILE);
    let a = format!("{}\n", serde_json::to_string(&episode("a", "g", &[0.0])).unwrap());
    std::fs::write(&path, &a).unwrap();
    let mut tail = JsonlTail::<Episode>::new(path.clone());
    assert_eq!(tail.poll().unwrap().records.len(), 1);
    let b = a.replace("\"a\"", "\"b\"");
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().write_all(b.as_bytes()).unwrap();
    let batch = tail.poll().unwrap();
    assert!(batch.reset);
    assert_eq!(batch.records[0].1.id, "b");
}

#[test]
fn unknown_fields_survive_a_round_trip_and_defaults_apply() {
    let line = r#"{"id":"e","group":"g","custom":{"k":[1,2]},"steps":[{"observation":"o","action":"a","reward":1,"extra_step":"kept"}]}"#;
    let episode: Episode = serde_json::from_str(line).unwrap();
    assert_eq!(episode.iteration, 0);
    assert!(episode.steps[0].valid);
    assert_eq!(episode.steps[0].anchor_key(), "o");
    let again: serde_json::Value = serde_json::to_value(&episode).unwrap();
    assert_eq!(again["custom"]["k"][1], 2);
    assert_eq!(again["steps"][0]["extra_step"], "kept");
}

#[test]
fn errors_name_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let err = Run::open(&missing).unwrap_err();
    assert!(matches!(err, RunError::MissingDir(_)));
    assert!(err.to_string().contains("nope"));
    let err = Run::open(dir.path()).unwrap_err();
    assert!(err.to_string().contains("episodes.jsonl"), "{err}");
    std::fs::write(dir.path().join(EPISODES_FILE), "").unwrap();
    // A damaged run.json (optional) does not stop the read: it is skipped, named with its line.
    std::fs::write(dir.path().join("run.json"), "{\"name\": 3}").unwrap();
    let run = Run::open(dir.path()).unwrap();
    assert!(run.meta.is_none());
    assert_eq!(run.skipped.len(), 1, "{:?}", run.skipped);
    let said = run.skipped[0].to_string();
    assert!(said.starts_with("run.json: ") && said.contains("line 1"), "{said}");
}

#[test]
fn meta_is_replaced_atomically_and_episodes_appended() {
    let dir = tempfile::tempdir().unwrap();
    let mut writer = RunWriter::create(dir.path()).unwrap();
    let meta = RunMeta { name: Some("first".into()), ..RunMeta::default() };
    writer.write_meta(&meta).unwrap();
    writer.write_meta(&RunMeta { name: Some("second".into()), ..meta }).unwrap();
    writer.append_episode(&episode("a", "g", &[1.0])).unwrap();
    drop(writer);
    let mut writer = RunWriter::create(dir.path()).unwrap();
    writer.append_episode(&episode("b", "g", &[1.0])).unwrap();
    let run = Run::open(dir.path()).unwrap();
    assert_eq!(run.meta.unwrap().name.as_deref(), Some("second"));
    assert_eq!(run.episodes.len(), 2);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

/// A writer killed between writing a temporary file and renaming it leaves it behind, in the run directory or in
/// a subdirectory (a burst killed while saving an iteration's weights); opening the run removes it, and leaves a
/// living writer's alone.
#[test]
fn opening_a_run_removes_the_temporary_files_of_killed_writers_in_it_and_its_subdirectories() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("weights")).unwrap();
    let dead = [dir.path().join(".run.json.tmp4999999"), dir.path().join("weights/.iteration-3.ot.tmp4999999")];
    let living = dir.path().join(format!("weights/.iteration-4.ot.tmp{}", std::process::id()));
    for path in dead.iter().chain([&living]) {
        std::fs::write(path, "half").unwrap();
    }
    RunWriter::create(dir.path()).unwrap();
    for path in &dead {
        assert!(!path.exists(), "{} left behind", path.display());
    }
    assert!(living.exists(), "a living writer's temporary file is its own");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Every good line comes back, in order and with its line number, whatever garbage surrounds it; a torn
    /// last line is neither returned nor reported.
    #[test]
    fn every_good_line_survives_garbage(
        lines in proptest::collection::vec(prop_oneof![
            (0u32..1000).prop_map(Ok),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(Err),
        ], 0..40),
        torn in proptest::collection::vec(any::<u8>(), 1..30),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(EPISODES_FILE);
        let mut bytes = Vec::new();
        let mut expected = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            match line {
                Ok(n) => {
                    let id = format!("e{n}");
                    bytes.extend(serde_json::to_vec(&episode(&id, "g", &[f64::from(*n)])).unwrap());
                    expected.push((i as u64 + 1, id));
                }
                Err(garbage) => bytes.extend(garbage.iter().map(|&b| if b == b'\n' { b' ' } else { b })),
            }
            bytes.push(b'\n');
        }
        bytes.extend(torn.iter().filter(|&&b| b != b'\n'));
        std::fs::write(&path, &bytes).unwrap();
        let mut tail = JsonlTail::<Episode>::new(path);
        let batch = tail.poll().unwrap();
        let got: Vec<(u64, String)> = batch.records.into_iter().map(|(l, e)| (l, e.id)).collect();
        // A garbage line may by chance be a valid episode only if it parses; ours never contain `"steps"`.
        prop_assert_eq!(got, expected.clone());
        prop_assert!(batch.errors.iter().all(|e| e.line <= lines.len() as u64));
        prop_assert_eq!(tail.lines(), lines.len() as u64);
    }
}

#[test]
fn a_writer_reopening_a_run_cuts_a_torn_tail_into_a_side_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(EPISODES_FILE);
    let mut writer = RunWriter::create(dir.path()).unwrap();
    writer.append_episode(&episode("a", "g", &[1.0])).unwrap();
    drop(writer);
    // A writer killed mid-append leaves half a record without its newline.
    let whole = serde_json::to_string(&episode("b", "g", &[1.0])).unwrap();
    let torn = &whole[..whole.len() / 2];
    std::fs::OpenOptions::new().append(true).open(&path).unwrap().write_all(torn.as_bytes()).unwrap();

    let mut writer = RunWriter::create(dir.path()).unwrap();
    writer.append_episode(&episode("c", "g", &[1.0])).unwrap();
    drop(writer);
    let run = Run::open(dir.path()).unwrap();
    assert_eq!(run.episodes.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["a", "c"]);
    assert!(run.errors.is_empty(), "no record glued to the torn one: {:?}", run.errors);
    let side = gigscope::run::torn_tail_file(&path);
    assert_eq!(std::fs::read_to_string(&side).unwrap(), format!("{torn}\n"), "the torn bytes are kept");

    // A file that is nothing but a torn line is cut to empty; the side file keeps both tails in order.
    std::fs::write(&path, "{\"id\":").unwrap();
    RunWriter::create(dir.path()).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"");
    assert_eq!(std::fs::read_to_string(&side).unwrap(), format!("{torn}\n{{\"id\":\n"));
}
