//! The estimator family: every step-level advantage estimator gigscope computes from a recorded run, behind one
//! interface, so that a view can show them side by side.
//!
//! Each estimator ([`EstimatorKind`]) says what it needs from the run ([`EstimatorKind::needs`]), takes its
//! settings from [`EstimatorSettings`] (defaults: the authors' scripts, as gigscope's GiGPO defaults are) and the
//! shared [`AdvantageSettings`] (γ, ω, the invalid-action penalty c, norm and pooling of GiGPO's episode level,
//! reward shaping), and gives per row an advantage and the terms that explain it ([`EstimatorOutput`]).
//!
//! - `gigpo`, `grpo`, `rloo`, `step`: the engine's own estimators ([`super::compute`]), wrapped (anchors as the
//!   shared settings say: exact, similarity or page).
//! - `hgpo`, `graphgpo`, `proxmo`, `soft-page`, `q-minus-v`: computed here from the engine's rows (shaped rewards,
//!   row scores s and returns R_t with their penalties), each in its own file.
//!
//! Rows are in gigscope's order: episodes in file order, steps in time order (trajectory-major); `uid` is the
//! episode group, and a group's rows are its episodes' rows in file order. verl-agent's batches are in another
//! order (and `adjust_batch` adds duplicate rows): the order-dependent parts (HGPO's histories need none,
//! similarity canonicalisation and sklearn's `max_features` ties do) follow gigscope's order.
//!
//! GiGPO's episode component, where an estimator uses it ("A_ep"), is computed with the engine's rules under the
//! estimator's norm: the pool is every row's score (or each trajectory's first, under pooling `trajectories`),
//! and a pool of one sample has baseline 0 and divisor 1.

mod context;
mod family;
mod graphgpo;
mod hgpo;
mod proxmo;
mod q_minus_v;
mod soft_page;
pub mod tfidf;

use std::borrow::Cow;

use super::engine;
use super::settings::{AdvantageSettings, Estimator};
use super::table::AdvantageTable;
use crate::run::Episode;
use context::Ctx;

pub use family::{
    EnvInputs, EstimatorError, EstimatorKind, EstimatorOutput, EstimatorSettings, Need, Term, MAX_HGPO_HISTORY,
};
pub use soft_page::{page_category, PageCategory, PAGE_SIMILARITY};

/// `kind`'s column for `episodes` (file order) under the shared settings `base` and the family's `settings`.
pub fn compute(
    kind: EstimatorKind,
    episodes: &[Episode],
    base: &AdvantageSettings,
    settings: &EstimatorSettings,
    env: &EnvInputs<'_>,
) -> Result<EstimatorOutput, EstimatorError> {
    let base = AdvantageSettings { estimator: kind.engine().unwrap_or(base.estimator), ..*base };
    let table = engine::compute(episodes, &base);
    compute_with_table(kind, episodes, &table, &base, settings, env)
}

/// `kind`'s column from `table`, which [`super::compute`] made from these `episodes` under `base` (a viewer
/// has one already): its rewards, scores and returns are read, its groups reused.
pub fn compute_with_table(
    kind: EstimatorKind,
    episodes: &[Episode],
    table: &AdvantageTable,
    base: &AdvantageSettings,
    settings: &EstimatorSettings,
    env: &EnvInputs<'_>,
) -> Result<EstimatorOutput, EstimatorError> {
    let same_shape = table.episode_count() == episodes.len()
        && episodes.iter().enumerate().all(|(e, episode)| episode.steps.len() == table.rows_of(e).len());
    if !same_shape {
        return Err(EstimatorError::TableMismatch(kind));
    }
    settings.validate(kind)?;
    let ctx = Ctx { episodes, table, base, settings, env };
    match kind {
        EstimatorKind::Gigpo | EstimatorKind::Grpo | EstimatorKind::Rloo | EstimatorKind::Step => {
            Ok(engine_column(kind, &ctx))
        }
        EstimatorKind::Hgpo => Ok(hgpo::compute(&ctx)),
        EstimatorKind::Graphgpo => Ok(graphgpo::compute(&ctx)),
        EstimatorKind::Proxmo => Ok(proxmo::compute(&ctx)),
        EstimatorKind::SoftPage => soft_page::compute(&ctx),
        EstimatorKind::QMinusV => Ok(q_minus_v::compute(&ctx)),
    }
}

/// Every estimator's column, in [`EstimatorKind::ALL`]'s order: one that cannot be computed on this run gives
/// its error and the others their columns.
pub fn compute_all(
    episodes: &[Episode],
    base: &AdvantageSettings,
    settings: &EstimatorSettings,
    env: &EnvInputs<'_>,
) -> Vec<(EstimatorKind, Result<EstimatorOutput, EstimatorError>)> {
    let table = engine::compute(episodes, base);
    EstimatorKind::ALL
        .into_iter()
        .map(|kind| (kind, compute_with_table(kind, episodes, &table, base, settings, env)))
        .collect()
}

/// The engine's estimators, read from (a recomputation of) the engine's table.
fn engine_column(kind: EstimatorKind, ctx: &Ctx<'_>) -> EstimatorOutput {
    let estimator = kind.engine().unwrap_or(Estimator::Gigpo);
    let recomputed;
    let table = if ctx.base.estimator == estimator {
        ctx.table
    } else {
        let mut t = ctx.table.clone();
        engine::recompute(&mut t, ctx.episodes, &AdvantageSettings { estimator, ..*ctx.base });
        recomputed = t;
        &recomputed
    };
    let names: &[&'static str] = match kind {
        EstimatorKind::Grpo => &["A_E", "baseline", "F"],
        EstimatorKind::Rloo => &["score", "mean", "pool"],
        _ => &["A_E", "A_S", "n_step_group"],
    };
    let mut out = ctx.output(kind, names.iter().map(|&n| Cow::Borrowed(n)).collect());
    let width = names.len();
    for e in 0..table.episode_count() {
        let group = table.episode_group_of(e);
        for (row, r) in table.rows_of(e).zip(table.episode_rows(e)) {
            out.advantages[row] = r.advantage;
            let terms = &mut out.terms[row * width..(row + 1) * width];
            match kind {
                EstimatorKind::Grpo => terms.copy_from_slice(&[r.episode_advantage, group.baseline, group.factor]),
                EstimatorKind::Rloo => terms.copy_from_slice(&[r.score, group.mean, group.pool_size as f64]),
                _ => {
                    let n = table.anchor_groups.get_size(r.step_group as usize).map_or(f64::NAN, |m| m as f64);
                    terms.copy_from_slice(&[r.episode_advantage, r.step_advantage, n]);
                }
            }
        }
    }
    out
}
