//! Per-token data in verifiers' saved rollouts (`traces.jsonl`, verifiers 0.4.0's schema, which prime-rl
//! trains from): read where it is, as the token store reads its own chunks.
//!
//! The schema and the step rule (a node the model sampled is a step) are [`crate::run::verifiers_traces`]'s,
//! shared with the episode reader. The step's tokens are
//! the node's `token_ids` (the turn's generation-prompt scaffold, then the sampled completion) with its `mask`
//! (true on the sampled tokens); the per-token floats verifiers keeps for the sampled tokens only (`logprobs`,
//! and the trainer's `advantages`, `reference_logprobs`, `trainer_logprobs`, `entropies`) are spread onto the
//! mask's true positions: `rollout_logprob`, `advantage`, `ref_logprob`, `old_logprob`, `entropy`, null on the
//! scaffold and wherever the trainer annotated nothing. `ratio` and `clipped` are never recorded there. Token
//! texts are not in the file (no tokenizer is at hand): every token shows as its id.

use super::record::{Channel, StepTokens};
use crate::run::verifiers_traces::{Node, NodeAt, TracesLine};

/// A step of a line, for the store's index: where its node is, its token count, its sampled (trained) tokens
/// and the channels it records; or why its node cannot be read.
#[derive(Debug)]
pub struct IndexedStep {
    pub at: NodeAt,
    pub read: Result<(u32, u32, Vec<Channel>), String>,
}

/// The line's steps in order, each checked.
pub fn indexed_steps(line: &TracesLine) -> Vec<IndexedStep> {
    line.steps()
        .map(|(at, node)| {
            let read = step_tokens(node).map(|t| (t.len() as u32, node.sampled_tokens() as u32, t.recorded()));
            IndexedStep { at, read }
        })
        .collect()
}

/// The tokens of the step whose node is at `at` (`None`: no sampled node there).
pub fn tokens_at(line: &TracesLine, at: NodeAt) -> Option<Result<StepTokens, String>> {
    line.steps().find(|(a, _)| *a == at).map(|(_, node)| step_tokens(node))
}

fn step_tokens(node: &Node) -> Result<StepTokens, String> {
    let n = node.token_ids.len();
    if node.mask.len() != n {
        return Err(format!("mask has {} entries for {n} token_ids", node.mask.len()));
    }
    let sampled = node.sampled_tokens();
    // The store keeps single precision, as it does for every trainer.
    let spread = |name: &str, values: &[f64]| -> Result<Vec<Option<f32>>, String> {
        if values.len() != sampled {
            return Err(format!("{name} has {} values for {sampled} sampled tokens (mask true)", values.len()));
        }
        let mut it = values.iter();
        Ok(node.mask.iter().map(|&m| if m { it.next().map(|&v| v as f32) } else { None }).collect())
    };
    let mut tokens = StepTokens::new(node.token_ids.clone(), node.mask.clone(), &vec![None; n]);
    // A client that returned no log-probabilities leaves the sampler's channel unrecorded.
    if !node.logprobs.is_empty() {
        tokens = tokens.with(Channel::RolloutLogprob, spread("logprobs", &node.logprobs)?);
    }
    let annotated = [
        (Channel::Advantage, "advantages", &node.advantages),
        (Channel::RefLogprob, "reference_logprobs", &node.reference_logprobs),
        (Channel::OldLogprob, "trainer_logprobs", &node.trainer_logprobs),
        (Channel::Entropy, "entropies", &node.entropies),
    ];
    for (channel, name, values) in annotated {
        if let Some(values) = values {
            tokens = tokens.with(channel, spread(name, values)?);
        }
    }
    Ok(tokens)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(node: &str) -> TracesLine {
        let json = format!(
            r#"{{"id":"e","run":{{"work":{{"step":4}}}},"traces":[{{"nodes":[{{"message":{{"role":"user"}},"token_ids":[1]}},{node}]}}]}}"#
        );
        serde_json::from_str(&json).unwrap()
    }

    #[test]
    fn sampled_floats_are_spread_onto_the_mask_and_absent_channels_stay_null() {
        let l = line(
            r#"{"message":{"role":"assistant"},"sampled":true,"token_ids":[7,8,9],"mask":[false,true,true],"logprobs":[-0.5,-0.25],"advantages":[1.0,1.0]}"#,
        );
        assert_eq!(l.iteration(), Some(4));
        let at = NodeAt { trace: 0, node: 1 };
        let t = tokens_at(&l, at).unwrap().unwrap();
        assert_eq!(t.ids, [7, 8, 9]);
        assert_eq!(t.channel(Channel::RolloutLogprob).unwrap(), [None, Some(-0.5), Some(-0.25)]);
        assert_eq!(t.channel(Channel::Advantage).unwrap(), [None, Some(1.0), Some(1.0)]);
        assert!(t.channel(Channel::OldLogprob).is_none() && t.channel(Channel::Entropy).is_none());
        assert_eq!(indexed_steps(&l).len(), 1);
        assert!(tokens_at(&l, NodeAt { trace: 0, node: 0 }).is_none(), "a prompt node is no step");
    }

    #[test]
    fn arrays_that_disagree_are_refused_with_their_names() {
        let l = line(
            r#"{"message":{"role":"assistant"},"sampled":true,"token_ids":[7,8],"mask":[true,true],"logprobs":[-0.5]}"#,
        );
        let err = indexed_steps(&l).remove(0).read.unwrap_err();
        assert_eq!(err, "logprobs has 1 values for 2 sampled tokens (mask true)");
        let l = line(r#"{"message":{"role":"assistant"},"sampled":true,"token_ids":[7,8],"mask":[true]}"#);
        assert_eq!(indexed_steps(&l).remove(0).read.unwrap_err(), "mask has 1 entries for 2 token_ids");
    }
}
