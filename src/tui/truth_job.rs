//! Measuring the Monte-Carlo truth of the open episode group from the TUI (`T` in the estimators and
//! anchor-group views): the training plugin's [`Training::truth_of_group`] runs as a job of the app's runner
//! ([`JobKind::Truth`], whose progress the views show; `T` again or `X` stops it between batches of
//! continuations), and its rows are merged into the iteration's truth file
//! (`RUN/truth/iteration-I.jsonl`), which the views read. The file keeps every group measured so far, by the TUI
//! or by `gigscope truth`; a group measured again replaces its rows, and the agreements are recomputed over all
//! rows, as `gigscope truth` computes them.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::advantage::agreement::agreements;
use crate::advantage::estimators::{EnvInputs, EstimatorSettings};
use crate::advantage::AdvantageSettings;
use crate::run::truth::{branchable_among, read_truth, truth_path, truth_run_name, TruthFile};
use crate::run::Episode;
use crate::training::{Training, TruthProgress};

use super::action::Action;
use super::runner::JobContext;
use super::state::{JobKind, State};
use super::update::{Effects, Msg};

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

/// `T`: start measuring the open group's truth, or cancel the measurement under way.
pub fn toggle(state: &mut State) -> Effects {
    if let Some(status) = state.jobs.truth.as_mut() {
        status.cancelling = true;
        state.ui.message = Some(format!("cancelling the truth of group {} …", status.group));
        return Effects { redraw: true, cancel_truth: true, ..Effects::default() };
    }
    match request(state) {
        Ok(request) => {
            state.ui.message = Some(format!("measuring the truth of group {} in the background …", request.group));
            state.jobs.truth = Some(TruthStatus {
                group: request.group.clone(),
                iteration: request.iteration,
                rollouts: request.rollouts,
                states: 0,
                continuations: 0,
                cancelling: false,
            });
            Effects { redraw: true, truth: Some(Box::new(request)), ..Effects::default() }
        }
        Err(why) => {
            state.ui.message = Some(why);
            Effects::redraw()
        }
    }
}

/// `T` in a view that shows no group's rows: cancels the measurement under way, else says where it starts.
pub fn elsewhere(state: &mut State) -> Effects {
    if state.jobs.truth.is_some() {
        return toggle(state);
    }
    let key = |a: Action| state.config.keymap.first_label(a).unwrap_or_default();
    state.ui.message = Some(format!(
        "the truth of a group is measured from the estimators view ({}) or the anchor-group view ({})",
        key(Action::Estimators),
        key(Action::Anchor)
    ));
    Effects::redraw()
}

/// The measurement's progress, from the runner's list of jobs.
pub fn follow(state: &mut State) {
    let progress = state.jobs.running.iter().find_map(|kind| match *kind {
        JobKind::Truth { states, continuations } => Some((states, continuations)),
        _ => None,
    });
    if let (Some(status), Some((states, continuations))) = (state.jobs.truth.as_mut(), progress) {
        (status.states, status.continuations) = (states, continuations);
    }
}

/// The measurement ended: what was written, or why nothing was.
pub fn finished(state: &mut State, outcome: Result<String, String>) -> Effects {
    state.jobs.truth = None;
    state.ui.message = Some(match outcome {
        Ok(done) | Err(done) => done,
    });
    Effects::redraw()
}

/// The request for the selected episode group, or why its truth cannot be measured.
fn request(state: &State) -> Result<TruthJobRequest, String> {
    let domain = &state.domain;
    let run = &domain.run;
    let group =
        domain.derived.table.episode_groups.get(state.ui.sel.group as usize).ok_or("no episode group is selected")?;
    let first = *group.episodes.first().ok_or("the selected group has no episodes")?;
    let iteration = domain.episodes[first as usize].iteration;
    branchable_among(run, domain.episodes.iter().map(|e| e.iteration), iteration).map_err(|e| e.to_string())?;
    let run_name = truth_run_name(&run.dir, run.meta.as_ref());
    let existing = read_truth(&truth_path(&run.dir, iteration), &run_name, iteration).ok();
    // The iteration's episodes, read back from the run's file for the agreements.
    let mut episodes = (0..domain.episodes.len())
        .filter(|&e| domain.episodes[e].iteration == iteration)
        .map(|e| {
            domain
                .episode(e)
                .map(|ep| Episode::clone(&ep))
                .map_err(|err| format!("reading the iteration's episodes back: {err}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    crate::env::fill_page_anchors(&mut episodes, crate::env::page_anchor(run));
    Ok(TruthJobRequest {
        run_dir: run.dir.clone(),
        run_name,
        iteration,
        group: group.name.clone(),
        rollouts: existing.as_ref().map_or(DEFAULT_ROLLOUTS, |f| f.header.rollouts),
        seed: existing.as_ref().map_or(0, |f| f.header.seed),
        episodes,
        settings: domain.recorded,
    })
}

/// The job: measure (the training plugin is loaded here, on first use) and merge; the message that ends it.
pub fn run(request: &TruthJobRequest, ctx: &JobContext) -> Msg {
    let outcome = measure(request, ctx.cancel_flag(), &mut |p| {
        ctx.progress(JobKind::Truth { states: p.states_done, continuations: p.continuations });
    });
    Msg::Truth(match outcome {
        Err(_) if ctx.cancelled() => Err(format!("truth of group {}: cancelled", request.group)),
        other => other,
    })
}

/// The measurement and the merge into the iteration's file; what was written.
fn measure(
    request: &TruthJobRequest,
    cancel: &AtomicBool,
    progress: &mut dyn FnMut(&TruthProgress),
) -> Result<String, String> {
    let training = Training::load().map_err(|e| e.to_string())?;
    let measured = training.truth_of_group(
        &request.run_dir,
        request.iteration,
        &request.group,
        request.rollouts,
        request.seed,
        progress,
        cancel,
    )?;
    if cancel.load(Ordering::SeqCst) {
        return Err("cancelled".into());
    }
    let path = truth_path(&request.run_dir, request.iteration);
    let existing = if path.exists() {
        // A file that is not this iteration's truth is left alone rather than replaced.
        Some(read_truth(&path, &request.run_name, request.iteration).map_err(|e| format!("{e}; not overwritten"))?)
    } else {
        None
    };
    let rows = measured.rows.len();
    let divergences = measured.divergences.len();
    // The episodes' page anchors were filled in with the request: the estimators need nothing more.
    let merged = merge(existing, measured, &request.episodes, &request.settings, &EnvInputs::default());
    merged.write(&path).map_err(|e| e.to_string())?;
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
