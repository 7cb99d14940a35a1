//! `--estimator` beyond the engine's four: the family of GiGPO's successors (hgpo, graphgpo, proxmo,
//! soft-page, q-minus-v), computed from a recorded run by `advantages` and `stats` beside GiGPO's components.

use anyhow::Context;

use super::flags::{FamilyFlags, SettingsFlags};
use crate::advantage::estimators::{self, EnvInputs, EstimatorKind, EstimatorSettings};
use crate::advantage::{compute, AdvantageSettings, AdvantageTable};
use crate::plugin_host::protocol::{FamilyEstimator, ESTIMATOR_KEY};
use crate::run::{Run, RUN_META_FILE};

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
        let page_anchor = crate::env_registry::page_anchor(run);
        let env = EnvInputs { page_of: page_anchor.as_ref().map(crate::env::PageAnchor::as_fn) };
        let output = estimators::compute_with_table(kind, &run.episodes, &table, &settings, &family, &env)
            .with_context(|| format!("--estimator {} on {}", kind.name(), run.dir.display()))?;
        table.replace_advantages(output.advantages);
    }
    Ok((settings, table))
}
