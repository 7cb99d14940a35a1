//! One burst as a Ray job: submitted with an id chosen here, recorded in the run's `run.json` before it is
//! sent, watched until it ends (its log streamed line by line), stopped when asked, and its outcome recorded.
//!
//! The record is one entry of `run.json`'s `bursts` list, `{"backend": "ray", "profile", "address",
//! "job_id", "settings", "command", "submitted", "episodes_from", "outcome"}`, with `episodes_to` once the job
//! has ended (the size of `episodes.jsonl` then and at submission: the job's part of the run,
//! [`crate::run::bursts`]); gigscope's own trainer, when it is the job's entrypoint, appends its configuration
//! after it as for any burst. `run.json` is read, changed and replaced
//! atomically each time, keeping whatever else it holds: it is written before the submission (so the job's
//! own writer, which starts after, keeps the entry) and after the job has ended.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::client::{JobSpec, JobState, RayClient, RayError};
use crate::run::bursts::{BURSTS_KEY, EPISODES_FROM_KEY, EPISODES_TO_KEY};
use crate::run::{episodes_size, read_meta, write_atomic, RunError, RUN_META_FILE};

/// How often a running job is asked for its state and log.
pub const POLL_INTERVAL: Duration = Duration::from_millis(500);
/// Lines of a failed job's log quoted in its error.
pub const TAIL_LINES: usize = 20;

/// Why a Ray burst did not end well.
#[derive(Debug, thiserror::Error)]
pub enum BurstError {
    #[error(transparent)]
    Ray(#[from] RayError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error("Ray job {job_id} on {address} failed: {message}\n--- last lines of its log ---\n{tail}")]
    Failed { job_id: String, address: String, message: String, tail: String },
    #[error("Ray job {job_id} on {address} succeeded but wrote no episodes to {run}: is the run directory on storage both the cluster and this machine see?")]
    NothingWritten { job_id: String, address: String, run: PathBuf },
}

/// What a burst submits and records.
#[derive(Clone, Debug)]
pub struct RayBurst {
    pub profile: String,
    pub run: PathBuf,
    /// gigscope's settings, by gigscope's names, as the command line writes them.
    pub settings: Vec<(String, String)>,
    pub spec: JobSpec,
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub state: JobState,
    pub message: String,
    /// The last [`TAIL_LINES`] lines of its log.
    pub tail: String,
}

/// A fresh job id: `gigscope-burst-` with the time and a random part, unique across submitters.
pub fn new_job_id() -> String {
    let secs = time::OffsetDateTime::now_utc().unix_timestamp();
    format!("gigscope-burst-{secs}-{:08x}", rand::random::<u32>())
}

fn now() -> Value {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .map_or(Value::Null, Value::String)
}

impl RayBurst {
    /// Check that the dashboard answers, record the burst in `run.json` (creating the run directory), then
    /// submit it. An unreachable dashboard leaves the run untouched.
    pub fn submit(&self, client: &RayClient) -> Result<(), BurstError> {
        client.version()?;
        std::fs::create_dir_all(&self.run).map_err(RunError::io(&self.run))?;
        let settings: Map<String, Value> =
            self.settings.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
        let record = json!({
            "backend": "ray",
            "profile": self.profile,
            "address": client.address(),
            "job_id": self.spec.submission_id,
            "settings": settings,
            "command": self.spec.entrypoint,
            "submitted": now(),
            EPISODES_FROM_KEY: episodes_size(&self.run)?,
            "outcome": {"status": "SUBMITTING"},
        });
        update_bursts(&self.run, |list| list.push(record))?;
        if let Err(e) = client.submit(&self.spec) {
            self.record_outcome(&json!({"status": "REFUSED", "message": e.to_string()}))?;
            return Err(e.into());
        }
        Ok(())
    }

    /// Follow the job until it ends: new log lines go to `on_line` as they come; when `stop` is raised the job
    /// is asked to stop (once) and followed until Ray says it has. The outcome is recorded in `run.json`.
    pub fn watch(
        &self,
        client: &RayClient,
        stop: &AtomicBool,
        mut on_line: impl FnMut(&str),
    ) -> Result<Outcome, BurstError> {
        let id = &self.spec.submission_id;
        let mut shown = 0usize;
        let mut stop_sent = false;
        loop {
            if stop.load(Ordering::SeqCst) && !stop_sent {
                client.stop(id)?;
                stop_sent = true;
            }
            let info = client.status(id)?;
            let log = client.logs(id)?;
            // Whole lines only, until the job has ended (then the unfinished last line too).
            let end = if info.status.is_terminal() { log.len() } else { log.rfind('\n').map_or(0, |i| i + 1) };
            if end > shown {
                log[shown..end].lines().for_each(&mut on_line);
                shown = end;
            }
            if info.status.is_terminal() {
                let outcome = Outcome {
                    state: info.status,
                    message: job_message(info.message.as_deref().unwrap_or_default()),
                    tail: tail(&log, TAIL_LINES),
                };
                self.record_outcome(&json!({
                    "status": outcome.state.name(),
                    "message": outcome.message,
                    "ended": now(),
                }))?;
                return Ok(outcome);
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// The outcome as a result: a failed job is an error quoting its log's tail; a job that succeeded without
    /// adding an episode to the run is one too.
    pub fn check(&self, client: &RayClient, outcome: &Outcome) -> Result<(), BurstError> {
        match outcome.state {
            JobState::Failed => Err(BurstError::Failed {
                job_id: self.spec.submission_id.clone(),
                address: client.address().to_string(),
                message: outcome.message.clone(),
                tail: outcome.tail.clone(),
            }),
            JobState::Succeeded if !self.wrote_episodes() => Err(BurstError::NothingWritten {
                job_id: self.spec.submission_id.clone(),
                address: client.address().to_string(),
                run: self.run.clone(),
            }),
            _ => Ok(()),
        }
    }

    /// Record how the job ended, and where its part of `episodes.jsonl` ends.
    fn record_outcome(&self, outcome: &Value) -> Result<(), RunError> {
        let id = Value::String(self.spec.submission_id.clone());
        let end = episodes_size(&self.run)?;
        update_bursts(&self.run, |list| {
            if let Some(entry) = list.iter_mut().rev().find(|b| b.get("job_id") == Some(&id)) {
                entry["outcome"] = outcome.clone();
                entry[EPISODES_TO_KEY] = end.into();
            }
        })
    }
}

impl RayBurst {
    /// Whether `episodes.jsonl` grew while the job ran, by the range its `bursts` entry records; without a
    /// recorded range, whether the run has episodes at all.
    fn wrote_episodes(&self) -> bool {
        let id = Value::String(self.spec.submission_id.clone());
        let meta = read_meta(&self.run).ok().flatten();
        let entry = meta
            .as_ref()
            .and_then(|m| m.extra.get(BURSTS_KEY))
            .and_then(Value::as_array)
            .and_then(|list| list.iter().rev().find(|b| b.get("job_id") == Some(&id)));
        let offset = |key: &str| entry.and_then(|e| e.get(key)).and_then(Value::as_u64);
        match (offset(EPISODES_FROM_KEY), offset(EPISODES_TO_KEY)) {
            (Some(from), Some(to)) => to > from,
            _ => episodes_size(&self.run).is_ok_and(|n| n > 0),
        }
    }
}

/// Where Ray's message for a failed entrypoint starts its copy of the job's log: `Job entrypoint command failed
/// with exit code 3, last available logs (truncated to 20,000 chars):` and the log's last lines after it.
const RAY_LOG_COPY: &str = ", last available logs";

/// Ray's message for a job that ended, without the copy of the log's last lines Ray appends to a failed
/// entrypoint's: the burst quotes the log's tail itself ([`TAIL_LINES`]), so the copy would show it twice. Any
/// other message (a runtime environment that could not be set up, with its traceback) is kept whole, trimmed.
pub fn job_message(ray_message: &str) -> String {
    let own = match ray_message.find(RAY_LOG_COPY) {
        Some(at) => &ray_message[..at],
        None => ray_message,
    };
    own.trim().to_string()
}

/// The last `n` lines of `log`.
pub fn tail(log: &str, n: usize) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Read `run.json` (or start one), change its `bursts` list (made a list if it was missing or something else),
/// replace the file atomically.
fn update_bursts(dir: &Path, change: impl FnOnce(&mut Vec<Value>)) -> Result<(), RunError> {
    let mut meta = read_meta(dir)?.unwrap_or_default();
    let mut list = match meta.extra.shift_remove(BURSTS_KEY) {
        Some(Value::Array(list)) => list,
        Some(other) => vec![other],
        None => Vec::new(),
    };
    change(&mut list);
    meta.extra.insert(BURSTS_KEY.into(), Value::Array(list));
    let path = dir.join(RUN_META_FILE);
    let mut text =
        serde_json::to_string_pretty(&meta).map_err(|source| RunError::Encode { path: path.clone(), source })?;
    text.push('\n');
    write_atomic(&path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::job_message;

    #[test]
    fn a_failed_entrypoints_message_loses_rays_copy_of_the_log() {
        // The shape of Ray 2.60's message for an entrypoint that exited non-zero: its own sentence, then the
        // log's last lines (up to 20,000 characters) after a colon.
        let ray = "Job entrypoint command failed with exit code 3, last available logs (truncated to 20,000 \
                   chars):\nOVERRIDES algorithm.gamma=0.8 RUN /runs/failed\ndoomed\n";
        assert_eq!(job_message(ray), "Job entrypoint command failed with exit code 3");
    }

    #[test]
    fn other_messages_are_kept_whole() {
        let no_log = "Job entrypoint command failed with exit code 1. No logs available.";
        assert_eq!(job_message(no_log), no_log);
        let setup = "runtime_env setup failed: Failed to set up runtime environment.\nTraceback (most recent \
                     call last):\n  File \"agent.py\", line 1\nValueError: no such working_dir\n";
        assert_eq!(job_message(setup), setup.trim());
        assert_eq!(job_message("Job was intentionally stopped."), "Job was intentionally stopped.");
        assert_eq!(job_message(""), "");
    }
}
