//! One anchor state across training (issue 26 item 3): per iteration, how often the state is visited, which
//! actions were taken there, the advantages those rows received and their A* where the truth was measured.
//!
//! The caller finds the visits (the rows whose anchor key is the state's, actions already extracted from the
//! responses, [`crate::text::action`]); [`timeline`] summarises them iteration by iteration, in iteration
//! order, each action's figures as means over its rows (A* over the rows that have one).

use std::collections::BTreeMap;

use serde::Serialize;

/// One row at the state.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StateVisit {
    pub iteration: i64,
    pub episode: String,
    pub step: u32,
    /// The action taken, as extracted.
    pub action: String,
    /// Its final advantage A and GiGPO's step advantage A_S.
    pub advantage: f64,
    pub step_advantage: f64,
    /// A* = Q̂ − V̂ of the row where its iteration's truth measured it.
    pub a_star: Option<f64>,
}

/// One action's figures at the state in one iteration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ActionAtState {
    pub action: String,
    pub count: usize,
    /// `count` over the iteration's visits.
    pub share: f64,
    pub mean_advantage: f64,
    pub mean_step_advantage: f64,
    /// Mean A* over the rows measured; `None` where none was.
    pub mean_a_star: Option<f64>,
    pub measured: usize,
}

/// The state in one iteration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IterationAtState {
    pub iteration: i64,
    pub visits: usize,
    /// Distinct episodes that visited it.
    pub episodes: usize,
    /// The actions taken, the most taken first (equal counts by action).
    pub actions: Vec<ActionAtState>,
    pub mean_advantage: f64,
    /// Rows with an A*.
    pub measured: usize,
}

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (n, sum) = values.fold((0usize, 0.0), |(n, s), v| (n + 1, s + v));
    (n > 0).then(|| sum / n as f64)
}

/// The timeline of `visits` (any order): one entry per iteration with a visit, in iteration order.
pub fn timeline(visits: &[StateVisit]) -> Vec<IterationAtState> {
    let mut by_iteration: BTreeMap<i64, Vec<&StateVisit>> = BTreeMap::new();
    for v in visits {
        by_iteration.entry(v.iteration).or_default().push(v);
    }
    by_iteration
        .into_iter()
        .map(|(iteration, rows)| {
            let mut by_action: BTreeMap<&str, Vec<&StateVisit>> = BTreeMap::new();
            for v in &rows {
                by_action.entry(v.action.as_str()).or_default().push(v);
            }
            let mut actions: Vec<ActionAtState> = by_action
                .into_iter()
                .map(|(action, at)| ActionAtState {
                    action: action.to_owned(),
                    count: at.len(),
                    share: at.len() as f64 / rows.len() as f64,
                    mean_advantage: mean(at.iter().map(|v| v.advantage)).unwrap_or(0.0),
                    mean_step_advantage: mean(at.iter().map(|v| v.step_advantage)).unwrap_or(0.0),
                    mean_a_star: mean(at.iter().filter_map(|v| v.a_star)),
                    measured: at.iter().filter(|v| v.a_star.is_some()).count(),
                })
                .collect();
            actions.sort_by_key(|a| std::cmp::Reverse(a.count));
            let mut episodes: Vec<&str> = rows.iter().map(|v| v.episode.as_str()).collect();
            episodes.sort_unstable();
            episodes.dedup();
            IterationAtState {
                iteration,
                visits: rows.len(),
                episodes: episodes.len(),
                mean_advantage: mean(rows.iter().map(|v| v.advantage)).unwrap_or(0.0),
                measured: rows.iter().filter(|v| v.a_star.is_some()).count(),
                actions,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn visit(iteration: i64, episode: &str, action: &str, advantage: f64, a_star: Option<f64>) -> StateVisit {
        StateVisit {
            iteration,
            episode: episode.into(),
            step: 0,
            action: action.into(),
            advantage,
            step_advantage: advantage / 2.0,
            a_star,
        }
    }

    #[test]
    fn iterations_in_order_actions_by_count_means_over_their_rows() {
        let visits = [
            visit(2, "x", "left", 1.0, None),
            visit(1, "a", "up", 1.0, Some(0.5)),
            visit(1, "a", "down", -1.0, None),
            visit(1, "b", "up", 3.0, None),
        ];
        let t = timeline(&visits);
        assert_eq!(
            t.iter().map(|i| (i.iteration, i.visits, i.episodes, i.measured)).collect::<Vec<_>>(),
            [(1, 3, 2, 1), (2, 1, 1, 0)]
        );
        assert_eq!(t[0].mean_advantage, 1.0);
        let up = &t[0].actions[0];
        assert_eq!(
            (
                up.action.as_str(),
                up.count,
                up.share,
                up.mean_advantage,
                up.mean_step_advantage,
                up.mean_a_star,
                up.measured
            ),
            ("up", 2, 2.0 / 3.0, 2.0, 1.0, Some(0.5), 1)
        );
        assert_eq!((t[0].actions[1].action.as_str(), t[0].actions[1].mean_a_star), ("down", None));
        assert!(timeline(&[]).is_empty());
    }
}
