//! The trajectory index on real files and a real tantivy index in a temporary cache: fielded terms,
//! phrases, ranges, the issue's example query, incremental updates, rebuilds, and a run dir left untouched.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use gigscope::advantage::{compute, AdvantageSettings};
use gigscope::index::{IndexError, TrajectoryIndex};
use gigscope::run::{Episode, Outcome, Step, Task, EPISODES_FILE};
use sha2::{Digest, Sha256};

fn step(observation: &str, action: &str, reward: f64, page: &str) -> Step {
    let mut s = Step::new(observation, action, reward);
    s.page = Some(page.to_string());
    s.thought = Some(format!("I should {action}"));
    s
}

fn episode(id: &str, group: &str, iteration: i64, success: bool, steps: Vec<Step>) -> Episode {
    let mut e = Episode::new(id, group, steps);
    e.iteration = iteration;
    e.task = Some(Task {
        id: group.to_string(),
        instruction: format!("find red running shoes ({group})"),
        ..Task::default()
    });
    e.outcome = Some(Outcome { success, score: if success { 1.0 } else { 0.0 }, ..Outcome::default() });
    e
}

/// The core issue's worked example: τ1 rewards [0,0,10] (A_E +4), τ2 rewards [0,0] (A_E −6); both first
/// steps share the anchor "Search" (A_S ±4.5125), everything else is a singleton step group.
fn worked_example() -> Vec<Episode> {
    vec![
        episode(
            "t1",
            "g1",
            0,
            true,
            vec![
                step("Search", "search[red running shoes]", 0.0, "search"),
                step("Results: red running shoes [SEP] B01", "click[b01]", 0.0, "results"),
                step("Item B01 red running shoes [SEP] Buy Now", "click[buy now]", 10.0, "item"),
            ],
        ),
        episode(
            "t2",
            "g1",
            0,
            false,
            vec![
                step("Search", "search[blue shoes]", 0.0, "search"),
                step("Item B02 blue shoes [SEP] Buy Now", "click[buy now]", 0.0, "item"),
            ],
        ),
    ]
}

fn second_group() -> Vec<Episode> {
    vec![
        episode("t3", "g2", 1, false, vec![step("Search", "search[green hat]", 0.0, "search")]),
        episode(
            "t4",
            "g2",
            1,
            true,
            vec![step("Search", "search[green hat]", 0.0, "search"), step("Item hat", "click[buy now]", 1.0, "item")],
        ),
    ]
}

fn write_run(dir: &Path, episodes: &[Episode]) {
    let lines: String = episodes.iter().map(|e| serde_json::to_string(e).unwrap() + "\n").collect();
    fs::write(dir.join(EPISODES_FILE), lines).unwrap();
}

fn hash_tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            for (k, v) in hash_tree(&path) {
                out.insert(format!("{name}/{k}"), v);
            }
        } else {
            out.insert(name, Sha256::digest(fs::read(&path).unwrap()).to_vec());
        }
    }
    out
}

struct Fixture {
    run: tempfile::TempDir,
    cache: tempfile::TempDir,
    settings: AdvantageSettings,
}

impl Fixture {
    fn new(episodes: &[Episode]) -> Self {
        let run = tempfile::tempdir().unwrap();
        write_run(run.path(), episodes);
        Fixture { run, cache: tempfile::tempdir().unwrap(), settings: AdvantageSettings::default() }
    }

    fn open(&self) -> TrajectoryIndex {
        TrajectoryIndex::open(self.run.path(), self.cache.path(), &self.settings).unwrap()
    }

    fn indexed(&self, episodes: &[Episode]) -> TrajectoryIndex {
        let mut index = self.open();
        index.update(episodes, &compute(episodes, &self.settings)).unwrap();
        index
    }
}

fn positions(index: &TrajectoryIndex, query: &str) -> Vec<(String, usize)> {
    let results = index.search(query, 100).unwrap();
    assert_eq!(results.total, results.hits.len(), "{query}: fewer than 100 hits expected");
    results.hits.into_iter().map(|h| (h.episode_id, h.step)).collect()
}

fn ids(list: &[(&str, usize)]) -> Vec<(String, usize)> {
    list.iter().map(|&(id, step)| (id.to_string(), step)).collect()
}

#[test]
fn the_issue_example_query_finds_the_failed_buy_now() {
    let episodes = worked_example();
    let fx = Fixture::new(&episodes);
    let index = fx.indexed(&episodes);
    // t2's buy-now step has A = A_E = −6; t1's succeeded.
    assert_eq!(positions(&index, r#"action:"buy now" AND success:false AND adv:<-1"#), ids(&[("t2", 1)]));
    let hit = &index.search(r#"action:"buy now" AND success:false AND adv:<-1"#, 10).unwrap().hits[0];
    assert_eq!(hit.episode, 1);
}

#[test]
fn fielded_terms_and_phrases() {
    let episodes = worked_example();
    let fx = Fixture::new(&episodes);
    let index = fx.indexed(&episodes);
    assert_eq!(positions(&index, "action:blue"), ids(&[("t2", 0)]));
    assert_eq!(positions(&index, "page:item"), ids(&[("t1", 2), ("t2", 1)]));
    assert_eq!(positions(&index, "id:t2 AND page:search"), ids(&[("t2", 0)]));
    assert_eq!(positions(&index, r#"observation:"red running shoes" AND page:results"#), ids(&[("t1", 1)]));
    // Word order matters in a phrase.
    assert!(positions(&index, r#"action:"now buy""#).is_empty());
    // Unfielded words search all text fields and must all match.
    assert_eq!(positions(&index, "blue search"), ids(&[("t2", 0)]));
    // `AND NOT` and a bare `NOT` mean "all except".
    assert_eq!(positions(&index, "thought:click AND NOT action:b01"), ids(&[("t1", 2), ("t2", 1)]));
    assert_eq!(positions(&index, "thought:click -action:b01"), ids(&[("t1", 2), ("t2", 1)]));
    assert_eq!(positions(&index, "NOT success:true"), ids(&[("t2", 0), ("t2", 1)]));
    assert_eq!(positions(&index, "page:item AND NOT (id:t1 OR id:t3)"), ids(&[("t2", 1)]));
    assert_eq!(positions(&index, "instruction:shoes").len(), 5);
}

#[test]
fn numeric_ranges_and_comparisons() {
    let episodes = worked_example();
    let fx = Fixture::new(&episodes);
    let index = fx.indexed(&episodes);
    assert_eq!(positions(&index, "reward:>=0.5"), ids(&[("t1", 2)]));
    assert_eq!(positions(&index, "reward:[0.5 TO 10]"), ids(&[("t1", 2)]));
    assert_eq!(positions(&index, "reward:{* TO 10}").len(), 4);
    // A of t2 step 0 is −6 − 4.5125.
    assert_eq!(positions(&index, "adv:<-10"), ids(&[("t2", 0)]));
    assert_eq!(positions(&index, "adv_s:>0"), ids(&[("t1", 0)]));
    assert_eq!(positions(&index, "adv_e:[3.9 TO 4.1]").len(), 3);
    assert_eq!(positions(&index, "step_group_size:2"), ids(&[("t1", 0), ("t2", 0)]));
    assert_eq!(positions(&index, "step_group_size:>1 AND return:>9"), ids(&[("t1", 0)]));
    assert_eq!(positions(&index, "step:>=2"), ids(&[("t1", 2)]));
    assert_eq!(positions(&index, "iteration:0 AND success:true").len(), 3);
    assert_eq!(positions(&index, "episode:1"), ids(&[("t2", 0), ("t2", 1)]));
}

/// `positions` is every match in file order, whatever the limit of a search would be, and the same steps as the
/// search finds.
#[test]
fn positions_are_every_match_in_file_order() {
    let episodes = synth_run(30);
    let fx = Fixture::new(&episodes);
    let index = fx.indexed(&episodes);
    for query in ["page:item", "success:false AND step:>=1", "NOT page:search", "action:nothing_like_this"] {
        let all = index.search(query, 100_000).unwrap();
        let mut want: Vec<(usize, usize)> = all.hits.iter().map(|h| (h.episode, h.step)).collect();
        want.sort_unstable();
        assert_eq!(index.positions(query).unwrap(), want, "{query}");
    }
    assert!(index.positions("page:item").unwrap().len() > 10);
    assert!(matches!(index.positions("adv:<<"), Err(IndexError::Query { .. })));
}

#[test]
fn equal_scores_come_back_in_file_order() {
    let mut episodes = worked_example();
    episodes.extend(second_group());
    let fx = Fixture::new(&episodes);
    let index = fx.indexed(&episodes);
    assert_eq!(positions(&index, "success:false"), ids(&[("t2", 0), ("t2", 1), ("t3", 0)]));
    let limited = index.search("page:search", 2).unwrap();
    assert_eq!(limited.total, 4);
    assert_eq!(
        limited.hits.iter().map(|h| (h.episode_id.as_str(), h.step)).collect::<Vec<_>>(),
        vec![("t1", 0), ("t2", 0)]
    );
}

#[test]
fn bad_queries_say_what_is_wrong() {
    let episodes = worked_example();
    let fx = Fixture::new(&episodes);
    let index = fx.indexed(&episodes);
    let message = |q: &str| match index.search(q, 10) {
        Err(IndexError::Query { message, .. }) => message,
        other => panic!("{q}: expected a query error, got {other:?}"),
    };
    assert!(message("colour:red").contains("unknown field `colour`"));
    assert!(message("adv:<abc").contains("expected a number"));
    assert!(message("success:maybe").contains("true or false"));
    assert!(message("step:1.5").contains("whole number"));
    assert!(message(r#"action:"buy now"#).contains("syntax error"));
    // tantivy ends a JSON field's path at a NUL byte and splits it at 0x01: a reward function's name holding
    // one made tantivy's parser panic (a fuzz finding, tests/fuzz/regressions/webshop_input).
    for query in ["rewards.a\u{0}b:1", "rewards.a\u{1}b:[0 TO 1]", "rewards.a\u{0}:>1", "step\u{7}:1"] {
        assert!(message(query).contains("control character"), "{query:?}: {}", message(query));
    }
}

#[test]
fn an_excluded_term_scores_alike_in_every_segment() {
    // Two updates make two segments: the first holds `action:b01`'s postings, the second none. The match-all
    // part of `AND NOT` once scored 1 where the excluded term had postings and 0 where tantivy dropped it, so
    // hits ranked by which segment they were in (and the multi-threaded writer's split made it flaky).
    let mut episodes = worked_example();
    let fx = Fixture::new(&episodes);
    let mut index = fx.open();
    index.update(&episodes, &compute(&episodes, &fx.settings)).unwrap();
    episodes.extend(second_group());
    write_run(fx.run.path(), &episodes);
    index.update(&episodes, &compute(&episodes, &fx.settings)).unwrap();
    let scores = |query: &str| -> BTreeMap<(String, usize), f32> {
        let results = index.search(query, 100).unwrap();
        results.hits.into_iter().map(|h| ((h.episode_id, h.step), h.score)).collect()
    };
    let plain = scores("action:search");
    let excluding = scores("action:search AND NOT action:b01");
    assert_eq!(plain.len(), 4, "{plain:?}");
    assert_eq!(excluding.keys().collect::<Vec<_>>(), plain.keys().collect::<Vec<_>>());
    for (hit, score) in &excluding {
        assert!((score - plain[hit]).abs() < 1e-6, "{hit:?}: {score} excluding, {} plain", plain[hit]);
    }
}

#[test]
fn updates_are_incremental_survive_reopening_and_rewrite_changed_groups() {
    let mut episodes = worked_example();
    let fx = Fixture::new(&episodes);
    let mut index = fx.open();
    let stats = index.update(&episodes, &compute(&episodes, &fx.settings)).unwrap();
    assert_eq!((stats.rebuilt, stats.episodes_written, stats.episodes_indexed), (true, 2, 2));
    drop(index);

    // Reopened: nothing to do for the same episodes.
    let mut index = fx.open();
    assert_eq!(index.episodes_indexed(), 2);
    let stats = index.update(&episodes, &compute(&episodes, &fx.settings)).unwrap();
    assert_eq!((stats.rebuilt, stats.episodes_written), (false, 0));

    // A new group: only its episodes are written.
    episodes.extend(second_group());
    write_run(fx.run.path(), &episodes);
    let stats = index.update(&episodes, &compute(&episodes, &fx.settings)).unwrap();
    assert_eq!((stats.rebuilt, stats.episodes_written, stats.steps_written), (false, 2, 3));
    assert_eq!(positions(&index, "id:t4").len(), 2);

    // A third member of g1 changes the group mean (scores 10,10,10,0,0,0 → mean 5): t1 and t2 are
    // rewritten with their new advantages and nothing is duplicated.
    episodes.push(episode("t5", "g1", 0, false, vec![step("Search", "search[shoes]", 0.0, "search")]));
    write_run(fx.run.path(), &episodes);
    let stats = index.update(&episodes, &compute(&episodes, &fx.settings)).unwrap();
    assert_eq!((stats.rebuilt, stats.episodes_written), (false, 3));
    assert_eq!(positions(&index, "adv_e:5").len(), 3);
    assert_eq!(positions(&index, "adv_e:4").len(), 0);
    assert_eq!(positions(&index, "group:g1").len(), 6);
    assert_eq!(index.search("*", 100).unwrap().total, 9);
    drop(index);
    assert_eq!(fx.open().episodes_indexed(), 5);
}

#[test]
fn a_truncated_or_replaced_run_is_rebuilt() {
    let mut episodes = worked_example();
    episodes.extend(second_group());
    let fx = Fixture::new(&episodes);
    let mut index = fx.indexed(&episodes);

    let truncated = &episodes[..1];
    let stats = index.update(truncated, &compute(truncated, &fx.settings)).unwrap();
    assert!(stats.rebuilt);
    assert_eq!(index.search("*", 100).unwrap().total, 3);

    // Same length, different content.
    let mut replaced = worked_example();
    replaced[0].id = "other".to_string();
    index.update(&replaced[..1], &compute(&replaced[..1], &fx.settings)).unwrap();
    assert_eq!(positions(&index, "id:t1").len(), 0);
    assert_eq!(positions(&index, "id:other").len(), 3);
}

#[test]
fn settings_have_their_own_index_and_the_run_is_never_written() {
    let episodes = worked_example();
    let fx = Fixture::new(&episodes);
    fs::write(fx.run.path().join("run.json"), r#"{"format":"gigscope-run/1"}"#).unwrap();
    let before = hash_tree(fx.run.path());

    let index = fx.indexed(&episodes);
    let grpo = AdvantageSettings { omega: 0.0, ..AdvantageSettings::default() };
    let mut other = TrajectoryIndex::open(fx.run.path(), fx.cache.path(), &grpo).unwrap();
    assert_ne!(index.dir(), other.dir());
    assert_eq!(other.episodes_indexed(), 0);
    other.update(&episodes, &compute(&episodes, &grpo)).unwrap();
    // With ω = 0, A = A_E: t2's first step is −6, not −10.5.
    assert_eq!(positions(&other, "adv:<-10").len(), 0);
    assert_eq!(positions(&index, "adv:<-10").len(), 1);
    assert!(index.dir().starts_with(fx.cache.path().canonicalize().unwrap()));

    assert_eq!(hash_tree(fx.run.path()), before);
}

#[test]
fn a_cache_inside_the_run_is_refused() {
    let episodes = worked_example();
    let fx = Fixture::new(&episodes);
    let inside = fx.run.path().join("cache");
    let result = TrajectoryIndex::open(fx.run.path(), &inside, &fx.settings);
    assert!(matches!(result, Err(IndexError::CacheInsideRun { .. })));
}

#[test]
fn a_table_for_other_episodes_is_rejected() {
    let episodes = worked_example();
    let fx = Fixture::new(&episodes);
    let mut index = fx.open();
    let result = index.update(&episodes, &compute(&episodes[..1], &fx.settings));
    assert!(matches!(result, Err(IndexError::TableMismatch { table: 1, episodes: 2 })));
}

/// A generated run of `groups` groups of 8 (1–12 steps each), written to a fixture.
fn synth_run(groups: usize) -> Vec<Episode> {
    use gigscope::run::synth::{self, SynthSpec};
    synth::episodes(&SynthSpec { groups, trajectories: 8, steps: 1..=12, groups_per_iteration: 4, seed: 3 }).collect()
}

fn steps_of(episodes: &[Episode]) -> usize {
    episodes.iter().map(|e| e.steps.len()).sum()
}

/// Every matching step, in file order. Scores are left out: BM25 statistics count deleted documents until
/// their segment is merged, and constant scores of filters depend on the segments, so two indexes of the
/// same documents built in different batches agree on what matches, not on scores.
fn matching(index: &TrajectoryIndex, query: &str) -> Vec<(usize, usize, String)> {
    let results = index.search(query, 10_000).unwrap();
    assert_eq!(results.total, results.hits.len());
    let mut all: Vec<_> = results.hits.into_iter().map(|h| (h.episode, h.step, h.episode_id)).collect();
    all.sort();
    all
}

const PROBES: [&str; 6] = [
    "*",
    "page:results AND adv:<0",
    "adv_e:>0 AND success:true",
    r#"action:"buy now""#,
    "step_group_size:>1 AND return:>0",
    "running shoes",
];

#[test]
fn a_build_in_batches_is_searchable_from_another_thread_as_it_grows() {
    use std::ops::ControlFlow;
    use std::sync::mpsc;

    // Batches of 20 episodes cut groups of 8: a group's earlier members are rewritten by the next batch.
    let episodes = synth_run(12);
    let fx = Fixture::new(&episodes);
    let table = compute(&episodes, &fx.settings);
    let mut index = fx.open();
    let searcher = index.searcher();
    let (to_main, from_builder) = mpsc::channel();
    let (to_builder, from_main) = mpsc::channel::<()>();
    let (stats, reports) = std::thread::scope(|scope| {
        let builder = scope.spawn(move || {
            let mut reports = Vec::new();
            let stats = index
                .update_in_batches(&episodes, &table, 20, |p| {
                    reports.push(p);
                    // Wait until the main thread has searched this state.
                    to_main.send(p).unwrap();
                    from_main.recv().unwrap();
                    ControlFlow::Continue(())
                })
                .unwrap();
            (stats, reports)
        });
        for p in from_builder {
            let snapshot = searcher.snapshot();
            assert_eq!(snapshot.episodes_indexed(), p.episodes_indexed);
            assert_eq!(p.episodes_total, 96);
            // Exactly the committed prefix, whole episodes, nothing beyond it.
            let prefix = &synth_run(12)[..p.episodes_indexed];
            assert_eq!(snapshot.search("*", 0).unwrap().total, steps_of(prefix));
            assert_eq!(snapshot.search(&format!("episode:>={}", p.episodes_indexed), 0).unwrap().total, 0);
            let hits = snapshot.search("*", 10_000).unwrap().hits;
            assert!(hits
                .iter()
                .all(|h| prefix[h.episode].id == h.episode_id && h.step < prefix[h.episode].steps.len()));
            to_builder.send(()).unwrap();
        }
        builder.join().unwrap()
    });
    assert_eq!(reports.iter().map(|p| p.episodes_indexed).collect::<Vec<_>>(), vec![20, 40, 60, 80, 96]);
    assert!(reports.iter().all(|p| p.rebuilt));
    assert!(!stats.cancelled && stats.rebuilt);
    assert_eq!((stats.episodes_indexed, stats.steps_written), (96, reports.last().unwrap().steps_written));
    // Earlier members of the cut groups were written twice.
    assert!(stats.episodes_written > 96);

    // The same documents as a build in one commit.
    let episodes = synth_run(12);
    let one = Fixture::new(&episodes);
    let whole = one.indexed(&episodes);
    let batched = fx.open();
    assert_eq!(batched.episodes_indexed(), 96);
    for query in PROBES {
        assert_eq!(matching(&batched, query), matching(&whole, query), "{query}");
    }
}

#[test]
fn a_cancelled_build_leaves_a_valid_index_that_a_later_update_completes() {
    use std::ops::ControlFlow;

    let episodes = synth_run(10);
    let fx = Fixture::new(&episodes);
    let table = compute(&episodes, &fx.settings);
    let mut index = fx.open();
    let mut calls = 0;
    let stats = index
        .update_in_batches(&episodes, &table, 30, |p| {
            calls += 1;
            if p.episodes_indexed >= 30 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    assert_eq!(calls, 1);
    assert!(stats.cancelled);
    assert_eq!((stats.episodes_indexed, index.episodes_indexed()), (30, 30));
    assert_eq!(index.search("*", 0).unwrap().total, steps_of(&episodes[..30]));
    drop(index);

    // Reopened (as after quitting): the committed prefix is there, and an update goes on from it.
    let mut index = fx.open();
    assert_eq!(index.episodes_indexed(), 30);
    assert_eq!(index.search("*", 0).unwrap().total, steps_of(&episodes[..30]));
    let stats = index.update(&episodes, &table).unwrap();
    assert!(!stats.rebuilt && !stats.cancelled);
    assert_eq!(stats.episodes_indexed, 80);
    // Episodes 30..80 and the earlier members of the group cut at 30 (24..30).
    assert_eq!(stats.episodes_written, 56);

    let whole = Fixture::new(&episodes);
    let whole = whole.indexed(&episodes);
    for query in PROBES {
        assert_eq!(matching(&index, query), matching(&whole, query), "{query}");
    }
}

#[test]
fn exact_values_of_advantages_are_searched_as_ranges() {
    let episodes = worked_example();
    let fx = Fixture::new(&episodes);
    let index = fx.indexed(&episodes);
    // A_E of t1 is +4 (three steps), of t2 −6; the computed numbers are columns, not indexed terms.
    assert_eq!(positions(&index, "adv_e:4").len(), 3);
    assert_eq!(positions(&index, "adv_e:-6 AND page:item"), ids(&[("t2", 1)]));
    assert_eq!(positions(&index, r#"adv_e:"4" AND step:0"#), ids(&[("t1", 0)]));
    assert_eq!(positions(&index, "NOT adv_e:4").len(), 2);
}

/// A viewer's lean episodes (text left on disk, read back as the index writes them) build the same index as
/// the episodes held in memory, and each recognises the other's index as up to date.
#[test]
fn lean_episodes_read_back_from_disk_index_like_episodes_in_memory() {
    use gigscope::run::text_on_disk::{LeanEpisode, PageIds, TextStore};
    use gigscope::run::Run;
    let mut episodes = worked_example();
    episodes.extend(second_group());
    let fx = Fixture::new(&episodes);
    let read = Run::open(fx.run.path()).unwrap().episodes;
    let store = TextStore::new(&fx.run.path().join(EPISODES_FILE));
    let mut pages = PageIds::default();
    let lean: Vec<LeanEpisode> = read.iter().map(|e| LeanEpisode::new(e.clone(), &store, &mut pages, None)).collect();
    let table = compute(&episodes, &fx.settings);

    let from_memory = fx.indexed(&episodes);
    let other_cache = tempfile::tempdir().unwrap();
    let mut from_disk = TrajectoryIndex::open(fx.run.path(), other_cache.path(), &fx.settings).unwrap();
    let stats = from_disk.update(&lean, &table).unwrap();
    assert_eq!((stats.episodes_written, stats.steps_written), (4, 8));
    for query in ["shoes", "action:\"buy now\"", "adv_e:>0", "page:item AND success:true", "thought:search"] {
        assert_eq!(positions(&from_disk, query), positions(&from_memory, query), "{query}");
    }
    drop(from_memory);
    let mut reopened = fx.open();
    let stats = reopened.update(&lean, &table).unwrap();
    assert_eq!((stats.rebuilt, stats.episodes_written), (false, 0), "the same run, whichever way it is held");
}

/// A WebShop run recorded without page types (another trainer's rollouts) is indexed under the pages its
/// environment derives from each observation, as the engine's page anchors see them: `page:item` finds the same
/// steps as in the run gigscope recorded with its pages.
#[test]
fn steps_without_a_page_are_indexed_under_their_environments_page_anchor() {
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs/webshop-gigpo");
    let run = gigscope::run::Run::open(&sample).unwrap();
    let page_anchor = gigscope::env_registry::page_anchor(&run);
    assert!(page_anchor.is_some(), "the sample is a WebShop run");
    let recorded = run.episodes.clone();
    let mut bare = recorded.clone();
    bare.iter_mut().flat_map(|e| e.steps.iter_mut()).for_each(|s| s.page = None);

    let with_pages = Fixture::new(&recorded).indexed(&recorded);
    let fx = Fixture::new(&bare);
    let mut derived = fx.open().with_page_anchor(page_anchor);
    derived.update(&bare, &compute(&bare, &fx.settings)).unwrap();
    let plain = Fixture::new(&bare).indexed(&bare);
    for page in ["search", "results", "item"] {
        let query = format!("page:{page}");
        let want = with_pages.search(&query, 10_000).unwrap();
        assert!(want.total > 0, "{query}");
        let got = derived.search(&query, 10_000).unwrap();
        let key = |r: &gigscope::index::SearchResults| -> Vec<(String, usize)> {
            r.hits.iter().map(|h| (h.episode_id.clone(), h.step)).collect()
        };
        assert_eq!(key(&got), key(&want), "{query}");
        assert_eq!(plain.search(&query, 10).unwrap().total, 0, "without the page anchor nothing has a page");
    }
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn a_damaged_index_is_rebuilt_on_open() {
    let mut episodes = worked_example();
    episodes.extend(second_group());
    let fx = Fixture::new(&episodes);
    let index = fx.indexed(&episodes);
    let dir = index.dir().to_path_buf();
    let every_step = index.search("*", 100).unwrap().total;
    assert_eq!(every_step, steps_of(&episodes));
    drop(index);
    let pristine = tempfile::tempdir().unwrap();
    copy_dir(&dir, pristine.path());
    let segment_files: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with(".json") && !name.starts_with('.'))
        .collect();
    assert!(segment_files.len() >= 5, "{segment_files:?}");

    type Damage = fn(&Path);
    let damages: [(&str, Damage); 4] = [
        ("truncated", |p| {
            let len = fs::metadata(p).unwrap().len();
            fs::OpenOptions::new().write(true).open(p).unwrap().set_len(len / 2).unwrap();
        }),
        ("deleted", |p| fs::remove_file(p).unwrap()),
        ("a byte flipped in its body", |p| {
            let mut bytes = fs::read(p).unwrap();
            let middle = bytes.len().saturating_sub(16) / 2;
            bytes[middle] ^= 0x5a;
            fs::write(p, bytes).unwrap();
        }),
        ("a byte flipped in its footer", |p| {
            let mut bytes = fs::read(p).unwrap();
            let last = bytes.len() - 3;
            bytes[last] ^= 0x5a;
            fs::write(p, bytes).unwrap();
        }),
    ];
    for file in &segment_files {
        for (what, damage) in &damages {
            fs::remove_dir_all(&dir).unwrap();
            copy_dir(pristine.path(), &dir);
            damage(&dir.join(file));
            let mut index = fx.open();
            index.update(&episodes[..], &compute(&episodes, &fx.settings)).unwrap();
            let found = index.search("*", 100).map(|r| r.total);
            assert_eq!(found.ok(), Some(every_step), "{file} {what}: every step is found again");
            assert_eq!(positions(&index, "id:t1").len(), 3, "{file} {what}");
        }
    }
}

/// verl-agent responses: a thought, then the action in `<action>…</action>`. τ1 and τ2 buy with different
/// thoughts; τ3's thought weighs buying but its action picks an option.
fn tagged_responses() -> Vec<Episode> {
    let item = "Item B01 red running shoes [SEP] medium [SEP] Buy Now";
    vec![
        episode(
            "t1",
            "g1",
            1,
            true,
            vec![step(item, "<think>right size</think><action>click[buy now]</action>", 1.0, "item")],
        ),
        episode(
            "t2",
            "g1",
            1,
            true,
            vec![step(item, "<think>cheap enough, go</think>\n<action> click[buy now] </action>", 1.0, "item")],
        ),
        episode(
            "t3",
            "g1",
            1,
            false,
            vec![step(item, "<think>buy now? the size first</think><action>click[medium]</action>", 0.0, "item")],
        ),
    ]
}

/// `action` is the action the environment parsed: the two purchases match `action:"buy now"` whatever their
/// thoughts say, τ3 (whose thought says "buy now") does not; the whole response stays searchable as `response`,
/// and unfielded words search it too.
#[test]
fn the_action_field_holds_the_extracted_action_and_response_the_whole_response() {
    let episodes = tagged_responses();
    let fx = Fixture::new(&episodes);
    let index = fx.indexed(&episodes);
    assert_eq!(positions(&index, r#"action:"buy now""#), ids(&[("t1", 0), ("t2", 0)]));
    assert_eq!(positions(&index, "action:medium"), ids(&[("t3", 0)]));
    // The tags and the thought are not part of the action.
    assert!(positions(&index, "action:think").is_empty());
    assert!(positions(&index, "action:size").is_empty());
    assert_eq!(positions(&index, r#"response:"buy now""#), ids(&[("t1", 0), ("t2", 0), ("t3", 0)]));
    assert_eq!(positions(&index, "response:cheap"), ids(&[("t2", 0)]));
    assert_eq!(positions(&index, "size AND page:item"), ids(&[("t1", 0), ("t3", 0)]));
    // Every match as (episode, step), as the credit audit groups by a query.
    assert_eq!(index.positions(r#"action:"buy now""#).unwrap(), vec![(0, 0), (1, 0)]);
}

/// A run's own regex is the rule the index extracts with, and it is part of the index's key: the same run under
/// the tagged rule and under a regex has two indexes that answer differently.
#[test]
fn a_runs_action_regex_decides_the_action_field() {
    let episodes = tagged_responses();
    let mut fx = Fixture::new(&episodes);
    let tagged = fx.indexed(&episodes);
    // The regex takes what the thought begins with instead.
    fx.settings.action = gigscope::advantage::ActionRule::pattern(r"<think>(\w+)").unwrap();
    let by_regex = fx.indexed(&episodes);
    assert_ne!(tagged.dir(), by_regex.dir());
    assert_eq!(positions(&by_regex, "action:buy"), ids(&[("t3", 0)]));
    assert_eq!(positions(&by_regex, "action:right"), ids(&[("t1", 0)]));
    assert!(positions(&by_regex, r#"action:"buy now""#).is_empty());
    assert_eq!(positions(&tagged, "action:buy"), ids(&[("t1", 0), ("t2", 0)]));
}
