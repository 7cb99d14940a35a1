//! The settings panel's fields: label, displayed value, and the step a left/right press takes. Shared by the
//! panel's renderer and `update`, so what is shown is what is changed.

use crate::advantage::{AdvantageSettings, AnchorMode, Estimator, Norm, Pooling, DEFAULT_SIMILARITY};

pub const FIELDS: &[&str] = &[
    "estimator",
    "γ discount",
    "ω step weight",
    "norm",
    "pooling",
    "invalid penalty",
    "anchor",
    "θ similarity",
    "success reward",
    "α₁ tokens bonus",
    "α₂ steps bonus",
];

pub fn value(s: &AdvantageSettings, field: usize) -> String {
    match field {
        0 => format!("{:?}", s.estimator).to_lowercase(),
        1 => format!("{:.2}", s.gamma),
        2 => format!("{:.2}", s.omega),
        3 => match s.norm {
            Norm::MeanNorm => "mean_norm".into(),
            Norm::MeanStdNorm => "mean_std_norm".into(),
        },
        4 => format!("{:?}", s.pooling).to_lowercase(),
        5 => format!("{:.2}", s.invalid_penalty),
        6 => match s.anchor {
            AnchorMode::Exact => "exact".into(),
            AnchorMode::Similarity(_) => "similarity".into(),
            AnchorMode::Page => "page".into(),
        },
        7 => match s.anchor {
            AnchorMode::Similarity(t) => format!("{t:.2}"),
            _ => "—".into(),
        },
        8 => if s.success_reward { "on (10 if success)" } else { "off" }.into(),
        9 => format!("{:.2}", s.efficiency_alpha1),
        10 => format!("{:.2}", s.efficiency_alpha2),
        _ => String::new(),
    }
}

/// An anchor mode in a few words: `exact`, `page`, `similarity 0.90`.
pub fn anchor_label(mode: AnchorMode) -> String {
    match mode {
        AnchorMode::Similarity(t) => format!("similarity {t:.2}"),
        AnchorMode::Exact => "exact".into(),
        AnchorMode::Page => "page".into(),
    }
}

/// Whether `field` differs between two settings (the "modified" marker).
pub fn differs(a: &AdvantageSettings, b: &AdvantageSettings, field: usize) -> bool {
    value(a, field) != value(b, field) || (field == 7 && a.anchor != b.anchor)
}

/// Step a numeric value, rounded so repeated presses do not drift (0.1 + 0.2 ≠ 0.3).
fn step(v: f64, by: f64, lo: f64, hi: f64) -> f64 {
    (((v + by) * 1e6).round() / 1e6).clamp(lo, hi)
}

/// `settings` with `field` moved one step up (`up`) or down.
pub fn adjust(mut s: AdvantageSettings, field: usize, up: bool) -> AdvantageSettings {
    let sign = if up { 1.0 } else { -1.0 };
    let cycle = |i: usize, n: usize| if up { (i + 1) % n } else { (i + n - 1) % n };
    match field {
        0 => {
            const ALL: [Estimator; 4] = [Estimator::Gigpo, Estimator::Grpo, Estimator::Rloo, Estimator::Step];
            let i = ALL.iter().position(|e| *e == s.estimator).unwrap_or(0);
            s.estimator = ALL[cycle(i, ALL.len())];
        }
        1 => s.gamma = step(s.gamma, 0.01 * sign, 0.0, 1.0),
        2 => s.omega = step(s.omega, 0.1 * sign, 0.0, 10.0),
        3 => {
            s.norm = match s.norm {
                Norm::MeanNorm => Norm::MeanStdNorm,
                Norm::MeanStdNorm => Norm::MeanNorm,
            }
        }
        4 => {
            s.pooling = match s.pooling {
                Pooling::Steps => Pooling::Trajectories,
                Pooling::Trajectories => Pooling::Steps,
            }
        }
        5 => s.invalid_penalty = step(s.invalid_penalty, 0.05 * sign, 0.0, 10.0),
        6 => {
            let modes = [AnchorMode::Exact, AnchorMode::Similarity(DEFAULT_SIMILARITY), AnchorMode::Page];
            let i = match s.anchor {
                AnchorMode::Exact => 0,
                AnchorMode::Similarity(_) => 1,
                AnchorMode::Page => 2,
            };
            s.anchor = modes[cycle(i, 3)];
        }
        7 => {
            // Moving θ selects similarity mode: that is the only mode θ means anything in.
            let t = match s.anchor {
                AnchorMode::Similarity(t) => t,
                _ => DEFAULT_SIMILARITY,
            };
            s.anchor = AnchorMode::Similarity(step(t, 0.05 * sign, 0.05, 0.99));
        }
        8 => s.success_reward = !s.success_reward,
        9 => s.efficiency_alpha1 = step(s.efficiency_alpha1, 0.1 * sign, 0.0, 100.0),
        10 => s.efficiency_alpha2 = step(s.efficiency_alpha2, 0.1 * sign, 0.0, 100.0),
        _ => {}
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_do_not_drift_and_clamp() {
        let mut s = AdvantageSettings::default();
        for _ in 0..3 {
            s = adjust(s, 2, false);
        }
        assert_eq!(s.omega, 0.7);
        for _ in 0..20 {
            s = adjust(s, 1, true);
        }
        assert_eq!(s.gamma, 1.0);
    }

    #[test]
    fn cycling_estimator_wraps_both_ways() {
        let s = AdvantageSettings::default();
        assert_eq!(adjust(s, 0, false).estimator, Estimator::Step);
        assert_eq!(adjust(s, 0, true).estimator, Estimator::Grpo);
    }

    #[test]
    fn theta_selects_similarity_mode() {
        let s = adjust(AdvantageSettings::default(), 7, false);
        assert_eq!(s.anchor, AnchorMode::Similarity(0.85));
        assert!(differs(&s, &AdvantageSettings::default(), 6));
    }
}
