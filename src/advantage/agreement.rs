//! How closely an estimator's advantages agree with Monte-Carlo ground truth A* (`gigscope truth`): rank
//! correlation, sign agreement, and the error left after the best scale fit. Estimators differ in scale (GRPO's
//! advantages are returns minus a mean, GraphGPO's are built from 10·γ^d, some are divided by a standard
//! deviation), so the error is measured after the least-squares scale c that maps the estimate onto A*.
//!
//! Pure functions of two equally long slices (`estimate[i]` and `truth[i]` belong to the same step row), with
//! no opinion on where the numbers come from. [`agreements`] applies them to every estimator of the family.

use std::collections::HashMap;

use super::estimators::{self, EnvInputs, EstimatorKind, EstimatorSettings};
use super::settings::AdvantageSettings;
use crate::run::truth::{TruthAgreement, TruthRow};
use crate::run::Episode;

/// Agreement of one estimate with the truth over `rows` step rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Agreement {
    pub rows: usize,
    /// Spearman's ρ; `None` with fewer than two rows or when either side is constant (ρ is undefined).
    pub spearman: Option<f64>,
    /// Share of rows whose signs (−, 0, +) agree; `None` without rows.
    pub sign_agreement: Option<f64>,
    /// The least-squares scale c (0 when the estimate is all zeros) and the RMSE of c·estimate − truth;
    /// `None` without rows.
    pub scale: Option<f64>,
    pub rmse: Option<f64>,
}

/// Ranks 1..=n of `values`, ties given the average of the ranks they span (what `scipy.stats.rankdata`
/// calls `average`). NaN is not expected; it sorts last.
pub fn average_ranks(values: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[a].total_cmp(&values[b]));
    let mut ranks = vec![0.0; values.len()];
    let mut start = 0;
    while start < order.len() {
        let mut end = start + 1;
        while end < order.len() && values[order[end]] == values[order[start]] {
            end += 1;
        }
        // Positions start..end hold ranks start+1 ..= end: their mean.
        let rank = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = rank;
        }
        start = end;
    }
    ranks
}

/// Pearson's correlation; `None` with fewer than two values or when either side has no variance.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len().min(y.len());
    if n < 2 {
        return None;
    }
    let mean = |v: &[f64]| v[..n].iter().sum::<f64>() / n as f64;
    let (mx, my) = (mean(x), mean(y));
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in x[..n].iter().zip(&y[..n]) {
        let (dx, dy) = (a - mx, b - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    Some((sxy / (sxx.sqrt() * syy.sqrt())).clamp(-1.0, 1.0))
}

/// Spearman's rank correlation: Pearson's correlation of the average ranks.
pub fn spearman(x: &[f64], y: &[f64]) -> Option<f64> {
    pearson(&average_ranks(x), &average_ranks(y))
}

fn sign(v: f64) -> i8 {
    if v > 0.0 {
        1
    } else if v < 0.0 {
        -1
    } else {
        0
    }
}

/// Share of pairs with the same sign, zero being a sign of its own (an estimate of exactly 0 agrees only with a
/// truth of exactly 0); `None` without pairs.
pub fn sign_agreement(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len().min(y.len());
    (n > 0).then(|| x.iter().zip(y).filter(|(a, b)| sign(**a) == sign(**b)).count() as f64 / n as f64)
}

/// The scale c minimising Σ (c·xᵢ − yᵢ)², c = Σxy / Σx² (0 when x is all zeros), and the RMSE at that c;
/// `None` without pairs.
pub fn scale_fit(x: &[f64], y: &[f64]) -> Option<(f64, f64)> {
    let n = x.len().min(y.len());
    if n == 0 {
        return None;
    }
    let sxx: f64 = x[..n].iter().map(|a| a * a).sum();
    let sxy: f64 = x[..n].iter().zip(&y[..n]).map(|(a, b)| a * b).sum();
    let c = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let sse: f64 = x[..n].iter().zip(&y[..n]).map(|(a, b)| (c * a - b).powi(2)).sum();
    Some((c, (sse / n as f64).sqrt()))
}

/// All three measures of `estimate` against `truth`.
pub fn agreement(estimate: &[f64], truth: &[f64]) -> Agreement {
    let fit = scale_fit(estimate, truth);
    Agreement {
        rows: estimate.len().min(truth.len()),
        spearman: spearman(estimate, truth),
        sign_agreement: sign_agreement(estimate, truth),
        scale: fit.map(|f| f.0),
        rmse: fit.map(|f| f.1),
    }
}

/// Every estimator of the family, computed on `episodes` (one iteration's, in file order) under `base` and
/// `family`, against the truth `rows` (rows of episodes not in `episodes` are left out). An estimator that cannot
/// be computed on these episodes gets a line with its error and no numbers; the others are unaffected.
pub fn agreements(
    episodes: &[Episode],
    base: &AdvantageSettings,
    family: &EstimatorSettings,
    env: &EnvInputs<'_>,
    rows: &[TruthRow],
) -> Vec<TruthAgreement> {
    let index: HashMap<&str, usize> = episodes.iter().enumerate().map(|(i, e)| (e.id.as_str(), i)).collect();
    let located: Vec<(usize, usize, f64)> = rows
        .iter()
        .filter_map(|r| {
            let e = *index.get(r.episode.as_str())?;
            (r.step < episodes[e].steps.len()).then_some((e, r.step, r.a_star))
        })
        .collect();
    let truth: Vec<f64> = located.iter().map(|l| l.2).collect();
    estimators::compute_all(episodes, base, family, env)
        .into_iter()
        .map(|(kind, output)| match output {
            Ok(output) => {
                let estimate: Vec<f64> = located.iter().map(|&(e, t, _)| output.episode_advantages(e)[t]).collect();
                truth_agreement(kind, agreement(&estimate, &truth), None)
            }
            Err(error) => truth_agreement(kind, agreement(&[], &[]), Some(error.to_string())),
        })
        .collect()
}

fn truth_agreement(kind: EstimatorKind, a: Agreement, error: Option<String>) -> TruthAgreement {
    TruthAgreement {
        estimator: kind.name().to_string(),
        rows: a.rows,
        spearman: a.spearman,
        sign_agreement: a.sign_agreement,
        scale: a.scale,
        rmse: a.rmse,
        error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ties_share_the_average_rank() {
        assert_eq!(average_ranks(&[3.0, 1.0, 3.0, 2.0, 3.0]), vec![4.0, 1.0, 4.0, 2.0, 4.0]);
        assert_eq!(average_ranks(&[]), Vec::<f64>::new());
    }

    #[test]
    fn undefined_measures_are_none() {
        assert_eq!(spearman(&[1.0], &[2.0]), None);
        assert_eq!(spearman(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
        assert_eq!(sign_agreement(&[], &[]), None);
        assert_eq!(scale_fit(&[], &[]), None);
        // An all-zero estimate fits with c = 0 and leaves the truth's RMS as its error.
        assert_eq!(scale_fit(&[0.0, 0.0], &[3.0, -4.0]), Some((0.0, (12.5f64).sqrt())));
    }

    fn pairs() -> impl Strategy<Value = (Vec<f64>, Vec<f64>)> {
        (2usize..40).prop_flat_map(|n| {
            // Small integers make ties common.
            let value = prop_oneof![(-5i32..5).prop_map(f64::from), -10.0f64..10.0];
            (prop::collection::vec(value.clone(), n), prop::collection::vec(value, n))
        })
    }

    proptest! {
        #[test]
        fn spearman_is_a_bounded_symmetric_rank_statistic((x, y) in pairs()) {
            if let Some(r) = spearman(&x, &y) {
                prop_assert!((-1.0..=1.0).contains(&r));
                prop_assert!((spearman(&y, &x).unwrap() - r).abs() < 1e-12);
                // Invariant under strictly increasing transforms; a strictly decreasing one flips it.
                let cubed: Vec<f64> = x.iter().map(|v| v.powi(3) + 2.0 * v).collect();
                prop_assert!((spearman(&cubed, &y).unwrap() - r).abs() < 1e-9);
                let negated: Vec<f64> = x.iter().map(|v| -v).collect();
                prop_assert!((spearman(&negated, &y).unwrap() + r).abs() < 1e-9);
            }
            let ranks = average_ranks(&x);
            let n = x.len() as f64;
            prop_assert!((ranks.iter().sum::<f64>() - n * (n + 1.0) / 2.0).abs() < 1e-9);
            if x.iter().any(|v| *v != x[0]) {
                prop_assert!((spearman(&x, &x).unwrap() - 1.0).abs() < 1e-12);
            }
        }

        #[test]
        fn the_scale_fit_is_scale_free_and_optimal((x, y) in pairs(), c in 0.1f64..20.0) {
            let (scale, rmse) = scale_fit(&x, &y).unwrap();
            // Rescaling the estimate rescales c inversely and leaves the error unchanged.
            let scaled: Vec<f64> = x.iter().map(|v| v * c).collect();
            let (scale2, rmse2) = scale_fit(&scaled, &y).unwrap();
            prop_assert!((rmse2 - rmse).abs() < 1e-9 * (1.0 + rmse));
            if scale != 0.0 {
                prop_assert!((scale2 * c - scale).abs() < 1e-9 * (1.0 + scale.abs()));
            }
            // No other scale does better.
            let rmse_at = |k: f64| (x.iter().zip(&y).map(|(a, b)| (k * a - b).powi(2)).sum::<f64>() / x.len() as f64).sqrt();
            for other in [scale + 0.01, scale - 0.01, 0.0, 1.0] {
                prop_assert!(rmse <= rmse_at(other) + 1e-9);
            }
            // An exact multiple fits with no error.
            let (_, exact) = scale_fit(&x, &scaled).unwrap();
            prop_assert!(exact < 1e-9 * (1.0 + c));
        }

        #[test]
        fn sign_agreement_counts_matching_signs((x, y) in pairs()) {
            let a = sign_agreement(&x, &y).unwrap();
            prop_assert!((0.0..=1.0).contains(&a));
            prop_assert_eq!(a, sign_agreement(&y, &x).unwrap());
            prop_assert_eq!(sign_agreement(&x, &x), Some(1.0));
        }
    }
}
