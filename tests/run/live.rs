//! The live watcher on real files: appends arrive as events, a torn line waits for its newline, truncation
//! and replacement reset, broken lines are reported, and `apply` merges it all into a `Run`. Waits use a
//! generous deadline and never assert on timing.

use crate::support;

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::live::{wait_until, DEADLINE};

use gigscope::live::{self, apply, LiveEvent, LiveFile, LiveStatus, Tails, WatchOptions, Watcher};
use gigscope::run::text_on_disk::TextStore;
use gigscope::run::{Episode, Layout, LeanReading, Run, Step, EPISODES_FILE, METRICS_FILE, RUN_META_FILE};

fn line(id: &str) -> String {
    let episode = Episode::new(id, "g", vec![Step::new("Search", "search[shoes]", 0.0)]);
    serde_json::to_string(&episode).unwrap() + "\n"
}

fn metrics_line(iteration: i64) -> String {
    format!("{{\"iteration\": {iteration}, \"loss\": 0.5}}\n")
}

fn append(path: &Path, text: &str) {
    let mut file = OpenOptions::new().create(true).append(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

fn episode_ids(events: &[LiveEvent]) -> Vec<(u64, String)> {
    events
        .iter()
        .flat_map(|e| match e {
            LiveEvent::Episodes(records) => records.iter().map(|(l, ep)| (*l, ep.id.clone())).collect(),
            _ => Vec::new(),
        })
        .collect()
}

fn has_metrics(events: &[LiveEvent], iteration: i64) -> bool {
    events.iter().any(|e| matches!(e, LiveEvent::Metrics(r) if r.iter().any(|(_, m)| m.iteration == iteration)))
}

fn options(notify: bool) -> WatchOptions {
    WatchOptions { notify, ..WatchOptions::default() }
}

fn watch(dir: &Path, notify: bool) -> (Watcher, Receiver<LiveEvent>) {
    let (_, tails) = live::open(dir).unwrap();
    Watcher::spawn(dir, tails, options(notify)).unwrap()
}

#[test]
fn appended_episodes_arrive_after_what_open_read() {
    let dir = tempfile::tempdir().unwrap();
    let episodes = dir.path().join(EPISODES_FILE);
    append(&episodes, &(line("a") + &line("b")));
    let (run, tails) = live::open(dir.path()).unwrap();
    assert_eq!(run.episodes.iter().map(|e| run.episode_ids.get(&e.id)).collect::<Vec<_>>(), [Some(1), Some(2)]);
    let (_watcher, rx) = Watcher::spawn(dir.path(), tails, options(true)).unwrap();

    append(&episodes, &line("c"));
    append(&episodes, &line("d"));
    let events = wait_until(&rx, |seen| episode_ids(seen).len() >= 2);
    assert_eq!(episode_ids(&events), vec![(3, "c".to_string()), (4, "d".to_string())]);
}

#[test]
fn the_periodic_rescan_works_without_notify() {
    let dir = tempfile::tempdir().unwrap();
    let (_watcher, rx) = watch(dir.path(), false);
    // The episodes file does not exist yet when watching starts.
    append(&dir.path().join(EPISODES_FILE), &line("a"));
    let events = wait_until(&rx, |seen| !episode_ids(seen).is_empty());
    assert_eq!(episode_ids(&events), vec![(1, "a".to_string())]);
}

#[test]
fn a_torn_line_waits_for_its_newline() {
    let dir = tempfile::tempdir().unwrap();
    let episodes = dir.path().join(EPISODES_FILE);
    let metrics = dir.path().join(METRICS_FILE);
    append(&episodes, &line("a"));
    let (_watcher, rx) = watch(dir.path(), true);

    let torn = line("b");
    let (head, tail) = torn.split_at(torn.len() / 2);
    append(&episodes, head);
    // Each scan reads episodes before metrics, so once this metrics line is delivered the torn episode
    // line has been looked at at least once.
    append(&metrics, &metrics_line(1));
    let events = wait_until(&rx, |seen| has_metrics(seen, 1));
    assert!(episode_ids(&events).is_empty(), "{events:?}");
    assert!(!events.iter().any(|e| matches!(e, LiveEvent::BrokenLines(..))), "{events:?}");

    append(&episodes, tail);
    let events = wait_until(&rx, |seen| !episode_ids(seen).is_empty());
    assert_eq!(episode_ids(&events), vec![(2, "b".to_string())]);
}

#[test]
fn broken_lines_are_reported_and_good_lines_still_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let episodes = dir.path().join(EPISODES_FILE);
    append(&episodes, &line("a"));
    let (_watcher, rx) = watch(dir.path(), true);

    append(&episodes, &(String::from("{not json\n") + "{\"id\": \"x\"}\n" + &line("b")));
    let events = wait_until(&rx, |seen| {
        !episode_ids(seen).is_empty() && seen.iter().any(|e| matches!(e, LiveEvent::BrokenLines(..)))
    });
    assert_eq!(episode_ids(&events), vec![(4, "b".to_string())]);
    let broken: Vec<u64> = events
        .iter()
        .flat_map(|e| match e {
            LiveEvent::BrokenLines(LiveFile::Episodes, errors) => errors.iter().map(|e| e.line).collect(),
            _ => Vec::new(),
        })
        .collect();
    assert_eq!(broken, vec![2, 3]);
}

#[test]
fn truncation_and_replacement_reset_the_episodes() {
    let dir = tempfile::tempdir().unwrap();
    let episodes = dir.path().join(EPISODES_FILE);
    append(&episodes, &(line("a") + &line("b")));
    let (watcher, rx) = watch(dir.path(), true);

    // Truncated and rewritten shorter.
    fs::write(&episodes, line("x")).unwrap();
    let events = wait_until(&rx, |seen| !episode_ids(seen).is_empty());
    let events: Vec<LiveEvent> = events.into_iter().filter(|e| !matches!(e, LiveEvent::Progress { .. })).collect();
    assert_eq!(events[0], LiveEvent::Reset(LiveFile::Episodes));
    assert_eq!(episode_ids(&events), vec![(1, "x".to_string())]);

    // Replaced by an atomic rename, as writers of whole files do.
    let staged = dir.path().join("staged.tmp");
    fs::write(&staged, line("y") + &line("z")).unwrap();
    fs::rename(&staged, &episodes).unwrap();
    let events = wait_until(&rx, |seen| episode_ids(seen).len() >= 2);
    // (The watcher's end-of-first-scan progress may come first, depending on when that scan ran.)
    let events: Vec<LiveEvent> = events.into_iter().filter(|e| !matches!(e, LiveEvent::Progress { .. })).collect();
    assert_eq!(events[0], LiveEvent::Reset(LiveFile::Episodes));
    assert_eq!(episode_ids(&events), vec![(1, "y".to_string()), (2, "z".to_string())]);

    // Dropping the watcher stops its thread, which closes the channel.
    drop(watcher);
    let start = Instant::now();
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Err(RecvTimeoutError::Disconnected) => break,
            _ => assert!(start.elapsed() < DEADLINE, "channel still open after drop"),
        }
    }
}

#[test]
fn run_json_changes_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    append(&dir.path().join(EPISODES_FILE), &line("a"));
    let (_watcher, rx) = watch(dir.path(), true);

    fs::write(dir.path().join(RUN_META_FILE), r#"{"name": "first"}"#).unwrap();
    let events = wait_until(&rx, |seen| seen.iter().any(|e| matches!(e, LiveEvent::Meta(Some(_)))));
    let names: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            LiveEvent::Meta(Some(meta)) => meta.name.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(names, vec!["first".to_string()]);

    fs::write(dir.path().join(RUN_META_FILE), "{broken").unwrap();
    let skipped = |e: &LiveEvent| matches!(e, LiveEvent::Skipped { file, reason: Some(_) } if file == RUN_META_FILE);
    let events = wait_until(&rx, |seen| seen.iter().any(skipped));
    assert!(events.iter().any(skipped), "{events:?}");
}

#[test]
fn apply_keeps_what_was_there_and_reports_what_changed() {
    let dir = tempfile::tempdir().unwrap();
    let episodes = dir.path().join(EPISODES_FILE);
    append(&episodes, &(line("a") + "garbage\n"));
    let (mut run, tails) = live::open(dir.path()).unwrap();
    assert_eq!(run.errors.len(), 1);
    let (_watcher, rx) = Watcher::spawn(dir.path(), tails, options(true)).unwrap();
    let mut status = LiveStatus::default();

    append(&episodes, &line("b"));
    let mut applied = live::Applied::default();
    let start = Instant::now();
    while run.episodes.len() < 2 {
        applied.absorb(live::drain(&rx, &mut run, &mut status));
        assert!(start.elapsed() < DEADLINE);
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(applied.new_episodes, 1..2);
    assert_eq!(run.episodes.iter().map(|e| run.episode_ids.get(&e.id)).collect::<Vec<_>>(), [Some(1), Some(3)]);
    assert_eq!(status.broken_lines, 1);
    assert!(status.since_update(Instant::now()).is_some());

    // A reset clears the episodes and their errors; what follows starts again at index 0.
    let mut reset = apply(&mut run, LiveEvent::Reset(LiveFile::Episodes));
    reset.absorb(apply(&mut run, LiveEvent::Episodes(vec![(1, serde_json::from_str(line("z").trim()).unwrap())])));
    assert!(reset.episodes_reset);
    assert_eq!(reset.new_episodes, 0..1);
    assert_eq!((run.episodes.len(), run.errors.len()), (1, 0));
}

#[test]
fn a_fresh_watcher_delivers_the_whole_run() {
    let dir = tempfile::tempdir().unwrap();
    append(&dir.path().join(EPISODES_FILE), &(line("a") + &line("b")));
    append(&dir.path().join(METRICS_FILE), &metrics_line(0));
    let (_watcher, rx) = Watcher::spawn(dir.path(), Tails::from_start(dir.path()), options(true)).unwrap();
    let mut run = Run::empty(dir.path(), Layout::Gigscope);
    let events = wait_until(&rx, |seen| episode_ids(seen).len() >= 2 && has_metrics(seen, 0));
    for event in events {
        apply(&mut run, event);
    }
    assert_eq!(run.episodes.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), vec!["a", "b"]);
    assert_eq!(run.metrics.len(), 1);
}

#[test]
fn a_read_budget_splits_a_file_into_whole_line_parts() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(EPISODES_FILE);
    let text: String = (0..10).map(|i| line(&format!("e{i}"))).collect();
    append(&path, &text);
    let mut tail = gigscope::run::JsonlTail::<Episode>::new(path);
    tail.set_budget(text.len() as u64 / 4);
    let (mut ids, mut parts) = (Vec::new(), 0);
    loop {
        let batch = tail.poll().unwrap();
        parts += 1;
        assert_eq!((batch.file_len, batch.offset), (text.len() as u64, tail.offset()));
        ids.extend(batch.records.into_iter().map(|(l, e)| (l, e.id)));
        if !batch.more {
            break;
        }
    }
    assert!((4..=5).contains(&parts), "{parts} parts");
    let expected: Vec<(u64, String)> = (0..10).map(|i| (i as u64 + 1, format!("e{i}"))).collect();
    assert_eq!(ids, expected, "every line once, in order, with its line number");
    assert_eq!(tail.offset(), text.len() as u64);
}

/// A run written group by group arrives in parts that end where a group ends: the watcher holds a part's last
/// group back until the next part (a viewer then takes in each part as new groups, computing it alone).
#[test]
fn parts_of_a_large_run_end_where_a_group_ends() {
    let dir = tempfile::tempdir().unwrap();
    let observation = "WebShop [SEP] ".repeat(1500);
    let text: String = (0..2500)
        .map(|i| {
            let steps = vec![Step::new(observation.as_str(), "click[x]", 0.0)];
            serde_json::to_string(&Episode::new(format!("e{i}"), format!("g{}", i / 7), steps)).unwrap() + "\n"
        })
        .collect();
    assert!(text.len() as u64 > 2 * gigscope::run::source::EPISODES_PART_BYTES, "three parts at least");
    append(&dir.path().join(EPISODES_FILE), &text);
    let (_, tails) = live::start_as(dir.path(), None, &Default::default()).unwrap();
    let (_watcher, rx) = Watcher::spawn(dir.path(), tails, options(false)).unwrap();
    let events = wait_until(&rx, |seen| episode_ids(seen).len() >= 2500);
    let parts: Vec<&Vec<(u64, Episode)>> = events
        .iter()
        .filter_map(|e| match e {
            LiveEvent::Episodes(part) => Some(part),
            _ => None,
        })
        .collect();
    assert!(parts.len() >= 3, "{} parts", parts.len());
    for pair in parts.windows(2) {
        let (end, next) = (&pair[0].last().unwrap().1, &pair[1][0].1);
        assert_ne!(end.group, next.group, "a part ends inside group {}", end.group);
    }
    let ids: Vec<String> = parts.iter().flat_map(|p| p.iter().map(|(_, e)| e.id.clone())).collect();
    assert_eq!(ids, (0..2500).map(|i| format!("e{i}")).collect::<Vec<_>>(), "every episode once, in file order");
}

#[test]
fn a_large_run_arrives_in_parts_with_progress_and_the_status_follows_it() {
    let dir = tempfile::tempdir().unwrap();
    // A long observation makes each line ~20 kB: 1,000 lines are more than one part.
    let observation = "WebShop [SEP] ".repeat(1500);
    let text: String = (0..1000)
        .map(|i| {
            let episode = Episode::new(format!("e{i}"), "g", vec![Step::new(observation.as_str(), "click[x]", 0.0)]);
            serde_json::to_string(&episode).unwrap() + "\n"
        })
        .collect();
    let total = text.len() as u64;
    assert!(total > gigscope::run::source::EPISODES_PART_BYTES, "the test run must be larger than one part");
    append(&dir.path().join(EPISODES_FILE), &text);

    let (run, tails) = live::start_as(dir.path(), None, &Default::default()).unwrap();
    assert!(run.episodes.is_empty(), "starting reads nothing");
    let (_watcher, rx) = Watcher::spawn(dir.path(), tails, options(false)).unwrap();
    let caught_up = |seen: &[LiveEvent]| {
        seen.iter().any(|e| matches!(e, LiveEvent::Progress { read, total: t } if *read == *t && *t == total))
    };
    let events = wait_until(&rx, |seen| episode_ids(seen).len() >= 1000 && caught_up(seen));
    let progress: Vec<(u64, u64)> = events
        .iter()
        .filter_map(|e| match e {
            // `0 of 0` says the watcher's first scan is over; the rest is the file's.
            LiveEvent::Progress { read, total } if *total > 0 => Some((*read, *total)),
            _ => None,
        })
        .collect();
    assert!(progress.len() >= 2, "one progress per part: {progress:?}");
    assert!(progress.windows(2).all(|w| w[0].0 < w[1].0), "progress only grows");
    assert_eq!(progress.last(), Some(&(total, total)), "the last one says reading has caught up");

    // The status shows the indicator while reading is behind and drops it when it has caught up.
    let mut run = run;
    let mut status = LiveStatus::default();
    let mut was_loading = false;
    let start = Instant::now();
    for (k, event) in events.into_iter().enumerate() {
        let applied = apply(&mut run, event);
        status.record(&applied, &run, start + Duration::from_millis(k as u64));
        if let Some(loading) = &status.loading {
            was_loading = true;
            assert!(loading.fraction() < 1.0 && loading.total == total);
        }
    }
    assert!(was_loading);
    assert!(status.loading.is_none());
    assert_eq!(run.episodes.len(), 1000);

    // Reading the same run at once (the CLI's way) gives the same run.
    let (whole, _) = live::open(dir.path()).unwrap();
    assert_eq!(whole.episodes, run.episodes);
    assert_eq!(whole.episode_ids, run.episode_ids);
}

#[test]
fn a_viewer_merges_one_part_at_a_time() {
    use std::collections::VecDeque;
    let episodes = |id: &str| LiveEvent::Episodes(vec![(1, Episode::new(id, "g", vec![]))]);
    let mut backlog: VecDeque<LiveEvent> = VecDeque::from(vec![
        LiveEvent::Meta(None),
        episodes("a"),
        LiveEvent::Progress { read: 1, total: 3 },
        episodes("b"),
        LiveEvent::Progress { read: 3, total: 3 },
    ]);
    let first = live::next_part(&mut backlog);
    assert_eq!(first, vec![LiveEvent::Meta(None), episodes("a")]);
    assert_eq!(live::next_part(&mut backlog), vec![LiveEvent::Progress { read: 1, total: 3 }, episodes("b")]);
    assert_eq!(live::next_part(&mut backlog), vec![LiveEvent::Progress { read: 3, total: 3 }], "the rest");
    assert!(live::next_part(&mut backlog).is_empty());
}

/// A large batch of episodes is taken in a slice at a time, each ending where a group ends, its progress
/// with the last slice.
#[test]
fn a_large_batch_is_merged_in_slices_of_whole_groups() {
    use gigscope::live::EPISODES_PER_MERGE;
    use std::collections::VecDeque;
    // Groups of 3: 2.5 slices' worth of episodes.
    let n = EPISODES_PER_MERGE * 5 / 2;
    let batch: Vec<(u64, Episode)> =
        (0..n).map(|i| (i as u64 + 1, Episode::new(format!("e{i}"), format!("g{}", i / 3), vec![]))).collect();
    let progress = LiveEvent::Progress { read: 9, total: 9 };
    let mut backlog = VecDeque::from(vec![progress.clone(), LiveEvent::Episodes(batch.clone())]);
    let mut merged = Vec::new();
    let mut slices = 0;
    while !backlog.is_empty() {
        let part = live::next_part(&mut backlog);
        let done = part.contains(&progress);
        let episodes: Vec<(u64, Episode)> = part
            .into_iter()
            .flat_map(|e| match e {
                LiveEvent::Episodes(episodes) => episodes,
                _ => Vec::new(),
            })
            .collect();
        if let (Some((_, last)), Some(LiveEvent::Episodes(next))) = (episodes.last(), backlog.front()) {
            assert_ne!(last.group, next[0].1.group, "a slice ends inside a group");
        }
        assert!(episodes.len() <= EPISODES_PER_MERGE + 2, "{} episodes at once", episodes.len());
        assert_eq!(done, backlog.is_empty(), "the progress comes with the last slice");
        merged.extend(episodes);
        slices += 1;
    }
    assert_eq!(slices, 3);
    assert_eq!(merged, batch);
}

/// How many lean episodes `event` carries.
fn lean_count(event: &LiveEvent) -> usize {
    match event {
        LiveEvent::LeanEpisodes { episodes, .. } => episodes.len(),
        _ => 0,
    }
}

/// A watcher reads no further ahead of its consumer than a bounded number of lean episodes not yet merged:
/// a consumer that keeps every part it receives stops the reading, and once it lets them go (merged), the
/// watcher is woken and the rest of the run arrives.
#[test]
fn a_watcher_reads_on_only_as_its_consumer_merges_lean_episodes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(EPISODES_FILE);
    let total = 150_000;
    let text: String = (0..total).map(|i| line(&format!("e{i}"))).collect();
    assert!(text.len() as u64 > 3 * gigscope::run::source::EPISODES_PART_BYTES, "four parts at least");
    append(&path, &text);
    let (_, tails) = live::start_as(dir.path(), None, &Default::default()).unwrap();
    let reading = LeanReading::with_classifier(TextStore::new(&path), Arc::new(|_| None), None);
    let (_watcher, rx) = Watcher::spawn(dir.path(), tails.read_lean(reading, &[]), options(false)).unwrap();

    // Keep everything received until the watcher has been silent for a second: it waits for merges.
    let mut kept = Vec::new();
    let start = Instant::now();
    loop {
        match rx.recv_timeout(Duration::from_secs(1)) {
            Ok(event) => kept.push(event),
            Err(RecvTimeoutError::Timeout) => break,
            Err(RecvTimeoutError::Disconnected) => panic!("watcher stopped"),
        }
        assert!(start.elapsed() < DEADLINE, "the watcher never paused");
    }
    let received: usize = kept.iter().map(lean_count).sum();
    assert!(received > 0 && received < total / 2, "{received} of {total} sent while none was merged");

    // Merge (drop) what was kept and whatever comes next: the rest arrives.
    drop(kept);
    let mut arrived = received;
    let start = Instant::now();
    while arrived < total {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(event) => arrived += lean_count(&event),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => panic!("watcher stopped"),
        }
        assert!(start.elapsed() < DEADLINE, "{arrived} of {total} arrived after the merges");
    }
    assert_eq!(arrived, total, "every episode once");
}
