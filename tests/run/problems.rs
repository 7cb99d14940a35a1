//! What a one-shot read says about a run it could not read whole (issue 28, items 3, 4 and 10; issue 29,
//! item 9): `validate` writes its report to standard output and each problem to standard error, with an exit
//! status that says which; skipped files, torn tails and partial groups are problems; `convert` writes nothing
//! from a run it could not read whole; a damaged `run.json` is read as absent with a note.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use crate::support::runs::{modified_ago, modified_just_now};
use gigscope::run::cache::CachedHead;
use gigscope::run::{partial_groups, Episode, Run, Step, TailPosition, EPISODES_FILE};

const BIN: &str = env!("CARGO_BIN_EXE_gigscope");

fn gigscope(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("the gigscope binary runs")
}

fn path(dir: &Path) -> &str {
    dir.to_str().expect("UTF-8 path")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn line(id: &str, group: &str, iteration: i64) -> String {
    let mut episode = Episode::new(id, group, vec![Step::new("o", "a", 1.0)]);
    episode.iteration = iteration;
    serde_json::to_string(&episode).unwrap() + "\n"
}

/// A gigscope run of `groups` (name, iteration, size), written in order.
fn run_of(groups: &[(&str, i64, usize)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let text: String =
        groups.iter().flat_map(|&(g, it, n)| (0..n).map(move |k| line(&format!("{g}-{k}"), g, it))).collect();
    fs::write(dir.path().join(EPISODES_FILE), text).unwrap();
    dir
}

#[test]
fn validate_writes_the_report_to_stdout_and_the_problems_to_stderr() {
    let clean = gigscope(&["validate", path(&fixture("engine/worked_example"))]);
    assert_eq!(clean.status.code(), Some(0), "{}", stderr(&clean));
    let report = stdout(&clean);
    assert!(report.contains("episodes") && report.contains("ok: no problems"), "{report}");
    assert!(stderr(&clean).is_empty(), "nothing wrong, nothing on stderr: {}", stderr(&clean));

    let dir = run_of(&[("g", 1, 2)]);
    let mut file = fs::OpenOptions::new().append(true).open(dir.path().join(EPISODES_FILE)).unwrap();
    file.write_all(b"{not json\n").unwrap();
    let out = gigscope(&["validate", path(dir.path())]);
    assert_eq!(out.status.code(), Some(1));
    let (report, problems) = (stdout(&out), stderr(&out));
    assert!(report.contains("broken lines     1") && report.contains("1 problem(s)"), "{report}");
    assert!(!report.contains("{not json") && !report.contains(":3:"), "problems are not in the report: {report}");
    assert!(problems.contains(&format!("{}:3: ", dir.path().join(EPISODES_FILE).display())), "{problems}");
}

#[test]
fn a_torn_tail_that_stopped_growing_is_a_problem_and_one_being_written_is_said_skipped() {
    let dir = run_of(&[("g", 1, 2)]);
    let episodes = dir.path().join(EPISODES_FILE);
    let mut file = fs::OpenOptions::new().append(true).open(&episodes).unwrap();
    file.write_all(br#"{"id":"g-2","gro"#).unwrap();
    drop(file);
    modified_just_now(&episodes);
    // Being written: not read, and said so (one-shot reads have no later look).
    let out = gigscope(&["validate", path(dir.path())]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stderr(&out).contains("line 3 is unfinished") && stderr(&out).contains("skipped"), "{}", stderr(&out));
    // Left by a writer that stopped: a torn tail.
    modified_ago(&episodes, Duration::from_secs(60));
    let out = gigscope(&["validate", path(dir.path())]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stderr(&out).contains(&format!("{}:3: torn tail", episodes.display())), "{}", stderr(&out));
    assert!(stdout(&out).contains("torn tail        yes"), "{}", stdout(&out));
    let run = Run::open(dir.path()).unwrap();
    let tail = run.torn_tail.expect("reported");
    assert_eq!((tail.line, tail.bytes), (3, 16));
    assert_eq!(run.episodes.len(), 2);
}

#[test]
fn a_group_cut_short_by_a_stopped_writer_is_partial_not_a_smaller_group() {
    // The trainer plays 4 episodes per group (run.json); iteration 2's last group has 2. Iteration 0 (played by
    // hand) has groups of any size.
    let dir = run_of(&[("p1", 0, 3), ("p2", 0, 1), ("a", 1, 4), ("b", 1, 4), ("c", 2, 4), ("d", 2, 2)]);
    let meta =
        r#"{"format": "gigscope-run/1", "train": {"episodes_per_goal": 4}, "bursts": [{"episodes_per_goal": 4}]}"#;
    fs::write(dir.path().join("run.json"), meta).unwrap();
    let out = gigscope(&["validate", path(dir.path())]);
    assert_eq!(out.status.code(), Some(1));
    let problems = stderr(&out);
    assert!(problems.contains("group d (iteration 2) has 2 of the 4 episodes"), "{problems}");
    assert!(!problems.contains("group p"), "{problems}");
    assert!(stdout(&out).contains("partial groups   1"), "{}", stdout(&out));
    // stats counts it as partial too, in text and JSON.
    let out = gigscope(&["stats", path(dir.path())]);
    assert!(stdout(&out).contains("partial group   d (iteration 2): 2 of 4 episodes"), "{}", stdout(&out));
    assert!(stderr(&out).contains("group d (iteration 2) has 2 of the 4"), "{}", stderr(&out));
    let out = gigscope(&["stats", "--json", path(dir.path())]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["partial_groups"],
        serde_json::json!([{"group": "d", "iteration": 2, "episodes": 2, "expected": 4}])
    );
    // Without a recorded group size a smaller group is not taken for a cut one.
    fs::remove_file(dir.path().join("run.json")).unwrap();
    assert_eq!(gigscope(&["validate", path(dir.path())]).status.code(), Some(0));
    // Every recorded size is a whole group (bursts of 8 and 4); a group of 6 is cut from one of 8.
    let groups = [("a", 1), ("a", 1), ("a", 1), ("a", 1), ("b", 2), ("b", 2), ("b", 2)];
    let partial = partial_groups(groups.iter().copied().cycle().take(7), &[4, 8]);
    assert_eq!(partial.len(), 1, "{partial:?}");
    assert_eq!((partial[0].group.as_str(), partial[0].episodes, partial[0].expected), ("b", 3, 4));
    assert!(partial_groups(groups.iter().copied(), &[]).is_empty());
    let six = vec![("c", 3); 6];
    assert_eq!(partial_groups(six, &[4, 8])[0].expected, 8);
}

#[test]
fn without_a_recorded_group_size_a_group_smaller_than_its_iterations_usual_size_is_partial() {
    // No run.json: iteration 1's groups are mostly of 4, so its group of 2 was cut short; iteration 2's two
    // groups of unequal size, and iteration 3's two sizes each twice, say nothing; iteration 0 is left out.
    let dir = run_of(&[
        ("p", 0, 1),
        ("q", 0, 3),
        ("q2", 0, 3),
        ("a", 1, 4),
        ("b", 1, 4),
        ("c", 1, 2),
        ("d", 1, 5),
        ("e", 2, 4),
        ("f", 2, 3),
        ("g", 3, 4),
        ("h", 3, 4),
        ("i", 3, 2),
        ("j", 3, 2),
    ]);
    let out = gigscope(&["validate", path(dir.path())]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let problems = stderr(&out);
    assert!(
        problems.contains("group c (iteration 1) has 2 of the 4 episodes of most groups of its iteration"),
        "{problems}"
    );
    for other in ["group p ", "group d ", "group f ", "group i ", "group j "] {
        assert!(!problems.contains(other), "{other}: {problems}");
    }
    assert!(stdout(&out).contains("partial groups   1"), "{}", stdout(&out));
    // The library's count, as stats and the TUI take it.
    let groups = [("a", 1), ("a", 1), ("b", 1), ("b", 1), ("c", 1)];
    let partial = partial_groups(groups.iter().copied(), &[]);
    assert_eq!(partial.len(), 1, "{partial:?}");
    assert_eq!((partial[0].group.as_str(), partial[0].episodes, partial[0].expected), ("c", 1, 2));
    assert!(!partial[0].recorded);
}

#[test]
fn a_trl_file_that_cannot_be_read_fails_validate_and_convert_writes_nothing() {
    let src = fixture("trl/default");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    fs::create_dir_all(dir.join("completions")).unwrap();
    for entry in fs::read_dir(src.join("completions")).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), dir.join("completions").join(entry.file_name())).unwrap();
    }
    let second = dir.join("completions/completions_00002.parquet");
    let bytes = fs::read(&second).unwrap();
    fs::write(&second, &bytes[..bytes.len() - 3]).unwrap();
    modified_just_now(&second);
    // Just written: still being written, said at once.
    let out = gigscope(&["validate", path(&dir)]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stderr(&out).contains("completions_00002.parquet: skipped"), "{}", stderr(&out));
    assert!(stderr(&out).contains("still being written"), "{}", stderr(&out));
    // Unchanged for a minute: not being written, skipped all the same.
    modified_ago(&second, Duration::from_secs(60));
    let out = gigscope(&["validate", path(&dir)]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(stdout(&out).contains("skipped files    1"), "{}", stdout(&out));
    let copy = tmp.path().join("copy");
    let out = gigscope(&["convert", path(&dir), "--out", path(&copy)]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("completions/completions_00002.parquet"), "{}", stderr(&out));
    assert!(!copy.exists(), "nothing written");
    let staging: Vec<_> = fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(staging.len(), 1, "no staging left: {staging:?}");
}

#[test]
fn a_damaged_run_json_is_read_as_absent_with_a_note_and_validate_reports_it() {
    let dir = run_of(&[("a", 1, 2)]);
    fs::write(dir.path().join("run.json"), "{\"format\": ").unwrap();
    for command in ["advantages", "stats"] {
        let out = gigscope(&[command, path(dir.path())]);
        assert!(out.status.success(), "{command}: {}", stderr(&out));
        assert!(stderr(&out).contains("run.json") && stderr(&out).contains("optional"), "{command}: {}", stderr(&out));
    }
    let out = gigscope(&["validate", path(dir.path())]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("run.json: skipped"), "{}", stderr(&out));
    assert!(stdout(&out).contains("episodes         2"), "{}", stdout(&out));
}

#[test]
fn an_episodes_file_that_is_a_directory_or_a_symlink_loop_is_said_as_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join(EPISODES_FILE)).unwrap();
    let out = gigscope(&["validate", path(dir.path())]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("is a directory"), "{}", stderr(&out));

    let dir = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(dir.path().join("loop"), dir.path().join(EPISODES_FILE)).unwrap();
    std::os::unix::fs::symlink(dir.path().join(EPISODES_FILE), dir.path().join("loop")).unwrap();
    for command in ["validate", "advantages"] {
        let out = gigscope(&[command, path(dir.path())]);
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(err.contains("symbolic links") && !err.contains("no episodes file"), "{command}: {err}");
    }
}

#[test]
fn a_duplicated_verl_row_is_reported_not_read_as_another_step() {
    let dir = tempfile::tempdir().unwrap();
    let row = |uid: &str, score: f64| {
        format!("{{\"input\":\"q\",\"output\":\"a\",\"score\":{score},\"step\":1,\"uid\":\"{uid}\"}}\n")
    };
    let text = row("p_0_0", 1.0) + &row("p_1_0", 0.0) + &row("p_1_0", 0.0);
    fs::write(dir.path().join("1.jsonl"), text).unwrap();
    modified_ago(&dir.path().join("1.jsonl"), Duration::from_secs(60));
    let run = Run::open_as(dir.path(), None, &Default::default()).unwrap();
    assert_eq!(run.episodes.len(), 2);
    assert!(run.episodes.iter().all(|e| e.steps.len() == 1), "no extra step");
    assert_eq!(run.errors.len(), 1, "{:?}", run.errors);
    assert_eq!(run.errors[0].line, 3);
    assert!(run.errors[0].reason.contains("duplicate row"), "{}", run.errors[0].reason);
}

#[test]
fn a_one_shot_read_of_a_verl_step_file_being_written_takes_its_complete_rows_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let row = |uid: &str| format!("{{\"input\":\"q\",\"output\":\"a\",\"score\":1.0,\"uid\":\"{uid}\"}}\n");
    fs::write(dir.path().join("1.jsonl"), row("p_0_0") + &row("p_1_0")).unwrap();
    modified_ago(&dir.path().join("1.jsonl"), Duration::from_secs(60));
    let newest = row("r_0_0") + &row("r_1_0");
    fs::write(dir.path().join("2.jsonl"), &newest[..newest.len() - 10]).unwrap();
    modified_just_now(&dir.path().join("2.jsonl"));
    let run = Run::open_as(dir.path(), None, &Default::default()).unwrap();
    let ids: Vec<&str> = run.episodes.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["s1-p_0", "s1-p_1", "s2-r_0"]);
    assert!(run.errors.is_empty(), "{:?}", run.errors);
    assert_eq!(run.skipped.len(), 1, "{:?}", run.skipped);
    assert_eq!(run.skipped[0].file, "2.jsonl");
    assert!(run.skipped[0].reason.contains("line 2 is unfinished"), "{}", run.skipped[0].reason);
}

#[test]
fn taking_the_load_cache_says_the_line_reading_goes_on_from() {
    let head = CachedHead {
        pages: Default::default(),
        errors: Vec::new(),
        position: TailPosition { offset: 1000, lines: 256, last_line: Vec::new() },
        episodes: 256,
    };
    let said = head.taken();
    assert!(said.starts_with("256 episodes taken from the load cache"), "{said}");
    assert!(said.contains("reading on from line 257"), "{said}");
}

/// A TRL step file written with parquet's own writer: `prompt` and `completion` text columns (whatever bytes
/// are given), a reward and the advantage.
fn write_trl_file(path: &Path, cells: &[(&[u8], &[u8])]) {
    write_trl_file_as(path, cells, Default::default());
}

/// [`write_trl_file`] with the writer's properties given (encoding, compression).
fn write_trl_file_as(path: &Path, cells: &[(&[u8], &[u8])], properties: parquet::file::properties::WriterProperties) {
    use parquet::data_type::{ByteArray, ByteArrayType, DoubleType};
    use parquet::file::writer::SerializedFileWriter;
    let schema = parquet::schema::parser::parse_message_type(
        "message schema { REQUIRED BYTE_ARRAY prompt (UTF8); REQUIRED BYTE_ARRAY completion (UTF8); \
         REQUIRED DOUBLE reward_fn; REQUIRED DOUBLE advantage; }",
    )
    .unwrap();
    let file = fs::File::create(path).unwrap();
    let mut writer = SerializedFileWriter::new(file, std::sync::Arc::new(schema), properties.into()).unwrap();
    let mut group = writer.next_row_group().unwrap();
    let mut index = 0;
    while let Some(mut column) = group.next_column().unwrap() {
        match index {
            0 | 1 => {
                let values: Vec<ByteArray> =
                    cells.iter().map(|c| ByteArray::from(if index == 0 { c.0 } else { c.1 }.to_vec())).collect();
                column.typed::<ByteArrayType>().write_batch(&values, None, None).unwrap();
            }
            _ => {
                let values: Vec<f64> = (0..cells.len()).map(|r| r as f64).collect();
                column.typed::<DoubleType>().write_batch(&values, None, None).unwrap();
            }
        }
        column.close().unwrap();
        index += 1;
    }
    group.close().unwrap();
    writer.close().unwrap();
}

#[test]
fn a_bad_trl_cell_skips_its_row_alone_named_by_file_and_row() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("completions")).unwrap();
    let file = dir.path().join("completions/completions_00001.parquet");
    let rows: [(&[u8], &[u8]); 4] =
        [(b"p1", b"fine"), (b"p1", b"bad \xff byte"), (b"p2", b"also fine"), (b"p2", b"last")];
    write_trl_file(&file, &rows);
    modified_ago(&file, Duration::from_secs(60));
    let run = Run::open_as(dir.path(), None, &Default::default()).unwrap();
    let ids: Vec<&str> = run.episodes.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["s1-r1", "s1-r3", "s1-r4"]);
    assert_eq!(run.episodes[1].steps[0].action, "also fine");
    assert_eq!(run.errors.len(), 1, "{:?}", run.errors);
    let error = &run.errors[0];
    assert_eq!((error.file.as_deref(), error.line), (Some("completions/completions_00001.parquet"), 2));
    assert!(error.reason.contains("`completion`") && error.reason.contains("UTF-8"), "{}", error.reason);
    assert!(!error.reason.contains("255"), "no raw bytes: {}", error.reason);
}

#[test]
fn a_trl_file_parquet_panics_on_is_reported_by_name_and_the_files_beside_it_are_read() {
    use parquet::basic::Compression;
    use parquet::file::properties::WriterProperties;
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("completions")).unwrap();
    let damaged = dir.path().join("completions/completions_00001.parquet");
    let rows: [(&[u8], &[u8]); 4] = [(b"p1", b"aaaa"), (b"p1", b"bbbb"), (b"p2", b"cccc"), (b"p2", b"dddd")];
    let plain = WriterProperties::builder().set_dictionary_enabled(false).set_compression(Compression::UNCOMPRESSED);
    write_trl_file_as(&damaged, &rows, plain.build());
    // The completions' plain page holds each value behind its 4-byte length. The third value's length, made 10,
    // swallows the fourth's length and 2 of its bytes: parquet's decoder then reads a length from the 2 bytes
    // left in the page, which it asserts cannot happen (a panic).
    let mut bytes = fs::read(&damaged).unwrap();
    let page: Vec<u8> = rows.iter().flat_map(|r| [&4u32.to_le_bytes()[..], r.1].concat()).collect();
    let at = bytes.windows(page.len()).position(|w| w == page).expect("the completions' page is plain");
    bytes[at + 16..at + 20].copy_from_slice(&10u32.to_le_bytes());
    fs::write(&damaged, &bytes).unwrap();
    write_trl_file(&dir.path().join("completions/completions_00002.parquet"), &[(b"p3", b"good"), (b"p3", b"too")]);

    let run = Run::open_as(dir.path(), None, &Default::default()).unwrap();
    let ids: Vec<&str> = run.episodes.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["s2-r1", "s2-r2"], "the good file beside the damaged one is read whole");
    assert_eq!(run.errors.len(), 1, "{:?}", run.errors);
    let error = &run.errors[0];
    assert_eq!((error.file.as_deref(), error.line), (Some("completions/completions_00001.parquet"), 1));
    assert!(error.reason.contains("rows 1 to 4 could not be read"), "{}", error.reason);
    assert!(error.reason.contains("damaged data"), "{}", error.reason);

    let out = gigscope(&["validate", path(dir.path())]);
    assert_eq!(out.status.code(), Some(1), "a problem, not a crash: {}", stderr(&out));
    assert!(stderr(&out).contains("completions/completions_00001.parquet"), "{}", stderr(&out));
    assert!(!stderr(&out).contains("panicked"), "the contained panic is not printed: {}", stderr(&out));
}

/// Chat messages: role and content (whatever bytes).
type Messages = Vec<(&'static str, &'static [u8])>;

/// A TRL step file of a chat dataset, laid out as pyarrow writes a pandas column of message lists: `prompt` and
/// `completion` are optional lists of optional `{role, content}` structs of optional text (whatever bytes are
/// given), then a reward and the advantage. Each row is its prompt's and its completion's messages.
fn write_trl_chat_file(path: &Path, rows: &[(Messages, Messages)]) {
    use parquet::data_type::{ByteArray, ByteArrayType, DoubleType};
    use parquet::file::writer::SerializedFileWriter;
    let messages = |name: &str| {
        format!(
            "OPTIONAL group {name} (LIST) {{ REPEATED group list {{ OPTIONAL group element {{ \
             OPTIONAL BYTE_ARRAY role (UTF8); OPTIONAL BYTE_ARRAY content (UTF8); }} }} }}"
        )
    };
    let schema = format!(
        "message schema {{ {} {} OPTIONAL DOUBLE reward_fn; OPTIONAL DOUBLE advantage; }}",
        messages("prompt"),
        messages("completion")
    );
    let schema = parquet::schema::parser::parse_message_type(&schema).unwrap();
    let file = fs::File::create(path).unwrap();
    let mut writer = SerializedFileWriter::new(file, std::sync::Arc::new(schema), Default::default()).unwrap();
    let mut group = writer.next_row_group().unwrap();
    let mut leaf = 0;
    while let Some(mut column) = group.next_column().unwrap() {
        if leaf < 4 {
            // Leaves in schema order: prompt's role and content, completion's role and content. Every message
            // and its text are present (definition level 4); a row's first message starts it (repetition 0).
            let (mut values, mut reps) = (Vec::new(), Vec::new());
            for (prompt, completion) in rows {
                let list = if leaf < 2 { prompt } else { completion };
                for (k, (role, content)) in list.iter().enumerate() {
                    values.push(ByteArray::from(if leaf % 2 == 0 { role.as_bytes() } else { content }.to_vec()));
                    reps.push(i16::from(k > 0));
                }
            }
            let defs = vec![4; values.len()];
            column.typed::<ByteArrayType>().write_batch(&values, Some(&defs), Some(&reps)).unwrap();
        } else {
            let values: Vec<f64> = (0..rows.len()).map(|r| r as f64).collect();
            column.typed::<DoubleType>().write_batch(&values, Some(&vec![1; rows.len()]), None).unwrap();
        }
        column.close().unwrap();
        leaf += 1;
    }
    group.close().unwrap();
    writer.close().unwrap();
}

#[test]
fn a_bad_trl_chat_cell_skips_its_row_alone_and_the_rows_around_keep_their_messages() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("completions")).unwrap();
    let file = dir.path().join("completions/completions_00001.parquet");
    let prompt = |user: &'static [u8]| vec![("system", &b"find items"[..]), ("user", user)];
    let answer = |text: &'static [u8]| vec![("assistant", text)];
    let rows = [
        (prompt(b"red shoes"), answer(b"one")),
        (prompt(b"red shoes"), answer(b"bad \xff byte")),
        (prompt(b"blue hat"), answer(b"three")),
        (prompt(b"blue hat"), answer(b"four")),
        (prompt(b"green \xc3 coat"), answer(b"five")),
        (prompt(b"green coat"), answer(b"six")),
    ];
    write_trl_chat_file(&file, &rows);
    modified_ago(&file, Duration::from_secs(60));
    let run = Run::open_as(dir.path(), None, &Default::default()).unwrap();
    let ids: Vec<&str> = run.episodes.iter().map(|e| e.id.as_str()).collect();
    assert_eq!(ids, ["s1-r1", "s1-r3", "s1-r4", "s1-r6"]);
    for (episode, (user, answer)) in run.episodes.iter().zip([
        ("red shoes", "one"),
        ("blue hat", "three"),
        ("blue hat", "four"),
        ("green coat", "six"),
    ]) {
        let messages = &episode.extra["messages"];
        assert_eq!(messages["prompt"][1], serde_json::json!({"role": "user", "content": user}), "{}", episode.id);
        assert_eq!(messages["completion"][0]["content"], answer, "{}", episode.id);
        assert_eq!(episode.steps[0].action, format!("assistant: {answer}"));
        assert_eq!(episode.instruction(), user);
    }
    let errors: Vec<(Option<&str>, u64)> = run.errors.iter().map(|e| (e.file.as_deref(), e.line)).collect();
    let name = Some("completions/completions_00001.parquet");
    assert_eq!(errors, [(name, 2), (name, 5)], "{:?}", run.errors);
    for (error, column, at) in [(&run.errors[0], "`completion`", "byte 4"), (&run.errors[1], "`prompt`", "byte 6")] {
        assert!(error.reason.contains(column) && error.reason.contains(at), "{}", error.reason);
        assert!(error.reason.contains("UTF-8") && error.reason.contains("row skipped"), "{}", error.reason);
        assert!(!error.reason.contains("255"), "no raw bytes: {}", error.reason);
    }
    // validate names the file and each bad row, and counts them.
    let out = gigscope(&["validate", path(dir.path())]);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    for row in [2, 5] {
        assert!(stderr(&out).contains(&format!("completions_00001.parquet:{row}: ")), "{}", stderr(&out));
    }
    assert!(stdout(&out).contains("broken lines     2"), "{}", stdout(&out));
}

#[test]
fn a_file_that_reads_again_takes_its_skipped_note_with_it() {
    use gigscope::run::source::LiveEvent;
    use gigscope::run::{apply, Layout};
    let mut run = Run::empty(Path::new("run"), Layout::Trl);
    let reason = "cannot be read (no footer yet); skipped until it changes".to_string();
    apply(&mut run, LiveEvent::Skipped { file: "completions/completions_00002.parquet".into(), reason: Some(reason) });
    apply(&mut run, LiveEvent::Error("an unrelated note".into()));
    assert_eq!((run.skipped.len(), run.notices.len()), (1, 2), "{:?}", run.notices);
    apply(&mut run, LiveEvent::Skipped { file: "completions/completions_00002.parquet".into(), reason: None });
    assert!(run.skipped.is_empty());
    assert_eq!(run.notices, vec!["an unrelated note".to_string()], "the stale note is gone, the other kept");
}
