//! Advantage settings: estimator, discount, weights, normalisation, pooling, anchors and reward shaping.
//!
//! Settings come from CLI flags, else the run's `run.json` (`advantage` object, same keys as the flags), else
//! the defaults of GiGPO's reference trainer.
//!
//! TRL's GRPOTrainer normalises differently (see `super::trl`): its options keep TRL's names
//! (`scale_rewards`, `reward_weights`, `multi_objective_aggregation` as `aggregation`), and setting
//! `scale_rewards` selects TRL's computation of A_E. A TRL completions log records TRL's defaults as its
//! settings, so it is recomputed the TRL way without flags.

pub use crate::text::action::ActionRule;

pub use crate::run::settings::{
    AdvantageOverrides, Aggregation, AnchorKind, Estimator, Norm, Pooling, RewardWeights, ScaleRewards,
    MAX_REWARD_WEIGHTS,
};

/// How steps are put into anchor-state groups inside an episode group.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum AnchorMode {
    /// Identical anchor strings.
    #[default]
    Exact,
    /// Greedy clustering by difflib ratio ≥ θ against each cluster's first member.
    Similarity(f64),
    /// WebShop page type (search / results / item / item_sub / done).
    Page,
    /// Identical anchors at the same step index: the same observation with other steps left (an episode ends at
    /// the step limit) is another state (CLI `--anchor step`).
    ObservationStep,
    /// The environment's full state the step was taken in, as the step records it ([`crate::run::Step::state`]);
    /// a step that records none is keyed as in [`AnchorMode::ObservationStep`] (CLI `--anchor state`).
    State,
}

impl AnchorMode {
    /// The mode's name on the command line and in `run.json`.
    pub fn kind(self) -> AnchorKind {
        match self {
            AnchorMode::Exact => AnchorKind::Exact,
            AnchorMode::Similarity(_) => AnchorKind::Similarity,
            AnchorMode::Page => AnchorKind::Page,
            AnchorMode::ObservationStep => AnchorKind::Step,
            AnchorMode::State => AnchorKind::State,
        }
    }

    /// The mode in a few words: `exact`, `page`, `similarity 0.90`, `observation + step`, `full state`.
    pub fn label(self) -> String {
        match self {
            AnchorMode::Exact => "exact".into(),
            AnchorMode::Similarity(theta) => format!("similarity {theta:.2}"),
            AnchorMode::Page => "page".into(),
            AnchorMode::ObservationStep => "observation + step".into(),
            AnchorMode::State => "full state".into(),
        }
    }
}

/// Fully resolved settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdvantageSettings {
    pub estimator: Estimator,
    pub gamma: f64,
    pub omega: f64,
    pub norm: Norm,
    pub pooling: Pooling,
    /// Subtracted from the score and return of rows with `valid: false`.
    pub invalid_penalty: f64,
    pub anchor: AnchorMode,
    /// Replace rewards by the WebShop training convention: 10 on the last step if `outcome.success`, else 0.
    pub success_reward: bool,
    /// Dual-efficiency bonus for successful episodes: α₁/(mean tokens per step) + α₂/(number of steps).
    pub efficiency_alpha1: f64,
    pub efficiency_alpha2: f64,
    /// TRL's GRPO normalisation of A_E instead of GiGPO's (`None`: GiGPO's, with `norm` and `pooling`).
    pub scale_rewards: Option<ScaleRewards>,
    /// TRL: weights of the reward functions (`None`: 1.0 each). Used only with `scale_rewards`.
    pub reward_weights: Option<RewardWeights>,
    /// TRL: how several reward functions are combined. Used only with `scale_rewards`.
    pub aggregation: Aggregation,
    /// How a step's action is read from its response, wherever actions are compared (`q-minus-v`, the audit).
    pub action: ActionRule,
}

/// A setting outside its domain.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingsError {
    #[error("gamma must be in [0, 1], got {0}")]
    Gamma(f64),
    #[error("similarity threshold must be in (0, 1), got {0}")]
    Similarity(f64),
    #[error("{0} must be a finite number, got {1}")]
    NotFinite(&'static str, f64),
    #[error(transparent)]
    TooManyWeights(#[from] crate::run::settings::TooManyWeights),
    #[error("reward weight {0} must be a finite number, got {1}")]
    Weight(usize, f64),
}

impl AdvantageSettings {
    /// Checks the domains the reference trainer assumes (it asserts 0 < θ < 1 for similarity anchors).
    pub fn validate(&self) -> Result<(), SettingsError> {
        if !(0.0..=1.0).contains(&self.gamma) {
            return Err(SettingsError::Gamma(self.gamma));
        }
        if let AnchorMode::Similarity(theta) = self.anchor {
            if !(theta > 0.0 && theta < 1.0) {
                return Err(SettingsError::Similarity(theta));
            }
        }
        for (name, value) in [
            ("omega", self.omega),
            ("invalid_penalty", self.invalid_penalty),
            ("efficiency_alpha1", self.efficiency_alpha1),
            ("efficiency_alpha2", self.efficiency_alpha2),
        ] {
            if !value.is_finite() {
                return Err(SettingsError::NotFinite(name, value));
            }
        }
        for (i, &w) in self.reward_weights.iter().flat_map(|w| w.as_slice()).enumerate() {
            if !w.is_finite() {
                return Err(SettingsError::Weight(i + 1, w));
            }
        }
        Ok(())
    }
}

impl Default for AdvantageSettings {
    fn default() -> Self {
        AdvantageSettings {
            estimator: Estimator::Gigpo,
            gamma: 0.95,
            omega: 1.0,
            norm: Norm::MeanNorm,
            pooling: Pooling::Steps,
            invalid_penalty: 0.1,
            anchor: AnchorMode::Exact,
            success_reward: false,
            efficiency_alpha1: 0.0,
            efficiency_alpha2: 0.0,
            scale_rewards: None,
            reward_weights: None,
            aggregation: Aggregation::SumThenNormalize,
            action: ActionRule::Tagged,
        }
    }
}

impl AdvantageOverrides {
    /// Layer these overrides on top of `base`. A `similarity` value alone selects similarity mode; a TRL
    /// option (`reward_weights`, `aggregation`) alone selects TRL's computation with its default
    /// `scale_rewards` (`group`).
    pub fn apply(&self, base: AdvantageSettings) -> AdvantageSettings {
        let trl_option = self.reward_weights.is_some() || self.aggregation.is_some();
        let scale_rewards =
            self.scale_rewards.or(base.scale_rewards).or_else(|| trl_option.then_some(ScaleRewards::Group));
        let anchor = match (self.anchor, self.similarity) {
            (Some(AnchorKind::Exact), _) => AnchorMode::Exact,
            (Some(AnchorKind::Page), _) => AnchorMode::Page,
            (Some(AnchorKind::Step), _) => AnchorMode::ObservationStep,
            (Some(AnchorKind::State), _) => AnchorMode::State,
            (Some(AnchorKind::Similarity), Some(theta)) | (None, Some(theta)) => AnchorMode::Similarity(theta),
            (Some(AnchorKind::Similarity), None) => match base.anchor {
                AnchorMode::Similarity(theta) => AnchorMode::Similarity(theta),
                _ => AnchorMode::Similarity(DEFAULT_SIMILARITY),
            },
            (None, None) => base.anchor,
        };
        AdvantageSettings {
            estimator: self.estimator.unwrap_or(base.estimator),
            gamma: self.gamma.unwrap_or(base.gamma),
            omega: self.omega.unwrap_or(base.omega),
            norm: self.norm.unwrap_or(base.norm),
            pooling: self.pooling.unwrap_or(base.pooling),
            invalid_penalty: self.invalid_penalty.unwrap_or(base.invalid_penalty),
            anchor,
            success_reward: self.success_reward.unwrap_or(base.success_reward),
            efficiency_alpha1: self.efficiency_alpha1.unwrap_or(base.efficiency_alpha1),
            efficiency_alpha2: self.efficiency_alpha2.unwrap_or(base.efficiency_alpha2),
            scale_rewards,
            reward_weights: self.reward_weights.or(base.reward_weights),
            aggregation: self.aggregation.unwrap_or(base.aggregation),
            // A pattern that does not compile keeps the base's rule: `Self::action_rule` is the check that names it.
            action: self.action_rule().ok().flatten().unwrap_or(base.action),
        }
    }

    /// The action rule of `action_regex`, if set; an invalid regex is an error.
    pub fn action_rule(&self) -> Result<Option<ActionRule>, regex::Error> {
        self.action_regex.as_deref().map(ActionRule::pattern).transpose()
    }

    /// Every key set, so that `run.json` records the full settings a trainer used (the TRL keys only when
    /// TRL's computation is selected).
    pub fn from_settings(s: &AdvantageSettings) -> Self {
        let similarity = match s.anchor {
            AnchorMode::Similarity(theta) => Some(theta),
            _ => None,
        };
        AdvantageOverrides {
            estimator: Some(s.estimator),
            gamma: Some(s.gamma),
            omega: Some(s.omega),
            norm: Some(s.norm),
            pooling: Some(s.pooling),
            invalid_penalty: Some(s.invalid_penalty),
            anchor: Some(s.anchor.kind()),
            similarity,
            success_reward: Some(s.success_reward),
            efficiency_alpha1: Some(s.efficiency_alpha1),
            efficiency_alpha2: Some(s.efficiency_alpha2),
            scale_rewards: s.scale_rewards,
            reward_weights: s.scale_rewards.and(s.reward_weights),
            aggregation: s.scale_rewards.map(|_| s.aggregation),
            action_regex: s.action.pattern_text().map(String::from),
        }
    }
}

/// θ used when similarity mode is asked for without a threshold.
pub const DEFAULT_SIMILARITY: f64 = 0.9;
