//! The offer of TRL settings that reproduce a run's stored advantages (issue 29): when the trainer's stored
//! advantages disagree with the recomputation, a job searches for the `scale_rewards`, reward weights and
//! aggregation that reproduce them ([`reproducing_trl_settings_lean`], the search `stats` and `convert` make), and
//! the TUI offers what it finds ("stored advantages match `--scale-rewards batch --reward-weights 1,2`:
//! apply?"); a key applies it. Plain data and the job's work: what asks for the search and applies its answer
//! is `update`'s ([`super::reconcile_update`]).
//!
//! An answer belongs to the episodes and the settings it was searched under ([`SearchKey`]): once either has
//! changed it is stale and neither shown nor applied.

use crate::advantage::reconcile::{reproducing_trl_settings_lean, trl_flags};
use crate::advantage::AdvantageSettings;
use crate::run::LeanEpisodes;

/// What a search was made under: the domain's episodes (their version) and the table's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SearchKey {
    pub episodes_version: u64,
    pub settings: AdvantageSettings,
}

/// One search, run off the UI thread.
#[derive(Clone, Debug, PartialEq)]
pub struct ReconcileRequest {
    pub key: SearchKey,
    /// The run's episodes with their stored advantages and reward functions' values: lean, their text on
    /// disk (a copy of the full records would hold the whole run's text at once).
    pub episodes: LeanEpisodes,
}

/// A search's answer: the settings that reproduce every stored advantage, if any do.
#[derive(Clone, Debug, PartialEq)]
pub struct Reconciled {
    pub key: SearchKey,
    pub found: Option<AdvantageSettings>,
}

impl ReconcileRequest {
    pub fn compute(self) -> Reconciled {
        Reconciled { key: self.key, found: reproducing_trl_settings_lean(&self.episodes, &self.key.settings) }
    }
}

/// The search asked for last and its answer once it has come.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReconcileOffer {
    pub asked: Option<SearchKey>,
    pub answer: Option<Reconciled>,
}

impl ReconcileOffer {
    /// The settings offered under `key` (the domain's now): none when nothing was found or the answer is stale.
    pub fn offered(&self, key: &SearchKey) -> Option<&AdvantageSettings> {
        self.answer.as_ref().filter(|a| a.key == *key)?.found.as_ref()
    }
}

/// "stored advantages match `--scale-rewards batch --reward-weights 1,2 --aggregation sum_then_normalize`".
pub fn offer_text(found: &AdvantageSettings) -> String {
    format!("stored advantages match `{}`", trl_flags(found))
}
