//! Response lengths counted from the token store, for DEPO's efficiency term α₁/(mean tokens per step)
//! (`crate::advantage`'s reward shaping). A run records each step's `tokens` in `episodes.jsonl`, which may be
//! an estimate (gigscope's own trainer counts an action's words); where the token store holds every step of an
//! episode with its index line's `trained` (the tokens of mask 1, what the loss trained), those counts replace
//! the recorded ones, so the engine, which does no I/O, reads real lengths as plain data.
//!
//! Only the index is read (a step's `trained` is on its line), never a chunk. An episode is counted whole or not
//! at all: one step missing from the store, or indexed without `trained`, leaves the episode its recorded
//! lengths, so an episode's mean never mixes counts with estimates.

use std::borrow::Cow;

use super::store::TokenStore;
use crate::run::text_on_disk::LeanEpisode;
use crate::run::{Episode, LeanEpisodes};

/// How many episodes' response lengths were counted from the token store, of how many.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lengths {
    pub counted: usize,
    pub episodes: usize,
}

impl Lengths {
    /// `counted` (every episode), `estimated` (none: the run's recorded `tokens`), or `counted for N of M`.
    pub fn describe(&self) -> String {
        match self.counted {
            0 => "estimated (the run's recorded tokens; no counts in tokens/)".to_string(),
            n if n == self.episodes => "counted (tokens/: the trained tokens of every step)".to_string(),
            n => format!("counted for {n} of {} episodes (tokens/), estimated for the rest", self.episodes),
        }
    }

    /// These counts and `other`'s, of two parts of one run.
    pub fn add(&mut self, other: Lengths) {
        self.counted += other.counted;
        self.episodes += other.episodes;
    }
}

/// An episode whose steps' lengths can be replaced.
pub trait Counted {
    fn id(&self) -> &str;
    fn step_count(&self) -> usize;
    /// Take `trained[t]` as step `t`'s length.
    fn set_lengths(&mut self, trained: &[u32]);
}

impl Counted for Episode {
    fn id(&self) -> &str {
        &self.id
    }
    fn step_count(&self) -> usize {
        self.steps.len()
    }
    fn set_lengths(&mut self, trained: &[u32]) {
        for (step, &n) in self.steps.iter_mut().zip(trained) {
            step.tokens = Some(u64::from(n));
        }
    }
}

impl Counted for LeanEpisode {
    fn id(&self) -> &str {
        &self.id
    }
    fn step_count(&self) -> usize {
        self.steps.len()
    }
    fn set_lengths(&mut self, trained: &[u32]) {
        self.tokens = trained.iter().map(|&n| u64::from(n)).sum();
        self.token_steps = trained.len() as u32;
    }
}

/// Episodes by index whose steps' lengths can be replaced: a slice of [`Counted`], or a viewer's columns.
pub trait CountedEpisodes {
    fn count(&self) -> usize;
    fn id(&self, e: usize) -> Cow<'_, str>;
    fn step_count(&self, e: usize) -> usize;
    /// Take `trained[t]` as step `t`'s length of episode `e`.
    fn set_lengths(&mut self, e: usize, trained: &[u32]);
}

impl<E: Counted> CountedEpisodes for [E] {
    fn count(&self) -> usize {
        self.len()
    }
    fn id(&self, e: usize) -> Cow<'_, str> {
        Cow::Borrowed(self[e].id())
    }
    fn step_count(&self, e: usize) -> usize {
        self[e].step_count()
    }
    fn set_lengths(&mut self, e: usize, trained: &[u32]) {
        self[e].set_lengths(trained);
    }
}

impl CountedEpisodes for LeanEpisodes {
    fn count(&self) -> usize {
        self.len()
    }
    fn id(&self, e: usize) -> Cow<'_, str> {
        LeanEpisodes::id(self, e).joined()
    }
    fn step_count(&self, e: usize) -> usize {
        self.steps(e).len()
    }
    fn set_lengths(&mut self, e: usize, trained: &[u32]) {
        LeanEpisodes::set_lengths(self, e, trained);
    }
}

/// Replace the recorded lengths of each of `episodes` from `from` on that the store counts whole (every step
/// indexed with `trained`) by those counts.
pub fn count_lengths<C: CountedEpisodes + ?Sized>(store: &TokenStore, episodes: &mut C, from: usize) -> Lengths {
    let mut lengths = Lengths { counted: 0, episodes: episodes.count().saturating_sub(from) };
    for e in from..episodes.count() {
        if let Some(trained) = whole_lengths(store, &episodes.id(e), episodes.step_count(e)) {
            episodes.set_lengths(e, &trained);
            lengths.counted += 1;
        }
    }
    lengths
}

/// The lengths of the `step_count` steps of episode `id`, when the store counts every one of them.
fn whole_lengths(store: &TokenStore, id: &str, step_count: usize) -> Option<Vec<u32>> {
    let steps = store.steps(id);
    if steps.len() != step_count || step_count == 0 {
        return None;
    }
    // `steps` are in step order; whole means exactly 0..n, each with its count.
    steps.iter().enumerate().map(|(t, s)| s.trained.filter(|_| s.step as usize == t)).collect()
}
