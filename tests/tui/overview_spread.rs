//! The overview's advantage spread per iteration (issue 25): the quantiles of A_E, A_S and A over each
//! iteration's steps under the current settings, checked against values worked by hand on a run small enough
//! to work them, recomputed when the settings change, and the same when a live run's appended groups are taken
//! in alone as when the run is read whole.

use std::path::Path;

use gigscope::tui::domain::Derived;
use gigscope::tui::{open, Config, State};

/// Two iterations of one-step episodes from the same observation, so that each step group is its episode
/// group and A_S equals A_E: iteration 0 one group, rewards 0, 1, 1, 2 (mean 1); iteration 1 two groups,
/// rewards 0, 0 (mean 0) and 0, 4 (mean 2).
fn write_run(dir: &Path) {
    let groups: [(i64, &str, &[f64]); 3] =
        [(0, "g0", &[0.0, 1.0, 1.0, 2.0]), (1, "g1a", &[0.0, 0.0]), (1, "g1b", &[0.0, 4.0])];
    let mut lines = String::new();
    for (iteration, group, rewards) in groups {
        for (k, reward) in rewards.iter().enumerate() {
            let episode = serde_json::json!({
                "id": format!("{group}-e{k}"),
                "group": group,
                "iteration": iteration,
                "steps": [{"observation": "start", "action": format!("a{k}"), "reward": reward, "valid": true}],
            });
            lines += &format!("{episode}\n");
        }
    }
    std::fs::write(dir.join("episodes.jsonl"), lines).unwrap();
    let meta = serde_json::json!({
        "format": "gigscope-run/1",
        "name": "spread",
        "advantage": {"estimator": "gigpo", "gamma": 0.95, "omega": 1.0, "norm": "mean_norm", "anchor": "exact"},
    });
    std::fs::write(dir.join("run.json"), meta.to_string()).unwrap();
}

fn opened(dir: &Path) -> State {
    open(dir, Config::defaults(false).unwrap(), (120, 40)).unwrap().0
}

fn assert_close(got: [f64; 5], want: [f64; 5], what: &str) {
    for (g, w) in got.iter().zip(want) {
        assert!((g - w).abs() < 1e-12, "{what}: {got:?} is not {want:?}");
    }
}

#[test]
fn each_iterations_quantiles_are_the_hand_worked_ones() {
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path());
    let s = opened(tmp.path());
    let its = &s.domain.derived.iterations;
    assert_eq!(its.len(), 2);
    // Iteration 0: A_E = r − 1 = −1, 0, 0, 1; sorted positions (n − 1)·p = 0.15, 0.75, 1.5, 2.25, 2.85.
    let q = its[0].advantages.expect("iteration 0 has steps");
    assert_eq!(q.advantage.count, 4);
    assert_close(q.episode.at, [-0.85, -0.25, 0.0, 0.25, 0.85], "iteration 0 A_E");
    assert_close(q.step.at, [-0.85, -0.25, 0.0, 0.25, 0.85], "iteration 0 A_S");
    // A = A_E + ω·A_S with ω = 1.
    assert_close(q.advantage.at, [-1.7, -0.5, 0.0, 0.5, 1.7], "iteration 0 A");
    // Iteration 1: A_E = 0, 0 and −2, 2: sorted −2, 0, 0, 2.
    let q = its[1].advantages.expect("iteration 1 has steps");
    assert_close(q.episode.at, [-1.7, -0.5, 0.0, 0.5, 1.7], "iteration 1 A_E");
    assert_close(q.advantage.at, [-3.4, -1.0, 0.0, 1.0, 3.4], "iteration 1 A");
}

#[test]
fn a_settings_change_recomputes_them() {
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path());
    let mut s = opened(tmp.path());
    s.domain.settings.omega = 0.5;
    s.apply_settings();
    let q = s.domain.derived.iterations[0].advantages.unwrap();
    assert_close(q.episode.at, [-0.85, -0.25, 0.0, 0.25, 0.85], "A_E under ω = 0.5");
    assert_close(q.advantage.at, [-1.275, -0.375, 0.0, 0.375, 1.275], "A = 1.5·A_E under ω = 0.5");
}

#[test]
fn an_appended_iteration_taken_in_alone_gives_what_the_whole_run_gives() {
    let tmp = tempfile::tempdir().unwrap();
    write_run(tmp.path());
    let s = opened(tmp.path());
    let (episodes, settings) = (&s.domain.episodes, s.domain.table_settings());
    let whole = Derived::build(episodes, &settings);
    let part_by_part = Derived::build(&episodes.part(0..4), &settings).extend(episodes, 4, &settings);
    let spreads = |d: &Derived| d.iterations.iter().map(|i| i.advantages).collect::<Vec<_>>();
    assert_eq!(spreads(&part_by_part), spreads(&whole));
    assert_eq!(spreads(&whole), spreads(&s.domain.derived));
    // Iteration 1's first group, then its second: the iteration's quantiles are of both groups' steps.
    let halves = Derived::build(&episodes.part(0..6), &settings).extend(episodes, 6, &settings);
    assert_eq!(spreads(&halves), spreads(&whole));
}

/// One iteration of `groups` groups of two one-step episodes (rewards k mod 3 and k mod 5), in iteration 1.
fn write_large_iteration(dir: &Path, groups: usize) {
    let mut lines = String::new();
    for g in 0..groups {
        for k in 0..2 {
            let reward = if k == 0 { (g % 3) as f64 } else { (g % 5) as f64 };
            let episode = serde_json::json!({
                "id": format!("g{g}-e{k}"),
                "group": format!("g{g}"),
                "iteration": 1,
                "steps": [{"observation": "start", "action": format!("a{k}"), "reward": reward, "valid": true}],
            });
            lines += &format!("{episode}\n");
        }
    }
    std::fs::write(dir.join("episodes.jsonl"), lines).unwrap();
}

/// A live run's iteration taken in part by part has after every part the quantiles (and everything else) of
/// the run read whole to there, bit for bit: the advantages kept in order take in each part alone, and once
/// freed are taken from the rows again at the next part.
#[test]
fn a_growing_iterations_quantiles_are_exact_after_every_part() {
    let tmp = tempfile::tempdir().unwrap();
    write_large_iteration(tmp.path(), 2600);
    let s = opened(tmp.path());
    let (episodes, settings) = (&s.domain.episodes, s.domain.table_settings());
    assert_eq!(episodes.len(), 5200);
    let mut derived = Derived::build(&episodes.part(0..4000), &settings);
    assert!(!derived.holds_growing(), "a run read whole keeps nothing in order");
    let mut len = 4000;
    for (k, part) in [2, 6, 100, 292, 2, 798].into_iter().enumerate() {
        derived = derived.extend(&episodes.part(0..len + part), len, &settings);
        len += part;
        assert!(derived.holds_growing());
        let whole = Derived::build(&episodes.part(0..len), &settings);
        assert_eq!(whole.iterations[0].advantages.unwrap().advantage.count, len);
        assert_eq!(derived, whole, "after {len} episodes");
        if k == 2 {
            derived.release_growing();
            assert!(!derived.holds_growing());
            assert_eq!(derived, whole, "freeing what was kept changes nothing shown");
        }
    }
    assert_eq!(len, 5200);
}

/// Following a run, the viewer shows each part's exact quantiles at once, and frees the advantages it kept in
/// order for them once the writer pauses.
#[test]
fn following_a_run_the_viewer_frees_what_it_kept_for_the_quantiles_once_the_writer_pauses() {
    use gigscope::live::LiveEvent;
    use gigscope::run::{Episode, Step};
    use gigscope::tui::app::{Loading, Reading};
    let tmp = tempfile::tempdir().unwrap();
    write_large_iteration(tmp.path(), 2600);
    let mut s = opened(tmp.path());
    let episode = |g: usize, k: usize, reward: f64| {
        let mut episode =
            Episode::new(format!("new{g}-e{k}"), format!("new{g}"), vec![Step::new("start", "a", reward)]);
        episode.iteration = 1;
        (5200 + 2 * g as u64 + k as u64 + 1, episode)
    };
    let spreads = |d: &Derived| d.iterations.iter().map(|i| i.advantages).collect::<Vec<_>>();
    let mut loading = Loading::holding_back_for(std::time::Duration::from_millis(200));
    let arrived = (0..4).flat_map(|g| [episode(g, 0, 9.0), episode(g, 1, -9.0)]).collect();
    loading.receive(&mut s, Reading::Live(LiveEvent::Episodes(arrived))).unwrap();
    while loading.merging(&s) {
        loading.merge_next(&mut s);
    }
    assert!(s.domain.episodes.len() >= 5206, "the complete groups merged");
    let now = Derived::build(&s.domain.episodes, &s.domain.table_settings());
    assert_eq!(spreads(&s.domain.derived), spreads(&now), "exact at once");
    assert!(s.domain.derived.holds_growing());
    let wake = loading.wake_at(&s).expect("a time to wake for the last group");
    std::thread::sleep(wake.saturating_duration_since(std::time::Instant::now()));
    // The last group, then what was kept is freed.
    while loading.merging(&s) {
        loading.merge_next(&mut s);
    }
    assert_eq!(s.domain.episodes.len(), 5208);
    let wake = loading.wake_at(&s).expect("what was kept is still held until the hold has passed");
    std::thread::sleep(wake.saturating_duration_since(std::time::Instant::now()));
    loading.merge_next(&mut s);
    assert!(!s.domain.derived.holds_growing());
    let whole = Derived::build(&s.domain.episodes, &s.domain.table_settings());
    assert_eq!(spreads(&s.domain.derived), spreads(&whole));
    assert_eq!(loading.wake_at(&s), None);
}

/// While a run is read the first time, what is kept for the quantiles is freed only when the read catches up:
/// the viewer sets no time to wake for it meanwhile (a time already past would make its loop spin while it
/// waits for the reader).
#[test]
fn during_the_first_read_the_viewer_sets_no_time_to_free_what_it_kept() {
    use gigscope::live::LiveEvent;
    use gigscope::run::{Episode, Step};
    use gigscope::tui::app::{Loading, Reading};
    let tmp = tempfile::tempdir().unwrap();
    write_large_iteration(tmp.path(), 100);
    let mut s = opened(tmp.path());
    s.domain.live.first_read = true;
    let mut loading = Loading::holding_back_for(std::time::Duration::from_millis(1));
    let arrived = (0..4)
        .flat_map(|g| {
            (0..2).map(move |k| {
                let mut episode =
                    Episode::new(format!("new{g}-e{k}"), format!("new{g}"), vec![Step::new("start", "a", k as f64)]);
                episode.iteration = 1;
                (200 + 2 * g as u64 + k as u64 + 1, episode)
            })
        })
        .collect();
    loading.receive(&mut s, Reading::Live(LiveEvent::Episodes(arrived))).unwrap();
    while loading.merging(&s) {
        loading.merge_next(&mut s);
    }
    assert_eq!(s.domain.episodes.len(), 208);
    assert!(s.domain.derived.holds_growing(), "kept while the first read goes on");
    std::thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(loading.wake_at(&s), None);
    loading.merge_next(&mut s);
    assert!(s.domain.derived.holds_growing(), "not freed before the read catches up");
}
