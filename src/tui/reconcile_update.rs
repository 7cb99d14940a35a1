//! `update`'s side of the offer of settings that reproduce the stored advantages ([`super::reconcile_offer`]):
//! asking for the search when the table's stored and recomputed advantages disagree under TRL's computation,
//! taking its answer in, and applying the settings offered (`y`).

use super::msg::Effect;
use super::reconcile_offer::{offer_text, ReconcileRequest, Reconciled, SearchKey};
use super::state::{GroupingRequest, State};
use super::ui::widgets::offer_line;
use crate::advantage::stats::MISMATCH_TOLERANCE;

/// The search to run, once per episodes and settings: when the table is computed with TRL's A_E (the search
/// changes only TRL's settings), the run has been read (its first read over), and stored and recomputed
/// advantages disagree.
pub fn wanted(state: &mut State) -> Option<Effect> {
    let key = state.reconcile_key();
    let disagree = state.domain.derived.max_trainer_diff.is_some_and(|d| d > MISMATCH_TOLERANCE);
    // Not while the run is first read: each merged part is new episodes, and the request copies every record
    // (a TRL log of 144,000 rows, read in parts, copied its whole run for each of hundreds of parts).
    let live = &state.domain.live;
    let ready = live.loading.is_none() && !live.first_read && !state.domain.episodes.is_empty();
    if key.settings.scale_rewards.is_none() || !disagree || !ready || state.jobs.reconcile.asked == Some(key) {
        return None;
    }
    state.jobs.reconcile.asked = Some(key);
    Some(Effect::Reconcile(key))
}

impl State {
    /// The search for `key` ([`Effect::Reconcile`]), made as its job starts: each episode's stored advantages
    /// and reward functions' values, which the lean episodes keep (their text stays on disk), a snapshot of
    /// them for the job (sharing their columns until the viewer appends), not held while the effect waits.
    pub fn reconcile_request(&self, key: SearchKey) -> ReconcileRequest {
        ReconcileRequest { key, episodes: self.domain.episodes.clone() }
    }
}

/// A search's answer: kept, and said in the status line when it offers something under today's table.
pub fn arrived(state: &mut State, answer: Reconciled) -> bool {
    let now = state.reconcile_key();
    let shown = answer.key == now && answer.found.is_some();
    state.jobs.reconcile.answer = Some(answer);
    if shown {
        state.ui.message = offer_line(state);
    }
    shown
}

/// `y`: put the settings offered in place (the table is computed again with them).
pub fn apply(state: &mut State) -> Option<GroupingRequest> {
    let Some(found) = state.offered_settings().copied() else {
        state.ui.message = Some(
            "nothing to apply: the settings that reproduce the trainer's stored advantages are offered when \
             they disagree with the recomputation and a search finds some"
                .into(),
        );
        return None;
    };
    state.domain.settings = found;
    let request = state.apply_settings();
    state.ui.message = Some(format!("applied: {} (R puts the run's recorded settings back)", offer_text(&found)));
    request
}
