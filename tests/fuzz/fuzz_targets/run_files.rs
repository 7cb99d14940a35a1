//! gigscope's own run directory: a fuzzed line among good ones in `episodes.jsonl` or `metrics.jsonl`, or a
//! fuzzed `run.json` (optional: a damaged one is read as absent, with a note). The first byte picks the file.
#![no_main]

use gigscope::run::Run;
use gigscope_fuzz::{assert_named_within, good_episodes, lines_in, project_lines, scratch, surround};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&which, fuzzed)) = data.split_first() else { return };
    let good = good_episodes();
    let dir = scratch();
    let plain = format!("{}\n{}\n", good[0].0, good[1].0);
    let (episodes, metrics) = match which % 3 {
        0 => (surround(&good[0].0, fuzzed, &good[1].0), None),
        1 => {
            let m = project_lines("sample_runs/webshop-gigpo/metrics.jsonl", 0, 2);
            (plain.into_bytes(), Some(surround(&m[0], fuzzed, &m[1])))
        }
        _ => {
            std::fs::write(dir.path().join("run.json"), fuzzed).unwrap();
            (plain.into_bytes(), None)
        }
    };
    std::fs::write(dir.path().join("episodes.jsonl"), &episodes).unwrap();
    if let Some(metrics) = &metrics {
        std::fs::write(dir.path().join("metrics.jsonl"), metrics).unwrap();
    }
    let run = Run::open(dir.path()).expect("a run whose episodes file is there opens, whatever its other files hold");
    for (_, id) in good {
        assert!(run.episode_ids.contains_key(id), "the good episode {id} around the fuzzed record was lost");
    }
    assert_named_within(&run.errors, lines_in(&episodes), "episodes.jsonl");
    if let Some(metrics) = &metrics {
        assert_named_within(&run.metrics_errors, lines_in(metrics), "metrics.jsonl");
        assert!(run.metrics.len() >= 2 || !run.metrics_errors.is_empty(), "good metrics records were lost");
    }
});
