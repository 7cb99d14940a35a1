//! What a step's tokens add up to, and which of its tokens belong to a turn the policy did not write: the
//! numbers the viewer's summary line and the run's per-iteration token summaries are made of, computed from
//! [`StepTokens::derived`] (the one place the derived values come from).
//!
//! Over the trained tokens (mask 1) only: what the loss saw. KL is verl's k3 (`low_var_kl`, its default KL
//! loss); the clip fraction counts the trained tokens with a recorded `clipped` value; the largest mismatch is
//! the largest |`old_logprob − rollout_logprob`|. A number whose channels were not recorded is `None`.

use std::ops::Range;

use super::record::{Channel, StepTokens};

/// One step's token figures.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepSummary {
    pub tokens: usize,
    /// Tokens the loss trained (mask 1).
    pub trained: usize,
    /// Trained tokens the update clipped, among those with a recorded `clipped` value: (clipped, recorded).
    pub clipped: Option<(usize, usize)>,
    /// Sum and count of the trained tokens' k3 KL, and of their entropy.
    pub kl: Option<(f64, usize)>,
    pub entropy: Option<(f64, usize)>,
    /// The largest |mismatch| over the trained tokens, and its token.
    pub largest_mismatch: Option<(f32, usize)>,
    /// Trained tokens inside a turn the policy did not write ([`foreign_turns`]): a defect of the data.
    pub foreign_trained: usize,
}

impl StepSummary {
    pub fn of(tokens: &StepTokens) -> StepSummary {
        let mut s = StepSummary { tokens: tokens.len(), ..StepSummary::default() };
        let foreign = foreign_turns(tokens);
        let clipped = tokens.channel(Channel::Clipped).is_some();
        for i in (0..tokens.len()).filter(|&i| tokens.mask[i]) {
            s.trained += 1;
            if foreign.iter().any(|r| r.contains(&i)) {
                s.foreign_trained += 1;
            }
            if clipped {
                let (c, n) = s.clipped.get_or_insert((0, 0));
                if let Some(v) = tokens.value(Channel::Clipped, i) {
                    *c += usize::from(v != 0.0);
                    *n += 1;
                }
            }
            let d = tokens.derived(i);
            add(&mut s.kl, d.kl_k3);
            add(&mut s.entropy, tokens.value(Channel::Entropy, i));
            if let Some(m) = d.mismatch.map(f32::abs).filter(|m| !m.is_nan()) {
                if s.largest_mismatch.is_none_or(|(best, _)| m > best) {
                    s.largest_mismatch = Some((m, i));
                }
            }
        }
        s
    }

    /// The share of recorded trained tokens that were clipped.
    pub fn clip_fraction(&self) -> Option<f64> {
        self.clipped.filter(|&(_, n)| n > 0).map(|(c, n)| c as f64 / n as f64)
    }

    pub fn mean_kl(&self) -> Option<f64> {
        mean(self.kl)
    }

    pub fn mean_entropy(&self) -> Option<f64> {
        mean(self.entropy)
    }

    /// Add `other`'s figures to these (an iteration's figures are the sum of its steps'); the largest
    /// mismatch keeps its token index of whichever step it came from.
    pub fn absorb(&mut self, other: &StepSummary) {
        self.tokens += other.tokens;
        self.trained += other.trained;
        self.foreign_trained += other.foreign_trained;
        if let Some((c, n)) = other.clipped {
            let (sc, sn) = self.clipped.get_or_insert((0, 0));
            (*sc, *sn) = (*sc + c, *sn + n);
        }
        for (mine, theirs) in [(&mut self.kl, other.kl), (&mut self.entropy, other.entropy)] {
            if let Some((sum, n)) = theirs {
                let (s, k) = mine.get_or_insert((0.0, 0));
                (*s, *k) = (*s + sum, *k + n);
            }
        }
        if let Some((m, i)) = other.largest_mismatch {
            if self.largest_mismatch.is_none_or(|(best, _)| m > best) {
                self.largest_mismatch = Some((m, i));
            }
        }
    }
}

fn add(acc: &mut Option<(f64, usize)>, value: Option<f32>) {
    if let Some(v) = value.filter(|v| !v.is_nan()) {
        let (s, n) = acc.get_or_insert((0.0, 0));
        (*s, *n) = (*s + f64::from(v), *n + 1);
    }
}

fn mean(acc: Option<(f64, usize)>) -> Option<f64> {
    acc.filter(|&(_, n)| n > 0).map(|(s, n)| s / n as f64)
}

/// Where a turn the policy did not write opens and closes in a response's text: ChatML's user, tool and
/// system turns (`<|im_start|>user` … `<|im_end|>`), and tool output in `<tool_response>` … `</tool_response>`
/// (Qwen's and Hermes' templates). A multi-turn trainer's response holds them between the policy's turns,
/// their loss mask 0.
const FOREIGN_TURNS: &[(&str, &str)] = &[
    ("<|im_start|>user", "<|im_end|>"),
    ("<|im_start|>tool", "<|im_end|>"),
    ("<|im_start|>system", "<|im_end|>"),
    ("<tool_response>", "</tool_response>"),
];

/// The tokens of the turns in the response the policy did not write (observation, tool output), as ranges of
/// token indices, from the role markers of the tokens' text ([`FOREIGN_TURNS`]); a turn left open runs to the
/// end of the response. Empty where the text holds no such marker: the store cannot tell then.
pub fn foreign_turns(tokens: &StepTokens) -> Vec<Range<usize>> {
    let text = tokens.text.as_str();
    let token_at = |byte: usize| tokens.text_ends.partition_point(|&end| end as usize <= byte);
    let mut turns = Vec::new();
    let mut from = 0;
    while let Some((start, open, close)) = FOREIGN_TURNS
        .iter()
        .filter_map(|&(open, close)| text[from..].find(open).map(|at| (from + at, open, close)))
        .min_by_key(|&(at, _, _)| at)
    {
        let body = start + open.len();
        let end = text[body..].find(close).map_or(text.len(), |at| body + at + close.len());
        turns.push(token_at(start)..token_at(end.saturating_sub(1)) + 1);
        from = end;
        if from >= text.len() {
            break;
        }
    }
    turns.retain(|r| r.start < r.end.min(tokens.len()));
    for r in &mut turns {
        r.end = r.end.min(tokens.len());
    }
    turns
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(texts: &[&str], mask: &[bool]) -> StepTokens {
        let texts: Vec<Option<&str>> = texts.iter().map(|t| Some(*t)).collect();
        StepTokens::new((0..texts.len() as i32).collect(), mask.to_vec(), &texts)
    }

    #[test]
    fn a_tool_turn_is_found_by_its_markers_and_its_trained_tokens_counted() {
        let t = step(
            &["I'll", " search", "<|im_end|>", "<|im_start|>", "tool", "\nsocks", "<|im_end|>", "Buy"],
            &[true, true, true, false, true, true, false, true],
        );
        assert_eq!(foreign_turns(&t), vec![3..7]);
        assert_eq!(StepSummary::of(&t).foreign_trained, 2);
        let t = step(&["<tool_", "response>", "42", "</tool_response>", " ok"], &[false, false, true, false, true]);
        assert_eq!(foreign_turns(&t), vec![0..4]);
        assert!(foreign_turns(&step(&["plain", " answer"], &[true, true])).is_empty());
        // A turn left open runs to the end.
        assert_eq!(foreign_turns(&step(&["a", "<|im_start|>user", " hi"], &[true; 3])), vec![1..3]);
    }

    #[test]
    fn the_figures_cover_the_trained_tokens_and_say_none_for_channels_not_recorded() {
        let t = step(&["a", "b", "c"], &[true, false, true])
            .with(Channel::Clipped, vec![Some(1.0), Some(1.0), None])
            .with(Channel::OldLogprob, vec![Some(-1.0), Some(-1.0), Some(-2.0)])
            .with(Channel::RolloutLogprob, vec![Some(-1.5), Some(-9.0), Some(-1.0)])
            .with(Channel::Entropy, vec![Some(1.0), Some(5.0), Some(2.0)]);
        let s = StepSummary::of(&t);
        assert_eq!((s.tokens, s.trained), (3, 2));
        assert_eq!(s.clipped, Some((1, 1)));
        assert_eq!(s.clip_fraction(), Some(1.0));
        assert_eq!(s.mean_entropy(), Some(1.5));
        assert_eq!(s.largest_mismatch, Some((1.0, 2)), "the masked token's 8.0 is not trained");
        assert_eq!(s.mean_kl(), None, "no ref_logprob recorded");
        let mut total = s;
        total.absorb(&s);
        assert_eq!((total.trained, total.clipped, total.mean_entropy()), (4, Some((2, 2)), Some(1.5)));
        let bare = StepSummary::of(&step(&["a"], &[true]));
        assert_eq!((bare.clip_fraction(), bare.mean_entropy(), bare.largest_mismatch), (None, None, None));
    }
}
