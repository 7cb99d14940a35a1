//! The truth measurement's part of `update` (`T` in the estimators and anchor-group views, its progress and its
//! end): the request for the open group ([`super::truth_job`] measures it as a job), and what the views say.

use crate::run::truth::{branchable_among, read_truth, truth_path, truth_run_name};
use crate::run::Episode;

use super::action::Action;
use super::msg::{Effect, Effects};
use super::state::{JobKind, State};
use super::truth_job::{TruthJobError, TruthJobRequest, TruthStatus, DEFAULT_ROLLOUTS};

/// `T`: start measuring the open group's truth, or cancel the measurement under way.
pub fn toggle(state: &mut State) -> Effects {
    if let Some(status) = state.jobs.truth.as_mut() {
        status.cancelling = true;
        state.ui.message = Some(format!("cancelling the truth of group {} …", status.group));
        return Effects::redraw_and(Effect::CancelTruth);
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
            Effects::redraw_and(Effect::Truth(Box::new(request)))
        }
        Err(why) => {
            state.ui.message = Some(why.to_string());
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
pub fn finished(state: &mut State, outcome: Result<String, TruthJobError>) -> Effects {
    state.jobs.truth = None;
    state.ui.message = Some(match outcome {
        Ok(done) => done,
        Err(e) => e.to_string(),
    });
    Effects::redraw()
}

/// The request for the selected episode group, or why its truth cannot be measured.
fn request(state: &State) -> Result<TruthJobRequest, TruthJobError> {
    let domain = &state.domain;
    let run = &domain.run;
    let table = &domain.derived.table;
    let g = state.ui.sel.group as usize;
    let members = table.get_group_episodes(g).ok_or(TruthJobError::NoGroup)?;
    let first = members.first().ok_or(TruthJobError::EmptyGroup)?;
    let iteration = domain.episodes.at(first as usize).iteration;
    branchable_among(run, domain.episodes.iter().map(|e| e.iteration), iteration)?;
    let run_name = truth_run_name(&run.dir, run.meta.as_ref());
    let existing = read_truth(&truth_path(&run.dir, iteration), &run_name, iteration).ok();
    // The iteration's episodes, read back from the run's file for the agreements.
    let mut episodes = (0..domain.episodes.len())
        .filter(|&e| domain.episodes.at(e).iteration == iteration)
        .map(|e| domain.read_episode(e).map(|ep| Episode::clone(&ep)).map_err(TruthJobError::ReadBack))
        .collect::<Result<Vec<_>, _>>()?;
    crate::env::fill_page_anchors(&mut episodes, crate::env_registry::page_anchor(run));
    Ok(TruthJobRequest {
        run_dir: run.dir.clone(),
        run_name,
        iteration,
        group: table.episode_groups[g].name.to_string(),
        rollouts: existing.as_ref().map_or(DEFAULT_ROLLOUTS, |f| f.header.rollouts),
        seed: existing.as_ref().map_or(0, |f| f.header.seed),
        episodes,
        settings: domain.recorded,
    })
}
