//! `gigscope state RUN --anchor A`: one anchor state across training (issue 26 item 3), iteration by iteration
//! ([`crate::advantage::timeline`]): its visits, the actions taken there, their advantages, and A* where the
//! iteration's truth file measured the row.
//!
//! `A` is `EPISODE:STEP` (a row of the run: its anchor key is the state's) or an anchor key itself (the step's
//! anchor, else its observation, as the engine's exact anchors compare them). The state is the same across
//! iterations when the anchor key is.

use std::collections::{BTreeSet, HashMap};
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use serde::Serialize;

use super::estimate::estimate;
use super::flags::{FamilyFlags, SettingsFlags, TableOrJson as Format};
use super::source::SourceFlags;
use crate::advantage::timeline::{timeline, IterationAtState, StateVisit};
use crate::run::truth::{read_truth, truth_path, RunIdentity};
use crate::run::Run;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory (gigscope-run/1, a verl rollout dump or a TRL completions log).
    pub run: PathBuf,
    /// The state: EPISODE:STEP (a row's anchor state) or an anchor key.
    #[arg(long)]
    pub anchor: String,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub source: SourceFlags,
    #[command(flatten)]
    pub settings: SettingsFlags,
    #[command(flatten)]
    pub family: FamilyFlags,
}

/// `state --format json`.
#[derive(Serialize)]
struct StateOut {
    run: String,
    anchor: String,
    /// The row the state was named by, where it was (`EPISODE:STEP`).
    from_row: Option<String>,
    iterations: Vec<IterationAtState>,
    visits: Vec<StateVisit>,
}

/// The anchor key `arg` names in `run`: a row's (`EPISODE:STEP`) where one is so named, else `arg` itself.
fn anchor_key<'a>(run: &'a Run, arg: &'a str) -> (&'a str, Option<String>) {
    let row = arg.rsplit_once(':').and_then(|(episode, step)| {
        let step: usize = step.parse().ok()?;
        run.episodes.iter().find(|e| e.id == episode)?.steps.get(step)
    });
    match row {
        Some(step) => (step.anchor_key(), Some(arg.to_owned())),
        None => (arg, None),
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let run = args.source.open_anchored(&args.run)?;
    let (settings, table) = estimate(&run, &args.settings, &args.family)?;
    let (key, from_row) = anchor_key(&run, &args.anchor);
    let mut visits = Vec::new();
    for (e, episode) in run.episodes.iter().enumerate() {
        let rows = table.episode_rows(e);
        for (t, (step, row)) in episode.steps.iter().zip(rows).enumerate() {
            if step.anchor_key() == key {
                visits.push(StateVisit {
                    iteration: episode.iteration,
                    episode: episode.id.clone(),
                    step: t as u32,
                    action: settings.action.extract(&step.action).to_owned(),
                    advantage: row.advantage,
                    step_advantage: row.step_advantage,
                    a_star: None,
                });
            }
        }
    }
    anyhow::ensure!(
        !visits.is_empty(),
        "{}: no row is at the anchor {:?} (give EPISODE:STEP of a row, or an anchor key exactly)",
        run.dir.display(),
        args.anchor
    );
    add_truth(&run, &mut visits);
    let out = StateOut {
        run: run.dir.display().to_string(),
        anchor: key.to_owned(),
        from_row,
        iterations: timeline(&visits),
        visits,
    };
    let written = match args.format {
        Format::Json => writeln!(io::stdout().lock(), "{}", serde_json::to_string_pretty(&out)?),
        Format::Table => write_table(&mut io::stdout().lock(), &out),
    };
    match written {
        Err(err) if err.kind() != io::ErrorKind::BrokenPipe => Err(err.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// A* of each visit from its iteration's truth file, where there is one (one that cannot be read is named on
/// stderr and left out).
fn add_truth(run: &Run, visits: &mut [StateVisit]) {
    let identity = RunIdentity::of(&run.dir, run.meta.as_ref());
    let iterations: BTreeSet<i64> = visits.iter().map(|v| v.iteration).collect();
    let mut a_star: HashMap<(String, u32), f64> = HashMap::new();
    for i in iterations {
        let path = truth_path(&run.dir, i);
        if !path.is_file() {
            continue;
        }
        match read_truth(&path, &identity, i) {
            Ok(truth) => a_star.extend(truth.rows.iter().map(|r| ((r.episode.clone(), r.step as u32), r.a_star))),
            Err(err) => eprintln!("warning: {err}"),
        }
    }
    for v in visits {
        v.a_star = a_star.get(&(v.episode.clone(), v.step)).copied();
    }
}

fn write_table(out: &mut impl Write, o: &StateOut) -> io::Result<()> {
    let shown: String = o.anchor.chars().take(100).collect();
    let cut = if shown.len() < o.anchor.len() { "…" } else { "" };
    writeln!(out, "{}: anchor state {:?}{cut}", o.run, shown)?;
    for it in &o.iterations {
        writeln!(
            out,
            "\niteration {}: {} visits in {} episodes, mean A {:+.3}, {} with A*",
            it.iteration, it.visits, it.episodes, it.mean_advantage, it.measured
        )?;
        writeln!(
            out,
            "  {:<40} {:>5} {:>6} {:>9} {:>9} {:>9}",
            "action", "rows", "share", "mean A", "mean A_S", "mean A*"
        )?;
        for a in &it.actions {
            let action: String = a.action.chars().take(40).collect();
            writeln!(
                out,
                "  {action:<40} {:>5} {:>5.0}% {:>+9.3} {:>+9.3} {:>9}",
                a.count,
                100.0 * a.share,
                a.mean_advantage,
                a.mean_step_advantage,
                a.mean_a_star.map_or_else(|| "-".into(), |v| format!("{v:+.3}"))
            )?;
        }
    }
    Ok(())
}
