//! `gigscope validate RUN`: what the run holds and every problem found reading it.
//!
//! Contract: the report (what was read, how many problems of each kind, the reader's notes) goes to standard
//! output, so `validate RUN > report.txt` keeps it; each problem goes to standard error, one a line, named by
//! file and line: broken lines (duplicate ids among them: every reader skips those), files or parts of files
//! that could not be read (skipped), an unfinished last line that has stopped growing (a torn tail), and
//! groups cut short by a writer that stopped (partial groups). The exit status is 0 when there is no problem,
//! 1 when there is any. The run is streamed ([`Run::stream_as`]): each episode is counted and dropped, so memory
//! grows with a part of the run and with the ids and groups met, not with the run's text.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::source::SourceFlags;
use crate::run::{GroupSizes, Run, RunMeta, EPISODES_FILE, METRICS_FILE};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory (gigscope-run/1, a verl rollout dump or a TRL completions log).
    pub run: PathBuf,
    #[command(flatten)]
    pub source: SourceFlags,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    // A missing directory or a missing episodes file is an error (exit status 1 as well).
    let (mut episodes, mut groups) = (0, GroupSizes::default());
    let run = Run::stream_as(&args.run, args.source.from, &args.source.options(), |_, read| {
        episodes += read.len();
        for episode in &read {
            groups.add(&episode.group, episode.iteration);
        }
    })?;
    let read = Read { run, episodes, groups };
    let problems = problems(&args, &read);
    let mut err = std::io::stderr().lock();
    for problem in &problems.lines {
        writeln!(err, "{problem}")?;
    }
    report(&args, &read, &problems, &mut std::io::stdout().lock()).context("writing the report to standard output")?;
    Ok(if problems.lines.is_empty() { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// The run as streamed: all but its episodes, which were counted.
struct Read {
    run: Run,
    episodes: usize,
    groups: GroupSizes,
}

/// Every problem, one line each, and how many of each kind.
struct Problems {
    lines: Vec<String>,
    broken: usize,
    skipped: usize,
    torn: usize,
    partial: usize,
    /// The problems' own texts among the run's notices (the reader says them as notes too).
    said: Vec<String>,
}

fn problems(args: &Args, read: &Read) -> Problems {
    let run = &read.run;
    let episodes = args.run.join(EPISODES_FILE);
    let file_of = |file: Option<&str>| file.map_or_else(|| episodes.clone(), |f| args.run.join(f));
    // Broken lines in file and line order.
    let mut broken: Vec<(PathBuf, u64, String)> =
        run.errors.iter().map(|e| (file_of(e.file.as_deref()), e.line, e.reason.clone())).collect();
    broken.sort();
    let metrics = args.run.join(METRICS_FILE);
    let mut lines: Vec<String> =
        broken.iter().map(|(file, line, reason)| format!("{}:{line}: {reason}", file.display())).collect();
    lines.extend(run.metrics_errors.iter().map(|e| format!("{}:{}: {}", metrics.display(), e.line, e.reason)));
    let mut said = Vec::new();
    for skipped in &run.skipped {
        lines.push(format!("{}: skipped: {}", args.run.join(&skipped.file).display(), skipped.reason));
        said.push(skipped.to_string());
    }
    if let Some(tail) = &run.torn_tail {
        lines.push(format!("{}:{}: torn tail: {tail}", args.run.join(&tail.file).display(), tail.line));
        said.push(tail.to_string());
    }
    let partial = read.groups.partial(&run.meta.as_ref().map(RunMeta::group_sizes).unwrap_or_default());
    for group in &partial {
        lines.push(format!("{}: {group}", episodes.display()));
    }
    Problems {
        broken: broken.len() + run.metrics_errors.len(),
        skipped: run.skipped.len(),
        torn: usize::from(run.torn_tail.is_some()),
        partial: partial.len(),
        lines,
        said,
    }
}

fn report(args: &Args, read: &Read, problems: &Problems, out: &mut impl Write) -> std::io::Result<()> {
    let run = &read.run;
    let notes: Vec<&String> = run.notices.iter().filter(|n| !problems.said.contains(n)).collect();
    writeln!(out, "{}", args.run.display())?;
    writeln!(out, "  layout           {}", run.layout.name())?;
    writeln!(out, "  episodes         {} in {} group(s)", read.episodes, read.groups.len())?;
    writeln!(out, "  metrics records  {}", run.metrics.len())?;
    writeln!(out, "  broken lines     {}", problems.broken)?;
    writeln!(out, "  skipped files    {}", problems.skipped)?;
    writeln!(out, "  torn tail        {}", if problems.torn > 0 { "yes" } else { "none" })?;
    writeln!(out, "  partial groups   {}", problems.partial)?;
    writeln!(out, "  notes            {}", notes.len())?;
    for note in notes {
        writeln!(out, "    {note}")?;
    }
    match problems.lines.len() {
        0 => writeln!(out, "ok: no problems"),
        n => writeln!(out, "{n} problem(s), listed on standard error"),
    }
}
