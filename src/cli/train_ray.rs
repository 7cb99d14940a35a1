//! `gigscope train --backend ray`: the burst as a job on a Ray cluster, through its dashboard's Job Submission
//! API. The job is recorded in the run's `run.json` before it is submitted, its log is streamed to stderr,
//! Ctrl-C stops the job, and the exit status is the job's outcome (0 succeeded, 130 stopped, 1 failed).
//!
//! Without `--profile` the job's entrypoint is this very `gigscope` with the same arguments (less the ones that
//! choose the backend), run from this directory: the job runs where the Ray head is, so this suits one
//! machine and the tests. A profile (`[burst.profiles.NAME]` in the config file) names another trainer and how
//! the settings map onto its keys.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Context;

use crate::ray_job::burst::new_job_id;
use crate::ray_job::profile::settings_of;
use crate::ray_job::{render_command, Backend, BurstProfile, BurstTable, JobSpec, JobState, RayBurst, RayClient};

/// The flags that choose where the burst runs; they are not passed on to the job's own `gigscope train`.
const BACKEND_FLAGS: [&str; 4] = ["--backend", "--address", "--profile", "--config"];
/// The run-shape flags passed to a profile's trainer when they are given (with `--iterations`, always).
const SHAPE_FLAGS: [(&str, &str); 4] =
    [("--seed", "seed"), ("--group-size", "group_size"), ("--goals", "goals"), ("--step-limit", "step_limit")];

/// Where `gigscope train` is asked to run the burst: its `--backend`, `--address`, `--profile` and `--config`.
pub struct Target<'a> {
    pub backend: Option<Backend>,
    pub address: Option<&'a str>,
    pub profile: Option<&'a str>,
    pub config: Option<&'a Path>,
}

/// The burst's own flags that a profile's trainer receives as settings.
pub struct BurstFlags<'a> {
    pub run: &'a Path,
    pub iterations: u64,
    pub advantage: crate::advantage::AdvantageOverrides,
}

/// The backend asked for: `--backend`, else the profile's, else in-process; with the profile when one is named.
pub fn backend(target: &Target) -> anyhow::Result<(Backend, Option<(String, BurstProfile)>)> {
    let Some(name) = target.profile else { return Ok((target.backend.unwrap_or_default(), None)) };
    let file = match target.config {
        Some(file) => file.to_path_buf(),
        None => {
            crate::tui::config::default_path().context("no config file: neither XDG_CONFIG_HOME nor HOME is set")?
        }
    };
    let text = std::fs::read_to_string(&file).with_context(|| format!("cannot read {}", file.display()))?;
    let profile = BurstTable::from_config_text(&text, &file)?.profile(name, &file)?.clone();
    Ok((target.backend.unwrap_or(profile.backend), Some((name.to_string(), profile))))
}

/// `words`: the command line as given (program name first), for the job's own `gigscope train`.
pub fn run(
    target: &Target,
    profile: Option<(String, BurstProfile)>,
    flags: BurstFlags,
    words: &[OsString],
) -> anyhow::Result<ExitCode> {
    let (name, profile) = profile.unwrap_or_else(|| ("default".to_string(), BurstProfile::default()));
    let address = target.address.map(str::to_string).or_else(|| profile.address.clone()).with_context(|| {
        format!("--backend ray needs the Ray dashboard's address: --address http://HOST:8265 (or `address` in profile {name:?})")
    })?;
    let client = RayClient::new(&address)?;
    let words: Vec<String> = words.iter().map(|w| w.to_string_lossy().into_owned()).collect();
    let forwarded = forwarded_args(words.get(1..).unwrap_or_default());
    let settings = settings_of(&serde_json::to_value(&flags.advantage)?, &shape_settings(flags.iterations, &words));
    let gigscope = std::env::current_exe().context("cannot tell where this gigscope binary is")?;
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let run_dir = absolute(&cwd, flags.run);
    let command = render_command(&name, &profile, &settings, &run_dir, &gigscope, &forwarded, &cwd)?;
    let mut metadata = serde_json::Map::new();
    metadata.insert("gigscope_profile".into(), name.clone().into());
    metadata.insert("gigscope_run".into(), run_dir.display().to_string().into());
    let mut runtime_env = profile.runtime_env();
    if profile.entrypoint.is_none() {
        crate::ray_job::profile::forward_gigscope_env(&mut runtime_env);
    }
    let burst = RayBurst {
        profile: name,
        run: run_dir,
        settings,
        spec: JobSpec { entrypoint: command, submission_id: new_job_id(), runtime_env, metadata },
    };
    burst.submit(&client)?;
    let id = &burst.spec.submission_id;
    eprintln!("submitted Ray job {id} to {address}: {}", burst.spec.entrypoint);

    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst)).context("cannot install the Ctrl-C handler")?;
    let outcome = burst.watch(&client, &stop, |line| eprintln!("{line}"))?;
    burst.check(&client, &outcome)?;
    match outcome.state {
        JobState::Stopped => {
            eprintln!("Ray job {id} stopped; the run keeps what it wrote ({})", burst.run.display());
            Ok(ExitCode::from(130))
        }
        _ => {
            println!("Ray job {id} succeeded; run in {}", burst.run.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The arguments after the program's name, less the backend's flags (`--flag VALUE` and `--flag=VALUE`).
fn forwarded_args(words: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip_value = false;
    for word in words {
        if std::mem::take(&mut skip_value) {
            continue;
        }
        let flag = word.split('=').next().unwrap_or(word);
        if BACKEND_FLAGS.contains(&flag) {
            skip_value = !word.contains('=');
            continue;
        }
        out.push(word.clone());
    }
    out
}

/// `iterations` and the run-shape flags the command line gives, by gigscope's setting names.
fn shape_settings(iterations: u64, words: &[String]) -> Vec<(&'static str, String)> {
    let mut shape = vec![("iterations", iterations.to_string())];
    for (flag, name) in SHAPE_FLAGS {
        let given = words.iter().enumerate().find_map(|(i, w)| match w.strip_prefix(flag) {
            Some("") => words.get(i + 1).cloned(),
            Some(rest) => rest.strip_prefix('=').map(str::to_string),
            None => None,
        });
        if let Some(value) = given {
            shape.push((name, value));
        }
    }
    shape
}

fn absolute(cwd: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        cwd.join(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn the_backend_flags_are_not_passed_on_and_the_shape_flags_given_are_settings() {
        let given = words("train --backend ray --address=http://h:8265 --run r --profile p --seed 3 --goals=4");
        assert_eq!(forwarded_args(&given), words("train --run r --seed 3 --goals=4"));
        let shape = shape_settings(20, &given);
        assert_eq!(shape, vec![("iterations", "20".into()), ("seed", "3".into()), ("goals", "4".into())]);
    }
}
