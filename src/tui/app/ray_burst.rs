//! A training burst as a Ray job, run by the app's job runner: submitted (recorded in the run's `bursts`
//! first), followed with each log line sent to `update`, stopped when the job is cancelled (`X`: the runner's
//! flag is the one [`RayBurst::watch`] reads), and its outcome reported: succeeded, stopped, failed with its
//! log's tail, or why it could not be submitted (an unreachable dashboard, a refusal). Nothing else in the TUI
//! depends on it.

use crate::ray_job::burst::new_job_id;
use crate::ray_job::profile::forward_gigscope_env;
use crate::ray_job::{BurstError, JobSpec, JobState, RayBurst, RayClient};
use crate::tui::burst_dialog::{BurstUpdate, RayPlan};
use crate::tui::msg::Msg;
use crate::tui::runner::{JobContext, Outcome, Runner};
use crate::tui::state::JobKind;

/// Start the Ray burst `plan` as a job.
pub(super) fn start(runner: &mut Runner, plan: RayPlan) {
    runner.spawn(JobKind::RayJob, move |ctx| {
        Outcome::Msg(Msg::Burst(match follow(ctx, plan) {
            Ok(how) => BurstUpdate::RayEnded(how),
            Err(e) => BurstUpdate::Failed(e.to_string()),
        }))
    });
}

/// The job's life; how it ended when it ran to an end.
fn follow(ctx: &JobContext, plan: RayPlan) -> Result<String, BurstError> {
    let client = RayClient::new(&plan.address)?;
    let mut runtime_env = plan.runtime_env;
    if plan.own_train {
        forward_gigscope_env(&mut runtime_env);
    }
    let mut metadata = serde_json::Map::new();
    metadata.insert("gigscope_profile".into(), plan.profile.clone().into());
    metadata.insert("gigscope_run".into(), plan.run.display().to_string().into());
    let burst = RayBurst {
        profile: plan.profile,
        run: plan.run,
        settings: plan.settings,
        spec: JobSpec { entrypoint: plan.command, submission_id: new_job_id(), runtime_env, metadata },
    };
    burst.submit(&client)?;
    let job_id = burst.spec.submission_id.clone();
    ctx.send(Msg::Burst(BurstUpdate::RaySubmitted { job_id: job_id.clone(), address: plan.address }));
    let outcome =
        burst.watch(&client, ctx.cancel_flag(), |line| ctx.send(Msg::Burst(BurstUpdate::Log(line.into()))))?;
    burst.check(&client, &outcome)?;
    Ok(match outcome.state {
        JobState::Stopped => format!("stopped: Ray job {job_id} (the run keeps what it wrote)"),
        state => format!("{}: Ray job {job_id}", state.name().to_lowercase()),
    })
}
