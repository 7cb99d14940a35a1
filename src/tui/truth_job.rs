//! Measuring the Monte-Carlo truth of the open episode group from the TUI (`T` in the estimators and
//! anchor-group views, see `super::truth_update`): the training plugin's [`Training::truth_of_group`] runs as a
//! job of the app's runner (`JobKind::Truth`, whose progress the views show; `T` again or `X` stops it between
//! batches of continuations), and its rows are merged into the iteration's truth file
//! (`RUN/truth/iteration-I.jsonl`), which the views read. The file keeps every group measured so far, by the TUI
//! or by `gigscope truth`; a group measured again replaces its rows, and the agreements are recomputed over all
//! rows, as `gigscope truth` computes them.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::advantage::agreement::agreements;
use crate::advantage::estimators::{EnvInputs, EstimatorSettings};
use crate::advantage::AdvantageSettings;
use crate::plugin_host::{Training, TruthProgress, Unavailable};
use crate::run::text_on_disk::TextError;
use crate::run::truth::{read_truth, truth_path, NoTruth, TruthFile};
use crate::run::{Episode, RunError};

/// K when the iteration has no truth file yet (`gigscope truth`'s default); a file's own K otherwise, so that
/// its rows stay comparable.
pub const DEFAULT_ROLLOUTS: usize = 32;

/// What to measure: one episode group of one iteration, and what merging it into the iteration's file needs.
#[derive(Clone, Debug, PartialEq)]
pub struct TruthJobRequest {
    pub run_dir: PathBuf,
    /// The run's name as truth files record it.
    pub run_name: String,
    pub iteration: i64,
    pub group: String,
    pub rollouts: usize,
    pub seed: u64,
    /// The iteration's episodes in file order, and the run's recorded settings: the agreements are recomputed
    /// over them as `gigscope truth` computes them.
    /// Their page anchors are filled in from the run's environment where they record none.
    pub episodes: Vec<Episode>,
    pub settings: AdvantageSettings,
}

/// The measurement under way, as the views show it.
#[derive(Clone, Debug, PartialEq)]
pub struct TruthStatus {
    pub group: String,
    pub iteration: i64,
    pub rollouts: usize,
    /// States measured and continuations played so far (the job's progress, as the runner last reported it).
    pub states: usize,
    pub continuations: usize,
    pub cancelling: bool,
}

impl TruthStatus {
    /// One line for the views: what is measured and how far it got.
    pub fn describe(&self) -> String {
        let what = if self.cancelling { "cancelling the truth" } else { "measuring the truth" };
        format!(
            "{what} of group {} (K = {}): {} states, {} continuations so far · T cancels",
            self.group, self.rollouts, self.states, self.continuations
        )
    }
}

/// Why a group's truth was not measured, or not written.
#[derive(Debug, thiserror::Error)]
pub enum TruthJobError {
    #[error("no episode group is selected")]
    NoGroup,
    #[error("the selected group has no episodes")]
    EmptyGroup,
    #[error(transparent)]
    NotBranchable(#[from] NoTruth),
    #[error("reading the iteration's episodes back: {0}")]
    ReadBack(#[source] TextError),
    #[error(transparent)]
    PluginUnavailable(#[from] Unavailable),
    /// What the training plugin answered (it speaks in words).
    #[error("{0}")]
    Plugin(String),
    #[error("truth of group {group}: cancelled")]
    Cancelled { group: String },
    /// The iteration's file is not this iteration's truth of this run: it is left alone.
    #[error("{0}; not overwritten")]
    NotThisIterations(#[source] RunError),
    #[error(transparent)]
    Write(RunError),
}

/// The measurement and the merge into the iteration's file; what was written.
pub fn measure(
    request: &TruthJobRequest,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(&TruthProgress),
) -> Result<String, TruthJobError> {
    let cancelled = || TruthJobError::Cancelled { group: request.group.clone() };
    let training = Training::load()?;
    let measured = training.truth_of_group(
        &request.run_dir,
        request.iteration,
        &request.group,
        request.rollouts,
        request.seed,
        progress,
        cancel,
    );
    let measured = match measured {
        _ if cancel.load(Ordering::SeqCst) => return Err(cancelled()),
        Ok(measured) => measured,
        Err(e) => return Err(TruthJobError::Plugin(e)),
    };
    let path = truth_path(&request.run_dir, request.iteration);
    let existing = if path.exists() {
        // A file that is not this iteration's truth is left alone rather than replaced.
        Some(read_truth(&path, &request.run_name, request.iteration).map_err(TruthJobError::NotThisIterations)?)
    } else {
        None
    };
    let rows = measured.rows.len();
    let divergences = measured.divergences.len();
    // The episodes' page anchors were filled in with the request: the estimators need nothing more.
    let merged = merge(existing, measured, &request.episodes, &request.settings, &EnvInputs::default());
    merged.write(&path).map_err(TruthJobError::Write)?;
    Ok(format!(
        "truth of group {}: {rows} rows{} written to {} ({} groups measured in iteration {})",
        request.group,
        if divergences > 0 { format!(", {divergences} divergences") } else { String::new() },
        path.display(),
        merged.header.groups.len(),
        request.iteration
    ))
}

/// `measured` merged into the iteration's `existing` file: the measured groups' rows and divergences replace
/// theirs, the header lists every group measured (in the iteration's order), rows are in file order, and every
/// estimator's agreement is recomputed over all rows on `episodes` (the iteration's, in file order).
pub fn merge(
    existing: Option<TruthFile>,
    measured: TruthFile,
    episodes: &[Episode],
    settings: &AdvantageSettings,
    env: &EnvInputs<'_>,
) -> TruthFile {
    let Some(mut file) = existing else {
        let agreements = agreements(episodes, settings, &EstimatorSettings::default(), env, &measured.rows);
        return TruthFile { agreements, ..measured };
    };
    let replaced = |group: &str| measured.header.groups.iter().any(|g| g == group);
    let group_of: std::collections::HashMap<&str, &str> =
        episodes.iter().map(|e| (e.id.as_str(), e.group.as_str())).collect();
    file.rows.retain(|r| !replaced(&r.group));
    file.rows.extend(measured.rows);
    file.divergences.retain(|d| group_of.get(d.episode.as_str()).is_none_or(|g| !replaced(g)));
    file.divergences.extend(measured.divergences);
    let position: std::collections::HashMap<&str, usize> =
        episodes.iter().enumerate().map(|(i, e)| (e.id.as_str(), i)).collect();
    let at = |id: &str| position.get(id).copied().unwrap_or(usize::MAX);
    file.rows.sort_by_key(|r| (at(&r.episode), r.step));
    file.divergences.sort_by_key(|d| (at(&d.episode), d.step));
    let mut groups = file.header.groups.clone();
    groups.extend(measured.header.groups.iter().filter(|g| !file.header.groups.contains(g)).cloned());
    let first_episode = |g: &String| episodes.iter().position(|e| &e.group == g).unwrap_or(usize::MAX);
    groups.sort_by_key(first_episode);
    file.header.groups = groups;
    file.agreements = agreements(episodes, settings, &EstimatorSettings::default(), env, &file.rows);
    file
}
