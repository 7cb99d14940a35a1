//! Other trainers' files read as runs: a fuzzed row among good ones in a verl rollout dump's step file, or a
//! fuzzed TRL completions parquet file beside a good one. The first byte picks the trainer.
#![no_main]

use std::sync::OnceLock;

use gigscope::run::{Layout, Run, SourceOptions};
use gigscope_fuzz::{assert_named_within, lines_in, project_lines, project_root, scratch, surround};
use libfuzzer_sys::fuzz_target;

const GOOD_TRL: &str = "tests/fixtures/trl/default/completions/completions_00002.parquet";

/// How many episodes the good TRL file holds alone.
fn good_trl_episodes() -> usize {
    static N: OnceLock<usize> = OnceLock::new();
    *N.get_or_init(|| {
        let dir = scratch();
        std::fs::create_dir(dir.path().join("completions")).unwrap();
        std::fs::copy(project_root().join(GOOD_TRL), dir.path().join("completions/completions_00002.parquet")).unwrap();
        Run::open_as(dir.path(), Some(Layout::Trl), &SourceOptions::default())
            .expect("the fixture opens")
            .episodes
            .len()
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&which, fuzzed)) = data.split_first() else { return };
    let dir = scratch();
    if which % 2 == 0 {
        let rows = project_lines("tests/fixtures/verl/v1/1.jsonl", 0, 2);
        let step = surround(&rows[0], fuzzed, &rows[1]);
        std::fs::write(dir.path().join("1.jsonl"), &step).unwrap();
        let run = Run::open_as(dir.path(), Some(Layout::Verl), &SourceOptions::default())
            .expect("a verl dump with a step file opens");
        assert!(run.episodes.len() >= 2, "the good rows around the fuzzed one were lost");
        assert_named_within(&run.errors, lines_in(&step), "1.jsonl");
    } else {
        let good = good_trl_episodes();
        std::fs::create_dir(dir.path().join("completions")).unwrap();
        std::fs::write(dir.path().join("completions/completions_00001.parquet"), fuzzed).unwrap();
        std::fs::copy(project_root().join(GOOD_TRL), dir.path().join("completions/completions_00002.parquet")).unwrap();
        let run = Run::open_as(dir.path(), Some(Layout::Trl), &SourceOptions::default())
            .expect("a TRL log with a readable file opens");
        assert!(run.episodes.len() >= good, "the good file's rows were lost beside the fuzzed file");
    }
});
