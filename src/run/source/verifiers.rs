//! verifiers' saved rollouts (verifiers 0.4.0's `traces.jsonl`, the schema prime-rl trains from): one JSON line
//! per rollout episode, tailed line by line.
//!
//! The schema and the step rule are [`crate::run::verifiers_traces`]'s, shared with the token store. A line
//! (`id`, `group.id`, `run.work.step`, `task`, `traces`) is one gigscope episode: its group
//! is verifiers' rollout group (`group.id`; else the task's `key`, else its `hash`: the rollouts of one
//! example), its iteration the training step it was dispatched at (`run.work.step`, else 0). Each node the
//! model sampled (an assistant turn, `sampled: true`), in node order across the episode's traces, is a step:
//! its observation the messages that came in since the previous turn (system, user, tool: role and text), its
//! action the turn's text and tool calls, its `tokens` the turn's sampled tokens; the trainer's advantage is
//! the step's where every turn carries per-token `advantages`. Each rubric function's value (`rewards`:
//! `score × weight`; `None` when scoring did not run) is the outcome's per-function reward, their sum the
//! score, given to the last step. The tokens themselves are read by the token store from the same lines
//! ([`crate::run::tokens`]). A line that is not an episode is named by file and line and skipped.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::events::{Listing, LiveEvent, LiveFile, RegisteredLayout, RunSource, SourcePoll};
use crate::run::error::LineError;
use crate::run::format::{Episode, Outcome, RunMeta, Step, Task, REWARDS_KEY, SOURCE_KEY};
use crate::run::jsonl::JsonlTail;
use crate::run::layout::Layout;
use crate::run::settings::{AdvantageOverrides, Estimator, Norm, Pooling};
use crate::run::verifiers_traces::{TracesLine, TRACES_FILE};

/// The `format` of the run description made up for these runs.
pub const VERIFIERS_FORMAT: &str = "verifiers-traces";

/// The registry's entry for verifiers' saved rollouts: a `traces.jsonl`.
pub const REGISTERED: RegisteredLayout = RegisteredLayout {
    layout: Layout::Verifiers,
    looks_for: "traces.jsonl (verifiers / prime-rl saved rollouts)",
    found_in: |listing: &mut Listing| Ok(listing.dir().join(TRACES_FILE).is_file()),
    open: |dir, _| Box::new(VerifiersSource::new(dir)),
};

/// The episode of one line (`line`: its number in the file).
fn episode(traces: TracesLine, line: u64) -> Episode {
    let group =
        traces.group.as_ref().map(|g| g.id.clone()).or_else(|| traces.task.as_ref().and_then(|t| t.key.clone()));
    let group =
        group.or_else(|| traces.task.as_ref().and_then(|t| t.hash.clone())).unwrap_or_else(|| traces.id.clone());
    let mut steps = Vec::new();
    let mut advantages = Some(Vec::new());
    let mut instruction = None;
    // What came in since the model's previous turn of the same trace.
    let mut seen: Vec<String> = Vec::new();
    let mut trace = 0;
    for (at, node) in traces.nodes() {
        if at.trace != trace {
            trace = at.trace;
            seen.clear();
        }
        let message = &node.message;
        if !node.sampled {
            let body = message.text();
            if message.role == "user" && instruction.is_none() {
                instruction = Some(body.clone());
            }
            seen.push(format!("[{}] {body}", message.role));
            continue;
        }
        let mut step = Step::new(seen.join("\n\n"), message.action(), 0.0);
        step.tokens = Some(node.sampled_tokens() as u64);
        steps.push(step);
        seen.clear();
        let first = node.advantages.as_ref().and_then(|a| a.first().copied());
        advantages = advantages.zip(first).map(|(mut all, a)| {
            all.push(a);
            all
        });
    }
    let mut rewards = Map::new();
    for (name, reward) in traces.traces.iter().flat_map(|t| &t.rewards) {
        let weighted = reward
            .get("score")
            .and_then(Value::as_f64)
            .map(|score| score * reward.get("weight").and_then(Value::as_f64).unwrap_or(1.0));
        rewards.insert(name.clone(), weighted.map_or(Value::Null, |v| json!(v)));
    }
    let score: f64 = rewards.values().filter_map(Value::as_f64).sum();
    if let Some(last) = steps.last_mut() {
        last.reward = score;
    }
    let mut outcome_extra = Map::new();
    outcome_extra.insert(REWARDS_KEY.into(), Value::Object(rewards));
    let mut extra = Map::new();
    extra.insert(SOURCE_KEY.into(), json!({"file": TRACES_FILE, "line": line}));
    Episode {
        iteration: traces.iteration().unwrap_or(0),
        id: traces.id,
        group,
        task: Some(Task { id: String::new(), instruction: instruction.unwrap_or_default(), extra: Map::new() }),
        advantages: advantages.filter(|a| a.len() == steps.len() && !a.is_empty()),
        steps,
        outcome: Some(Outcome { success: traces.ok && score > 0.0, score, extra: outcome_extra }),
        extra,
        read_from: Default::default(),
    }
}

/// Where the reader of a `traces.jsonl` stands.
#[derive(Debug)]
pub struct VerifiersSource {
    dir: PathBuf,
    traces: JsonlTail<TracesLine>,
    described: bool,
    /// The last error reading the file, reported once while it lasts.
    failing: Option<String>,
}

impl VerifiersSource {
    pub fn new(dir: &Path) -> VerifiersSource {
        VerifiersSource {
            dir: dir.to_path_buf(),
            traces: JsonlTail::new(dir.join(TRACES_FILE)),
            described: false,
            failing: None,
        }
    }

    fn meta(&self) -> RunMeta {
        RunMeta {
            format: Some(VERIFIERS_FORMAT.to_string()),
            name: self.dir.file_name().map(|n| n.to_string_lossy().into_owned()),
            advantage: Some(AdvantageOverrides {
                estimator: Some(Estimator::Grpo),
                gamma: Some(1.0),
                norm: Some(Norm::MeanNorm),
                pooling: Some(Pooling::Trajectories),
                invalid_penalty: Some(0.0),
                success_reward: Some(false),
                ..AdvantageOverrides::default()
            }),
            notes: Some(
                "verifiers saved rollouts (traces.jsonl): each sampled assistant turn a step, the rubric's weighted \
                 rewards summed on the last; advantages recomputed with GRPO centred on the group mean"
                    .to_string(),
            ),
            ..RunMeta::default()
        }
    }
}

impl RunSource for VerifiersSource {
    fn layout(&self) -> Layout {
        Layout::Verifiers
    }

    fn poll(&mut self) -> SourcePoll {
        let mut events = Vec::new();
        if !std::mem::replace(&mut self.described, true) {
            events.push(LiveEvent::Meta(Some(Box::new(self.meta()))));
        }
        match self.traces.poll() {
            Ok(batch) => {
                if self.failing.take().is_some() {
                    events.push(LiveEvent::Skipped { file: TRACES_FILE.to_string(), reason: None });
                }
                if batch.reset {
                    events.push(LiveEvent::Reset(LiveFile::Episodes));
                }
                if !batch.records.is_empty() {
                    let episodes = batch.records.into_iter().map(|(line, l)| (line, episode(l, line))).collect();
                    events.push(LiveEvent::Episodes(episodes));
                }
                if !batch.errors.is_empty() {
                    let named = |mut e: LineError| {
                        e.file = Some(TRACES_FILE.to_string());
                        e
                    };
                    events.push(LiveEvent::BrokenLines(
                        LiveFile::Episodes,
                        batch.errors.into_iter().map(named).collect(),
                    ));
                }
                SourcePoll { events, pending: false, more: batch.more }
            }
            Err(err) => {
                let reason = err.to_string();
                if self.failing.as_deref() != Some(&reason) {
                    self.failing = Some(reason.clone());
                    events.push(LiveEvent::Skipped { file: TRACES_FILE.to_string(), reason: Some(reason) });
                }
                SourcePoll { events, pending: false, more: false }
            }
        }
    }

    fn watches(&self, path: &Path) -> bool {
        path.file_name().is_some_and(|n| n == TRACES_FILE)
    }
}
