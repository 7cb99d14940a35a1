//! One way in for every layout: detection, `--from`, the error when nothing matches, and `gigscope convert`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use gigscope::run::{Layout, Run, SourceOptions};

const BIN: &str = env!("CARGO_BIN_EXE_gigscope");

fn gigscope(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("the gigscope binary runs")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

fn path(dir: &Path) -> &str {
    dir.to_str().expect("UTF-8 path")
}

#[test]
fn a_directory_without_a_run_is_an_error_naming_what_was_looked_for() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("notes.txt"), "not a run").expect("write");
    for command in ["advantages", "stats", "validate", "search"] {
        let mut args = vec![command, path(dir.path())];
        if command == "search" {
            args.push("hat");
        }
        let out = gigscope(&args);
        assert!(!out.status.success(), "{command} succeeded on a directory without a run");
        let err = String::from_utf8_lossy(&out.stderr);
        for looked_for in ["episodes.jsonl", "{step}.jsonl", "completions_{step}.parquet"] {
            assert!(err.contains(looked_for), "{command}: {err}");
        }
        assert!(err.contains(path(dir.path())), "{command}: the directory is named: {err}");
    }
}

#[test]
fn detection_and_from_agree_on_a_gigscope_run() {
    let dir = fixture("engine/worked_example");
    let detected = Run::open_as(&dir, None, &SourceOptions::default()).expect("open");
    assert_eq!(detected.layout, Layout::Gigscope);
    let forced = Run::open_as(&dir, Some(Layout::Gigscope), &SourceOptions::default()).expect("open");
    assert_eq!(forced.episodes, detected.episodes);
    let out = gigscope(&["advantages", "--from", "gigscope", "--format", "jsonl", path(&dir)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let plain = gigscope(&["advantages", "--format", "jsonl", path(&dir)]);
    assert_eq!(out.stdout, plain.stdout);
}

#[test]
fn convert_writes_a_gigscope_run_that_reads_back_the_same_and_never_overwrites() {
    let src = fixture("tui/basic");
    let tmp = tempfile::tempdir().expect("tempdir");
    let out_dir = tmp.path().join("copy");
    let out = gigscope(&["convert", path(&src), "--out", path(&out_dir)]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let original = Run::open(&src).expect("original");
    let copy = Run::open(&out_dir).expect("copy");
    assert_eq!(copy.episodes, original.episodes);
    assert_eq!(copy.metrics, original.metrics);
    assert_eq!(copy.meta.as_ref().and_then(|m| m.format.as_deref()), Some("gigscope-run/1"));
    let same_advantages = |dir: &Path| gigscope(&["advantages", "--format", "jsonl", path(dir)]).stdout;
    assert_eq!(same_advantages(&out_dir), same_advantages(&src));
    // Nothing staged is left beside it.
    let names: Vec<String> = std::fs::read_dir(tmp.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["copy"]);

    let again = gigscope(&["convert", path(&src), "--out", path(&out_dir)]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    assert_eq!(Run::open(&out_dir).expect("still there").episodes, original.episodes);
}

#[test]
fn page_anchors_are_refused_on_a_run_of_another_environment() {
    let verl = fixture("verl/v1");
    let out = gigscope(&["advantages", "--anchor", "page", path(&verl)]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a WebShop run") && err.contains("verl rollout dump"), "{err}");
    // A WebShop run groups by page as before.
    assert!(gigscope(&["advantages", "--anchor", "page", path(&fixture("tui/basic"))]).status.success());
}

#[test]
fn convert_removes_staging_left_by_a_killed_conversion_and_keeps_a_running_ones() {
    let src = fixture("tui/basic");
    let tmp = tempfile::tempdir().expect("tempdir");
    // A pid above Linux's largest (2^22) names no process: a conversion killed long ago.
    let abandoned = tmp.path().join(".copy.converting4999999");
    let running = tmp.path().join(format!(".copy.converting{}", std::process::id()));
    for dir in [&abandoned, &running] {
        std::fs::create_dir_all(dir).expect("staging");
        std::fs::write(dir.join("episodes.jsonl"), "").expect("write");
    }
    let out = gigscope(&["convert", path(&src), "--out", path(&tmp.path().join("copy"))]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!abandoned.exists(), "the killed conversion's staging is removed");
    assert!(running.exists(), "a running conversion's staging is left alone");
}

#[test]
fn a_closed_standard_output_ends_every_command_that_prints_quietly() {
    use std::os::fd::FromRawFd;
    use std::os::unix::process::ExitStatusExt;
    let run = fixture("tui/basic");
    let cache = tempfile::tempdir().expect("tempdir");
    let commands: [&[&str]; 7] = [
        &["advantages", "--format", "jsonl", path(&run)],
        &["stats", path(&run)],
        &["stats", "--json", path(&run)],
        &["validate", path(&run)],
        &["search", path(&run), "success:true"],
        &["webshop", "search", "shoes"],
        &["state", path(&run), "--help"],
    ];
    for args in commands {
        // The reading end is closed before the command starts: its first write finds no reader.
        let mut fds = [0; 2];
        // SAFETY: pipe fills two new descriptors; the write end is owned by the Stdio below.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: fds[0] is a descriptor pipe just opened, closed once here.
        unsafe { libc::close(fds[0]) };
        // SAFETY: fds[1] is open and owned by nothing else.
        let stdout = unsafe { std::process::Stdio::from_raw_fd(fds[1]) };
        let out = Command::new(BIN)
            .args(args)
            .env("GIGSCOPE_CACHE", cache.path())
            .env("XDG_CACHE_HOME", cache.path())
            .stdout(stdout)
            .stderr(std::process::Stdio::piped())
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert_ne!(out.status.code(), Some(101), "{args:?}: {err}");
        let quiet = out.status.signal() == Some(libc::SIGPIPE) || out.status.success();
        assert!(
            quiet,
            "{args:?} ended as `cat` ends on a closed pipe (or done before writing): {:?} {err}",
            out.status
        );
    }
}

#[test]
fn an_os_error_is_said_once() {
    let tmp = tempfile::tempdir().expect("tempdir");
    // The copy's parent is a file: creating its staging directory fails with ENOTDIR.
    std::fs::write(tmp.path().join("file"), "").expect("write");
    let out = gigscope(&["convert", path(&fixture("tui/basic")), "--out", path(&tmp.path().join("file/copy"))]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert_eq!(err.matches("Not a directory").count(), 1, "the cause once: {err}");
    assert!(err.contains("file/copy"), "names the copy: {err}");
}
