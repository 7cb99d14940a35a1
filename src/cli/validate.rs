//! `gigscope validate RUN`: every broken line of the run's files with its number and reason; exit 1 if any.

use std::path::PathBuf;
use std::process::ExitCode;

use super::source::SourceFlags;
use crate::run::{Run, EPISODES_FILE, METRICS_FILE};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory (gigscope-run/1, a verl rollout dump or a TRL completions log).
    pub run: PathBuf,
    #[command(flatten)]
    pub source: SourceFlags,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // A missing directory, a missing episodes file or a bad run.json is an error (exit status 1 as well).
    let run = Run::open_as(&args.run, args.source.from, &args.source.options())?;
    // Broken lines of the episodes (duplicate ids among them: the reader skips those as every reader does),
    // in file and line order.
    let episodes = args.run.join(EPISODES_FILE);
    let file_of = |file: Option<&str>| file.map_or_else(|| episodes.clone(), |f| args.run.join(f));
    let mut problems: Vec<(PathBuf, u64, String)> =
        run.errors.iter().map(|e| (file_of(e.file.as_deref()), e.line, e.reason.clone())).collect();
    let metrics = args.run.join(METRICS_FILE);
    problems.sort();
    for (file, line, reason) in &problems {
        println!("{}:{line}: {reason}", file.display());
    }
    for notice in &run.notices {
        println!("{}: {notice}", args.run.display());
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
