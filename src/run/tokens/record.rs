//! One step's tokens: the columns of a record of the token store, their byte layout, and the values derived
//! from them.
//!
//! Byte layout of a record with `n` tokens, `t` bytes of text and the channels `c₁ … c_k` (all integers and
//! floats little-endian, no padding; `b = ⌈n / 8⌉`; a bitmap's bit `i` is bit `i % 8` of byte `i / 8`):
//!
//! | part | bytes |
//! |---|---|
//! | token ids, i32 | `4n` |
//! | loss mask, u8 (0 or 1) | `n` |
//! | text known, bitmap (0: the tokenizer did not know the id) | `b` |
//! | end of each token's text in the text bytes, u32 (its start is the previous end, 0 for the first) | `4n` |
//! | text, UTF-8, every token's text one after another | `t` |
//! | per channel, in the index line's order: value present, bitmap; then the values, f32 | `k (b + 4n)` |
//!
//! A value whose bit is 0 is null (not recorded for that token); its f32 is ignored (writers put 0). A channel
//! the record does not list is null for every token. `clipped` is stored as 0.0 or 1.0.

/// A per-token channel a trainer may record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Channel {
    /// The advantage as the loss uses it.
    Advantage,
    /// The trainer's log-probability of the token before the update.
    OldLogprob,
    /// The sampler's (e.g. vLLM's) log-probability of the token.
    RolloutLogprob,
    /// The reference model's log-probability of the token.
    RefLogprob,
    /// The policy's entropy at the token.
    Entropy,
    /// The update's importance ratio π_θ / π_old.
    Ratio,
    /// Whether the update clipped the token (1) or not (0).
    Clipped,
}

impl Channel {
    pub const ALL: [Channel; 7] = [
        Channel::Advantage,
        Channel::OldLogprob,
        Channel::RolloutLogprob,
        Channel::RefLogprob,
        Channel::Entropy,
        Channel::Ratio,
        Channel::Clipped,
    ];

    /// The channel's name in the index and in `gigscope tokens`' output.
    pub fn name(self) -> &'static str {
        match self {
            Channel::Advantage => "advantage",
            Channel::OldLogprob => "old_logprob",
            Channel::RolloutLogprob => "rollout_logprob",
            Channel::RefLogprob => "ref_logprob",
            Channel::Entropy => "entropy",
            Channel::Ratio => "ratio",
            Channel::Clipped => "clipped",
        }
    }

    pub fn from_name(name: &str) -> Option<Channel> {
        Channel::ALL.into_iter().find(|c| c.name() == name)
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// The tokens of one step (one response of the policy) and whichever channels the trainer recorded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepTokens {
    pub ids: Vec<i32>,
    /// The loss mask: whether the loss trained the token.
    pub mask: Vec<bool>,
    /// Every token's text, one after another.
    pub text: String,
    /// The end of each token's text in `text` (bytes).
    pub text_ends: Vec<u32>,
    /// Whether the tokenizer knew each id (an unknown id has no text).
    pub text_known: Vec<bool>,
    /// Per channel ([`Channel::ALL`]'s order): `None` when not recorded; else a value or null per token.
    pub channels: [Option<Vec<Option<f32>>>; 7],
}

/// What is derived per token from the recorded channels (null where a channel it needs is null).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Derived {
    /// Sampler–trainer mismatch: `old_logprob − rollout_logprob`.
    pub mismatch: Option<f32>,
    /// Its importance weight `exp(old_logprob − rollout_logprob)` = π_old / π_rollout.
    pub mismatch_weight: Option<f32>,
    /// KL to the reference, verl's k1: `old_logprob − ref_logprob`.
    pub kl_k1: Option<f32>,
    /// KL to the reference, verl's k3 (`low_var_kl`): with `d = clamp(ref − old, −20, 20)`,
    /// `clamp(exp(d) − d − 1, −10, 10)`.
    pub kl_k3: Option<f32>,
    /// What the update pushed: `advantage × mask`, and 0 where the token was clipped (a clipped token has no
    /// gradient in a PPO-clip loss).
    pub effective_weight: Option<f32>,
}

impl StepTokens {
    /// Tokens with ids, mask and text, and no channel recorded.
    pub fn new(ids: Vec<i32>, mask: Vec<bool>, texts: &[Option<&str>]) -> StepTokens {
        let mut text = String::new();
        let mut text_ends = Vec::with_capacity(texts.len());
        let mut text_known = Vec::with_capacity(texts.len());
        for t in texts {
            text.push_str(t.unwrap_or(""));
            text_ends.push(text.len() as u32);
            text_known.push(t.is_some());
        }
        StepTokens { ids, mask, text, text_ends, text_known, channels: Default::default() }
    }

    /// The tokens with `channel` set to `values`.
    pub fn with(mut self, channel: Channel, values: Vec<Option<f32>>) -> StepTokens {
        self.channels[channel.slot()] = Some(values);
        self
    }

    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Token `i`'s text (`None`: an id the tokenizer did not know).
    pub fn token_text(&self, i: usize) -> Option<&str> {
        if !self.text_known[i] {
            return None;
        }
        self.text.get(self.offset(i) as usize..self.text_ends[i] as usize)
    }

    /// Where token `i`'s text starts in the response (bytes of the tokens' texts one after another).
    pub fn offset(&self, i: usize) -> u32 {
        if i == 0 {
            0
        } else {
            self.text_ends[i - 1]
        }
    }

    /// The channel's column, when the trainer recorded it.
    pub fn channel(&self, channel: Channel) -> Option<&[Option<f32>]> {
        self.channels[channel.slot()].as_deref()
    }

    /// Token `i`'s value of `channel`: null when the channel or that token's value was not recorded.
    pub fn value(&self, channel: Channel, i: usize) -> Option<f32> {
        self.channel(channel).and_then(|c| c[i])
    }

    /// The channels recorded, in [`Channel::ALL`]'s order.
    pub fn recorded(&self) -> Vec<Channel> {
        Channel::ALL.into_iter().filter(|c| self.channel(*c).is_some()).collect()
    }

    /// The values derived for token `i`. Computed in f32, as the trainers compute them.
    pub fn derived(&self, i: usize) -> Derived {
        let old = self.value(Channel::OldLogprob, i);
        let rollout = self.value(Channel::RolloutLogprob, i);
        let reference = self.value(Channel::RefLogprob, i);
        let mismatch = old.zip(rollout).map(|(o, r)| o - r);
        let kl_k3 = old.zip(reference).map(|(o, r)| {
            let d = (r - o).clamp(-20.0, 20.0);
            (d.exp() - d - 1.0).clamp(-10.0, 10.0)
        });
        let effective_weight = self.value(Channel::Advantage, i).map(|a| {
            let trained = self.mask[i] && self.value(Channel::Clipped, i).is_none_or(|c| c == 0.0);
            if trained {
                a
            } else {
                0.0
            }
        });
        Derived {
            mismatch,
            mismatch_weight: mismatch.map(f32::exp),
            kl_k1: old.zip(reference).map(|(o, r)| o - r),
            kl_k3,
            effective_weight,
        }
    }

    /// Token `i`'s values in the order of [`VALUE_COLUMNS`] (the recorded channels, then the derived values),
    /// null where absent: the row of `gigscope tokens` and of the Python API's token tables after its `mask`.
    pub fn row_values(&self, i: usize) -> [Option<f32>; 12] {
        let d = self.derived(i);
        let v = |c: Channel| self.value(c, i);
        [
            v(Channel::Advantage),
            v(Channel::OldLogprob),
            v(Channel::RolloutLogprob),
            v(Channel::RefLogprob),
            v(Channel::Entropy),
            v(Channel::Ratio),
            v(Channel::Clipped),
            d.mismatch,
            d.mismatch_weight,
            d.kl_k1,
            d.kl_k3,
            d.effective_weight,
        ]
    }

    /// Whether the columns agree in length and the text ends are in order, on character boundaries.
    pub fn check(&self) -> Result<(), String> {
        let n = self.ids.len();
        let lengths =
            [("mask", self.mask.len()), ("text_ends", self.text_ends.len()), ("text_known", self.text_known.len())];
        for (name, len) in lengths {
            if len != n {
                return Err(format!("{name} has {len} entries for {n} token ids"));
            }
        }
        for channel in Channel::ALL {
            if let Some(values) = self.channel(channel) {
                if values.len() != n {
                    return Err(format!("{} has {} values for {n} token ids", channel.name(), values.len()));
                }
            }
        }
        let mut start = 0u32;
        for (i, &end) in self.text_ends.iter().enumerate() {
            if end < start || end as usize > self.text.len() || !self.text.is_char_boundary(end as usize) {
                return Err(format!("token {i}'s text ends at byte {end}, not after {start} within the text"));
            }
            start = end;
        }
        if start as usize != self.text.len() {
            return Err(format!("the texts end at byte {start} of {} bytes of text", self.text.len()));
        }
        Ok(())
    }

    /// Append the record's bytes to `out` (layout in the module doc). [`Self::check`] it first.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        let n = self.ids.len();
        out.reserve(record_len(n, self.text.len() as u64, self.recorded().len()) as usize);
        for id in &self.ids {
            out.extend_from_slice(&id.to_le_bytes());
        }
        out.extend(self.mask.iter().map(|&m| u8::from(m)));
        push_bitmap(out, self.text_known.iter().copied());
        for end in &self.text_ends {
            out.extend_from_slice(&end.to_le_bytes());
        }
        out.extend_from_slice(self.text.as_bytes());
        for channel in self.recorded() {
            let values = self.channel(channel).unwrap_or_default();
            push_bitmap(out, values.iter().map(Option::is_some));
            for v in values {
                out.extend_from_slice(&v.unwrap_or(0.0).to_le_bytes());
            }
        }
    }

    /// A record read back from its bytes; `channels` as its index line lists them (`None`: a channel this
    /// version does not know, skipped).
    pub(crate) fn decode(
        bytes: &[u8],
        n: usize,
        text_len: usize,
        channels: &[Option<Channel>],
    ) -> Result<Self, String> {
        let expected = record_len(n, text_len as u64, channels.len());
        if bytes.len() as u64 != expected {
            return Err(format!(
                "the record is {} bytes, but {n} tokens, {text_len} bytes of text and {} channel(s) make {expected}",
                bytes.len(),
                channels.len()
            ));
        }
        let mut at = Cursor { bytes, at: 0 };
        let ids = at.take(4 * n).chunks_exact(4).map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        let mask = at
            .take(n)
            .iter()
            .enumerate()
            .map(|(i, &m)| match m {
                0 | 1 => Ok(m == 1),
                other => Err(format!("token {i}'s mask is {other}, not 0 or 1")),
            })
            .collect::<Result<_, _>>()?;
        let text_known = bitmap(at.take(n.div_ceil(8)), n);
        let text_ends = at.take(4 * n).chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        let text = std::str::from_utf8(at.take(text_len))
            .map_err(|err| format!("the text is not UTF-8 at byte {}", err.valid_up_to()))?
            .to_string();
        let mut step = StepTokens { ids, mask, text, text_ends, text_known, channels: Default::default() };
        for channel in channels {
            let present = bitmap(at.take(n.div_ceil(8)), n);
            let values = at.take(4 * n);
            if let Some(channel) = channel {
                let column = values
                    .chunks_exact(4)
                    .zip(present)
                    .map(|(b, p)| p.then(|| f32::from_le_bytes([b[0], b[1], b[2], b[3]])))
                    .collect();
                step.channels[channel.slot()] = Some(column);
            }
        }
        step.check()?;
        Ok(step)
    }
}

/// The names of [`StepTokens::row_values`]' values, in order (`clipped` is a flag, 0 or 1).
pub const VALUE_COLUMNS: [&str; 12] = [
    "advantage",
    "old_logprob",
    "rollout_logprob",
    "ref_logprob",
    "entropy",
    "ratio",
    "clipped",
    "mismatch",
    "mismatch_weight",
    "kl_k1",
    "kl_k3",
    "effective_weight",
];

/// Bytes of a record of `n` tokens, `text_len` bytes of text and `channels` channels.
pub fn record_len(n: usize, text_len: u64, channels: usize) -> u64 {
    let (n, b) = (n as u64, n.div_ceil(8) as u64);
    4 * n + n + b + 4 * n + text_len + channels as u64 * (b + 4 * n)
}

struct Cursor<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Cursor<'a> {
    /// The next `len` bytes (the record's length was checked against the layout before).
    fn take(&mut self, len: usize) -> &'a [u8] {
        let part = &self.bytes[self.at..self.at + len];
        self.at += len;
        part
    }
}

fn push_bitmap(out: &mut Vec<u8>, bits: impl Iterator<Item = bool>) {
    let mut byte = 0u8;
    let mut count = 0;
    for bit in bits {
        byte |= u8::from(bit) << (count % 8);
        count += 1;
        if count % 8 == 0 {
            out.push(byte);
            byte = 0;
        }
    }
    if count % 8 != 0 {
        out.push(byte);
    }
}

fn bitmap(bytes: &[u8], n: usize) -> Vec<bool> {
    (0..n).map(|i| (bytes[i / 8] >> (i % 8)) & 1 == 1).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StepTokens {
        StepTokens::new(
            vec![5, -1, 70000, 3],
            vec![false, true, true, true],
            &[Some("Hé"), None, Some(" wo"), Some("rld")],
        )
        .with(Channel::Advantage, vec![Some(0.5), Some(0.5), Some(-0.25), None])
        .with(Channel::OldLogprob, vec![Some(-1.0), Some(-0.1), Some(f32::NAN), Some(-3.5)])
        .with(Channel::Clipped, vec![Some(0.0), Some(0.0), Some(1.0), Some(0.0)])
    }

    #[test]
    fn a_record_reads_back_as_written_nulls_kept_apart_from_zero() {
        let step = sample();
        step.check().unwrap();
        let mut bytes = Vec::new();
        step.encode(&mut bytes);
        assert_eq!(bytes.len() as u64, record_len(4, step.text.len() as u64, 3));
        let channels: Vec<_> = step.recorded().into_iter().map(Some).collect();
        let back = StepTokens::decode(&bytes, 4, step.text.len(), &channels).unwrap();
        assert_eq!(back.ids, step.ids);
        assert_eq!((back.token_text(0), back.token_text(1), back.token_text(2)), (Some("Hé"), None, Some(" wo")));
        assert_eq!((back.offset(2), back.offset(3)), (3, 6));
        assert_eq!(back.value(Channel::Advantage, 3), None);
        assert_eq!(back.value(Channel::Advantage, 2), Some(-0.25));
        assert!(back.value(Channel::OldLogprob, 2).unwrap().is_nan());
        assert_eq!(back.channel(Channel::Entropy), None);
        // A channel this version does not know is skipped, the others still read.
        let back =
            StepTokens::decode(&bytes, 4, step.text.len(), &[Some(Channel::Advantage), None, Some(Channel::Clipped)])
                .unwrap();
        assert_eq!(back.recorded(), vec![Channel::Advantage, Channel::Clipped]);
    }

    #[test]
    fn a_record_whose_lengths_disagree_is_refused_with_the_reason() {
        let mut bytes = Vec::new();
        sample().encode(&mut bytes);
        let channels = [Some(Channel::Advantage), Some(Channel::OldLogprob), Some(Channel::Clipped)];
        let err = StepTokens::decode(&bytes[..bytes.len() - 1], 4, 10, &channels).unwrap_err();
        assert!(err.contains("4 tokens, 10 bytes of text and 3 channel(s)"), "{err}");
        let mut bad = sample();
        bad.mask.pop();
        assert_eq!(bad.check().unwrap_err(), "mask has 3 entries for 4 token ids");
        let mut bad = sample();
        bad.text_ends[0] = 2; // inside 'é'
        assert!(bad.check().unwrap_err().contains("token 0's text ends at byte 2"));
    }

    #[test]
    fn derived_values_follow_verl_and_need_their_channels() {
        let step = sample()
            .with(Channel::RolloutLogprob, vec![Some(-1.5), None, None, Some(-3.0)])
            .with(Channel::RefLogprob, vec![Some(-1.2), None, None, Some(-40.0)]);
        let d = step.derived(0);
        assert_eq!(d.mismatch, Some(0.5));
        assert_eq!(d.mismatch_weight, Some(0.5f32.exp()));
        assert_eq!(d.kl_k1, Some(-1.0f32 - -1.2f32));
        let r = -1.2f32 - -1.0f32;
        assert_eq!(d.kl_k3, Some(r.exp() - r - 1.0));
        // Masked out: nothing pushed; clipped: nothing pushed; unclipped and trained: the advantage.
        assert_eq!(d.effective_weight, Some(0.0));
        assert_eq!(step.derived(1).effective_weight, Some(0.5));
        assert_eq!(step.derived(2).effective_weight, Some(0.0));
        assert_eq!(step.derived(3).effective_weight, None);
        assert_eq!(step.derived(1).mismatch, None);
        // k3 clamps the log-ratio at ±20 and the estimate at ±10.
        assert_eq!(step.derived(3).kl_k3, Some(10.0));
    }
}
