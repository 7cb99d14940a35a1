//! `gigscope advantages` streams (issue 13): its memory grows with the largest episode group, not with the run.
//!
//! A reader change once made it hold the whole `episodes.jsonl` (113 MB peak on a 105 MB run instead of
//! about 11 MB) and every output test still passed, because the output was right. This test measures the real
//! binary's peak resident memory on a run far larger than any group, so that holding the file fails it.

// `ru_maxrss` is in KiB on Linux (bytes on macOS), and the kernel behaviour the comments rely on is Linux's.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use gigscope::run::{Episode, Outcome, RunMeta, RunWriter, Step, Task, FORMAT_V1};
use serde_json::Value;

use crate::peak::{mb, peak_of};

/// Trajectories per episode group, as in GiGPO's WebShop batches.
const GROUP: usize = 8;
/// Episode groups in the run: with observations of about 1.5 KB and 8–12 steps, about 76 MB of episodes,
/// while one group is about 140 KB.
const GROUPS: usize = 560;
/// How much more than the same binary on a run of one group (its baseline: the binary, its libraries, the
/// allocator, stdio buffers) the peak may be, as a share of the file. Streaming holds one group at a time plus
/// a few dozen bytes per line (ids and line numbers: about 0.2 MB here); holding the file holds all of it.
const FILE_SHARE: f64 = 0.25;
/// Room for what differs between two runs of the binary besides the run's size (allocator arenas, threads).
const SLACK_KIB: u64 = 8 * 1024;

/// A results or item page of the group's task: the same `(group, t, branch)` gives the same text, so the
/// group's trajectories share anchor states until they branch off, as in real runs. About 1.5 KB: long
/// observations make the run large in bytes while its number of lines (what the first pass indexes) stays
/// small.
fn observation(group: usize, t: usize, branch: usize) -> String {
    let mut page = format!(
        "Back to Search [SEP] Page {} (Total results: 50) [SEP] Next > [SEP] Instruction: [SEP] i need a pack of \
         {group} cotton socks in size m, price lower than 30.00 dollars",
        t % 5 + 1
    );
    for item in 0..10 {
        page.push_str(&format!(
            " [SEP] B0{group:05}{branch}{item} [SEP] Cotton crew socks, breathable mesh, machine washable, pack of \
             {} pairs, colour option {} [SEP] ${}.{:02}",
            item + t + 1,
            (group + item) % 8,
            10 + (group * 7 + item * 3 + t) % 20,
            (item * 13 + branch) % 100
        ));
    }
    page
}

/// Trajectory `traj` of episode group `group`: 8–12 steps, deterministic (no RNG, no clock).
fn episode(group: usize, traj: usize) -> Episode {
    let len = 8 + (group * 3 + traj * 7) % 5;
    let success = (group + traj).is_multiple_of(3);
    let instruction = format!("i need a pack of {group} cotton socks in size m, price lower than 30.00 dollars");
    let mut branch = 0;
    let steps = (0..len)
        .map(|t| {
            // Trajectories of a group follow one path, then branch off at different steps.
            if t > 0 && (traj + t).is_multiple_of(4) {
                branch = branch * 2 + traj % 2 + 1;
            }
            let actions: Vec<String> = ["click[back to search]", "click[next >]", "click[buy now]"]
                .iter()
                .map(|a| a.to_string())
                .chain((0..10).map(|item| format!("click[b0{group:05}{branch}{item}]")))
                .collect();
            let reward = if t + 1 == len && success { 10.0 } else { 0.0 };
            let mut step =
                Step::new(observation(group, t, branch), actions[(t + traj) % actions.len()].clone(), reward);
            step.page = Some(if t % 3 == 1 { "results" } else { "item" }.to_string());
            step.available_actions = Some(actions);
            step.tokens = Some(3 + (t as u64 + traj as u64) % 9);
            step
        })
        .collect();
    let mut e = Episode::new(format!("e{}", group * GROUP + traj), format!("g{group}"), steps);
    e.iteration = (group / 16) as i64;
    e.task = Some(Task { id: format!("t{group}"), instruction, extra: Default::default() });
    e.outcome = Some(Outcome { success, score: if success { 1.0 } else { 0.0 }, extra: Default::default() });
    e
}

/// What [`write_run`] wrote.
struct Written {
    /// Size of `episodes.jsonl`, bytes.
    bytes: u64,
    /// Size of the largest episode group's lines, bytes.
    largest_group: u64,
    /// Steps of the run: rows of the output.
    steps: usize,
    /// The last episode's id and number of steps.
    last: (String, usize),
}

/// Writes a run of `groups` episode groups with the run format's own writer, one episode at a time (this
/// process never holds more than an episode of it).
fn write_run(dir: &Path, groups: usize) -> Written {
    let mut writer = RunWriter::create(dir).expect("run dir");
    writer
        .write_meta(&RunMeta {
            format: Some(FORMAT_V1.to_string()),
            name: Some("advantages-memory".into()),
            env: Some("webshop".into()),
            ..RunMeta::default()
        })
        .expect("run.json");
    let size = || std::fs::metadata(dir.join("episodes.jsonl")).expect("episodes.jsonl").len();
    let mut written = Written { bytes: 0, largest_group: 0, steps: 0, last: (String::new(), 0) };
    for group in 0..groups {
        for traj in 0..GROUP {
            let e = episode(group, traj);
            written.steps += e.steps.len();
            written.last = (e.id.clone(), e.steps.len());
            writer.append_episode(&e).expect("append");
        }
        let bytes = size();
        written.largest_group = written.largest_group.max(bytes - written.bytes);
        written.bytes = bytes;
    }
    written
}

/// `gigscope advantages --format jsonl DIR`, run as [`peak_of`] runs it: it must succeed without a warning
/// (the run has no broken lines). Its peak resident memory, KiB.
fn advantages_peak(dir: &Path, stderr: &Path) -> u64 {
    let (status, peak_kib) =
        peak_of(&["advantages".as_ref(), "--format".as_ref(), "jsonl".as_ref(), dir.as_ref()], stderr);
    let stderr = std::fs::read_to_string(stderr).unwrap_or_default();
    assert!(status.success(), "gigscope advantages {} failed ({status}): {stderr}", dir.display());
    assert!(stderr.is_empty(), "no warning expected for {}: {stderr}", dir.display());
    peak_kib
}

#[test]
fn streams_in_memory_well_under_the_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let (dir, small) = (tmp.path().join("run"), tmp.path().join("one-group"));
    let run = write_run(&dir, GROUPS);
    write_run(&small, 1);
    assert!(
        run.bytes > 60 << 20,
        "the run should be large enough that holding it is unmistakable: {} bytes",
        run.bytes
    );
    let file_kib = run.bytes / 1024;

    // The baseline: the same binary on one group. What the process holds whatever the run differs much between
    // builds (a few MB for the plain binary; about 117 MB for the one `--all-features` builds, which cargo's
    // feature unification links with libtorch), so it is measured rather than assumed.
    let baseline_kib = advantages_peak(&small, &tmp.path().join("stderr-one-group"));
    // The measured run: output to /dev/null, so that only what gigscope itself holds counts.
    let peak_kib = advantages_peak(&dir, &tmp.path().join("stderr"));

    // Measured on this run with the plain binary: today's streaming code 10.4 MB (9.7 MB on one group), the
    // reader of commit 71eefd6 that read a whole poll into memory 86.4 MB (9.8 MB on one group), against a
    // bound of about 37 MB; with the `--all-features` binary, 117.8 MB (116.8 MB on one group), bound 144 MB.
    let bound_kib = baseline_kib + (file_kib as f64 * FILE_SHARE) as u64 + SLACK_KIB;
    eprintln!(
        "advantages_memory: peak {:.1} MB on a {:.1} MB run, {:.1} MB on one group (bound {:.1} MB)",
        mb(peak_kib),
        mb(file_kib),
        mb(baseline_kib),
        mb(bound_kib)
    );
    assert!(
        peak_kib < bound_kib,
        "gigscope advantages peaked at {:.1} MB resident on a {:.1} MB episodes.jsonl, {:.1} MB above its {:.1} MB \
         on a run of one group (bound: that + {FILE_SHARE} x the file + {:.0} MB = {:.1} MB). It must stream the \
         run group by group (issue 13), so its memory grows with the largest episode group ({:.0} KB here), not \
         with the file: growth near the file's size means the whole file is held (a reader that reads a whole poll \
         into memory first once did that)",
        mb(peak_kib),
        mb(file_kib),
        mb(peak_kib.saturating_sub(baseline_kib)),
        mb(baseline_kib),
        mb(SLACK_KIB),
        mb(bound_kib),
        run.largest_group as f64 / 1024.0,
    );

    // The same command again, its output counted as it goes (never held): one row per step, in file order.
    let mut child = Command::new(env!("CARGO_BIN_EXE_gigscope"))
        .args(["advantages", "--format", "jsonl"])
        .arg(&dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("gigscope starts");
    let (mut count, mut first, mut last) = (0usize, None, String::new());
    for line in BufReader::new(child.stdout.take().expect("stdout")).lines() {
        let line = line.expect("utf-8 output");
        if first.is_none() {
            first = Some(line.clone());
        }
        count += 1;
        last = line;
    }
    assert!(child.wait().expect("wait").success());
    assert_eq!(count, run.steps, "one output row per step of the run");
    let first: Value = serde_json::from_str(&first.expect("a first row")).expect("json row");
    let last: Value = serde_json::from_str(&last).expect("json row");
    assert_eq!((first["episode"].as_str(), first["step"].as_u64()), (Some("e0"), Some(0)), "{first}");
    assert_eq!(
        (last["episode"].as_str(), last["step"].as_u64()),
        (Some(run.last.0.as_str()), Some(run.last.1 as u64 - 1))
    );
}
