//! Bursts as Ray jobs against a real Ray: a local head on loopback (`tests/support/ray.rs`), shared by the
//! cases of one test and stopped at the end whatever happens. The job's entrypoint is gigscope's own `train`
//! (the plugin built next to the binary), so no GPU is needed.
//!
//! Without Ray or the plugin the head's test is skipped, except in CI.
#![cfg(feature = "train")]

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use gigscope::ray_job::JobState;
use serde_json::Value;

use crate::support::plugin::plugin;
use crate::support::ray::{free_port, ray_executable, Head};

const BIN: &str = env!("CARGO_BIN_EXE_gigscope");
/// A bound on every wait, so that a broken Ray fails the test instead of hanging it (not a timing goal).
const PATIENCE: Duration = Duration::from_secs(120);
const SMALL: [&str; 8] = ["--env", "toy", "--goals", "2", "--group-size", "2", "--eval-goals", "2"];

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn gigscope(args: &[&str]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args).stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

fn run_json(run: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("run.json")).unwrap()).unwrap()
}

/// The Ray burst recorded in `run.json` (the first entry of `bursts`).
fn ray_record(run: &Path) -> Value {
    let meta = run_json(run);
    let record = meta["bursts"][0].clone();
    assert_eq!(record["backend"], "ray", "{meta:#}");
    record
}

fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let since = Instant::now();
    while !ready() {
        assert!(since.elapsed() < PATIENCE, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn episodes_len(run: &Path) -> u64 {
    std::fs::metadata(run.join("episodes.jsonl")).map_or(0, |m| m.len())
}

fn finish(child: Child) -> Output {
    child.wait_with_output().unwrap()
}

#[test]
fn bursts_run_as_ray_jobs_on_a_local_head() {
    if plugin(BIN).is_none() {
        return;
    }
    let Some(ray) = ray_executable() else { return };
    let head = Head::start(ray);
    let client = head.client();
    let home = tempfile::tempdir().unwrap();

    // gigscope's own train as the job: the settings arrive as its flags, the run validates, and it records the
    // job.
    let run = home.path().join("burst");
    let run_arg = run.to_str().unwrap();
    let mut args = vec!["train", "--backend", "ray", "--address", &head.address, "--run", run_arg];
    args.extend(["--iterations", "12", "--seed", "5", "--gamma", "0.9", "--omega", "0.5"]);
    args.extend(SMALL);
    let out = gigscope(&args).output().unwrap();
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let job_id = ray_record(&run)["job_id"].as_str().unwrap().to_string();
    assert!(err.contains(&format!("submitted Ray job {job_id}")) && err.contains("training goals"), "{err}");
    let record = ray_record(&run);
    assert_eq!(record["outcome"]["status"], "SUCCEEDED", "{record:#}");
    assert_eq!(record["profile"], "default");
    assert_eq!(record["settings"]["gamma"], "0.9");
    assert_eq!(record["settings"]["iterations"], "12");
    let command = record["command"].as_str().unwrap();
    assert!(
        command.contains(&format!("{BIN} train --run {run_arg} --iterations 12 --seed 5 --gamma 0.9")),
        "{command}"
    );
    assert!(!command.contains("--backend"), "{command}");
    let meta = run_json(&run);
    assert_eq!(meta["advantage"]["gamma"], 0.9, "the job's trainer recorded the settings it trained with");
    assert_eq!(meta["advantage"]["omega"], 0.5);
    assert_eq!(meta["bursts"][1]["iterations"], 12, "{meta:#}");
    // The Ray record and its job's trainer cover the same bytes of the episodes file: one burst.
    let written = std::fs::metadata(run.join("episodes.jsonl")).unwrap().len();
    for entry in [&meta["bursts"][0], &meta["bursts"][1]] {
        assert_eq!((entry["episodes_from"].as_u64(), entry["episodes_to"].as_u64()), (Some(0), Some(written)));
    }
    let meta: gigscope::run::RunMeta = serde_json::from_value(meta).unwrap();
    assert_eq!(gigscope::run::bursts::burst_spans(Some(&meta)).len(), 1);
    assert_eq!(client.status(&job_id).unwrap().status, JobState::Succeeded);
    let validated = gigscope(&["validate", run_arg]).output().unwrap();
    assert!(validated.status.success(), "{}{}", text(&validated.stdout), text(&validated.stderr));

    // The run appears and grows while the job runs (a reader follows it as any run); Ctrl-C stops the job: Ray
    // reports it STOPPED, the command exits 130 and the run records it.
    let run = home.path().join("cancelled");
    let run_arg = run.to_str().unwrap();
    let mut args = vec!["train", "--backend", "ray", "--address", &head.address, "--run", run_arg];
    args.extend(["--iterations", "100000"]);
    args.extend(SMALL);
    let child = gigscope(&args).spawn().unwrap();
    wait_for("the long burst's first episodes", || episodes_len(&run) > 0);
    let job_id = ray_record(&run)["job_id"].as_str().unwrap().to_string();
    let first = episodes_len(&run);
    wait_for("the run to grow", || episodes_len(&run) > first);
    assert_eq!(client.status(&job_id).unwrap().status, JobState::Running);
    // SAFETY: signalling the child this test started, by its id.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = finish(child);
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    let record = ray_record(&run);
    assert_eq!(record["outcome"]["status"], "STOPPED", "{record:#}");
    assert_eq!(client.status(&job_id).unwrap().status, JobState::Stopped);

    // A profile's entrypoint gets the settings as the trainer's overrides; one that fails is reported with
    // its log's tail, and the run records the failure.
    let config = home.path().join("config.toml");
    std::fs::write(
        &config,
        "[burst.profiles.doomed]\nbackend = \"ray\"\n\
         entrypoint = \"echo OVERRIDES {overrides} RUN {run}; echo doomed >&2; exit 3\"\n\
         [burst.profiles.doomed.keys]\ngamma = \"algorithm.gamma\"\niterations = \"trainer.total_training_steps\"\n\
         seed = [\"env.seed={value}\", \"+data.seed={value}\"]\n",
    )
    .unwrap();
    let run = home.path().join("failed");
    let run_arg = run.to_str().unwrap();
    let args = ["train", "--address", &head.address, "--profile", "doomed", "--config", config.to_str().unwrap()];
    let more = ["--run", run_arg, "--iterations", "3", "--seed", "4", "--gamma", "0.8"];
    let out = gigscope(&[&args[..], &more[..]].concat()).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let (_, tail) = err.rsplit_once("--- last lines of its log ---").expect("the error quotes the log's tail");
    assert!(
        tail.contains(&format!(
            "OVERRIDES algorithm.gamma=0.8 trainer.total_training_steps=3 env.seed=4 +data.seed=4 RUN {run_arg}"
        )) && tail.contains("doomed"),
        "{err}"
    );
    assert!(err.contains("failed") && err.contains(&head.address), "{err}");
    // Ray's message without its own copy of the log (gigscope quotes the tail once, after it).
    assert!(
        err.contains("failed: Job entrypoint command failed with exit code 3\n--- last lines of its log ---\n"),
        "{err}"
    );
    let record = ray_record(&run);
    assert_eq!(record["outcome"]["status"], "FAILED", "{record:#}");
    assert_eq!(record["profile"], "doomed");

    // A job that succeeds without adding an episode to a run that already has some (its run directory is not
    // where the job writes) is reported, although the run is not empty.
    std::fs::write(
        &config,
        "[burst.profiles.idle]\nbackend = \"ray\"\nentrypoint = \"echo nothing to do\"\n\
         [burst.profiles.idle.keys]\niterations = \"trainer.total_training_steps\"\n",
    )
    .unwrap();
    let run = home.path().join("burst");
    let before = episodes_len(&run);
    assert!(before > 0, "the first burst's run has episodes");
    let args = ["train", "--address", &head.address, "--profile", "idle", "--config", config.to_str().unwrap()];
    let out = gigscope(&[&args[..], &["--run", run.to_str().unwrap()][..]].concat()).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("succeeded but wrote no episodes"), "{err}");
    assert_eq!(episodes_len(&run), before);
}

#[test]
fn an_unreachable_dashboard_is_a_clear_error_at_once_and_leaves_the_run_alone() {
    let home = tempfile::tempdir().unwrap();
    let run = home.path().join("run");
    let address = format!("http://127.0.0.1:{}", free_port());
    let args = ["train", "--backend", "ray", "--address", &address, "--run", run.to_str().unwrap()];
    let out = gigscope(&args).output().unwrap();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("the Ray dashboard at {address} cannot be reached")), "{err}");
    assert!(!run.exists(), "nothing was written for a burst that was never submitted");

    let out = gigscope(&["train", "--backend", "ray", "--run", run.to_str().unwrap()]).output().unwrap();
    assert!(text(&out.stderr).contains("--backend ray needs the Ray dashboard's address"), "{}", text(&out.stderr));
    let out = gigscope(&["train", "--backend", "ray", "--address", "127.0.0.1:8265", "--run", "r"]).output().unwrap();
    assert!(text(&out.stderr).contains("is not an http:// URL"), "{}", text(&out.stderr));
}
