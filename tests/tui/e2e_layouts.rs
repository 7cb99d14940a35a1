//! End to end: runs written by other trainers (a verl rollout dump, a TRL completions log) open in the real
//! TUI, and a training step written while it is open reaches the screen.

use crate::support;

use std::path::Path;

use gigscope::run::{Run, SourceOptions};
use support::tmux::{tmux_available, Session};

fn fixture(rel: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel)
}

fn copy(from: &Path, to: &Path) {
    std::fs::copy(from, to).unwrap_or_else(|e| panic!("copy {} → {}: {e}", from.display(), to.display()));
}

/// How many episodes gigscope reads from `dir` (the status bar shows this count).
fn episodes_in(dir: &Path) -> usize {
    Run::open_as(dir, None, &SourceOptions::default()).expect("the run reads").episodes.len()
}

/// An empty TRL log: a temporary directory, and its `completions/` folder.
fn trl_log() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let completions = tmp.path().join("completions");
    std::fs::create_dir(&completions).expect("mkdir");
    (tmp, completions)
}

/// Open `dir` in the TUI, wait for its overview, call `write_step`, and wait for the new count on screen.
fn follow_a_new_step(test: &str, dir: &Path, layout_name: &str, write_step: impl FnOnce()) {
    let before = episodes_in(dir);
    let s = Session::launch(test, &format!("{} --rescan-ms 200", dir.display()), (160, 45));
    s.wait_for(&["[Overview]", layout_name, &format!("{before} ep ·")]);
    write_step();
    let after = episodes_in(dir);
    assert!(after > before, "the new step adds episodes");
    let screen = s.wait_for(&[&format!("{after} ep ·")]);
    assert!(!screen.contains("broken line"), "{screen}");
}

#[test]
fn a_verl_dump_opens_and_a_new_step_file_shows() {
    if !tmux_available() {
        return;
    }
    let tmp = tempfile::tempdir().expect("tempdir");
    for name in ["1.jsonl", "2.jsonl"] {
        copy(&fixture("verl/v1").join(name), &tmp.path().join(name));
    }
    follow_a_new_step("verl", tmp.path(), "verl rollout dump", || {
        copy(&fixture("verl/v1-live/3.jsonl"), &tmp.path().join("3.jsonl"));
    });
}

#[test]
fn a_trl_log_opens_and_a_new_completions_file_shows() {
    if !tmux_available() {
        return;
    }
    let (tmp, completions) = trl_log();
    let source = fixture("trl/default/completions");
    for step in [1, 2] {
        let name = format!("completions_{step:05}.parquet");
        copy(&source.join(&name), &completions.join(&name));
    }
    follow_a_new_step("trl", tmp.path(), "TRL completions log", || {
        // Written beside and renamed in, as a file appears whole; the reader also waits out a half-written one.
        let staged = tmp.path().join("staged.parquet");
        copy(&source.join("completions_00003.parquet"), &staged);
        std::fs::rename(&staged, completions.join("completions_00003.parquet")).expect("rename");
    });
}

/// A TRL file on which parquet's row reader panics (a fuzzing finding, tests/fuzz/regressions/trainer_files) beside
/// a good one: the viewer keeps the terminal, reads the good file and names the rows it lost, and the contained
/// panic prints nothing over the screen.
#[test]
fn a_trl_file_parquet_panics_on_is_a_broken_line_and_the_viewer_keeps_the_terminal() {
    if !tmux_available() {
        return;
    }
    let (tmp, completions) = trl_log();
    let finding = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz/regressions/trainer_files/trl-record-reader-definition-level-past-its-batch");
    let bytes = std::fs::read(&finding).expect("the finding is kept");
    // The fuzz target's first byte picks the trainer; the file is the rest.
    std::fs::write(completions.join("completions_00001.parquet"), &bytes[1..]).expect("write");
    let good = "completions_00002.parquet";
    copy(&fixture("trl/default/completions").join(good), &completions.join(good));
    let expected = episodes_in(tmp.path());
    let s = Session::launch("trl-damaged", &tmp.path().display().to_string(), (160, 45));
    let screen = s.wait_for(&["[Overview]", "TRL completions log", &format!("{expected} ep ·"), "broken line"]);
    assert_eq!(s.pane("#{alternate_on}"), "1", "the TUI holds the terminal:\n{screen}");
    assert!(!screen.contains("panicked"), "{screen}");
}
