//! `gigscope truth`: Monte-Carlo ground truth at every step row's own state in one iteration of a run gigscope
//! trained, every estimator's agreement with it (issue 12 §2), and the anchor aliasing it reveals (issue 26). The continuations need the iteration's policy, so
//! they run in the training plugin ([`Training::truth`]); what can be checked without it (the run was trained
//! by gigscope, the iteration exists and kept its weights) is checked first, so those errors need no libtorch.

use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressStyle};

use super::aliasing;
use super::source::SourceFlags;
use crate::advantage::AdvantageSettings;
use crate::plugin_host::{Training, TruthGroups, TruthProgress, TruthRequest};
use crate::run::truth::{branchable, truth_path, TruthFile};

/// `--groups`: `all`, or how many episode groups to sample.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupsArg(TruthGroups);

impl FromStr for GroupsArg {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text.eq_ignore_ascii_case("all") {
            return Ok(GroupsArg(TruthGroups::All));
        }
        match text.parse::<usize>() {
            Ok(n) if n > 0 => Ok(GroupsArg(TruthGroups::Sample { n })),
            _ => Err(format!("{text:?} is neither `all` nor a positive number of episode groups")),
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory, trained by `gigscope train`.
    pub run: PathBuf,
    /// The iteration whose anchor states are measured (its episodes and its stored policy).
    #[arg(long)]
    pub iteration: i64,
    /// K: continuations per state and per action taken there (at least 2).
    #[arg(long, default_value_t = 32)]
    pub rollouts: usize,
    /// Episode groups: `all`, or N for a sample of N drawn with --seed.
    #[arg(long, default_value = "all")]
    pub groups: GroupsArg,
    /// Seed of the sample and of the continuations: the same seed gives the same file.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output file [default: RUN/truth/iteration-<I>.jsonl].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Worker threads, one episode group each at a time (0: every core).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.rollouts < 2 {
        anyhow::bail!(
            "--rollouts must be at least 2 (a standard error needs two continuations), got {}",
            args.rollouts
        );
    }
    let run = SourceFlags::default().open_anchored(&args.run)?;
    branchable(&run, args.iteration)?;
    let out = args.out.clone().unwrap_or_else(|| truth_path(&args.run, args.iteration));
    let training = Training::load()?;

    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    ctrlc::set_handler(move || flag.store(true, Ordering::SeqCst)).context("cannot install the Ctrl-C handler")?;
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("truth [{bar:30}] {pos}/{len} groups {elapsed_precise} {msg}")
            .context("progress bar template")?
            .progress_chars("=> "),
    );
    let request = TruthRequest {
        run: args.run.clone(),
        iteration: args.iteration,
        rollouts: args.rollouts,
        groups: args.groups.0.clone(),
        seed: args.seed,
        threads: args.threads,
    };
    let mut last = TruthProgress::default();
    let result = training.truth(&request, &cancel, |p| {
        last = p.clone();
        bar.set_length(p.groups as u64);
        bar.set_position(p.groups_done as u64);
        bar.set_message(format!("{} states, {} continuations", p.states_done, p.continuations));
    });
    bar.finish_and_clear();
    let file = match result {
        Err(_) if cancel.load(Ordering::SeqCst) => {
            eprintln!("cancelled: nothing written");
            return Ok(ExitCode::from(130));
        }
        other => other.map_err(anyhow::Error::msg)?,
    };
    file.write(&out)?;
    report(&file, &last, &out);
    let settings = run
        .meta
        .as_ref()
        .and_then(|m| m.advantage.as_ref())
        .map_or_else(AdvantageSettings::default, |o| o.apply(AdvantageSettings::default()));
    let figures = aliasing::measure(&run.episodes, &settings, &file);
    match aliasing::write(&mut std::io::stdout().lock(), &figures) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => return Err(err.into()),
        _ => {}
    }
    Ok(ExitCode::SUCCESS)
}

/// What was measured, each divergence, and the agreement table.
fn report(file: &TruthFile, progress: &TruthProgress, out: &std::path::Path) {
    let h = &file.header;
    println!(
        "{}: iteration {}, {} of {} episode groups, {} distinct states, {} step rows, K = {}, {} continuations -> {}",
        h.run,
        h.iteration,
        h.groups.len(),
        h.groups_in_iteration,
        progress.states_done,
        file.rows.len(),
        h.rollouts,
        progress.continuations,
        out.display()
    );
    for d in &file.divergences {
        eprintln!(
            "divergence: episode {} step {}: the environment did not reproduce the recorded observation \
             (recorded {:?}, replayed {:?}); its rows from that step on have no truth",
            d.episode,
            d.step,
            clip(&d.recorded),
            clip(&d.replayed)
        );
    }
    println!("{:<10} {:>6} {:>9} {:>6} {:>9} {:>9}", "estimator", "rows", "spearman", "sign", "scale", "rmse");
    let num = |v: Option<f64>, digits: usize| v.map_or_else(|| "-".to_string(), |v| format!("{v:.digits$}"));
    for a in &file.agreements {
        match &a.error {
            Some(error) => println!("{:<10} {error}", a.estimator),
            None => println!(
                "{:<10} {:>6} {:>9} {:>6} {:>9} {:>9}",
                a.estimator,
                a.rows,
                num(a.spearman, 3),
                num(a.sign_agreement, 3),
                num(a.scale, 3),
                num(a.rmse, 4)
            ),
        }
    }
}

/// The first 80 characters of an observation, for a one-line message.
fn clip(text: &str) -> String {
    let mut out: String = text.chars().take(80).collect();
    if out.len() < text.len() {
        out.push('…');
    }
    out
}
