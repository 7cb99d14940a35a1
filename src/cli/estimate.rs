//! `--estimator` beyond the engine's four: the family of GiGPO's successors (hgpo, graphgpo, proxmo,
//! soft-page, q-minus-v), computed from a recorded run by `advantages` and `stats` beside GiGPO's components.

use anyhow::Context;

use super::advantages::SettingsFlags;
use crate::advantage::estimators::{self, EnvInputs, EstimatorKind, EstimatorSettings};
use crate::advantage::{compute, AdvantageSettings, AdvantageTable, Norm};
use crate::run::{Run, RUN_META_FILE};
use crate::training::protocol::{FamilyEstimator, ESTIMATOR_KEY};

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
    fn over(&self, d: EstimatorSettings) -> EstimatorSettings {
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

/// The family estimator whose advantages are asked for, with its settings: `--estimator` when it names one of
/// the family (the engine's four name none), else the one `run.json` records the run was trained with (key
/// `estimator`, written by `gigscope train --estimator`), so that a run's stored advantages are what `advantages`
/// shows by default; the family flags apply over the recorded settings.
pub fn chosen_family(
    run: &Run,
    flags: &SettingsFlags,
    family: &FamilyFlags,
) -> anyhow::Result<Option<(EstimatorKind, EstimatorSettings)>> {
    if let Some(kind) = flags.estimator {
        return Ok(kind.engine().is_none().then(|| (kind, family.settings())));
    }
    let Some(recorded) = run.meta.as_ref().and_then(|m| m.extra.get(ESTIMATOR_KEY)) else { return Ok(None) };
    let recorded: FamilyEstimator = serde_json::from_value(recorded.clone()).with_context(|| {
        let file = run.dir.join(RUN_META_FILE);
        format!("{}: field `{ESTIMATOR_KEY}` is not an estimator of the family", file.display())
    })?;
    Ok(Some((recorded.kind, family.over(recorded.settings))))
}

/// The settings and the advantage table asked for: the engine's table, whose `advantage` column is the family
/// estimator's when one of them was chosen ([`chosen_family`]; A_E and A_S stay GiGPO's components). An estimator
/// that needs what the run lacks is an error naming it.
pub fn estimate(
    run: &Run,
    flags: &SettingsFlags,
    family: &FamilyFlags,
) -> anyhow::Result<(AdvantageSettings, AdvantageTable)> {
    let settings = flags.resolve(run)?;
    let mut table = compute(&run.episodes, &settings);
    if let Some((kind, family)) = chosen_family(run, flags, family)? {
        family.validate(kind)?;
        let page_anchor = crate::env::page_anchor(run);
        let env = EnvInputs { page_of: page_anchor.as_ref().map(crate::env::PageAnchor::as_fn) };
        let output = estimators::compute_with_table(kind, &run.episodes, &table, &settings, &family, &env)
            .with_context(|| format!("--estimator {} on {}", kind.name(), run.dir.display()))?;
        table.replace_advantages(output.advantages);
    }
    Ok((settings, table))
}
