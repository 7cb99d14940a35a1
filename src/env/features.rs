//! How an environment describes its states and actions to the policy. The policy network has one shape for
//! every environment: bags of hashed feature keys (the instruction, the state, the recent actions, each
//! action's text) and a fixed number of dense numbers per state and per (state, action) pair. Each
//! environment decides what goes in them ([`PolicyFeatures`]): WebShop gives the words of its pages and text
//! overlaps with the instruction, Sokoban gives keys for where the player and the boxes are and what a move
//! would push.
//!
//! Hashing instead of a vocabulary keeps the policy independent of the environment's content (any key maps to
//! a bucket); FNV-1a is stable across runs and platforms, so checkpoints stay valid.

/// Number of hash buckets (rows of the embedding table).
pub const BUCKETS: i64 = 1 << 14;
/// Length of [`StateFeatures::dense`]; an environment leaves the slots it does not use at 0.
pub const STATE_DENSE: usize = 9;
/// Length of [`ActionFeatures::dense`]; an environment leaves the slots it does not use at 0.
pub const ACTION_DENSE: usize = 15;

/// Lower-cased alphanumeric words of `text`.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase)
}

/// The bucket of one feature key.
pub fn bucket(key: &str) -> i64 {
    (stable_hash(key) % BUCKETS as u64) as i64
}

/// FNV-1a of `text`: the same on every run and platform (feature buckets, state fingerprints).
pub fn stable_hash(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The buckets of the first `limit` words of `text`.
pub fn hashed(text: &str, limit: usize) -> Vec<i64> {
    words(text).take(limit).map(|w| bucket(&w)).collect()
}

/// Features of one state.
#[derive(Clone, Debug, PartialEq)]
pub struct StateFeatures {
    pub instruction: Vec<i64>,
    pub observation: Vec<i64>,
    pub history: Vec<i64>,
    pub dense: [f32; STATE_DENSE],
}

/// Features of one candidate action in a state.
#[derive(Clone, Debug, PartialEq)]
pub struct ActionFeatures {
    pub text: Vec<i64>,
    pub dense: [f32; ACTION_DENSE],
}

/// One decision point: a state and the actions the policy chooses among (in the order of the candidates).
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub state: StateFeatures,
    pub actions: Vec<ActionFeatures>,
}

/// An action taken earlier in the episode, with the environment-specific anchor (`page`) of the state it was
/// taken in.
#[derive(Clone, Debug, PartialEq)]
pub struct Taken {
    pub action: String,
    pub page: Option<String>,
}

/// The current state as the environment shows it, and where the episode is.
#[derive(Clone, Copy, Debug)]
pub struct StateView<'a> {
    pub observation: &'a str,
    pub anchor: &'a str,
    pub page: Option<&'a str>,
    pub step: usize,
    pub step_limit: usize,
}

/// How the policy sees one task's states (made once per task, from its instruction, and shared by the
/// group's episodes).
pub trait PolicyFeatures: Send + Sync {
    /// The actions the policy chooses among, from those the environment offers (WebShop expands its search
    /// bar into queries made from the instruction). Empty: nothing to choose, the episode is over.
    fn candidates(&self, available: &[String]) -> Vec<String>;
    /// The features of one decision; `candidates` come from [`PolicyFeatures::candidates`].
    fn describe(&self, state: StateView<'_>, history: &[Taken], candidates: &[String]) -> Decision;
    /// The rule baseline's choice among `candidates` in `state` (the evaluation's reference policy).
    fn rule_choice(&self, state: StateView<'_>, candidates: &[String]) -> usize;
}
