//! `gigscope validate RUN`: every broken line of the run's files with its number and reason; exit 1 if any.

use std::path::PathBuf;
use std::process::ExitCode;

use crate::run::{Run, EPISODES_FILE, METRICS_FILE};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory.
    pub run: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // A missing directory, a missing episodes file or a bad run.json is an error (exit status 1 as well).
    let run = Run::open(&args.run)?;
    // Broken lines and duplicate ids of episodes.jsonl, reported together in line order.
    let mut problems: Vec<(u64, String)> = run.errors.iter().map(|e| (e.line, e.reason.clone())).collect();
    let mut seen = std::collections::HashMap::new();
    for (episode, &line) in run.episodes.iter().zip(&run.episode_lines) {
        if let Some(first) = seen.insert(episode.id.as_str(), line) {
            problems.push((line, format!("duplicate episode id {:?} (first on line {first})", episode.id)));
        }
    }
    let episodes = args.run.join(EPISODES_FILE);
    let metrics = args.run.join(METRICS_FILE);
    problems.sort_by_key(|(line, _)| *line);
    for (line, reason) in &problems {
        println!("{}:{line}: {reason}", episodes.display());
    }
    for e in &run.metrics_errors {
        println!("{}:{}: {}", metrics.display(), e.line, e.reason);
    }
    let broken = problems.len() + run.metrics_errors.len();
    eprintln!(
        "{}: {} episode(s), {} metrics record(s), {} broken line(s)",
        args.run.display(),
        run.episodes.len(),
        run.metrics.len(),
        broken
    );
    Ok(if broken == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
