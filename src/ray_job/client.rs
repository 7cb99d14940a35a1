//! A blocking client of Ray's Job Submission REST API (the dashboard's `/api/jobs/`), plain HTTP, no Python.
//!
//! Each call is one request with a bounded time; every error names the dashboard's address, so a message read
//! in a log or the jobs panel says which cluster failed.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// How long one request may take: the dashboard answers in milliseconds when it is up; a cluster that does not
/// answer within this is reported as unreachable instead of hanging a burst.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest log read back at once (a log past this is cut to its tail by the caller's next reads).
const LOG_LIMIT: u64 = 64 << 20;

/// Why a request to the Ray dashboard failed.
#[derive(Debug, thiserror::Error)]
pub enum RayError {
    #[error("the Ray dashboard at {address} cannot be reached ({reason}); is a Ray head running there with its dashboard (`ray start --head --include-dashboard true`)?")]
    Unreachable { address: String, reason: String },
    #[error("the Ray dashboard at {address} refused {what}: HTTP {status}: {body}")]
    Refused { address: String, what: String, status: u16, body: String },
    #[error("the Ray dashboard at {address} answered {what} with something that is not a job API answer: {reason}")]
    BadAnswer { address: String, what: String, reason: String },
    #[error(
        "the Ray dashboard address {address:?} is not an http:// URL (an https dashboard is reached through a tunnel)"
    )]
    BadAddress { address: String },
}

/// A job's state as Ray reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum JobState {
    Pending,
    Running,
    Stopped,
    Succeeded,
    Failed,
}

impl JobState {
    /// No further change will come.
    pub fn is_terminal(self) -> bool {
        matches!(self, JobState::Stopped | JobState::Succeeded | JobState::Failed)
    }

    pub fn name(self) -> &'static str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Running => "RUNNING",
            JobState::Stopped => "STOPPED",
            JobState::Succeeded => "SUCCEEDED",
            JobState::Failed => "FAILED",
        }
    }
}

/// What `GET /api/jobs/{id}` says about a job (the fields gigscope uses).
#[derive(Clone, Debug, Deserialize)]
pub struct JobInfo {
    pub status: JobState,
    /// Ray's own explanation (why it failed, that it was stopped).
    #[serde(default)]
    pub message: Option<String>,
}

/// What is submitted: `POST /api/jobs/`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct JobSpec {
    /// The shell command Ray runs.
    pub entrypoint: String,
    /// The job's id, chosen by the submitter so that it can be recorded before the job starts.
    pub submission_id: String,
    /// Ray's runtime environment (`working_dir`, `env_vars`, `pip`, ...), passed as written.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub runtime_env: Map<String, Value>,
    /// String labels shown on the dashboard.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub metadata: Map<String, Value>,
}

/// The dashboard of one Ray cluster.
#[derive(Clone, Debug)]
pub struct RayClient {
    address: String,
    agent: ureq::Agent,
}

impl RayClient {
    /// A client of the dashboard at `address` (`http://host:8265`); nothing is sent yet.
    pub fn new(address: &str) -> Result<RayClient, RayError> {
        let address = address.trim_end_matches('/').to_string();
        if !address.starts_with("http://") {
            return Err(RayError::BadAddress { address });
        }
        let agent = ureq::Agent::config_builder()
            .timeout_global(Some(REQUEST_TIMEOUT))
            .http_status_as_error(false)
            .build()
            .into();
        Ok(RayClient { address, agent })
    }

    pub fn address(&self) -> &str {
        &self.address
    }

    /// Ask the dashboard for its Ray version: that it answers as a Ray dashboard.
    pub fn version(&self) -> Result<String, RayError> {
        #[derive(Deserialize)]
        struct Version {
            ray_version: String,
        }
        let version: Version = self.call("the version request", self.agent.get(self.url("/api/version")).call())?;
        Ok(version.ray_version)
    }

    /// Submit a job; Ray answers with its id, which is `spec.submission_id`.
    pub fn submit(&self, spec: &JobSpec) -> Result<String, RayError> {
        let what = "the job submission";
        let body = serde_json::to_string(spec).map_err(|e| self.bad(what, e))?;
        let answer: Value =
            self.call(what, self.agent.post(self.url("/api/jobs/")).content_type("application/json").send(&body))?;
        let id = answer.get("submission_id").or_else(|| answer.get("job_id")).and_then(Value::as_str);
        Ok(id.unwrap_or(&spec.submission_id).to_string())
    }

    /// The job's state.
    pub fn status(&self, id: &str) -> Result<JobInfo, RayError> {
        let what = format!("the status of job {id}");
        self.call(&what, self.agent.get(self.url(&format!("/api/jobs/{id}"))).call())
    }

    /// The job's whole log so far.
    pub fn logs(&self, id: &str) -> Result<String, RayError> {
        #[derive(Deserialize)]
        struct Logs {
            logs: String,
        }
        let what = format!("the log of job {id}");
        let logs: Logs = self.call(&what, self.agent.get(self.url(&format!("/api/jobs/{id}/logs"))).call())?;
        Ok(logs.logs)
    }

    /// Ask Ray to stop the job; `false` when it had already ended.
    pub fn stop(&self, id: &str) -> Result<bool, RayError> {
        #[derive(Deserialize)]
        struct Stopped {
            stopped: bool,
        }
        let what = format!("stopping job {id}");
        let url = self.url(&format!("/api/jobs/{id}/stop"));
        let stopped: Stopped = self.call(&what, self.agent.post(url).send_empty())?;
        Ok(stopped.stopped)
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.address)
    }

    fn bad(&self, what: &str, reason: impl ToString) -> RayError {
        RayError::BadAnswer { address: self.address.clone(), what: what.to_string(), reason: reason.to_string() }
    }

    /// The answer's JSON, or the error that names this dashboard.
    fn call<T: serde::de::DeserializeOwned>(
        &self,
        what: &str,
        sent: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
    ) -> Result<T, RayError> {
        let mut response =
            sent.map_err(|e| RayError::Unreachable { address: self.address.clone(), reason: e.to_string() })?;
        let status = response.status().as_u16();
        let body = response
            .body_mut()
            .with_config()
            .limit(LOG_LIMIT)
            .read_to_string()
            .map_err(|e| RayError::Unreachable { address: self.address.clone(), reason: e.to_string() })?;
        if !(200..300).contains(&status) {
            return Err(RayError::Refused {
                address: self.address.clone(),
                what: what.to_string(),
                status,
                body: body.trim().to_string(),
            });
        }
        serde_json::from_str(&body).map_err(|e| self.bad(what, e))
    }
}
