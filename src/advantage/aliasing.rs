//! Anchor aliasing (issue 26): GiGPO's step advantage assumes that one anchor is one state, and ground truth
//! says where that fails. Truth rows carry the environment's fingerprint of their full state
//! ([`TruthRow::state`]), so for every anchor-state group this counts the true states it merges and how far
//! apart their values V̂ lie; it lists the rows whose step advantage A_S points the other way from A*, beyond
//! two standard errors ("wrong-sign credit"), largest |A_S| first; and it regroups the same rows by the engine's
//! two anchor modes that alias less (observation + step, full state), to show what GiGPO would compute with
//! them ([`WhatIfAnchor`]).
//!
//! Pure functions of one iteration's episodes (file order), the advantage table computed over them and truth
//! rows (rows of other episodes are left out); no opinion on where the numbers come from.

use std::collections::HashMap;

use serde::Serialize;

use super::agreement::agreement;
use super::{group_anchors, regroup, unrecorded_states, AdvantageSettings, AdvantageTable, AnchorMode};
use crate::run::truth::TruthRow;
use crate::run::{state_hash, Episode};

/// One anchor-state group's measured members and the true states among them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AnchorStates {
    /// Index into the table's `anchor_groups`.
    pub anchor_group: u32,
    /// Its episode group's name.
    pub episode_group: String,
    /// Members with a truth row that has a fingerprint.
    pub rows: usize,
    /// Distinct fingerprints among them: more than one, and the anchor aliases.
    pub states: usize,
    /// max − min of V̂ over those states (0 for one state).
    pub v_spread: f64,
}

/// A row whose step advantage has the opposite sign to its A*, by more than two standard errors of A*.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WrongSign {
    pub episode: String,
    pub step: usize,
    pub action: String,
    /// GiGPO's step component A_S under the table's settings.
    pub step_advantage: f64,
    pub a_star: f64,
    /// √(se(Q̂)² + se(V̂)²).
    pub a_star_se: f64,
}

/// The aliasing of one iteration's measured anchor groups.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Aliasing {
    /// Every anchor group with a fingerprinted truth row, in table order.
    pub groups: Vec<AnchorStates>,
    /// Of those, the groups that merge more than one state, and the rows in them.
    pub aliased_groups: usize,
    pub rows: usize,
    pub aliased_rows: usize,
    /// Wrong-sign credit, largest |A_S| first.
    pub wrong_sign: Vec<WrongSign>,
}

impl Aliasing {
    pub fn aliased_group_share(&self) -> Option<f64> {
        share(self.aliased_groups, self.groups.len())
    }

    pub fn aliased_row_share(&self) -> Option<f64> {
        share(self.aliased_rows, self.rows)
    }
}

fn share(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// Each truth row placed in the table: (episode index, step, row), rows of other episodes left out.
fn located<'r>(episodes: &[Episode], rows: &'r [TruthRow]) -> Vec<(usize, usize, &'r TruthRow)> {
    let index: HashMap<&str, usize> = episodes.iter().enumerate().map(|(i, e)| (e.id.as_str(), i)).collect();
    rows.iter()
        .filter_map(|r| {
            let e = *index.get(r.episode.as_str())?;
            (r.step < episodes[e].steps.len()).then_some((e, r.step, r))
        })
        .collect()
}

/// The standard error of A* = Q̂ − V̂: Q̂'s and V̂'s continuations are rolled out independently, so their
/// variances add.
pub fn a_star_se(row: &TruthRow) -> f64 {
    row.q_se.hypot(row.v_se)
}

/// Whether a row whose step advantage is `step_advantage` gets wrong-sign credit: A_S and A* have opposite signs
/// and A* is more than two standard errors from 0.
pub fn is_wrong_sign(step_advantage: f64, row: &TruthRow) -> bool {
    step_advantage * row.a_star < 0.0 && row.a_star.abs() > 2.0 * a_star_se(row)
}

/// One anchor group's distinct fingerprints (with their V̂) and its fingerprinted rows.
#[derive(Default)]
struct Seen<'a> {
    states: Vec<(&'a str, f64)>,
    rows: usize,
}

/// The aliasing of `table`'s anchor groups (computed over `episodes`) as the truth `rows` show it.
pub fn aliasing(episodes: &[Episode], table: &AdvantageTable, rows: &[TruthRow]) -> Aliasing {
    let located = located(episodes, rows);
    // Each anchor group's distinct fingerprints with their V̂, and its fingerprinted rows.
    let mut by_group: HashMap<u32, Seen<'_>> = HashMap::new();
    let mut wrong_sign = Vec::new();
    for &(e, t, row) in &located {
        let computed = table.episode_rows(e)[t];
        if let Some(state) = row.state.as_deref() {
            let seen = by_group.entry(computed.step_group).or_default();
            seen.rows += 1;
            if !seen.states.iter().any(|(s, _)| *s == state) {
                seen.states.push((state, row.v));
            }
        }
        if is_wrong_sign(computed.step_advantage, row) {
            wrong_sign.push(WrongSign {
                episode: row.episode.clone(),
                step: t,
                action: episodes[e].steps[t].action.clone(),
                step_advantage: computed.step_advantage,
                a_star: row.a_star,
                a_star_se: a_star_se(row),
            });
        }
    }
    wrong_sign.sort_by(|a, b| b.step_advantage.abs().total_cmp(&a.step_advantage.abs()));
    let mut groups: Vec<AnchorStates> = by_group
        .into_iter()
        .map(|(a, Seen { states, rows })| {
            let (lo, hi) =
                states.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), s| (lo.min(s.1), hi.max(s.1)));
            let episode_group = table.anchor_episode_group(a as usize) as usize;
            AnchorStates {
                anchor_group: a,
                episode_group: table.episode_groups[episode_group].name.to_string(),
                rows,
                states: states.len(),
                v_spread: hi - lo,
            }
        })
        .collect();
    groups.sort_by_key(|g| g.anchor_group);
    let aliased = groups.iter().filter(|g| g.states > 1);
    Aliasing {
        aliased_groups: aliased.clone().count(),
        aliased_rows: aliased.map(|g| g.rows).sum(),
        rows: groups.iter().map(|g| g.rows).sum(),
        groups,
        wrong_sign,
    }
}

/// An anchor to regroup an iteration by, for the what-if.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WhatIfAnchor {
    /// The table's own anchors (the run's anchor mode).
    AsComputed,
    /// [`AnchorMode::ObservationStep`]: the same observation with other steps left is another state.
    ObservationStep,
    /// [`AnchorMode::State`]: the environment's full state, as the steps record it or, for steps recorded
    /// without one, as their truth rows' fingerprints give it; a row with neither keeps (anchor, step).
    State,
}

impl WhatIfAnchor {
    pub const ALL: [WhatIfAnchor; 3] = [WhatIfAnchor::AsComputed, WhatIfAnchor::ObservationStep, WhatIfAnchor::State];

    pub fn label(self) -> &'static str {
        match self {
            WhatIfAnchor::AsComputed => "as computed",
            WhatIfAnchor::ObservationStep => "observation + step",
            WhatIfAnchor::State => "full state",
        }
    }

    /// The engine's anchor mode this is, for a table computed under `computed`.
    pub fn mode(self, computed: AnchorMode) -> AnchorMode {
        match self {
            WhatIfAnchor::AsComputed => computed,
            WhatIfAnchor::ObservationStep => AnchorMode::ObservationStep,
            WhatIfAnchor::State => AnchorMode::State,
        }
    }
}

/// What GiGPO computes on the measured rows under one anchor.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WhatIf {
    pub anchor: WhatIfAnchor,
    /// Anchor groups of the whole iteration under this anchor.
    pub anchor_groups: usize,
    /// Rows of the iteration keyed by (anchor, step) for want of a state (full state only; 0 for the others).
    pub fell_back: usize,
    /// The aliasing figures the truth rows show under it.
    pub aliased_groups: usize,
    pub aliased_rows: usize,
    pub wrong_sign: usize,
    /// Agreement of GiGPO's advantage (the estimator's final advantage) with A* over the measured rows.
    pub spearman: Option<f64>,
    pub sign_agreement: Option<f64>,
}

/// `table` (computed over `episodes` under `settings`, whose anchor mode made its groups) regrouped by each
/// what-if anchor with the engine's own anchor modes and recomputed, against the truth `rows`.
pub fn what_if(
    episodes: &[Episode],
    table: &AdvantageTable,
    settings: &AdvantageSettings,
    rows: &[TruthRow],
) -> Vec<WhatIf> {
    let located = located(episodes, rows);
    let states = with_truth_states(episodes, &located);
    let truth: Vec<f64> = located.iter().map(|l| l.2.a_star).collect();
    WhatIfAnchor::ALL
        .into_iter()
        .map(|anchor| {
            let mode = anchor.mode(settings.anchor);
            let regrouped = match anchor {
                WhatIfAnchor::AsComputed => table.clone(),
                _ => {
                    let mut regrouped = table.clone();
                    regroup(&mut regrouped, &states, &group_anchors(&states, mode), settings);
                    regrouped
                }
            };
            let figures = aliasing(episodes, &regrouped, rows);
            let estimate: Vec<f64> = located.iter().map(|&(e, t, _)| regrouped.episode_rows(e)[t].advantage).collect();
            let agreed = agreement(&estimate, &truth);
            WhatIf {
                anchor,
                anchor_groups: regrouped.anchor_groups.len(),
                fell_back: if mode == AnchorMode::State { unrecorded_states(&states) } else { 0 },
                aliased_groups: figures.aliased_groups,
                aliased_rows: figures.aliased_rows,
                wrong_sign: figures.wrong_sign.len(),
                spearman: agreed.spearman,
                sign_agreement: agreed.sign_agreement,
            }
        })
        .collect()
}

/// `episodes` with the state of every step that records none taken from its truth row's fingerprint, where it
/// has one (runs recorded before steps recorded their state).
fn with_truth_states(episodes: &[Episode], located: &[(usize, usize, &TruthRow)]) -> Vec<Episode> {
    let mut filled = episodes.to_vec();
    for &(e, t, row) in located {
        let step = &mut filled[e].steps[t];
        if step.state.is_none() {
            step.state = row.state.as_deref().map(state_hash);
        }
    }
    filled
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advantage::compute;
    use crate::run::Step;

    /// Two trajectories meeting the item page: a at steps 1 (no option) and 2 (an option selected, hidden from
    /// the text), b at step 2 (no option). Rows: a0 search, a1 item, a2 item, b0 search, b1 results, b2 item.
    fn run() -> (Vec<Episode>, Vec<&'static str>) {
        let states = vec!["search@0", "item none@1", "item medium@2", "search@0", "results@1", "item none@2"];
        let steps = |pages: [&str; 3], rewards: [f64; 3]| {
            pages.iter().zip(rewards).map(|(p, r)| Step::new(*p, "act", r)).collect::<Vec<_>>()
        };
        let a = Episode::new("a", "task", steps(["search", "item", "item"], [0.0, 0.0, 1.0]));
        let b = Episode::new("b", "task", steps(["search", "results", "item"], [0.0, 0.0, 0.0]));
        (vec![a, b], states)
    }

    fn truth(states: &[&str], fingerprinted: bool) -> Vec<TruthRow> {
        states
            .iter()
            .enumerate()
            .map(|(i, state)| TruthRow {
                run: "r".into(),
                episode: if i < 3 { "a" } else { "b" }.into(),
                step: i % 3,
                group: "task".into(),
                q: 0.0,
                v: if state.contains("medium") { 1.0 } else { 0.0 },
                a_star: 0.0,
                q_se: 0.0,
                v_se: 0.0,
                k: 2,
                state: fingerprinted.then(|| state.to_string()),
            })
            .collect()
    }

    fn figures(w: &[WhatIf]) -> Vec<(WhatIfAnchor, usize, usize, usize, usize)> {
        w.iter().map(|w| (w.anchor, w.anchor_groups, w.fell_back, w.aliased_groups, w.aliased_rows)).collect()
    }

    #[test]
    fn the_what_if_groups_with_the_engines_modes_by_the_truth_rows_fingerprints() {
        let (episodes, states) = run();
        let settings = AdvantageSettings::default();
        let table = compute(&episodes, &settings);
        let rows = truth(&states, true);
        use WhatIfAnchor::*;
        // Exact: the item page merges three states; observation + step: two (a2 and b2); full state: none.
        let expected = vec![(AsComputed, 3, 0, 1, 3), (ObservationStep, 4, 0, 1, 2), (State, 5, 0, 0, 0)];
        assert_eq!(figures(&what_if(&episodes, &table, &settings, &rows)), expected);

        // The same states recorded with the steps instead: the same groups, and the engine's mode is the what-if's.
        let mut recorded = episodes.clone();
        for (step, state) in recorded.iter_mut().flat_map(|e| &mut e.steps).zip(&states) {
            step.state = Some(state_hash(state));
        }
        let by_state = compute(&recorded, &AdvantageSettings { anchor: AnchorMode::State, ..settings });
        let what_if_state = what_if(&recorded, &table, &settings, &truth(&states, false));
        assert_eq!(what_if_state[2].anchor_groups, by_state.anchor_groups.len());
        assert_eq!(what_if_state[2].fell_back, 0);

        // Neither: full state falls back to observation + step for every row, and says so.
        let bare = what_if(&episodes, &table, &settings, &truth(&states, false));
        assert_eq!((bare[2].anchor_groups, bare[2].fell_back), (4, 6));
    }
}
