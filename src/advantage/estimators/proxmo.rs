//! ProxMO (`proxmo/core_proxmo.py` of `GithubX-F/ProxMO-RL`, arXiv 2602.19225), in the `soft_grouping` form
//! its scripts use, and the soft proximity baseline that `soft-page` shares.
//!
//! - Episode level: A_ep = E − mean(E) over the episode group's pool (soft grouping forces `mean_norm`; GiGPO's
//!   pool and single-sample rule), times the PSC factor when `proxmo_psc` is on: with p = clamp(mean, 0, 1),
//!   β = `psc_target_range` / (σ(1) − 0.5), w = 1 + β·(σ((1 − p)^α) − 0.5) for E > 0.5, else
//!   1 + β·(σ(−p^α) − 0.5). E is the row score (R − c·[invalid]).
//! - Step level: A_step = R_t − Σ_j W_ij·R_j over the rows j of the same episode group (i included), with
//!   W_ij = softmax_j(C_ij / 0.1) and C_ij the cosine similarity of the rows' anchors' TF-IDF vectors
//!   ([`super::tfidf`], `max_features` 1024, fitted on the whole batch). No std normalisation. When the batch
//!   has no token at all (sklearn raises), A_step = 0 for its rows.
//! - A = A_ep + ω·A_step.
//!
//! The batch is the training iteration: the episode groups whose first episode has the same `iteration` (IDF is
//! fitted over all their rows, every task).

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::context::{Ctx, GroupView};
use super::family::{EstimatorKind, EstimatorOutput};
use super::tfidf::{self, PROXMO_MAX_FEATURES};
use crate::advantage::settings::Norm;

/// ProxMO's hard-coded softmax temperature.
pub const SOFT_TEMPERATURE: f64 = 0.1;

pub(super) const TERMS: [&str; 7] = ["A_ep", "A_step", "psc_w", "p", "S", "baseline", "w_self"];

pub(super) fn compute(ctx: &Ctx<'_>) -> EstimatorOutput {
    let names: Vec<Cow<'static, str>> = TERMS.iter().map(|&n| Cow::Borrowed(n)).collect();
    let mut out = ctx.output(EstimatorKind::Proxmo, names);
    let mut batches: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for g in 0..ctx.table.episode_groups.len() {
        let iteration = ctx.table.group_episodes(g).first().map_or(0, |e| ctx.episodes[e as usize].iteration);
        batches.entry(iteration).or_default().push(g);
    }
    for groups in batches.values() {
        // The batch's documents, group by group; `offset[k]` is where group `groups[k]` starts.
        let mut docs: Vec<&str> = Vec::new();
        let mut offset: Vec<usize> = Vec::with_capacity(groups.len());
        for &g in groups {
            offset.push(docs.len());
            for e in ctx.table.group_episodes(g).iter() {
                docs.extend(ctx.episodes[e as usize].steps.iter().map(|s| s.anchor_key()));
            }
        }
        let vectors = tfidf::fit_transform(&docs, Some(PROXMO_MAX_FEATURES)).ok().map(|mut t| {
            // ProxMO normalises the vectors again before taking dot products.
            for row in &mut t.rows {
                tfidf::l2_normalize(row);
            }
            t.rows
        });
        let start_of = |g: usize| groups.binary_search(&g).ok().map(|k| offset[k]);
        ctx.fill_groups(&mut out, groups, |g, view, adv, terms| {
            let step = match (&vectors, start_of(g)) {
                (Some(vectors), Some(start)) => {
                    let rows = &vectors[start..start + view.rows.len()];
                    Some(soft_baseline(view, |i, j| tfidf::dot(&rows[i], &rows[j])))
                }
                _ => None,
            };
            finish(ctx, view, step.as_ref(), adv, terms, TERMS.len());
        });
    }
    out
}

/// The soft baseline of a group's rows under `kernel` (similarity of rows i and j): for each row, Σ_j W_ij·R_j
/// and W_ii.
pub(super) fn soft_baseline(view: &GroupView<'_>, kernel: impl Fn(usize, usize) -> f64) -> Vec<(f64, f64)> {
    let n = view.rows.len();
    let returns: Vec<f64> = view.values.iter().map(|v| v.ret).collect();
    let mut logits = vec![0.0; n];
    (0..n)
        .map(|i| {
            for (j, l) in logits.iter_mut().enumerate() {
                *l = kernel(i, j) / SOFT_TEMPERATURE;
            }
            let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let mut sum = 0.0;
            for l in logits.iter_mut() {
                *l = (*l - max).exp();
                sum += *l;
            }
            let baseline = logits.iter().zip(&returns).map(|(w, r)| w / sum * r).sum::<f64>();
            (baseline, logits[i] / sum)
        })
        .collect()
}

/// Logistic sigmoid.
fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// The PSC factor of a row with score `e` in a group of mean score `mean`.
pub(super) fn psc_weight(e: f64, mean: f64, alpha: f64, target_range: f64) -> (f64, f64) {
    let p = mean.clamp(0.0, 1.0);
    let beta = target_range / (sigmoid(1.0) - 0.5);
    let w = if e > 0.5 {
        1.0 + beta * (sigmoid((1.0 - p).powf(alpha)) - 0.5)
    } else {
        1.0 + beta * (sigmoid(-p.powf(alpha)) - 0.5)
    };
    (w, p)
}

/// A = A_ep·w_psc + ω·A_step for a group whose soft baselines are `step` (None: A_step = 0), with the terms
/// [`TERMS`] first in each row's `width` columns.
pub(super) fn finish(
    ctx: &Ctx<'_>,
    view: &GroupView<'_>,
    step: Option<&Vec<(f64, f64)>>,
    adv: &mut [f64],
    terms: &mut [f64],
    width: usize,
) {
    let s = ctx.settings;
    let (episode, mean) = ctx.episode_level(view, Norm::MeanNorm);
    for (i, row) in view.values.iter().enumerate() {
        let e = row.score;
        let (w, p) = if s.proxmo_psc { psc_weight(e, mean, s.psc_alpha, s.psc_target_range) } else { (1.0, f64::NAN) };
        let a_ep = episode[i] * w;
        let ret = row.ret;
        let (baseline, w_self) = step.map_or((f64::NAN, f64::NAN), |b| b[i]);
        let a_step = if step.is_some() { ret - baseline } else { 0.0 };
        adv[i] = a_ep + ctx.base.omega * a_step;
        let psc = if s.proxmo_psc { w } else { f64::NAN };
        terms[i * width..i * width + TERMS.len()].copy_from_slice(&[a_ep, a_step, psc, p, ret, baseline, w_self]);
    }
}
