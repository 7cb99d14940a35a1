//! The advantage settings as typed fields, built from one table ([`FIELDS`]): each field's label in the
//! settings panel, its key (the `run.json` `advantage` key and the CLI flag `--key` with `-` for `_`, checked
//! against `assets/run.schema.json` by a test), what it means, the value shown, and the step a left/right press
//! takes. The panel, the status bar and `update` all go through it, so what is shown is what is changed.

use clap::ValueEnum;

use crate::advantage::explain::epsilon_text;
use crate::advantage::trl::TRL_STD_EPSILON;
use crate::advantage::{
    AdvantageOverrides, AdvantageSettings, Aggregation, AnchorMode, Estimator, Norm, Pooling, RewardWeights,
    ScaleRewards, DEFAULT_SIMILARITY, STD_EPSILON,
};

/// One advantage setting the panel can change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Field {
    Estimator,
    Gamma,
    Omega,
    Norm,
    Pooling,
    InvalidPenalty,
    Anchor,
    Similarity,
    SuccessReward,
    EfficiencyAlpha1,
    EfficiencyAlpha2,
    ScaleRewards,
    RewardWeights,
    Aggregation,
}

/// A field's row of the table.
#[derive(Clone, Copy, Debug)]
pub struct FieldSpec {
    pub field: Field,
    /// In the settings panel.
    pub label: &'static str,
    /// The key in `run.json`'s `advantage` object; the CLI flag is `--` and the key with `-` for `_`.
    pub key: &'static str,
}

/// Every field, in the panel's order.
pub const FIELDS: &[FieldSpec] = &[
    FieldSpec { field: Field::Estimator, label: "estimator", key: "estimator" },
    FieldSpec { field: Field::Gamma, label: "γ discount", key: "gamma" },
    FieldSpec { field: Field::Omega, label: "ω step weight", key: "omega" },
    FieldSpec { field: Field::Norm, label: "norm", key: "norm" },
    FieldSpec { field: Field::Pooling, label: "pooling", key: "pooling" },
    FieldSpec { field: Field::InvalidPenalty, label: "invalid penalty", key: "invalid_penalty" },
    FieldSpec { field: Field::Anchor, label: "anchor", key: "anchor" },
    FieldSpec { field: Field::Similarity, label: "θ similarity", key: "similarity" },
    FieldSpec { field: Field::SuccessReward, label: "success reward", key: "success_reward" },
    FieldSpec { field: Field::EfficiencyAlpha1, label: "α₁ tokens bonus", key: "efficiency_alpha1" },
    FieldSpec { field: Field::EfficiencyAlpha2, label: "α₂ steps bonus", key: "efficiency_alpha2" },
    FieldSpec { field: Field::ScaleRewards, label: "scale_rewards", key: "scale_rewards" },
    FieldSpec { field: Field::RewardWeights, label: "reward weights", key: "reward_weights" },
    FieldSpec { field: Field::Aggregation, label: "aggregation", key: "aggregation" },
];

/// The name a value has on the command line and in `run.json` (clap's name of a `ValueEnum`).
pub fn name<T: ValueEnum>(v: T) -> String {
    v.to_possible_value().map(|p| p.get_name().to_string()).unwrap_or_default()
}

/// The next (`up`) or previous value of `v` among every value of its type, wrapping.
fn cycle<T: ValueEnum + PartialEq + Copy>(v: T, up: bool) -> T {
    let all = T::value_variants();
    let i = all.iter().position(|x| *x == v).unwrap_or(0);
    let n = all.len();
    all[if up { (i + 1) % n } else { (i + n - 1) % n }]
}

/// Step a numeric value, rounded so repeated presses do not drift (0.1 + 0.2 ≠ 0.3).
fn step(v: f64, by: f64, lo: f64, hi: f64) -> f64 {
    (((v + by) * 1e6).round() / 1e6).clamp(lo, hi)
}

fn theta(s: &AdvantageSettings) -> Option<f64> {
    match s.anchor {
        AnchorMode::Similarity(t) => Some(t),
        _ => None,
    }
}

impl Field {
    /// Every field, in the panel's order.
    pub fn all() -> impl Iterator<Item = Field> {
        FIELDS.iter().map(|f| f.field)
    }

    pub fn spec(self) -> &'static FieldSpec {
        FIELDS.iter().find(|f| f.field == self).expect("every field has a row in FIELDS")
    }

    pub fn index(self) -> usize {
        FIELDS.iter().position(|f| f.field == self).expect("every field has a row in FIELDS")
    }

    pub fn label(self) -> &'static str {
        self.spec().label
    }

    /// The field `by` rows further down the panel, wrapping.
    pub fn moved(self, by: isize) -> Field {
        let n = FIELDS.len() as isize;
        FIELDS[(self.index() as isize + by).rem_euclid(n) as usize].field
    }

    /// What the field means, in a line.
    pub fn help(self) -> String {
        match self {
            Field::Estimator => "how A combines the components: gigpo A_E + ω·A_S, grpo A_E, rloo n/(n−1)·(s − mean) \
                                 (leave-one-out, no norm), step A_S"
                .into(),
            Field::Gamma => "discount of the step returns R_t = Σ γ^k·r_(t+k)".into(),
            Field::Omega => "weight of A_S in gigpo's A = A_E + ω·A_S".into(),
            Field::Norm => format!(
                "divisor F of A_E and A_S: 1 (mean_norm) or sample std + {} (mean_std_norm)",
                epsilon_text(STD_EPSILON)
            ),
            Field::Pooling => {
                "A_E's baseline pool: every row's score (steps) or each trajectory's first (trajectories)".into()
            }
            Field::InvalidPenalty => "c, subtracted from an invalid step's score s and return R_t".into(),
            Field::Anchor => "step groups: identical anchors, similarity ≥ θ, WebShop page type, identical anchors at \
                              the same step (step), or the environment's full state recorded with the step (state)"
                .into(),
            Field::Similarity => "difflib ratio a step needs with a group's first member (similarity anchors)".into(),
            Field::SuccessReward => "rewards replaced by 10 on a successful episode's last step, 0 elsewhere".into(),
            Field::EfficiencyAlpha1 => "bonus α₁/(tokens per step) on a successful episode's last reward".into(),
            Field::EfficiencyAlpha2 => "bonus α₂/(steps) on a successful episode's last reward".into(),
            Field::ScaleRewards => format!(
                "off: GiGPO's A_E; group/batch/none: TRL GRPOTrainer's (r − group mean) / (std + {})",
                epsilon_text(TRL_STD_EPSILON)
            ),
            Field::RewardWeights => {
                "TRL: the weight of each reward function, in the run's order (Enter or ←/→: type them, e.g. 1,2)".into()
            }
            Field::Aggregation => "TRL: weighted sum then normalise, or normalise each reward then sum".into(),
        }
    }

    /// The value shown in the panel.
    pub fn value(self, s: &AdvantageSettings) -> String {
        match self {
            Field::Estimator => name(s.estimator),
            Field::Gamma => format!("{:.2}", s.gamma),
            Field::Omega => format!("{:.2}", s.omega),
            Field::Norm => name(s.norm),
            Field::Pooling => name(s.pooling),
            Field::InvalidPenalty => format!("{:.2}", s.invalid_penalty),
            Field::Anchor => anchor_kind(s.anchor),
            Field::Similarity => theta(s).map_or("—".into(), |t| format!("{t:.2}")),
            Field::SuccessReward => if s.success_reward { "on (10 if success)" } else { "off" }.into(),
            Field::EfficiencyAlpha1 => format!("{:.2}", s.efficiency_alpha1),
            Field::EfficiencyAlpha2 => format!("{:.2}", s.efficiency_alpha2),
            Field::ScaleRewards => s.scale_rewards.map_or("off (GiGPO's A_E)".into(), name),
            Field::RewardWeights => s.reward_weights.map_or("1 each".into(), |w| weights_text(w.as_slice())),
            Field::Aggregation => name(s.aggregation),
        }
    }

    /// The value in the status bar's few characters.
    pub fn short(self, s: &AdvantageSettings) -> String {
        match self {
            Field::Gamma => format!("γ{:.2}", s.gamma),
            Field::Omega => format!("ω{:.2}", s.omega),
            Field::Anchor => match s.anchor {
                AnchorMode::Similarity(t) => format!("sim θ{t:.2}"),
                AnchorMode::ObservationStep => "obs+step".into(),
                AnchorMode::Exact | AnchorMode::Page | AnchorMode::State => anchor_kind(s.anchor),
            },
            Field::Similarity => theta(s).map_or("θ—".into(), |t| format!("θ{t:.2}")),
            Field::InvalidPenalty => format!("c{:.2}", s.invalid_penalty),
            Field::SuccessReward => format!("success reward {}", if s.success_reward { "on" } else { "off" }),
            Field::EfficiencyAlpha1 => format!("α₁{:.2}", s.efficiency_alpha1),
            Field::EfficiencyAlpha2 => format!("α₂{:.2}", s.efficiency_alpha2),
            Field::ScaleRewards => s.scale_rewards.map_or("GiGPO A_E".into(), |x| format!("scale={}", name(x))),
            Field::RewardWeights => {
                format!("w={}", s.reward_weights.map_or("1".into(), |w| weights_text(w.as_slice())))
            }
            Field::Estimator | Field::Norm | Field::Pooling | Field::Aggregation => self.value(s),
        }
    }

    /// Whether the field changes any number under `s`'s estimator: γ, the anchors and θ shape only the step
    /// component A_S (estimators gigpo and step), ω only gigpo's sum, the norm GiGPO's divisors (not A_E under
    /// TRL's scaling, nor rloo's), TRL's options only TRL's A_E.
    pub fn applies(self, s: &AdvantageSettings) -> bool {
        let step_component = matches!(s.estimator, Estimator::Gigpo | Estimator::Step);
        let episode_component = s.estimator != Estimator::Step;
        let gigpo_a_e = episode_component && s.scale_rewards.is_none();
        match self {
            Field::Estimator => true,
            Field::Gamma | Field::Anchor | Field::Similarity => step_component,
            Field::Omega => s.estimator == Estimator::Gigpo,
            Field::Norm => step_component || (gigpo_a_e && s.estimator != Estimator::Rloo),
            Field::Pooling => gigpo_a_e,
            Field::InvalidPenalty | Field::SuccessReward | Field::EfficiencyAlpha1 | Field::EfficiencyAlpha2 => true,
            Field::ScaleRewards => episode_component,
            Field::Aggregation | Field::RewardWeights => episode_component && s.scale_rewards.is_some(),
        }
    }

    /// Whether the field differs between two settings (the "modified" marker). θ differs only where it means
    /// something: a page or exact grouping has no θ, whatever the other's mode.
    pub fn differs(self, a: &AdvantageSettings, b: &AdvantageSettings) -> bool {
        match self {
            Field::Similarity => theta(a) != theta(b),
            Field::Anchor => anchor_kind(a.anchor) != anchor_kind(b.anchor),
            Field::Estimator => a.estimator != b.estimator,
            Field::Gamma => a.gamma != b.gamma,
            Field::Omega => a.omega != b.omega,
            Field::Norm => a.norm != b.norm,
            Field::Pooling => a.pooling != b.pooling,
            Field::InvalidPenalty => a.invalid_penalty != b.invalid_penalty,
            Field::SuccessReward => a.success_reward != b.success_reward,
            Field::EfficiencyAlpha1 => a.efficiency_alpha1 != b.efficiency_alpha1,
            Field::EfficiencyAlpha2 => a.efficiency_alpha2 != b.efficiency_alpha2,
            Field::ScaleRewards => a.scale_rewards != b.scale_rewards,
            Field::RewardWeights => a.reward_weights != b.reward_weights,
            Field::Aggregation => a.aggregation != b.aggregation,
        }
    }

    /// `s` with this field moved one step up (`up`) or down.
    pub fn adjust(self, mut s: AdvantageSettings, up: bool) -> AdvantageSettings {
        let sign = if up { 1.0 } else { -1.0 };
        match self {
            Field::Estimator => s.estimator = cycle(s.estimator, up),
            Field::Gamma => s.gamma = step(s.gamma, 0.01 * sign, 0.0, 1.0),
            Field::Omega => s.omega = step(s.omega, 0.1 * sign, 0.0, 10.0),
            Field::Norm => s.norm = cycle(s.norm, up),
            Field::Pooling => s.pooling = cycle(s.pooling, up),
            Field::InvalidPenalty => s.invalid_penalty = step(s.invalid_penalty, 0.05 * sign, 0.0, 10.0),
            Field::Anchor => {
                // In the order of the command line's names, each as `--anchor NAME` would select it.
                let kind = AdvantageOverrides { anchor: Some(cycle(s.anchor.kind(), up)), ..Default::default() };
                s.anchor = kind.apply(s).anchor;
            }
            Field::Similarity => {
                // Moving θ selects similarity mode: that is the only mode θ means anything in.
                let t = theta(&s).unwrap_or(DEFAULT_SIMILARITY);
                s.anchor = AnchorMode::Similarity(step(t, 0.05 * sign, 0.05, 0.99));
            }
            Field::SuccessReward => s.success_reward = !s.success_reward,
            Field::EfficiencyAlpha1 => s.efficiency_alpha1 = step(s.efficiency_alpha1, 0.1 * sign, 0.0, 100.0),
            Field::EfficiencyAlpha2 => s.efficiency_alpha2 = step(s.efficiency_alpha2, 0.1 * sign, 0.0, 100.0),
            Field::ScaleRewards => {
                // off → every TRL scaling → off.
                let all = ScaleRewards::value_variants();
                let mut options: Vec<Option<ScaleRewards>> = vec![None];
                options.extend(all.iter().copied().map(Some));
                let i = options.iter().position(|o| *o == s.scale_rewards).unwrap_or(0);
                let n = options.len();
                s.scale_rewards = options[if up { (i + 1) % n } else { (i + n - 1) % n }];
            }
            Field::Aggregation => s.aggregation = cycle::<Aggregation>(s.aggregation, up),
            // A list is typed, not stepped (`update` opens a prompt for it).
            Field::RewardWeights => {}
        }
        s
    }

    /// Whether the field's value is typed in a prompt rather than stepped with ←/→.
    pub fn typed(self) -> bool {
        self == Field::RewardWeights
    }
}

/// Reward weights as they are typed and shown: `1,2`, `0.5,1`.
pub fn weights_text(weights: &[f64]) -> String {
    weights.iter().map(f64::to_string).collect::<Vec<_>>().join(",")
}

/// Typed reward weights (`1,2`, `1, 0.5`, spaces allowed), or why not: one number per reward function of the
/// run (`functions`, when the run names them), none negative, not all zero, at most the weights the settings
/// hold.
pub fn parse_weights(text: &str, functions: Option<usize>) -> Result<RewardWeights, String> {
    let values: Vec<f64> = text
        .split([',', ' '])
        .filter(|t| !t.is_empty())
        .map(|t| t.parse::<f64>().map_err(|_| format!("`{t}` is not a number")))
        .collect::<Result<_, _>>()?;
    if values.is_empty() {
        return Err("no weight given".into());
    }
    if let Some(n) = functions.filter(|&n| n != values.len()) {
        return Err(format!("the run has {n} reward function(s), {} weight(s) given", values.len()));
    }
    if values.iter().any(|w| !w.is_finite() || *w < 0.0) {
        return Err("a weight must be a number ≥ 0".into());
    }
    if values.iter().all(|&w| w == 0.0) {
        return Err("at least one weight must be above 0".into());
    }
    RewardWeights::new(&values).map_err(|e| e.to_string())
}

/// The anchor mode's name on the command line: `exact`, `similarity`, `page`, `step` or `state`.
fn anchor_kind(mode: AnchorMode) -> String {
    name(mode.kind())
}

/// The fields that differ between two settings.
pub fn changed(a: &AdvantageSettings, b: &AdvantageSettings) -> Vec<Field> {
    Field::all().filter(|f| f.differs(a, b)).collect()
}

/// The estimators, norms and poolings there are (the settings' own types, so a new variant shows up here).
pub fn estimators() -> &'static [Estimator] {
    Estimator::value_variants()
}

pub fn norms() -> &'static [Norm] {
    Norm::value_variants()
}

pub fn poolings() -> &'static [Pooling] {
    Pooling::value_variants()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advantage::AdvantageOverrides;

    #[test]
    fn typed_reward_weights_are_one_number_per_reward_function() {
        let w = parse_weights("2, 0.5", Some(2)).unwrap();
        assert_eq!((w.as_slice(), weights_text(w.as_slice()).as_str()), (&[2.0, 0.5][..], "2,0.5"));
        assert_eq!(parse_weights("1 2 3", None).unwrap().as_slice(), &[1.0, 2.0, 3.0]);
        assert_eq!(parse_weights("2", Some(2)).unwrap_err(), "the run has 2 reward function(s), 1 weight(s) given");
        assert_eq!(parse_weights("1,x", None).unwrap_err(), "`x` is not a number");
        assert_eq!(parse_weights("-1,1", None).unwrap_err(), "a weight must be a number ≥ 0");
        assert_eq!(parse_weights("0,0", None).unwrap_err(), "at least one weight must be above 0");
        assert_eq!(parse_weights(" ", None).unwrap_err(), "no weight given");
        // Typed, not stepped: ←/→ leave the settings as they are.
        let s = AdvantageSettings::default();
        assert!(Field::RewardWeights.typed() && Field::RewardWeights.adjust(s, true) == s);
    }

    #[test]
    fn steps_do_not_drift_and_clamp() {
        let mut s = AdvantageSettings::default();
        for _ in 0..3 {
            s = Field::Omega.adjust(s, false);
        }
        assert_eq!(s.omega, 0.7);
        for _ in 0..20 {
            s = Field::Gamma.adjust(s, true);
        }
        assert_eq!(s.gamma, 1.0);
    }

    #[test]
    fn cycling_estimator_wraps_both_ways() {
        let s = AdvantageSettings::default();
        assert_eq!(Field::Estimator.adjust(s, false).estimator, *estimators().last().unwrap());
        assert_eq!(Field::Estimator.adjust(s, true).estimator, Estimator::Grpo);
    }

    #[test]
    fn theta_selects_similarity_mode_and_differs_only_where_it_means_something() {
        let d = AdvantageSettings::default();
        let s = Field::Similarity.adjust(d, false);
        assert_eq!(s.anchor, AnchorMode::Similarity(0.85));
        assert!(Field::Anchor.differs(&s, &d) && Field::Similarity.differs(&s, &d));
        let page = AdvantageSettings { anchor: AnchorMode::Page, ..d };
        assert!(Field::Anchor.differs(&page, &d));
        assert!(!Field::Similarity.differs(&page, &d), "page and exact both have no θ");
        assert_eq!(changed(&page, &d), [Field::Anchor]);
    }

    #[test]
    fn scale_rewards_cycles_through_off_and_every_trl_scaling() {
        let mut s = AdvantageSettings::default();
        let mut seen = vec![s.scale_rewards];
        for _ in 0..ScaleRewards::value_variants().len() {
            s = Field::ScaleRewards.adjust(s, true);
            seen.push(s.scale_rewards);
        }
        assert_eq!(seen.len(), 4);
        assert_eq!(Field::ScaleRewards.adjust(s, true).scale_rewards, None);
    }

    /// The table's keys are `run.json`'s keys (the schema's and `AdvantageOverrides`'), and the values the panel
    /// shows for enumerations are the schema's.
    #[test]
    fn the_table_agrees_with_the_schema_and_run_json() {
        let schema: serde_json::Value = serde_json::from_str(include_str!("../../assets/run.schema.json")).unwrap();
        let props = &schema["$defs"]["AdvantageSettings"]["properties"];
        let full = AdvantageSettings {
            scale_rewards: Some(ScaleRewards::Group),
            reward_weights: Some(RewardWeights::new(&[1.0, 2.0]).unwrap()),
            anchor: AnchorMode::Similarity(0.5),
            ..AdvantageSettings::default()
        };
        let written = serde_json::to_value(AdvantageOverrides::from_settings(&full)).unwrap();
        for spec in FIELDS {
            assert!(props.get(spec.key).is_some(), "{} is not in run.schema.json", spec.key);
            assert!(written.get(spec.key).is_some(), "{} is not a run.json key", spec.key);
        }
        let values = |key: &str| -> Vec<String> {
            props[key]["enum"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
        };
        assert_eq!(estimators().iter().map(|&e| name(e)).collect::<Vec<_>>(), values("estimator"));
        assert_eq!(norms().iter().map(|&e| name(e)).collect::<Vec<_>>(), values("norm"));
        assert_eq!(poolings().iter().map(|&e| name(e)).collect::<Vec<_>>(), values("pooling"));
        let mut s = AdvantageSettings::default();
        for want in values("estimator") {
            assert_eq!(Field::Estimator.value(&s), want);
            s = Field::Estimator.adjust(s, true);
        }
    }
}
