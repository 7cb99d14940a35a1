//! What the engine reads of a run: [`EngineInput`], implemented by the run's episodes with their text
//! ([`Episode`]) and without it ([`LeanEpisode`]s, and a viewer's [`LeanEpisodes`] by column: anchors are
//! hashes). The engine knows no environment:
//! anchors are data it is handed. A step's page anchor is its recorded `page` (the environment records it
//! when it plays; for runs recorded without it, the environment layer fills it in first:
//! `crate::env::fill_page_anchors`, and the lean reader is handed it the same way). A step with no page anchor
//! is keyed as the empty name, so such steps of an episode group share one page-anchor group, in either form.
//! A step's state is its recorded `state` (the environment's fingerprint, hashed when it played); a step with
//! none is keyed by its anchor and step index, as in [`KeyedAnchor::ObservationStep`].

use std::borrow::Cow;
use std::sync::Arc;

use crate::run::text_on_disk::LeanEpisode;
use crate::run::{anchor_hash, Episode};
use crate::run::{IdRef, LeanEpisodeRef, LeanEpisodes, LeanSlice};

/// The anchors the engine groups steps by without comparing text: equal keys, same anchor-state group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyedAnchor {
    /// The step's anchor (its observation when it has none), as a 64-bit hash of the text.
    Exact,
    /// The environment's anchor of the step (WebShop's page type).
    Page,
    /// The step's anchor and its index in the episode.
    ObservationStep,
    /// The step's recorded state ([`EngineInput::state`]), else as [`KeyedAnchor::ObservationStep`].
    State,
}

/// The key of anchor hash `anchor` at step `t` ([`KeyedAnchor::ObservationStep`]).
fn at_step(anchor: u64, t: usize) -> u64 {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&anchor.to_le_bytes());
    bytes[8..].copy_from_slice(&(t as u64).to_le_bytes());
    twox_hash::XxHash3_64::oneshot(&bytes)
}

/// A step's key under `anchor`, given its exact anchor hash, page key and recorded state.
fn keyed(
    anchor: KeyedAnchor,
    exact: u64,
    page: impl FnOnce() -> u64,
    state: impl FnOnce() -> Option<u64>,
    t: usize,
) -> u64 {
    match anchor {
        KeyedAnchor::Exact => exact,
        KeyedAnchor::Page => page(),
        KeyedAnchor::ObservationStep => at_step(exact, t),
        KeyedAnchor::State => state().unwrap_or_else(|| at_step(exact, t)),
    }
}

/// A run's episodes in file order, as the engine reads them: `e` is an episode's index, `t` a step's.
pub trait EngineInput: Sync {
    fn episode_count(&self) -> usize;
    fn episode_id(&self, e: usize) -> IdRef<'_>;
    /// The episode group (same task, same start state).
    fn group(&self, e: usize) -> &str;
    /// [`Self::group`] to keep: shared with the input where it keeps its names so.
    fn group_name(&self, e: usize) -> Arc<str> {
        Arc::from(self.group(e))
    }
    fn iteration(&self, e: usize) -> i64;
    fn success(&self, e: usize) -> bool;
    fn step_count(&self, e: usize) -> usize;
    fn reward(&self, e: usize, t: usize) -> f64;
    fn valid(&self, e: usize, t: usize) -> bool;
    /// How many times the trainer counted the step ([`crate::run::Step::copies`]).
    fn copies(&self, e: usize, t: usize) -> u32;
    /// Σ tokens over the episode's steps, a step without a count counting 0.
    fn tokens(&self, e: usize) -> u64;
    /// How many of the episode's steps record a token count.
    fn token_steps(&self, e: usize) -> usize;
    /// Per-reward-function rewards (TRL), in the trainer's order; NaN for a function that returned none.
    fn recorded_rewards(&self, e: usize) -> Option<Cow<'_, [f64]>>;
    /// The names of the reward functions of [`Self::recorded_rewards`].
    fn reward_names(&self, e: usize) -> Option<Vec<String>>;
    /// What the trainer itself computed, one per step.
    fn recorded_advantages(&self, e: usize) -> Option<Cow<'_, [f64]>>;
    /// The step's anchor key: steps of an episode group with equal keys share an anchor-state group.
    fn anchor_key(&self, e: usize, t: usize, anchor: KeyedAnchor) -> u64;
    /// The hash ([`crate::run::anchor_hash`]) of the state the step records ([`crate::run::Step::state`]).
    fn state(&self, e: usize, t: usize) -> Option<u64>;
}

impl<T> EngineInput for Vec<T>
where
    [T]: EngineInput,
    T: Sync,
{
    fn episode_count(&self) -> usize {
        self.as_slice().episode_count()
    }
    fn episode_id(&self, e: usize) -> IdRef<'_> {
        self.as_slice().episode_id(e)
    }
    fn group(&self, e: usize) -> &str {
        self.as_slice().group(e)
    }
    fn group_name(&self, e: usize) -> Arc<str> {
        self.as_slice().group_name(e)
    }
    fn iteration(&self, e: usize) -> i64 {
        self.as_slice().iteration(e)
    }
    fn success(&self, e: usize) -> bool {
        self.as_slice().success(e)
    }
    fn step_count(&self, e: usize) -> usize {
        self.as_slice().step_count(e)
    }
    fn reward(&self, e: usize, t: usize) -> f64 {
        self.as_slice().reward(e, t)
    }
    fn valid(&self, e: usize, t: usize) -> bool {
        self.as_slice().valid(e, t)
    }
    fn copies(&self, e: usize, t: usize) -> u32 {
        self.as_slice().copies(e, t)
    }
    fn tokens(&self, e: usize) -> u64 {
        self.as_slice().tokens(e)
    }
    fn token_steps(&self, e: usize) -> usize {
        self.as_slice().token_steps(e)
    }
    fn recorded_rewards(&self, e: usize) -> Option<Cow<'_, [f64]>> {
        self.as_slice().recorded_rewards(e)
    }
    fn reward_names(&self, e: usize) -> Option<Vec<String>> {
        self.as_slice().reward_names(e)
    }
    fn recorded_advantages(&self, e: usize) -> Option<Cow<'_, [f64]>> {
        self.as_slice().recorded_advantages(e)
    }
    fn anchor_key(&self, e: usize, t: usize, anchor: KeyedAnchor) -> u64 {
        self.as_slice().anchor_key(e, t, anchor)
    }
    fn state(&self, e: usize, t: usize) -> Option<u64> {
        self.as_slice().state(e, t)
    }
}

impl EngineInput for [Episode] {
    fn episode_count(&self) -> usize {
        self.len()
    }
    fn episode_id(&self, e: usize) -> IdRef<'_> {
        IdRef::whole(&self[e].id)
    }
    fn group(&self, e: usize) -> &str {
        &self[e].group
    }
    fn iteration(&self, e: usize) -> i64 {
        self[e].iteration
    }
    fn success(&self, e: usize) -> bool {
        self[e].success()
    }
    fn step_count(&self, e: usize) -> usize {
        self[e].steps.len()
    }
    fn reward(&self, e: usize, t: usize) -> f64 {
        self[e].steps[t].reward
    }
    fn valid(&self, e: usize, t: usize) -> bool {
        self[e].steps[t].valid
    }
    fn copies(&self, e: usize, t: usize) -> u32 {
        self[e].steps[t].copies()
    }
    fn tokens(&self, e: usize) -> u64 {
        self[e].steps.iter().map(|s| s.tokens.unwrap_or(0)).sum()
    }
    fn token_steps(&self, e: usize) -> usize {
        self[e].steps.iter().filter(|s| s.tokens.is_some()).count()
    }
    fn recorded_rewards(&self, e: usize) -> Option<Cow<'_, [f64]>> {
        self[e].reward_functions().map(|(_, values)| Cow::Owned(values))
    }
    fn reward_names(&self, e: usize) -> Option<Vec<String>> {
        self[e].reward_functions().map(|(names, _)| names)
    }
    fn recorded_advantages(&self, e: usize) -> Option<Cow<'_, [f64]>> {
        self[e].advantages.as_deref().map(Cow::Borrowed)
    }
    fn anchor_key(&self, e: usize, t: usize, anchor: KeyedAnchor) -> u64 {
        let step = &self[e].steps[t];
        let page = || anchor_hash(step.page.as_deref().unwrap_or_default());
        keyed(anchor, anchor_hash(step.anchor_key()), page, || self.state(e, t), t)
    }
    fn state(&self, e: usize, t: usize) -> Option<u64> {
        self[e].steps[t].state.as_deref().map(anchor_hash)
    }
}

/// Lean episodes by index, in whichever form they are held: the engine reads each the same way, and a
/// similarity grouping reads their text back ([`crate::advantage::group_lean`]).
pub trait LeanInput: EngineInput {
    fn lean(&self, e: usize) -> LeanEpisodeRef<'_>;
    /// Episode `e`'s group name as the episodes keep it.
    fn shared_group(&self, e: usize) -> &Arc<str>;
}

impl LeanInput for [LeanEpisode] {
    fn lean(&self, e: usize) -> LeanEpisodeRef<'_> {
        self[e].view()
    }
    fn shared_group(&self, e: usize) -> &Arc<str> {
        &self[e].group
    }
}

impl LeanInput for LeanEpisodes {
    fn lean(&self, e: usize) -> LeanEpisodeRef<'_> {
        self.at(e)
    }
    fn shared_group(&self, e: usize) -> &Arc<str> {
        self.group_name(e)
    }
}

impl LeanInput for LeanSlice<'_> {
    fn lean(&self, e: usize) -> LeanEpisodeRef<'_> {
        self.at(e)
    }
    fn shared_group(&self, e: usize) -> &Arc<str> {
        self.group_name(e)
    }
}

/// [`EngineInput`] of a [`LeanInput`]: anchors are the steps' hashes.
macro_rules! lean_engine_input {
    ($($t:ty),*) => {$(
        impl EngineInput for $t {
            fn episode_count(&self) -> usize {
                self.len()
            }
            fn episode_id(&self, e: usize) -> IdRef<'_> {
                self.lean(e).id
            }
            fn group(&self, e: usize) -> &str {
                self.lean(e).group
            }
            fn group_name(&self, e: usize) -> Arc<str> {
                Arc::clone(self.shared_group(e))
            }
            fn iteration(&self, e: usize) -> i64 {
                self.lean(e).iteration
            }
            fn success(&self, e: usize) -> bool {
                self.lean(e).success
            }
            fn step_count(&self, e: usize) -> usize {
                self.lean(e).steps.len()
            }
            fn reward(&self, e: usize, t: usize) -> f64 {
                self.lean(e).steps.at(t).reward
            }
            fn valid(&self, e: usize, t: usize) -> bool {
                self.lean(e).steps.at(t).valid
            }
            fn copies(&self, e: usize, t: usize) -> u32 {
                self.lean(e).steps.at(t).copies
            }
            fn tokens(&self, e: usize) -> u64 {
                self.lean(e).tokens
            }
            fn token_steps(&self, e: usize) -> usize {
                self.lean(e).token_steps as usize
            }
            fn recorded_rewards(&self, e: usize) -> Option<Cow<'_, [f64]>> {
                self.lean(e).rewards().map(|rewards| Cow::Owned(rewards.to_vec()))
            }
            fn reward_names(&self, e: usize) -> Option<Vec<String>> {
                self.lean(e).reward_names().map(<[String]>::to_vec)
            }
            fn recorded_advantages(&self, e: usize) -> Option<Cow<'_, [f64]>> {
                self.lean(e).advantages().map(|advantages| Cow::Owned(advantages.to_vec()))
            }
            fn anchor_key(&self, e: usize, t: usize, anchor: KeyedAnchor) -> u64 {
                let episode = self.lean(e);
                let step = episode.steps.at(t);
                keyed(anchor, step.anchor, || u64::from(step.page), || episode.state(t), t)
            }
            fn state(&self, e: usize, t: usize) -> Option<u64> {
                self.lean(e).state(t)
            }
        }
    )*};
}

lean_engine_input!([LeanEpisode], LeanEpisodes, LeanSlice<'_>);
