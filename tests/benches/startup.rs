//! Whole-process timings of the binary users run (no `train` feature, so no libtorch): `gigscope --help`, and
//! `gigscope advantages` on a 1,000-step synthetic WebShop-like run (`gigscope::run::synth`, GiGPO's reference
//! batch shape: groups of 8 trajectories of 3–15 steps) with exact and with similarity anchors (θ 0.9), side by
//! side with a straightforward Python implementation of the same computation, `../shared/reference/gigpo_ref.py`
//! (checked first to print the same advantages, to 1e-9).
//!
//! Goals (issue 13): `--help` under 20 ms; `advantages` at least 10× faster than the Python.
//!
//! Run with `cargo bench --bench startup` (add `-- N` for N timed runs per command, default 20). With
//! `GIGSCOPE_BENCH_BASELINE=/path/to/an/older/gigscope` the same gigscope commands are also timed on that binary,
//! alternating run by run with this binary's, for a before/after comparison on one machine at one time;
//! `GIGSCOPE_BENCH_REFERENCE=path/to/gigpo_ref.py` when `../shared` is elsewhere; `GIGSCOPE_BENCH_DIR=DIR`
//! keeps the generated run in `DIR/startup-run`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gigscope::run::synth::{episodes, SynthSpec};
use gigscope::run::{Episode, RunWriter};

/// The first spec of GiGPO's reference-batch shape, counting groups up, with at least `steps` steps.
fn run_of(steps: usize) -> (SynthSpec, Vec<Episode>) {
    for groups in 1.. {
        let spec = SynthSpec { groups, ..SynthSpec::reference_batch() };
        let run: Vec<Episode> = episodes(&spec).collect();
        if run.iter().map(|e| e.steps.len()).sum::<usize>() >= steps {
            return (spec, run);
        }
    }
    unreachable!()
}

/// The Python interpreter itself (not a version manager's shim, whose own start-up would be timed too).
fn python() -> PathBuf {
    let out = Command::new("python3").args(["-c", "import sys; print(sys.executable)"]).output().expect("python3");
    PathBuf::from(String::from_utf8_lossy(&out.stdout).trim())
}

struct Timed {
    name: String,
    program: PathBuf,
    args: Vec<String>,
    samples: Vec<Duration>,
}

impl Timed {
    fn new(name: &str, program: &Path, args: &[&str]) -> Timed {
        Timed {
            name: name.into(),
            program: program.into(),
            args: args.iter().map(|s| s.to_string()).collect(),
            samples: vec![],
        }
    }

    /// One run, output discarded; panics if it fails.
    fn once(&self) -> Duration {
        let start = Instant::now();
        let status = Command::new(&self.program)
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("command starts");
        let took = start.elapsed();
        // `gigscope` with no subcommand exits 2 after printing help; `--help` exits 0.
        assert!(status.success(), "{} {:?} failed: {status}", self.program.display(), self.args);
        took
    }

    fn median(&self) -> Duration {
        let mut s = self.samples.clone();
        s.sort();
        s[s.len() / 2]
    }

    fn min(&self) -> Duration {
        self.samples.iter().copied().min().unwrap_or_default()
    }
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

/// `gigscope advantages --format jsonl` and the Python print the same advantages, row by row.
fn check_same(gigscope: &Path, python: &Path, reference: &Path, run: &Path, extra: &[&str]) {
    let ours = Command::new(gigscope).args(["advantages", "--format", "jsonl"]).arg(run).args(extra).output().unwrap();
    let theirs = Command::new(python).arg(reference).arg(run).args(extra).output().unwrap();
    assert!(ours.status.success() && theirs.status.success(), "{}", String::from_utf8_lossy(&theirs.stderr));
    let parse = |out: &[u8]| -> Vec<f64> {
        String::from_utf8_lossy(out)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["advantage"].as_f64().unwrap())
            .collect()
    };
    let (a, b) = (parse(&ours.stdout), parse(&theirs.stdout));
    assert_eq!(a.len(), b.len());
    let worst = a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max);
    assert!(worst < 1e-9, "gigscope and the Python differ by {worst} with {extra:?}");
}

fn main() {
    let runs: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(20);
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_gigscope"));
    let reference = std::env::var_os("GIGSCOPE_BENCH_REFERENCE")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/reference/gigpo_ref.py"));
    let python = python();

    // With GIGSCOPE_BENCH_DIR=DIR the run is kept in DIR/startup-run (e.g. for hyperfine).
    let dir = tempfile::tempdir().unwrap();
    let run_dir = match std::env::var_os("GIGSCOPE_BENCH_DIR") {
        Some(keep) => Path::new(&keep).join("startup-run"),
        None => dir.path().join("run"),
    };
    let _ = std::fs::remove_dir_all(&run_dir);
    let (spec, run) = run_of(1000);
    let mut writer = RunWriter::create(&run_dir).unwrap();
    for e in &run {
        writer.append_episode(e).unwrap();
    }
    drop(writer);
    let steps: usize = run.iter().map(|e| e.steps.len()).sum();
    let bytes = std::fs::metadata(run_dir.join("episodes.jsonl")).map(|m| m.len()).unwrap_or(0);
    let r = run_dir.to_str().unwrap();
    println!(
        "run: {} groups × {} trajectories, {} episodes, {steps} steps, {:.0} kB (synth seed {})",
        spec.groups,
        spec.trajectories,
        run.len(),
        bytes as f64 / 1e3,
        spec.seed
    );
    check_same(&bin, &python, &reference, &run_dir, &[]);
    check_same(&bin, &python, &reference, &run_dir, &["--similarity", "0.9"]);
    println!("gigscope advantages and {} print the same advantages (exact and θ 0.9)", reference.display());

    // Each command is timed in a block of its own, alternating run by run with the same command of the baseline
    // binary when one is given (drift in a shared machine's load then falls on both alike). Blocks, not rounds
    // of every command: in rounds, the run after a 1.5 s Python run found the caches cold, and whichever command
    // came next in the round was charged for it.
    let baseline = std::env::var_os("GIGSCOPE_BENCH_BASELINE").map(PathBuf::from);
    let pair = |name: &str, args: &[&str]| -> Vec<Timed> {
        let mut block = vec![Timed::new(&format!("gigscope {name}"), &bin, args)];
        if let Some(old) = &baseline {
            block.push(Timed::new(&format!("baseline: gigscope {name}"), old, args));
        }
        block
    };
    let reference = reference.to_str().unwrap();
    let mut blocks = vec![
        pair("--help", &["--help"]),
        pair("advantages, exact", &["advantages", "--format", "jsonl", r]),
        pair("advantages, similarity 0.9", &["advantages", "--format", "jsonl", r, "--similarity", "0.9"]),
        vec![Timed::new("python gigpo_ref.py, exact", &python, &[reference, r])],
        vec![Timed::new("python gigpo_ref.py, similarity 0.9", &python, &[reference, r, "--similarity", "0.9"])],
    ];
    for block in &mut blocks {
        // Warm-up runs: the page cache, and the caches a first run of another program left cold.
        for _ in 0..3 {
            for c in block.iter() {
                c.once();
            }
        }
        for _ in 0..runs {
            for c in block.iter_mut() {
                let t = c.once();
                c.samples.push(t);
            }
        }
    }
    let commands: Vec<Timed> = blocks.into_iter().flatten().collect();
    println!("{runs} runs each after 3 warm-up runs, beside the baseline run by run; wall time of the whole process:");
    println!("{:<48} {:>10} {:>10}", "command", "median", "min");
    for c in &commands {
        println!("{:<48} {:>10} {:>10}", c.name, ms(c.median()), ms(c.min()));
    }
    let median = |name: &str| commands.iter().find(|c| c.name == name).map(Timed::median).unwrap();
    for (anchors, ours, theirs) in [
        ("exact", "gigscope advantages, exact", "python gigpo_ref.py, exact"),
        ("similarity 0.9", "gigscope advantages, similarity 0.9", "python gigpo_ref.py, similarity 0.9"),
    ] {
        let ratio = median(theirs).as_secs_f64() / median(ours).as_secs_f64();
        println!("advantages, {anchors}: gigscope {ratio:.1}× faster than the Python (medians)");
    }
}
