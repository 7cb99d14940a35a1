//! The advantage flags that `advantages`, `stats` and `train` share: the engine's settings
//! ([`SettingsFlags`]) and the estimator family's ([`FamilyFlags`]).

use std::path::Path;

use anyhow::{bail, Context};

use crate::advantage::estimators::{EstimatorKind, EstimatorSettings};
use crate::advantage::{
    trl, AdvantageOverrides, AdvantageSettings, Aggregation, AnchorKind, Estimator, Norm, Pooling, RewardWeights,
    ScaleRewards,
};
use crate::run::Run;

/// Advantage settings as flags; each one left out falls back to the run's `run.json` (`advantage`), then to
/// the defaults (gigpo, γ 0.95, ω 1.0, mean_norm, steps, penalty 0.1, exact anchors, no shaping). A TRL log
/// records TRL's defaults instead (grpo, scale_rewards group, weights 1.0, sum_then_normalize).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct SettingsFlags {
    /// Estimator: GiGPO (A_E + ω·A_S), GRPO (A_E alone), RLOO, GiGPO's step component alone, or one of GiGPO's
    /// successors: hgpo, graphgpo, proxmo, soft-page, q-minus-v [default: the one `run.json` records the run was
    /// trained with (`estimator`), else `advantage.estimator`, else gigpo].
    #[arg(long, value_enum)]
    pub estimator: Option<EstimatorKind>,
    /// Discount factor γ of the step returns.
    #[arg(long, value_name = "G")]
    pub gamma: Option<f64>,
    /// Weight ω of the step advantage.
    #[arg(long, value_name = "W")]
    pub omega: Option<f64>,
    /// Normalisation: F = 1 (mean_norm) or sample std + 1e-6 (mean_std_norm).
    #[arg(long, value_enum)]
    pub norm: Option<Norm>,
    /// Episode baseline pool: every step row (steps) or each trajectory's first row (trajectories).
    #[arg(long, value_enum)]
    pub pooling: Option<Pooling>,
    /// Penalty subtracted from the score and return of invalid-action steps.
    #[arg(long, value_name = "C")]
    pub invalid_penalty: Option<f64>,
    /// Anchor-state grouping: identical anchors, difflib similarity, WebShop page type, identical anchors at
    /// the same step (step), or the environment's full state recorded with each step (state; a step without
    /// one keeps its anchor and step).
    #[arg(long, value_enum)]
    pub anchor: Option<AnchorKind>,
    /// Similarity anchors with threshold θ (0 < θ < 1): difflib ratio with each cluster's first member.
    #[arg(long, value_name = "THETA")]
    pub similarity: Option<f64>,
    /// Binary success reward: 10 on the last step of a successful episode, 0 elsewhere
    /// (`--success-reward=false` turns off one recorded in run.json).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub success_reward: Option<bool>,
    /// Efficiency bonus α₁/(mean tokens per step) for successful episodes.
    #[arg(long, value_name = "A")]
    pub efficiency_alpha1: Option<f64>,
    /// Efficiency bonus α₂/(number of steps) for successful episodes.
    #[arg(long, value_name = "A")]
    pub efficiency_alpha2: Option<f64>,
    /// TRL GRPO normalisation of A_E (TRL's `scale_rewards`): r − group mean, divided by the group's std + 1e-4
    /// (group), the step's whole batch's std + 1e-4 (batch), or nothing (none). The default for a TRL log.
    #[arg(long, value_enum)]
    pub scale_rewards: Option<ScaleRewards>,
    /// TRL GRPO: one weight per reward function, in the order of the log's reward columns (TRL's
    /// `reward_weights`; default 1.0 each).
    #[arg(long, value_name = "W1,W2,...", value_delimiter = ',', allow_hyphen_values = true)]
    pub reward_weights: Option<Vec<f64>>,
    /// TRL GRPO: combine several reward functions by weighted sum then scale_rewards (sum_then_normalize), or
    /// normalise each in its group, sum, then normalise over the batch (normalize_then_sum). TRL's
    /// `multi_objective_aggregation`.
    #[arg(long, value_enum)]
    pub aggregation: Option<Aggregation>,
    /// Read each step's action from its response with this regex (its first capture group, else its whole
    /// match) instead of the content of <action>…</action>; q-minus-v and the audit compare actions so read.
    /// Recorded in run.json by `gigscope train`.
    #[arg(long, value_name = "REGEX")]
    pub action_regex: Option<String>,
}

impl SettingsFlags {
    /// The flags that were given, as overrides.
    pub(crate) fn overrides(&self) -> anyhow::Result<AdvantageOverrides> {
        if let (Some(kind @ (AnchorKind::Exact | AnchorKind::Page | AnchorKind::Step | AnchorKind::State)), Some(_)) =
            (self.anchor, self.similarity)
        {
            bail!("--similarity selects similarity anchors; it cannot be combined with --anchor {kind:?}");
        }
        Ok(AdvantageOverrides {
            // A successor estimator is computed beside GiGPO's components (`super::estimate`).
            estimator: self.estimator.map(|k| k.engine().unwrap_or(Estimator::Gigpo)),
            gamma: self.gamma,
            omega: self.omega,
            norm: self.norm,
            pooling: self.pooling,
            invalid_penalty: self.invalid_penalty,
            anchor: self.anchor,
            similarity: self.similarity,
            success_reward: self.success_reward,
            efficiency_alpha1: self.efficiency_alpha1,
            efficiency_alpha2: self.efficiency_alpha2,
            scale_rewards: self.scale_rewards,
            reward_weights: match &self.reward_weights {
                Some(weights) => Some(RewardWeights::new(weights).context("--reward-weights")?),
                None => None,
            },
            aggregation: self.aggregation,
            action_regex: self.action_regex.clone(),
        })
    }

    /// Flags over the run's recorded settings over the defaults, checked.
    pub fn resolve(&self, run: &Run) -> anyhow::Result<AdvantageSettings> {
        let mut facts = EpisodeFacts::default();
        facts.add(&run.episodes);
        self.resolve_with(run, &facts)
    }

    /// [`Self::resolve`] for a run whose episodes are not held (`run.episodes` is not looked at): what the checks
    /// need of them is in `facts`, counted as they were streamed by.
    pub(super) fn resolve_with(&self, run: &Run, facts: &EpisodeFacts) -> anyhow::Result<AdvantageSettings> {
        let recorded = run.meta.as_ref().and_then(|m| m.advantage.as_ref());
        if let Some(recorded) = recorded {
            recorded
                .action_rule()
                .with_context(|| format!("{}: advantage.action_regex", run.dir.join("run.json").display()))?;
        }
        self.overrides()?.action_rule().context("--action-regex")?;
        let base = recorded.map_or_else(AdvantageSettings::default, |r| r.apply(AdvantageSettings::default()));
        let settings = self.overrides()?.apply(base);
        settings.validate().with_context(|| format!("advantage settings for {}", run.dir.display()))?;
        check_reward_weights(&settings, run, facts)?;
        check_page_anchors(&settings, run, facts)?;
        note_unrecorded_states(&settings, &run.dir, facts.unrecorded_states, facts.steps);
        Ok(settings)
    }
}

/// What checking the settings needs to know of a run's episodes, counted episode by episode.
#[derive(Debug, Default)]
pub(super) struct EpisodeFacts {
    any: bool,
    pages_recorded: bool,
    /// The reward functions of the first episode that records them.
    reward_names: Option<Vec<String>>,
    steps: usize,
    unrecorded_states: usize,
}

impl EpisodeFacts {
    pub(super) fn add(&mut self, episodes: &[crate::run::Episode]) {
        self.any |= !episodes.is_empty();
        self.pages_recorded |= episodes.iter().any(|e| e.steps.iter().any(|s| s.page.is_some()));
        if self.reward_names.is_none() {
            self.reward_names = episodes.iter().find_map(trl::reward_names);
        }
        self.steps += episodes.iter().map(|e| e.steps.len()).sum::<usize>();
        self.unrecorded_states += crate::advantage::unrecorded_states(episodes);
    }
}

/// Page anchors are an environment's (WebShop's page types): a run whose environment has none, and whose steps
/// record none, has nothing to group by.
fn check_page_anchors(settings: &AdvantageSettings, run: &Run, facts: &EpisodeFacts) -> anyhow::Result<()> {
    let pages_recorded = facts.pages_recorded;
    let no_page_anchor = crate::env_registry::page_anchor(run).is_none();
    if settings.anchor == crate::advantage::AnchorMode::Page && no_page_anchor && !pages_recorded {
        let env = run.meta.as_ref().and_then(|m| m.env.as_deref()).unwrap_or("not recorded");
        bail!(
            "--anchor page groups steps by WebShop page type, but {} is not a WebShop run (env: {env}, {}) and its steps record no page",
            run.dir.display(),
            run.layout.name()
        );
    }
    Ok(())
}

/// State anchors group by the state each step records; steps that record none (runs of other trainers, or
/// recorded before gigscope kept it) are grouped by anchor and step, and the user is told how many: `unrecorded`
/// of the `steps` of the run in `dir` record no state.
pub(super) fn note_unrecorded_states(settings: &AdvantageSettings, dir: &Path, unrecorded: usize, steps: usize) {
    if settings.anchor == crate::advantage::AnchorMode::State && unrecorded > 0 {
        eprintln!(
            "note: --anchor state: {unrecorded} of {steps} steps of {} record no state; they are grouped by anchor and step",
            dir.display()
        );
    }
}

/// TRL refuses reward weights whose number differs from the number of reward functions; so does gigscope,
/// against the reward functions the run's first episode records (one reward where none are recorded).
fn check_reward_weights(settings: &AdvantageSettings, run: &Run, facts: &EpisodeFacts) -> anyhow::Result<()> {
    let (Some(weights), Some(_)) = (settings.reward_weights, settings.scale_rewards) else { return Ok(()) };
    let names = &facts.reward_names;
    let expected = names.as_ref().map_or(1, Vec::len);
    if weights.len() != expected && facts.any {
        let what = match &names {
            Some(names) => format!("{} reward functions ({})", names.len(), names.join(", ")),
            None => "one reward per episode (no per-function rewards recorded)".to_string(),
        };
        bail!("{} reward weight(s) given, but {} has {what}", weights.len(), run.dir.display());
    }
    Ok(())
}

/// The family's own settings as flags; each one left out keeps its authors' default.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct FamilyFlags {
    /// hgpo: K, the history length; depths k = 1..K+1 are grouped [default: 2].
    #[arg(long, value_name = "K", help_heading = "Estimator family")]
    pub hgpo_history: Option<u32>,
    /// hgpo: α of the length weights (k+1)^α [default: 1.0].
    #[arg(long, value_name = "A", help_heading = "Estimator family")]
    pub hgpo_alpha: Option<f64>,
    /// hgpo: normalisation of each level's group (population std) [default: mean_std_norm].
    #[arg(long, value_enum, help_heading = "Estimator family")]
    pub hgpo_norm: Option<Norm>,
    /// hgpo: add GiGPO's episode advantage as a level-0 item [default: false].
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", help_heading = "Estimator family")]
    pub hgpo_base_group: Option<bool>,
    /// graphgpo: γ of the graph return 10·γ^d [default: 0.2].
    #[arg(long, value_name = "G", help_heading = "Estimator family")]
    pub graph_gamma: Option<f64>,
    /// graphgpo: 10·γ^(d(next) − d(obs) + 1) instead of 10·γ^d(next) [default: false].
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", help_heading = "Estimator family")]
    pub graph_normalize_distance: Option<bool>,
    /// graphgpo: weight of GiGPO's episode advantage [default: 1.0].
    #[arg(long, value_name = "W", help_heading = "Estimator family")]
    pub graph_episode_weight: Option<f64>,
    /// graphgpo: normalisation of step groups and episode advantage [default: mean_std_norm].
    #[arg(long, value_enum, help_heading = "Estimator family")]
    pub graph_norm: Option<Norm>,
    /// graphgpo: merge graph nodes whose difflib ratio is ≥ θ [default: exact nodes].
    #[arg(long, value_name = "THETA", help_heading = "Estimator family")]
    pub graph_similarity: Option<f64>,
    /// proxmo, soft-page: success-rate-aware modulation of the episode advantage [default: true].
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", help_heading = "Estimator family")]
    pub proxmo_psc: Option<bool>,
    /// proxmo, soft-page: the modulation's α [default: 4.0].
    #[arg(long, value_name = "A", help_heading = "Estimator family")]
    pub psc_alpha: Option<f64>,
    /// proxmo, soft-page: the modulation's target range [default: 0.05].
    #[arg(long, value_name = "R", help_heading = "Estimator family")]
    pub psc_target_range: Option<f64>,
    /// q-minus-v: A = A_E + ω·(Q − V) instead of Q − V alone [default: false].
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", help_heading = "Estimator family")]
    pub q_minus_v_episode: Option<bool>,
}

impl FamilyFlags {
    /// These flags over the defaults.
    pub fn settings(&self) -> EstimatorSettings {
        self.over(EstimatorSettings::default())
    }

    /// These flags over `d` (a run's recorded settings of its estimator).
    pub(super) fn over(&self, d: EstimatorSettings) -> EstimatorSettings {
        EstimatorSettings {
            hgpo_history: self.hgpo_history.unwrap_or(d.hgpo_history),
            hgpo_alpha: self.hgpo_alpha.unwrap_or(d.hgpo_alpha),
            hgpo_norm: self.hgpo_norm.unwrap_or(d.hgpo_norm),
            hgpo_base_group: self.hgpo_base_group.unwrap_or(d.hgpo_base_group),
            graph_gamma: self.graph_gamma.unwrap_or(d.graph_gamma),
            graph_normalize_distance: self.graph_normalize_distance.unwrap_or(d.graph_normalize_distance),
            graph_episode_weight: self.graph_episode_weight.unwrap_or(d.graph_episode_weight),
            graph_norm: self.graph_norm.unwrap_or(d.graph_norm),
            graph_similarity: self.graph_similarity.or(d.graph_similarity),
            proxmo_psc: self.proxmo_psc.unwrap_or(d.proxmo_psc),
            psc_alpha: self.psc_alpha.unwrap_or(d.psc_alpha),
            psc_target_range: self.psc_target_range.unwrap_or(d.psc_target_range),
            q_minus_v_episode: self.q_minus_v_episode.unwrap_or(d.q_minus_v_episode),
        }
    }
}

/// The output of a command that prints one report: a readable table, or the report as one JSON document.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum TableOrJson {
    Table,
    Json,
}
