//! `gigscope advantages` streams a gigscope run group by group: its output must be exactly what the whole
//! run computed at once gives, in file order, whatever the order of the groups' lines and the bad lines
//! among them.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use gigscope::advantage::{compute, AdvantageSettings, AnchorMode};
use gigscope::run::synth::{episodes, SynthSpec};
use gigscope::run::{Episode, Run};
use serde_json::Value;

fn advantages(dir: &Path, flags: &[&str]) -> (Vec<Value>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_gigscope"))
        .args(["advantages", "--format", "jsonl"])
        .args(flags)
        .arg(dir)
        .output()
        .expect("gigscope runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rows =
        String::from_utf8(out.stdout).expect("utf-8").lines().map(|l| serde_json::from_str(l).expect("json")).collect();
    (rows, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// What the whole-run engine gives for the run as every reader reads it, as the output's numbers.
fn expected(dir: &Path, settings: &AdvantageSettings) -> Vec<(String, usize, [f64; 5], u64, u64)> {
    let run = Run::open(dir).expect("run");
    let table = compute(&run.episodes, settings);
    let mut rows = Vec::new();
    for (e, episode) in run.episodes.iter().enumerate() {
        for (t, r) in table.episode_rows(e).iter().enumerate() {
            let size = table.anchor_groups.size(r.step_group as usize) as u64;
            let numbers = [r.reward, r.ret, r.episode_advantage, r.step_advantage, r.advantage];
            rows.push((episode.id.clone(), t, numbers, u64::from(r.step_group), size));
        }
    }
    rows
}

fn got(rows: &[Value]) -> Vec<(String, usize, [f64; 5], u64, u64)> {
    let f = |r: &Value, k: &str| r[k].as_f64().unwrap_or_else(|| panic!("{k} in {r}"));
    rows.iter()
        .map(|r| {
            let numbers =
                [f(r, "reward"), f(r, "return"), f(r, "episode_advantage"), f(r, "step_advantage"), f(r, "advantage")];
            let id = r["episode"].as_str().expect("id").to_owned();
            (
                id,
                r["step"].as_u64().expect("step") as usize,
                numbers,
                r["step_group"].as_u64().expect("sg"),
                r["step_group_size"].as_u64().expect("size"),
            )
        })
        .collect()
}

/// A run whose groups' lines are interleaved (round robin over the groups), with a broken line, a line
/// whose id repeats an earlier one, a line that reads as a head but not as an episode, and a torn last line.
fn interleaved_run(dir: &Path) {
    let spec = SynthSpec { groups: 6, trajectories: 4, steps: 2..=6, groups_per_iteration: 3, seed: 7 };
    let all: Vec<Episode> = episodes(&spec).collect();
    let mut order = Vec::new();
    for t in 0..4 {
        for g in 0..6 {
            order.push(&all[g * 4 + t]);
        }
    }
    let mut file = std::fs::File::create(dir.join("episodes.jsonl")).expect("create");
    for (i, episode) in order.iter().enumerate() {
        writeln!(file, "{}", serde_json::to_string(episode).expect("json")).expect("write");
        match i {
            3 => writeln!(file, "not json").expect("write"),
            7 => writeln!(file, "{}", serde_json::to_string(order[0]).expect("json")).expect("write"),
            11 => writeln!(file, r#"{{"id":"headless","group":"{}","steps":[{{"observation":"o"}}]}}"#, order[2].group)
                .expect("write"),
            _ => {}
        }
    }
    write!(file, r#"{{"id":"torn","gro"#).expect("write");
}

#[test]
fn streamed_output_equals_the_whole_run_in_file_order() {
    let tmp = tempfile::tempdir().expect("tempdir");
    interleaved_run(tmp.path());
    for (flags, settings) in [
        (vec![], AdvantageSettings::default()),
        (
            vec!["--similarity", "0.8"],
            AdvantageSettings { anchor: AnchorMode::Similarity(0.8), ..AdvantageSettings::default() },
        ),
        (
            vec!["--estimator", "rloo", "--norm", "mean_std_norm"],
            AdvantageSettings {
                estimator: gigscope::advantage::Estimator::Rloo,
                norm: gigscope::advantage::Norm::MeanStdNorm,
                ..AdvantageSettings::default()
            },
        ),
    ] {
        let (rows, stderr) = advantages(tmp.path(), &flags);
        assert_eq!(got(&rows), expected(tmp.path(), &settings), "{flags:?}");
        assert!(stderr.contains("skipped 3 broken line(s)"), "{flags:?}: {stderr}");
    }
}

#[test]
fn csv_and_table_stream_too() {
    let tmp = tempfile::tempdir().expect("tempdir");
    interleaved_run(tmp.path());
    for format in ["csv", "table"] {
        let out = Command::new(env!("CARGO_BIN_EXE_gigscope"))
            .args(["advantages", "--format", format])
            .arg(tmp.path())
            .output()
            .expect("runs");
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).expect("utf-8");
        let rows = expected(tmp.path(), &AdvantageSettings::default()).len();
        assert_eq!(text.lines().count(), rows + 1, "{format}: a header and one line per step");
    }
}
