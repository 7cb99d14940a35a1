//! The run directory format, version 1 (`gigscope-run/1`).
//!
//! Field names are fixed: other trainers write them and gigscope reads them. Unknown fields are kept in
//! `extra` so that a record read and written again loses nothing.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::settings::AdvantageOverrides;
use super::span::ReadFrom;

/// The value of `run.json`'s `format` key for this version.
pub const FORMAT_V1: &str = "gigscope-run/1";
/// Key of `Episode::extra` where readers of multi-file layouts record `{"file": …, "line": …}`.
pub const SOURCE_KEY: &str = "source";
/// Key of `Outcome::extra` holding how the environment scored the episode (WebShop's reward breakdown).
pub const REWARD_INFO_KEY: &str = "reward_info";
/// Key of `Outcome::extra` holding per-reward-function rewards `{name: number or null}` in the trainer's
/// order (TRL logs one column per reward function; the engine weighs and normalises them).
pub const REWARDS_KEY: &str = "rewards";
/// Key of `Step::extra` where a trainer records how many times it counted the step ([`Step::copies`]).
pub const COPIES_KEY: &str = "copies";
/// File names inside a run directory.
pub const RUN_META_FILE: &str = "run.json";
pub const EPISODES_FILE: &str = "episodes.jsonl";
pub const METRICS_FILE: &str = "metrics.jsonl";

/// `run.json`: optional description of a run and the advantage settings its trainer used.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunMeta {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<String>,
    /// RFC 3339 timestamp.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    /// Advantage settings recorded by the trainer; any key may be missing (defaults apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advantage: Option<AdvantageOverrides>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl RunMeta {
    /// The group sizes its trainer recorded: gigscope's trainer keeps each burst's configuration (`train`, the
    /// first; `bursts`, every one) with its `episodes_per_goal`. Sorted, each once; empty when none is recorded.
    pub fn group_sizes(&self) -> Vec<usize> {
        let burst = |record: &Value| record.get("episodes_per_goal").and_then(Value::as_u64);
        let bursts = self.extra.get("bursts").and_then(Value::as_array).into_iter().flatten();
        let mut sizes: Vec<usize> = self
            .extra
            .get("train")
            .into_iter()
            .chain(bursts)
            .filter_map(burst)
            .filter_map(|n| usize::try_from(n).ok())
            .filter(|&n| n > 0)
            .collect();
        sizes.sort_unstable();
        sizes.dedup();
        sizes
    }
}

/// One finished episode: one line of `episodes.jsonl`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    /// Unique within the run.
    pub id: String,
    /// Episode group: same task, same start state. GiGPO's episode-level baseline is taken over it.
    pub group: String,
    #[serde(default)]
    pub iteration: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<Task>,
    pub steps: Vec<Step>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<Outcome>,
    /// What the trainer itself computed, one per step (compared with gigscope's recomputation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advantages: Option<Vec<f64>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
    /// Where the reader found this record (not part of it: never written, ignored by equality).
    #[serde(skip)]
    pub read_from: ReadFrom,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Task {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub instruction: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    #[serde(default)]
    pub success: bool,
    #[serde(default)]
    pub score: f64,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Shared (`Arc`), like the anchor: a background similarity grouping takes the run's distinct anchors
    /// without copying hundreds of MB of text.
    pub observation: Arc<str>,
    /// The anchor state used for step grouping; `None` means "the observation itself".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<Arc<str>>,
    pub action: String,
    pub reward: f64,
    #[serde(default = "default_valid")]
    pub valid: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_actions: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thought: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logprob: Option<f64>,
    /// WebShop page type (search / results / item / item_sub / done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<String>,
    /// The environment's full state the action was taken in, compact: [`state_hash`] of its state fingerprint
    /// (gigscope's own environments record it when they play and train; other trainers' runs have none). Steps
    /// of one episode group with equal values were in the same state, whatever their observations hide; the
    /// `state` anchor mode groups by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn default_valid() -> bool {
    true
}

impl Step {
    /// A step with only the required fields set.
    pub fn new(observation: impl Into<Arc<str>>, action: impl Into<String>, reward: f64) -> Self {
        Step {
            observation: observation.into(),
            anchor: None,
            action: action.into(),
            reward,
            valid: true,
            available_actions: None,
            tokens: None,
            thought: None,
            logprob: None,
            page: None,
            state: None,
            extra: Map::new(),
        }
    }

    /// The string that identifies this step's anchor state: the anchor, else the observation.
    pub fn anchor_key(&self) -> &str {
        self.anchor.as_deref().unwrap_or(&self.observation)
    }

    /// How many times the trainer counted this step in its advantage statistics: `extra.copies` when a
    /// trainer recorded it (verl-agent's `adjust_batch` pads its batch with copies of random rows, which join
    /// their groups' means and standard deviations; the exporter writes the step once with `copies`), else 1.
    pub fn copies(&self) -> u32 {
        copies_of(self.extra.get(COPIES_KEY))
    }

    /// [`Self::anchor_key`], shared.
    pub fn anchor_arc(&self) -> Arc<str> {
        self.anchor.as_ref().unwrap_or(&self.observation).clone()
    }
}

impl Episode {
    /// An episode with only the required fields set.
    pub fn new(id: impl Into<String>, group: impl Into<String>, steps: Vec<Step>) -> Self {
        Episode {
            id: id.into(),
            group: group.into(),
            iteration: 0,
            task: None,
            steps,
            outcome: None,
            advantages: None,
            extra: Map::new(),
            read_from: ReadFrom::default(),
        }
    }

    pub fn success(&self) -> bool {
        self.outcome.as_ref().is_some_and(|o| o.success)
    }

    /// Undiscounted sum of the step rewards.
    pub fn total_reward(&self) -> f64 {
        self.steps.iter().map(|s| s.reward).sum()
    }

    /// For runs read from several files (verl, TRL): the file this episode was read from, relative to the
    /// run directory, as the reader records it in `extra.source.file`.
    pub fn source_file(&self) -> Option<&str> {
        source_file_of(self.extra.get(SOURCE_KEY))
    }

    /// The per-reward-function rewards recorded in `outcome.extra["rewards"]` ([`REWARDS_KEY`]: TRL logs one
    /// per reward function), names and values in the trainer's order; null and non-numbers read as NaN.
    pub fn reward_functions(&self) -> Option<(Vec<String>, Vec<f64>)> {
        reward_functions_of(self.outcome.as_ref()?.extra.get(REWARDS_KEY))
    }

    pub fn instruction(&self) -> &str {
        self.task.as_ref().map(|t| t.instruction.as_str()).unwrap_or("")
    }
}

/// [`Step::copies`] of a step whose `extra.copies` is `copies`.
pub(crate) fn copies_of(copies: Option<&Value>) -> u32 {
    copies.and_then(Value::as_u64).and_then(|c| u32::try_from(c).ok()).filter(|&c| c >= 1).unwrap_or(1)
}

/// [`Episode::source_file`] of an episode whose `extra.source` is `source`.
pub(crate) fn source_file_of(source: Option<&Value>) -> Option<&str> {
    source?.get("file")?.as_str()
}

/// [`Episode::reward_functions`] of an outcome whose `extra.rewards` is `rewards`.
pub(crate) fn reward_functions_of(rewards: Option<&Value>) -> Option<(Vec<String>, Vec<f64>)> {
    let rewards = rewards?.as_object()?;
    Some(rewards.iter().map(|(name, v)| (name.clone(), v.as_f64().unwrap_or(f64::NAN))).unzip())
}

/// One line of `metrics.jsonl`: `iteration`, `time` and any numeric metrics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MetricsRecord {
    pub iteration: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<Value>,
    #[serde(flatten)]
    pub values: Map<String, Value>,
}

impl MetricsRecord {
    /// A numeric metric by name, if present and a number.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.values.get(name).and_then(Value::as_f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_read_their_text_into_shared_strings() {
        // Escapes make the reader hand over an owned string, plain text a borrowed one: both are read.
        let line = r#"{"observation":"a \"quoted\"\npage","action":"x","reward":1,"anchor":null,"k":1}"#;
        let step: Step = serde_json::from_str(line).unwrap();
        assert_eq!(&*step.observation, "a \"quoted\"\npage");
        assert_eq!(step.anchor, None);
        assert_eq!(step.anchor_key(), "a \"quoted\"\npage");
        let step: Step = serde_json::from_str(r#"{"observation":"o","anchor":"p","action":"x","reward":1}"#).unwrap();
        assert_eq!((step.anchor_key(), &*step.anchor_arc()), ("p", "p"));
        let back: Step = serde_json::from_str(&serde_json::to_string(&step).unwrap()).unwrap();
        assert_eq!(back, step);
        for bad in [r#"{"observation":3,"action":"x","reward":1}"#, r#"{"action":"x","reward":1}"#] {
            assert!(serde_json::from_str::<Step>(bad).is_err(), "{bad}");
        }
    }
}
