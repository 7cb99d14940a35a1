//! Per-token data in verifiers' saved rollouts (`traces.jsonl`, verifiers 0.4.0's schema, which prime-rl
//! trains from): read where it is, as the token store reads its own chunks.
//!
//! A line of `traces.jsonl` is one rollout episode (`Episode`: `id`, `group.id`, `run.work.step`, `traces`);
//! each trace holds its message graph as `nodes`, and a node the model sampled (`sampled: true`, an assistant
//! turn) is one step here, numbered from 0 in node order across the episode's traces. The step's tokens are
//! the node's `token_ids` (the turn's generation-prompt scaffold, then the sampled completion) with its `mask`
//! (true on the sampled tokens); the per-token floats verifiers keeps for the sampled tokens only (`logprobs`,
//! and the trainer's `advantages`, `reference_logprobs`, `trainer_logprobs`, `entropies`) are spread onto the
//! mask's true positions: `rollout_logprob`, `advantage`, `ref_logprob`, `old_logprob`, `entropy`, null on the
//! scaffold and wherever the trainer annotated nothing. `ratio` and `clipped` are never recorded there. Token
//! texts are not in the file (no tokenizer is at hand): every token shows as its id.

use serde::Deserialize;

use super::record::{Channel, StepTokens};

/// The file verifiers appends one rollout episode to per line.
pub const TRACES_FILE: &str = "traces.jsonl";

/// One line of `traces.jsonl`, as far as the tokens need it.
#[derive(Debug, Deserialize)]
pub struct TracesLine {
    pub id: String,
    #[serde(default)]
    run: Option<RunInfo>,
    #[serde(default)]
    traces: Vec<Trace>,
}

#[derive(Debug, Deserialize)]
struct RunInfo {
    #[serde(default)]
    work: Option<Work>,
}

#[derive(Debug, Deserialize)]
struct Work {
    step: i64,
}

#[derive(Debug, Deserialize)]
struct Trace {
    #[serde(default)]
    nodes: Vec<Node>,
}

#[derive(Debug, Deserialize)]
struct Node {
    #[serde(default)]
    sampled: bool,
    #[serde(default)]
    token_ids: Vec<i32>,
    #[serde(default)]
    mask: Vec<bool>,
    #[serde(default)]
    logprobs: Vec<f32>,
    advantages: Option<Vec<f32>>,
    reference_logprobs: Option<Vec<f32>>,
    trainer_logprobs: Option<Vec<f32>>,
    entropies: Option<Vec<f32>>,
}

/// Where a step's node is in its line: the trace and the node's index in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeAt {
    pub trace: u32,
    pub node: u32,
}

/// A step of a line, for the store's index: where its node is, its token count, its sampled (trained) tokens
/// and the channels it records; or why its node cannot be read.
#[derive(Debug)]
pub struct IndexedStep {
    pub at: NodeAt,
    pub read: Result<(u32, u32, Vec<Channel>), String>,
}

impl TracesLine {
    /// The training step the episode was dispatched at (`run.work.step`), if recorded.
    pub fn iteration(&self) -> Option<i64> {
        self.run.as_ref().and_then(|r| r.work.as_ref()).map(|w| w.step)
    }

    /// The episode's steps in order: its sampled nodes, each checked.
    pub fn steps(&self) -> Vec<IndexedStep> {
        self.sampled()
            .map(|(at, node)| {
                let read = node.tokens().map(|t| {
                    let trained = t.mask.iter().filter(|&&m| m).count() as u32;
                    (t.len() as u32, trained, t.recorded())
                });
                IndexedStep { at, read }
            })
            .collect()
    }

    /// The tokens of the node at `at` (`None`: no sampled node there).
    pub fn tokens(&self, at: NodeAt) -> Option<Result<StepTokens, String>> {
        self.sampled().find(|(a, _)| *a == at).map(|(_, node)| node.tokens())
    }

    fn sampled(&self) -> impl Iterator<Item = (NodeAt, &Node)> {
        self.traces.iter().enumerate().flat_map(|(t, trace)| {
            trace
                .nodes
                .iter()
                .enumerate()
                .filter(|(_, n)| n.sampled)
                .map(move |(n, node)| (NodeAt { trace: t as u32, node: n as u32 }, node))
        })
    }
}

impl Node {
    fn tokens(&self) -> Result<StepTokens, String> {
        let n = self.token_ids.len();
        if self.mask.len() != n {
            return Err(format!("mask has {} entries for {n} token_ids", self.mask.len()));
        }
        let sampled = self.mask.iter().filter(|&&m| m).count();
        let spread = |name: &str, values: &[f32]| -> Result<Vec<Option<f32>>, String> {
            if values.len() != sampled {
                return Err(format!("{name} has {} values for {sampled} sampled tokens (mask true)", values.len()));
            }
            let mut it = values.iter();
            Ok(self.mask.iter().map(|&m| if m { it.next().copied() } else { None }).collect())
        };
        let mut tokens = StepTokens::new(self.token_ids.clone(), self.mask.clone(), &vec![None; n]);
        // A client that returned no log-probabilities leaves the sampler's channel unrecorded.
        if !self.logprobs.is_empty() {
            tokens = tokens.with(Channel::RolloutLogprob, spread("logprobs", &self.logprobs)?);
        }
        let annotated = [
            (Channel::Advantage, "advantages", &self.advantages),
            (Channel::RefLogprob, "reference_logprobs", &self.reference_logprobs),
            (Channel::OldLogprob, "trainer_logprobs", &self.trainer_logprobs),
            (Channel::Entropy, "entropies", &self.entropies),
        ];
        for (channel, name, values) in annotated {
            if let Some(values) = values {
                tokens = tokens.with(channel, spread(name, values)?);
            }
        }
        Ok(tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(node: &str) -> TracesLine {
        let json = format!(
            r#"{{"id":"e","run":{{"work":{{"step":4}}}},"traces":[{{"nodes":[{{"token_ids":[1]}},{node}]}}]}}"#
        );
        serde_json::from_str(&json).unwrap()
    }

    #[test]
    fn sampled_floats_are_spread_onto_the_mask_and_absent_channels_stay_null() {
        let l = line(
            r#"{"sampled":true,"token_ids":[7,8,9],"mask":[false,true,true],"logprobs":[-0.5,-0.25],"advantages":[1.0,1.0]}"#,
        );
        assert_eq!(l.iteration(), Some(4));
        let at = NodeAt { trace: 0, node: 1 };
        let t = l.tokens(at).unwrap().unwrap();
        assert_eq!(t.ids, [7, 8, 9]);
        assert_eq!(t.channel(Channel::RolloutLogprob).unwrap(), [None, Some(-0.5), Some(-0.25)]);
        assert_eq!(t.channel(Channel::Advantage).unwrap(), [None, Some(1.0), Some(1.0)]);
        assert!(t.channel(Channel::OldLogprob).is_none() && t.channel(Channel::Entropy).is_none());
        assert_eq!(l.steps().len(), 1);
        assert!(l.tokens(NodeAt { trace: 0, node: 0 }).is_none(), "a prompt node is no step");
    }

    #[test]
    fn arrays_that_disagree_are_refused_with_their_names() {
        let l = line(r#"{"sampled":true,"token_ids":[7,8],"mask":[true,true],"logprobs":[-0.5]}"#);
        let err = l.steps().remove(0).read.unwrap_err();
        assert_eq!(err, "logprobs has 1 values for 2 sampled tokens (mask true)");
        let l = line(r#"{"sampled":true,"token_ids":[7,8],"mask":[true]}"#);
        assert_eq!(l.steps().remove(0).read.unwrap_err(), "mask has 1 entries for 2 token_ids");
    }
}
