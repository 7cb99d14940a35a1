//! `gigscope stats RUN`: group statistics of a run under the given advantage settings, and the anchor aliasing
//! of every iteration that has a truth file (`gigscope truth`).

use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use std::collections::BTreeSet;

use super::aliasing::{self, IterationAliasing};
use crate::advantage::reconcile::{reproducing_trl_settings, trl_flags};
use crate::advantage::stats::MISMATCH_TOLERANCE;
use crate::advantage::{run_stats, unrecorded_states, AdvantageSettings, AnchorMode, RunStats, ZeroVariance};
use crate::run::truth::{read_truth, truth_path, RunIdentity};
use crate::run::Run;

use super::estimate::estimate;
use super::flags::{FamilyFlags, SettingsFlags};
use super::source::SourceFlags;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory (gigscope-run/1, a verl rollout dump or a TRL completions log).
    pub run: PathBuf,
    #[command(flatten)]
    pub source: SourceFlags,
    #[command(flatten)]
    pub settings: SettingsFlags,
    #[command(flatten)]
    pub family: FamilyFlags,
    /// Print the statistics as one JSON object.
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let run = args.source.open_anchored(&args.run)?;
    let (settings, table) = estimate(&run, &args.settings, &args.family)?;
    let stats = run_stats(&run.episodes, &table);
    let aliasing = truth_aliasing(&run, &settings);
    let state_fallbacks = (settings.anchor == AnchorMode::State).then(|| unrecorded_states(run.episodes.as_slice()));
    // Groups cut short by a writer that stopped are counted as what they are, not as smaller groups.
    let partial_groups: Vec<PartialGroupOut> = run
        .partial_groups()
        .into_iter()
        .map(|p| PartialGroupOut { group: p.group, iteration: p.iteration, episodes: p.episodes, expected: p.expected })
        .collect();
    // Stored advantages that disagree: the TRL settings that would reproduce them, when a search finds them.
    let mismatched = stats.stored.as_ref().is_some_and(|s| s.mismatched_rows > 0);
    let reproducing = mismatched
        .then(|| reproducing_trl_settings(&run.episodes, &settings))
        .flatten()
        .map(|found| Reproducing { flags: trl_flags(&found) });
    if args.json {
        let out =
            StatsOut { stats: &stats, state_fallbacks, reproducing: reproducing.as_ref(), partial_groups, aliasing };
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        let mut out = io::stdout().lock();
        let written = readable(&mut out, &stats, state_fallbacks)
            .and_then(|()| match &reproducing {
                Some(r) => writeln!(
                    out,
                    "  the stored advantages match `{}`: pass these flags to recompute as the run was trained",
                    r.flags
                ),
                None => Ok(()),
            })
            .and_then(|()| partial_groups.iter().try_for_each(|p| writeln!(out, "partial group   {p}")))
            .and_then(|()| aliasing.iter().try_for_each(|a| aliasing::write(&mut out, a)));
        match written {
            Err(err) if err.kind() != io::ErrorKind::BrokenPipe => return Err(err.into()),
            _ => {}
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `stats --json`: the statistics, and the aliasing of each iteration with a truth file (absent without one).
#[derive(serde::Serialize)]
struct StatsOut<'a> {
    #[serde(flatten)]
    stats: &'a RunStats,
    /// Under `--anchor state`: the rows that record no state, grouped by anchor and step (absent under the others).
    #[serde(skip_serializing_if = "Option::is_none")]
    state_fallbacks: Option<usize>,
    /// The TRL settings that reproduce the stored advantages where the recomputation disagrees (absent else).
    #[serde(skip_serializing_if = "Option::is_none")]
    reproducing: Option<&'a Reproducing>,
    /// Groups cut short by a writer that stopped ([`crate::run::partial_groups`]); absent when there are none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    partial_groups: Vec<PartialGroupOut>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    aliasing: Vec<IterationAliasing>,
}

/// Settings found to reproduce the stored advantages, as the flags that select them.
#[derive(serde::Serialize)]
struct Reproducing {
    flags: String,
}

/// A partial group as `stats` prints it.
#[derive(serde::Serialize)]
struct PartialGroupOut {
    group: String,
    iteration: i64,
    episodes: usize,
    expected: usize,
}

impl std::fmt::Display for PartialGroupOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self { group, iteration, episodes, expected } = self;
        write!(f, "{group} (iteration {iteration}): {episodes} of {expected} episodes, its writer stopped part-way")
    }
}

/// The aliasing of every iteration of `run` whose truth file is there, under `settings`; a truth file that cannot
/// be read (another run's, broken) is named on stderr and left out.
fn truth_aliasing(run: &Run, settings: &AdvantageSettings) -> Vec<IterationAliasing> {
    let identity = RunIdentity::of(&run.dir, run.meta.as_ref());
    let iterations: BTreeSet<i64> = run.episodes.iter().map(|e| e.iteration).collect();
    iterations
        .into_iter()
        .filter_map(|i| {
            let path = truth_path(&run.dir, i);
            if !path.is_file() {
                return None;
            }
            match read_truth(&path, &identity, i) {
                Ok(truth) => Some(aliasing::measure(&run.episodes, settings, &truth)),
                Err(err) => {
                    eprintln!("warning: {err}");
                    None
                }
            }
        })
        .collect()
}

fn percent(share: f64) -> String {
    format!("{:.1}%", 100.0 * share)
}

/// The statistics as an aligned text report.
/// `state_fallbacks`: under `--anchor state`, the rows that record no state.
fn readable(out: &mut impl Write, s: &RunStats, state_fallbacks: Option<usize>) -> io::Result<()> {
    writeln!(out, "episodes          {}", s.episodes)?;
    writeln!(out, "steps             {}", s.steps)?;
    writeln!(out, "episode groups    {}", s.episode_groups)?;
    writeln!(
        out,
        "  zero-variance   {} ({}): episode pools whose scores are all equal or whose std is below the engine's epsilon",
        s.zero_variance_groups,
        percent(s.zero_variance_share)
    )?;
    writeln!(out, "step groups       {}", s.step_groups)?;
    writeln!(out, "  mean size       {:.3}", s.mean_step_group_size)?;
    writeln!(
        out,
        "  singletons      {} ({}): their step advantage is 0",
        s.singleton_step_groups,
        percent(s.singleton_share)
    )?;
    if let Some(n) = state_fallbacks {
        writeln!(out, "  fell back       {n} rows record no state: grouped by anchor and step")?;
    }
    writeln!(out, "\nstep-group sizes")?;
    let largest = s.step_group_sizes.iter().map(|c| c.count).max().unwrap_or(0).max(1);
    for c in &s.step_group_sizes {
        let bar = "#".repeat((40 * c.count).div_ceil(largest));
        writeln!(out, "  {:>4} {:>8}  {bar}", c.size, c.count)?;
    }
    // As wide as the longest group name: a cut name can read the same as another group's.
    let gw = s.groups.iter().map(|g| g.name.chars().count()).max().unwrap_or(0).max(24);
    writeln!(
        out,
        "\n{:<gw$} {:>5} {:>6} {:>8} {:>10} {:>10} {:>7} {:>6}  flags",
        "group", "eps", "steps", "success", "mean", "std", "sgroups", "single"
    )?;
    for g in &s.groups {
        writeln!(
            out,
            "{:<gw$} {:>5} {:>6} {:>8} {:>10.4} {:>10.4} {:>7} {:>6}  {}",
            g.name,
            g.episodes,
            g.steps,
            g.success_rate.map_or("—".into(), percent),
            g.mean,
            g.std,
            g.step_groups,
            g.singleton_step_groups,
            g.zero_variance.map_or("", ZeroVariance::tag)
        )?;
    }
    if let Some(stored) = &s.stored {
        writeln!(out, "\ntrainer advantages: {} rows compared", stored.rows)?;
        if let Some(l) = &stored.largest {
            writeln!(
                out,
                "  largest |stored - recomputed| = {} at episode {} step {} (stored {}, recomputed {})",
                l.abs_diff, l.episode_id, l.at.step, l.stored, l.recomputed
            )?;
        }
        if stored.mismatched_rows > 0 {
            writeln!(
                out,
                "  {} row(s) differ by more than {MISMATCH_TOLERANCE}{}:",
                stored.mismatched_rows,
                if stored.mismatched_rows > stored.mismatches.len() { ", the largest" } else { "" }
            )?;
            for m in &stored.mismatches {
                writeln!(
                    out,
                    "    episode {} step {}: stored {:+.4}, recomputed {:+.4}, delta {:+.4}",
                    m.episode_id,
                    m.at.step,
                    m.stored,
                    m.recomputed,
                    m.stored - m.recomputed
                )?;
            }
        }
        if !stored.length_mismatches.is_empty() {
            writeln!(
                out,
                "  {} episode(s) with one advantage per step missing or extra: {}",
                stored.length_mismatches.len(),
                stored.length_mismatches.join(", ")
            )?;
        }
    }
    out.flush()
}
