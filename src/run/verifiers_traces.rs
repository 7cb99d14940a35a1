//! verifiers 0.4.0's saved rollouts (`traces.jsonl`, the schema prime-rl trains from), as gigscope reads them:
//! one schema and one step rule for both readers of the file, the episode reader
//! ([`crate::run::source::VerifiersSource`]) and the token store ([`crate::run::tokens`]).
//!
//! A line is one rollout episode: `id`, `group.id`, `task` (`key`, `hash`), `run.work.step` (the training step
//! it was dispatched at), `ok`, and `traces`, each holding its message graph as `nodes` and the rubric's
//! `rewards`. **The step rule:** a node the model sampled (`sampled: true`, an assistant turn) is one step,
//! numbered from 0 in node order across the episode's traces ([`TracesLine::nodes`] yields every node with
//! where it is; [`Node::sampled`] says which are steps). A node carries its `message` (role, content, tool
//! calls) and, for the tokens, `token_ids` with their `mask` (true on the sampled tokens) and the per-token
//! floats verifiers keeps for the sampled tokens only (`logprobs`; the trainer's `advantages`,
//! `reference_logprobs`, `trainer_logprobs`, `entropies`). Every field but `id` and a node's `message` may be
//! absent.

use serde::Deserialize;
use serde_json::{Map, Value};

/// The file verifiers appends one rollout episode to per line.
pub const TRACES_FILE: &str = "traces.jsonl";

/// One line of `traces.jsonl`.
#[derive(Debug, Deserialize)]
pub struct TracesLine {
    pub id: String,
    #[serde(default)]
    pub group: Option<Named>,
    #[serde(default)]
    pub task: Option<TaskInfo>,
    #[serde(default)]
    run: Option<RunInfo>,
    #[serde(default)]
    pub ok: bool,
    #[serde(default)]
    pub traces: Vec<Trace>,
}

#[derive(Debug, Deserialize)]
pub struct Named {
    pub id: String,
}

#[derive(Debug, Deserialize)]
pub struct TaskInfo {
    #[serde(default)]
    pub key: Option<String>,
    #[serde(default)]
    pub hash: Option<String>,
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
pub struct Trace {
    #[serde(default)]
    pub nodes: Vec<Node>,
    /// Per rubric function: `{score, weight}`, `score` null when scoring did not run.
    #[serde(default)]
    pub rewards: Map<String, Value>,
}

#[derive(Debug, Deserialize)]
pub struct Node {
    pub message: Message,
    #[serde(default)]
    pub sampled: bool,
    #[serde(default)]
    pub token_ids: Vec<i32>,
    #[serde(default)]
    pub mask: Vec<bool>,
    #[serde(default)]
    pub logprobs: Vec<f64>,
    pub advantages: Option<Vec<f64>>,
    pub reference_logprobs: Option<Vec<f64>>,
    pub trainer_logprobs: Option<Vec<f64>>,
    pub entropies: Option<Vec<f64>>,
}

#[derive(Debug, Deserialize)]
pub struct Message {
    pub role: String,
    #[serde(default)]
    content: Value,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCall>>,
}

#[derive(Debug, Deserialize)]
struct ToolCall {
    name: String,
    #[serde(default)]
    arguments: String,
}

/// Where a node is in its line: the trace and the node's index in it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeAt {
    pub trace: u32,
    pub node: u32,
}

impl TracesLine {
    /// The training step the episode was dispatched at (`run.work.step`), if recorded.
    pub fn iteration(&self) -> Option<i64> {
        self.run.as_ref().and_then(|r| r.work.as_ref()).map(|w| w.step)
    }

    /// Every node in order across the traces, with where it is.
    pub fn nodes(&self) -> impl Iterator<Item = (NodeAt, &Node)> {
        self.traces.iter().enumerate().flat_map(|(t, trace)| {
            trace.nodes.iter().enumerate().map(move |(n, node)| (NodeAt { trace: t as u32, node: n as u32 }, node))
        })
    }

    /// The episode's steps in order: its sampled nodes.
    pub fn steps(&self) -> impl Iterator<Item = (NodeAt, &Node)> {
        self.nodes().filter(|(_, node)| node.sampled)
    }
}

impl Node {
    /// How many tokens the model sampled in this node (its mask's true entries).
    pub fn sampled_tokens(&self) -> usize {
        self.mask.iter().filter(|&&m| m).count()
    }
}

impl Message {
    /// The message's text: a string, or its text parts joined by lines (images dropped, as verifiers does).
    pub fn text(&self) -> String {
        match &self.content {
            Value::String(s) => s.clone(),
            Value::Array(parts) => {
                parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
            }
            _ => String::new(),
        }
    }

    /// What the policy did in an assistant turn: its text, then each tool call as `name(arguments)`.
    pub fn action(&self) -> String {
        let calls = self.tool_calls.iter().flatten().map(|c| format!("{}({})", c.name, c.arguments));
        std::iter::once(self.text()).filter(|t| !t.is_empty()).chain(calls).collect::<Vec<_>>().join("\n")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_the_sampled_nodes_numbered_across_traces() {
        let line: TracesLine = serde_json::from_str(
            r#"{"id":"e","run":{"work":{"step":4}},"traces":[
                {"nodes":[{"message":{"role":"user","content":"go"}},
                          {"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"image"}],
                           "tool_calls":[{"name":"look","arguments":"{}"}]},"sampled":true,"mask":[false,true]}]},
                {"nodes":[{"message":{"role":"assistant","content":"b"},"sampled":true}]}]}"#,
        )
        .unwrap();
        assert_eq!(line.iteration(), Some(4));
        let steps: Vec<_> = line.steps().map(|(at, node)| (at, node.message.action(), node.sampled_tokens())).collect();
        assert_eq!(
            steps,
            [
                (NodeAt { trace: 0, node: 1 }, "a\nlook({})".to_string(), 1),
                (NodeAt { trace: 1, node: 0 }, "b".to_string(), 0)
            ]
        );
        assert_eq!(line.nodes().count(), 3);
    }
}
