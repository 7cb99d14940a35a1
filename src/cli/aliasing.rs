//! Anchor aliasing as `gigscope truth` and `gigscope stats` print it (issue 26): how many anchor groups and rows
//! of an iteration merge more than one true state, the wrong-sign credit list, and what GiGPO would compute
//! under anchors that alias less.

use std::io::{self, Write};

use serde::Serialize;

use crate::advantage::aliasing::{aliasing, what_if, Aliasing, WhatIf};
use crate::advantage::{self, AdvantageSettings};
use crate::run::truth::TruthFile;
use crate::run::Episode;

/// Wrong-sign rows listed in the text report (the JSON has them all).
pub const LISTED: usize = 10;

/// One iteration's figures, as `stats --json` writes them.
#[derive(Clone, Debug, Serialize)]
pub struct IterationAliasing {
    pub iteration: i64,
    #[serde(flatten)]
    pub aliasing: Aliasing,
    pub what_if: Vec<WhatIf>,
}

/// The figures of `truth` over `episodes` (the run's, any iterations: the truth's are picked), under `settings`.
pub fn measure(episodes: &[Episode], settings: &AdvantageSettings, truth: &TruthFile) -> IterationAliasing {
    let iteration = truth.header.iteration;
    let episodes: Vec<Episode> = episodes.iter().filter(|e| e.iteration == iteration).cloned().collect();
    let table = advantage::compute(&episodes, settings);
    IterationAliasing {
        iteration,
        aliasing: aliasing(&episodes, &table, &truth.rows),
        what_if: what_if(&episodes, &table, settings, &truth.rows),
    }
}

fn percent(share: Option<f64>) -> String {
    share.map_or_else(|| "-".into(), |s| format!("{:.1}%", 100.0 * s))
}

fn number(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.3}"))
}

/// The text report of one iteration.
pub fn write(out: &mut impl Write, figures: &IterationAliasing) -> io::Result<()> {
    let a = &figures.aliasing;
    if a.groups.is_empty() {
        return writeln!(
            out,
            "\nanchor aliasing (iteration {}): the truth rows record no state fingerprints (measured before they \
             existed, or the environment declares none)",
            figures.iteration
        );
    }
    writeln!(
        out,
        "\nanchor aliasing (iteration {}): {} of {} measured anchor groups ({}) merge more than one true state; \
         {} of {} rows ({}) are in them",
        figures.iteration,
        a.aliased_groups,
        a.groups.len(),
        percent(a.aliased_group_share()),
        a.aliased_rows,
        a.rows,
        percent(a.aliased_row_share())
    )?;
    let mut widest: Vec<_> = a.groups.iter().filter(|g| g.states > 1).collect();
    widest.sort_by(|x, y| y.v_spread.total_cmp(&x.v_spread));
    if let Some(g) = widest.first() {
        writeln!(
            out,
            "  widest: anchor group {} of {} merges {} states over {} rows, V̂ spread {:.3}",
            g.anchor_group, g.episode_group, g.states, g.rows, g.v_spread
        )?;
    }
    writeln!(
        out,
        "wrong-sign credit: {} rows whose step advantage A_S has the opposite sign to A* beyond 2 se{}",
        a.wrong_sign.len(),
        if a.wrong_sign.len() > LISTED { format!(" (the {LISTED} largest |A_S|)") } else { String::new() }
    )?;
    for w in a.wrong_sign.iter().take(LISTED) {
        writeln!(
            out,
            "  {:<28} step {:>2}  A_S {:>+8.3}  A* {:>+8.3} ± {:.3}  {}",
            w.episode, w.step, w.step_advantage, w.a_star, w.a_star_se, w.action
        )?;
    }
    writeln!(out, "what if GiGPO anchored by:")?;
    writeln!(
        out,
        "  {:<20} {:>8} {:>8} {:>8} {:>10} {:>9} {:>6}",
        "anchor", "groups", "aliased", "rows", "wrong-sign", "spearman", "sign"
    )?;
    for w in &figures.what_if {
        writeln!(
            out,
            "  {:<20} {:>8} {:>8} {:>8} {:>10} {:>9} {:>6}",
            w.anchor.label(),
            w.anchor_groups,
            w.aliased_groups,
            w.aliased_rows,
            w.wrong_sign,
            number(w.spearman),
            number(w.sign_agreement)
        )?;
    }
    if let Some(w) = figures.what_if.iter().find(|w| w.fell_back > 0) {
        writeln!(
            out,
            "  ({}: {} rows have no state, neither recorded with the step nor in their truth row: grouped by \
             observation + step)",
            w.anchor.label(),
            w.fell_back
        )?;
    }
    Ok(())
}
