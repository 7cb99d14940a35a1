//! The advantage settings a run records (`run.json`'s `advantage`, or what a reader of another trainer's layout
//! knows of its settings): plain data at the bottom of the layers, so that the run format does not depend on
//! the engine. The engine (`crate::advantage`) resolves them into its settings and computes with them.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Estimator {
    /// A = A_E + ω·A_S (Group-in-Group Policy Optimization).
    Gigpo,
    /// A = A_E only (GRPO; also "the episode component of GiGPO alone").
    Grpo,
    /// Leave-one-out baseline: A = n/(n−1)·(s − mean) over the pool.
    Rloo,
    /// A = A_S only (the step component of GiGPO alone).
    Step,
}

impl Estimator {
    /// The name on the command line and in `run.json`.
    pub fn name(self) -> &'static str {
        match self {
            Estimator::Gigpo => "gigpo",
            Estimator::Grpo => "grpo",
            Estimator::Rloo => "rloo",
            Estimator::Step => "step",
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Norm {
    /// F = 1.
    #[default]
    #[value(name = "mean_norm")]
    MeanNorm,
    /// F = sample standard deviation (N−1) + 1e-6.
    #[value(name = "mean_std_norm")]
    MeanStdNorm,
}

/// Added to the standard deviation by `mean_std_norm`, as in the reference trainer.
pub const STD_EPSILON: f64 = 1e-6;

impl Norm {
    /// The divisor F for a standard deviation `std` under this normalisation.
    pub fn factor(self, std: f64) -> f64 {
        match self {
            Norm::MeanNorm => 1.0,
            Norm::MeanStdNorm => std + STD_EPSILON,
        }
    }

    /// The name on the command line and in `run.json`.
    pub fn name(self) -> &'static str {
        match self {
            Norm::MeanNorm => "mean_norm",
            Norm::MeanStdNorm => "mean_std_norm",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Pooling {
    /// Every step row of every trajectory is one sample (what the reference trainer does).
    Steps,
    /// One sample per trajectory, its first row's score (the paper's equation).
    Trajectories,
}

impl Pooling {
    /// The name on the command line and in `run.json`.
    pub fn name(self) -> &'static str {
        match self {
            Pooling::Steps => "steps",
            Pooling::Trajectories => "trajectories",
        }
    }
}

/// TRL GRPOTrainer's `scale_rewards`: what the group-relative reward r − mean(group) is divided by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum ScaleRewards {
    /// The group's sample standard deviation + 1e-4 (TRL's default).
    Group,
    /// The sample standard deviation of the whole batch (here: every episode of the same iteration) + 1e-4.
    Batch,
    /// Nothing: A = r − mean(group) (Dr. GRPO).
    None,
}

impl ScaleRewards {
    /// The name on the command line and in `run.json`.
    pub fn name(self) -> &'static str {
        match self {
            ScaleRewards::Group => "group",
            ScaleRewards::Batch => "batch",
            ScaleRewards::None => "none",
        }
    }
}

/// TRL GRPOTrainer's `multi_objective_aggregation`: how several reward functions become one advantage.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Aggregation {
    /// Weighted sum of the rewards, then `scale_rewards` (TRL's default).
    #[default]
    #[value(name = "sum_then_normalize")]
    SumThenNormalize,
    /// Each reward normalised in its group, then weighted, summed and normalised over the batch (GDPO).
    #[value(name = "normalize_then_sum")]
    NormalizeThenSum,
}

impl Aggregation {
    /// The name on the command line and in `run.json`.
    pub fn name(self) -> &'static str {
        match self {
            Aggregation::SumThenNormalize => "sum_then_normalize",
            Aggregation::NormalizeThenSum => "normalize_then_sum",
        }
    }
}

/// The most reward functions `reward_weights` can weigh (settings stay `Copy`, so the weights live inline).
pub const MAX_REWARD_WEIGHTS: usize = 16;

/// TRL GRPOTrainer's `reward_weights`: one weight per reward function, in the order of the reward columns.
/// Written and read as a plain list of numbers.
#[derive(Clone, Copy, PartialEq)]
pub struct RewardWeights {
    len: u8,
    values: [f64; MAX_REWARD_WEIGHTS],
}

/// More reward weights than [`RewardWeights`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("at most {MAX_REWARD_WEIGHTS} reward weights are supported, got {0}")]
pub struct TooManyWeights(pub usize);

impl RewardWeights {
    /// At most [`MAX_REWARD_WEIGHTS`] weights.
    pub fn new(weights: &[f64]) -> Result<Self, TooManyWeights> {
        if weights.len() > MAX_REWARD_WEIGHTS {
            return Err(TooManyWeights(weights.len()));
        }
        let mut values = [0.0; MAX_REWARD_WEIGHTS];
        values[..weights.len()].copy_from_slice(weights);
        Ok(RewardWeights { len: weights.len() as u8, values })
    }

    pub fn as_slice(&self) -> &[f64] {
        &self.values[..self.len as usize]
    }

    pub fn len(&self) -> usize {
        self.len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::fmt::Debug for RewardWeights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl Serialize for RewardWeights {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RewardWeights {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let weights = Vec::<f64>::deserialize(deserializer)?;
        RewardWeights::new(&weights).map_err(serde::de::Error::custom)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum AnchorKind {
    /// Identical anchors.
    Exact,
    /// Difflib similarity ≥ θ with a cluster's first member.
    Similarity,
    /// The environment's page type (WebShop's).
    Page,
    /// Identical anchors at the same step index (the same observation with other steps left is apart).
    Step,
    /// The environment's full state the step was taken in (steps' recorded `state`); a step without one keeps
    /// its anchor and step index.
    State,
}

/// A partial set of settings, as written in `run.json` (`advantage`) or given as CLI flags.
/// Keys are the CLI flag names with `_` for `-`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct AdvantageOverrides {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimator: Option<Estimator>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gamma: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub omega: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub norm: Option<Norm>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooling: Option<Pooling>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invalid_penalty: Option<f64>,
    /// `exact`, `page` or `similarity` (then `similarity` gives θ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<AnchorKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub similarity: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_reward: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efficiency_alpha1: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub efficiency_alpha2: Option<f64>,
    /// TRL: `group`, `batch` or `none`; selects TRL's GRPO normalisation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_rewards: Option<ScaleRewards>,
    /// TRL: one weight per reward function, in column order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reward_weights: Option<RewardWeights>,
    /// TRL: `sum_then_normalize` or `normalize_then_sum`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregation: Option<Aggregation>,
    /// The regex that reads a step's action from its response (`crate::text::action`); absent: the content of
    /// `<action>…</action>`, else the whole response.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action_regex: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    /// Each enum's `name` is the one `run.json` (serde) and the command line (clap) use.
    fn same_names<T: ValueEnum + Serialize>(name: impl Fn(&T) -> &'static str) {
        for v in T::value_variants() {
            let serde = serde_json::to_value(v).expect("settings serialise");
            assert_eq!(serde.as_str(), Some(name(v)), "run.json name");
            let possible = v.to_possible_value().expect("every variant is a value");
            assert_eq!(possible.get_name(), name(v), "command-line name");
        }
    }

    #[test]
    fn display_names_are_the_file_and_command_line_names() {
        same_names::<Estimator>(|v| v.name());
        same_names::<Norm>(|v| v.name());
        same_names::<Pooling>(|v| v.name());
        same_names::<ScaleRewards>(|v| v.name());
        same_names::<Aggregation>(|v| v.name());
    }
}
