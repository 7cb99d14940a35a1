//! The credit audit (issue 26 item 4): what an iteration's update reinforces, behaviour by behaviour.
//!
//! Steps are grouped by behaviour ([`Behaviours`]): by default the action's verb and target, with the targets
//! that name one thing of many collapsed (`search[…]` is `search[*]`, a product click on a results page is
//! `click[product]`, an option value on an item page is `click[option]`; WebShop's buttons keep their names:
//! `click[buy now]`, `click[next >]`, …) and any other action (a Sokoban move) is itself, lower-cased; or by a
//! user's regex, whose first capture group (else its whole match) is the behaviour and which puts the actions it
//! does not match in [`UNMATCHED`]; or by trajectory queries as the search view accepts them ([`Matched`]: the
//! steps each query matched, which the caller asks the search index for): a step is the behaviour of the first
//! query that matched it, named by the query, else [`UNMATCHED`]. Actions are taken as given: the caller extracts
//! them from responses first ([`crate::text::action`]).
//!
//! Per behaviour: its row count, its advantage mass Σ A over its rows, its token mass Σ A × (masked tokens)
//! over the rows whose token records are known (absent where none is), and the change of its mass from the
//! previous iteration (a behaviour seen only there is listed with no rows, its mass gone). The masses of an
//! iteration sum to its total A; the list is ordered from the most pushed up to the most pushed down.

use std::collections::{BTreeMap, BTreeSet};

use regex::Regex;
use serde::Serialize;

use super::table::RowRef;

/// The behaviour of actions a user's regex does not match.
pub const UNMATCHED: &str = "(unmatched)";

/// WebShop's buttons: clicks on them keep their target.
const BUTTONS: [&str; 8] =
    ["buy now", "next >", "< prev", "back to search", "description", "features", "reviews", "search"];

/// The steps a trajectory query matched.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Matched {
    /// The query as the user wrote it: the behaviour's name.
    pub query: String,
    pub rows: BTreeSet<RowRef>,
}

/// How steps are grouped into behaviours.
#[derive(Clone, Debug, Default)]
pub enum Behaviours<'a> {
    /// Verb and target, collapsed as the module doc says.
    #[default]
    Verbs,
    /// A user's regex.
    Pattern(Regex),
    /// Trajectory queries, the first that matched a step being its behaviour.
    Queries(&'a [Matched]),
}

impl Behaviours<'_> {
    /// The behaviour of the step at `at`, whose action is `action`, taken on a page of type `page` where the run
    /// records one.
    pub fn of(&self, at: RowRef, action: &str, page: Option<&str>) -> String {
        match self {
            Behaviours::Verbs => verb_and_target(action, page),
            Behaviours::Pattern(re) => re
                .captures(action)
                .and_then(|caps| caps.get(1).or_else(|| caps.get(0)))
                .map_or_else(|| UNMATCHED.to_owned(), |m| m.as_str().to_owned()),
            Behaviours::Queries(queries) => {
                queries.iter().find(|q| q.rows.contains(&at)).map_or_else(|| UNMATCHED.to_owned(), |q| q.query.clone())
            }
        }
    }
}

fn verb_and_target(action: &str, page: Option<&str>) -> String {
    let action = action.trim();
    let Some((verb, target)) = action.strip_suffix(']').and_then(|a| a.split_once('[')) else {
        return action.to_lowercase();
    };
    let (verb, target) = (verb.trim().to_lowercase(), target.trim().to_lowercase());
    let target = match verb.as_str() {
        "search" => "*",
        "click" if BUTTONS.contains(&target.as_str()) => target.as_str(),
        "click" if page == Some("results") || looks_like_product(&target) => "product",
        "click" => "option",
        _ => target.as_str(),
    };
    format!("{verb}[{target}]")
}

/// WebShop's product ids (ASINs as the pages show them: ten lower-case letters and digits beginning `b0`).
fn looks_like_product(target: &str) -> bool {
    target.len() == 10
        && target.starts_with("b0")
        && target.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
}

/// One step of the audited iteration.
#[derive(Clone, Debug, PartialEq)]
pub struct AuditRow {
    pub at: RowRef,
    /// Its behaviour ([`Behaviours::of`]).
    pub behaviour: String,
    /// Its final advantage A.
    pub advantage: f64,
    /// Its response's tokens under the loss mask, where its token record is known.
    pub masked_tokens: Option<u32>,
}

/// One behaviour's credit in an iteration.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BehaviourCredit {
    pub behaviour: String,
    /// Rows of the iteration with this behaviour.
    pub count: usize,
    /// Σ A over them.
    pub mass: f64,
    /// Σ A × masked tokens over those with a token record; `None` where none has one.
    pub token_mass: Option<f64>,
    /// Masked tokens counted in `token_mass`.
    pub tokens: u64,
    /// Its mass in the previous iteration (0 where absent there); `None` with no previous iteration.
    pub previous_mass: Option<f64>,
    /// `mass − previous_mass`.
    pub change: Option<f64>,
    /// Its rows, in the order given.
    #[serde(skip)]
    pub rows: Vec<RowRef>,
}

/// An iteration's audit.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Audit {
    /// Σ A over the iteration's rows.
    pub total: f64,
    pub rows: usize,
    /// Every behaviour, from the most pushed up (largest mass) to the most pushed down; equal masses by name.
    pub behaviours: Vec<BehaviourCredit>,
}

impl Audit {
    /// Up to `n` behaviours with positive mass, the largest first.
    pub fn pushed_up(&self, n: usize) -> impl Iterator<Item = &BehaviourCredit> {
        self.behaviours.iter().filter(|b| b.mass > 0.0).take(n)
    }

    /// Up to `n` behaviours with negative mass, the most negative first.
    pub fn pushed_down(&self, n: usize) -> impl Iterator<Item = &BehaviourCredit> {
        self.behaviours.iter().rev().filter(|b| b.mass < 0.0).take(n)
    }
}

/// The audit of `rows` (one iteration's), against `previous` (the previous iteration's rows, if there is one).
pub fn audit(rows: &[AuditRow], previous: Option<&[AuditRow]>) -> Audit {
    let mut by: BTreeMap<&str, BehaviourCredit> = BTreeMap::new();
    let empty = |behaviour: &str| BehaviourCredit {
        behaviour: behaviour.to_owned(),
        count: 0,
        mass: 0.0,
        token_mass: None,
        tokens: 0,
        previous_mass: previous.map(|_| 0.0),
        change: None,
        rows: Vec::new(),
    };
    for row in rows {
        let credit = by.entry(&row.behaviour).or_insert_with(|| empty(&row.behaviour));
        credit.count += 1;
        credit.mass += row.advantage;
        credit.rows.push(row.at);
        if let Some(tokens) = row.masked_tokens {
            *credit.token_mass.get_or_insert(0.0) += row.advantage * f64::from(tokens);
            credit.tokens += u64::from(tokens);
        }
    }
    for row in previous.unwrap_or_default() {
        let credit = by.entry(&row.behaviour).or_insert_with(|| empty(&row.behaviour));
        *credit.previous_mass.get_or_insert(0.0) += row.advantage;
    }
    let mut behaviours: Vec<BehaviourCredit> = by
        .into_values()
        .map(|mut b| {
            b.change = b.previous_mass.map(|p| b.mass - p);
            b
        })
        .collect();
    // Stable: equal masses stay in name order.
    behaviours.sort_by(|x, y| y.mass.total_cmp(&x.mass));
    Audit { total: rows.iter().map(|r| r.advantage).sum(), rows: rows.len(), behaviours }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    const AT: RowRef = RowRef { episode: 0, step: 0 };

    fn row(step: u32, behaviour: &str, advantage: f64, masked_tokens: Option<u32>) -> AuditRow {
        AuditRow { at: RowRef { episode: 0, step }, behaviour: behaviour.into(), advantage, masked_tokens }
    }

    #[test]
    fn verbs_and_targets_collapse_the_targets_that_name_one_of_many() {
        let b = Behaviours::Verbs;
        assert_eq!(b.of(AT, "search[red shoes size 8]", Some("search")), "search[*]");
        assert_eq!(b.of(AT, "click[Buy Now]", Some("item")), "click[buy now]");
        assert_eq!(b.of(AT, "click[next >]", Some("results")), "click[next >]");
        assert_eq!(b.of(AT, "click[b07xyz1234]", None), "click[product]");
        assert_eq!(b.of(AT, "click[some title]", Some("results")), "click[product]");
        assert_eq!(b.of(AT, "click[medium]", Some("item")), "click[option]");
        assert_eq!(b.of(AT, "click[medium]", None), "click[option]");
        assert_eq!(b.of(AT, " Up ", None), "up");
        assert_eq!(b.of(AT, "open[door 2]", None), "open[door 2]");
    }

    #[test]
    fn a_pattern_groups_by_its_first_group_and_names_what_it_misses() {
        let b = Behaviours::Pattern(Regex::new(r"^click\[(.*)\]$").unwrap());
        assert_eq!(b.of(AT, "click[medium]", Some("item")), "medium");
        assert_eq!(b.of(AT, "search[x]", None), UNMATCHED);
        let whole = Behaviours::Pattern(Regex::new(r"search").unwrap());
        assert_eq!(whole.of(AT, "search[x]", None), "search");
    }

    #[test]
    fn queries_name_the_steps_they_matched_the_first_one_winning() {
        let at = |episode, step| RowRef { episode, step };
        let queries = [
            Matched { query: "action:\"buy now\"".into(), rows: [at(0, 2), at(1, 1)].into() },
            Matched { query: "page:item".into(), rows: [at(0, 2), at(1, 0)].into() },
        ];
        let b = Behaviours::Queries(&queries);
        // The action does not decide: the query's match does.
        assert_eq!(b.of(at(0, 2), "click[medium]", Some("item")), "action:\"buy now\"");
        assert_eq!(b.of(at(1, 0), "click[buy now]", Some("item")), "page:item");
        assert_eq!(b.of(at(1, 1), "x", None), "action:\"buy now\"");
        assert_eq!(b.of(at(2, 0), "click[buy now]", Some("item")), UNMATCHED);
        assert_eq!(Behaviours::Queries(&[]).of(at(0, 0), "up", None), UNMATCHED);
    }

    #[test]
    fn masses_counts_tokens_and_changes() {
        let now = [
            row(0, "search[*]", 0.5, Some(4)),
            row(1, "click[buy now]", 1.0, Some(2)),
            row(2, "click[option]", -2.0, None),
            row(3, "search[*]", 0.25, None),
        ];
        let before = [row(0, "search[*]", 1.0, None), row(1, "click[back to search]", -1.0, None)];
        let a = audit(&now, Some(&before));
        assert_eq!(a.total, -0.25);
        let got: Vec<_> = a
            .behaviours
            .iter()
            .map(|b| (b.behaviour.as_str(), b.count, b.mass, b.token_mass, b.tokens, b.previous_mass, b.change))
            .collect();
        assert_eq!(
            got,
            [
                ("click[buy now]", 1, 1.0, Some(2.0), 2, Some(0.0), Some(1.0)),
                ("search[*]", 2, 0.75, Some(2.0), 4, Some(1.0), Some(-0.25)),
                ("click[back to search]", 0, 0.0, None, 0, Some(-1.0), Some(1.0)),
                ("click[option]", 1, -2.0, None, 0, Some(0.0), Some(-2.0)),
            ]
        );
        assert_eq!(a.behaviours[1].rows, [RowRef { episode: 0, step: 0 }, RowRef { episode: 0, step: 3 }]);
        let up: Vec<_> = a.pushed_up(5).map(|b| b.behaviour.as_str()).collect();
        let down: Vec<_> = a.pushed_down(5).map(|b| b.behaviour.as_str()).collect();
        assert_eq!((up, down), (vec!["click[buy now]", "search[*]"], vec!["click[option]"]));
        let first = audit(&now, None);
        assert!(first.behaviours.iter().all(|b| b.previous_mass.is_none() && b.change.is_none()));
    }

    proptest! {
        /// The masses share out the iteration's total A, and the counts its rows, whatever the grouping.
        #[test]
        fn masses_sum_to_the_total(
            rows in prop::collection::vec((0usize..5, -10.0f64..10.0, prop::option::of(0u32..50)), 0..60),
            previous in prop::collection::vec((0usize..7, -10.0f64..10.0), 0..30),
        ) {
            let names = ["a", "b", "c", "d", "e", "f", "g"];
            let rows: Vec<AuditRow> =
                rows.iter().enumerate().map(|(i, &(b, a, t))| row(i as u32, names[b], a, t)).collect();
            let previous: Vec<AuditRow> =
                previous.iter().enumerate().map(|(i, &(b, a))| row(i as u32, names[b], a, None)).collect();
            let audit = audit(&rows, Some(&previous));
            let mass: f64 = audit.behaviours.iter().map(|b| b.mass).sum();
            let scale = 1.0 + rows.iter().map(|r| r.advantage.abs()).sum::<f64>();
            prop_assert!((mass - audit.total).abs() <= 1e-12 * scale, "{} vs {}", mass, audit.total);
            prop_assert_eq!(audit.behaviours.iter().map(|b| b.count).sum::<usize>(), rows.len());
            let before: f64 = audit.behaviours.iter().filter_map(|b| b.previous_mass).sum();
            let total_before: f64 = previous.iter().map(|r| r.advantage).sum();
            prop_assert!((before - total_before).abs() <= 1e-12 * (1.0 + previous.iter().map(|r| r.advantage.abs()).sum::<f64>()));
            prop_assert!(audit.behaviours.windows(2).all(|w| w[0].mass >= w[1].mass));
        }
    }
}
