//! Live load (issue 28): while the real binary follows a run in tmux, a writer appends whole episode lines at
//! 20,000 lines a second for a bounded time, a batch every 10 ms in one `write` each, so that the reader often
//! meets a batch half-written. At the end the TUI counts exactly the episodes, steps and groups written (none
//! lost, none twice, no broken line), follow mode stands on the newest iteration, and a key still works. The rate is the
//! load, not a goal: nothing asserts on how long anything took (the key latency under this load is the TUI
//! bench's figure). The process's peak memory is printed for the reliability page.

use crate::support;

use std::fs::OpenOptions;
use std::io::Write;
use std::time::{Duration, Instant};

use support::runs::copy_fixture;
use support::tmux::{tmux_available, Session};

const LINES_PER_SECOND: usize = 20_000;
const SECONDS: usize = 3;
const BATCH_EVERY: Duration = Duration::from_millis(10);
const GROUP_SIZE: usize = 4;
const STEPS: usize = 2;

/// Episode `i` of the load: groups of four, a new iteration every 20,000 episodes (a second).
fn episode_line(i: usize) -> String {
    let (group, iteration) = (i / GROUP_SIZE, 100 + i / 20_000);
    let success = i.is_multiple_of(3);
    format!(
        r#"{{"id":"load-{i}","group":"load-g{group}","iteration":{iteration},"task":{{"id":"t{group}","instruction":"buy load socks {group}"}},"steps":[{{"observation":"Search","action":"search[socks {group}]","reward":0}},{{"observation":"Item [SEP] Buy Now","action":"click[buy now]","reward":{}}}],"outcome":{{"success":{success},"score":{}}}}}"#,
        if success { 10 } else { 0 },
        if success { 1 } else { 0 },
    )
}

/// The status bar's `N ep · M steps · G groups`, as numbers.
fn counts(screen: &str) -> Option<(usize, usize, usize)> {
    let line = screen.lines().find(|l| l.contains(" ep · ") && l.contains(" groups"))?;
    let words: Vec<&str> = line.split_whitespace().collect();
    let before = |label: &str| -> Option<usize> {
        let at = words.iter().position(|w| *w == label)?;
        words.get(at.checked_sub(1)?)?.parse().ok()
    };
    Some((before("ep")?, before("steps")?, before("groups")?))
}

/// The process's peak resident memory (`VmHWM`), in MiB.
fn peak_mib(pid: &str) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 =
        status.lines().find_map(|l| l.strip_prefix("VmHWM:"))?.trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib / 1024.0)
}

#[test]
fn a_run_appended_at_twenty_thousand_lines_a_second_is_followed_without_losing_or_doubling_a_line() {
    if !tmux_available() {
        return;
    }
    let (_tmp, dir) = copy_fixture("basic");
    let s = Session::start("live-load", &dir, "");
    let screen = s.wait_for(&["[Overview]", "12 ep"]);
    let (episodes0, steps0, groups0) =
        counts(&screen).unwrap_or_else(|| panic!("no counts in the status bar:\n{screen}"));
    s.keys(&["f"]);
    s.wait_for(&["follow"]);

    let total = LINES_PER_SECOND * SECONDS;
    let per_batch = LINES_PER_SECOND * BATCH_EVERY.as_millis() as usize / 1000;
    let mut file = OpenOptions::new().append(true).open(dir.join("episodes.jsonl")).expect("the run's episodes file");
    let (start, mut written, mut bytes) = (Instant::now(), 0, 0);
    for batch in 0.. {
        if written == total {
            break;
        }
        let due = start + BATCH_EVERY * batch;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let end = (written + per_batch).min(total);
        let text: String = (written..end).map(|i| episode_line(i) + "\n").collect();
        file.write_all(text.as_bytes()).expect("append a batch");
        bytes += text.len();
        written = end;
    }
    let took = start.elapsed();

    let expected = (episodes0 + total, steps0 + total * STEPS, groups0 + total / GROUP_SIZE);
    // Follow mode on the overview stands on the newest iteration.
    let last_iteration = format!("iter {}", 100 + (total - 1) / 20_000);
    let screen = s.wait_until(&format!("counts {expected:?} and {last_iteration}"), |screen| {
        counts(screen) == Some(expected) && screen.contains(&last_iteration)
    });
    assert!(screen.contains("follow"), "follow mode is still on:\n{screen}");
    assert!(!screen.contains("broken line"), "a whole line was read as broken:\n{screen}");
    // Keys still work: the groups of the newest iteration.
    s.keys(&["Enter"]);
    s.wait_for(&["[Groups]", &last_iteration, "load-g"]);
    let peak = peak_mib(&s.gigscope_pid());
    eprintln!(
        "live load: {total} lines ({:.1} MB) appended in {:.2} s, all shown once; peak resident memory {}",
        bytes as f64 / 1e6,
        took.as_secs_f64(),
        peak.map_or("unknown".into(), |m| format!("{m:.0} MiB")),
    );
}
