//! The `gigscope` command line. Each subcommand lives in its own file with its `Args` and `run`.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod advantages;
mod aliasing;
pub mod api;
mod audit;
mod convert;
mod estimate;
mod flags;
mod render;
mod rows;
mod search;
mod source;
mod state;
mod stats;
mod stream;
mod stream_layouts;
mod tokens;
mod train;
mod train_ray;
mod truth;
mod tui;
mod validate;
mod webshop;

#[derive(Parser, Debug)]
#[command(name = "gigscope", version, about = "GiGPO advantages beside WebShop episodes: inspect, play, train, watch")]
#[command(args_conflicts_with_subcommands = true)]
pub struct Cli {
    /// Open the TUI on this run directory (same as `gigscope tui RUN`, with the same options).
    pub run: Option<PathBuf>,
    #[command(flatten)]
    pub view: tui::ViewArgs,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Interactive terminal UI on a run directory.
    Tui(tui::Args),
    /// Recompute advantages for every step of a run.
    Advantages(advantages::Args),
    /// Group statistics of a run.
    Stats(stats::Args),
    /// Write any run gigscope reads (verl dump, TRL log, ...) as a gigscope-run/1 directory.
    Convert(convert::Args),
    /// Report every broken line of a run; exit 1 if any.
    Validate(validate::Args),
    /// Search a run's trajectories (fielded terms, numeric ranges).
    Search(search::Args),
    /// The in-process WebShop environment.
    #[command(subcommand)]
    Webshop(webshop::Command),
    /// Train a policy with GiGPO on WebShop, writing a run directory (loads the training plugin).
    Train(Box<train::Args>),
    /// Monte-Carlo ground truth at an iteration's anchor states, and each estimator's agreement with it
    /// (loads the training plugin).
    Truth(truth::Args),
    /// One row per token of an episode's steps: ids, text, mask, every recorded channel, KL and mismatch.
    Tokens(tokens::Args),
    /// What the TUI shows (an episode with a step's anchor group and formula, or the overview) as SVG or HTML.
    Render(render::Args),
    /// What an iteration's update reinforces: advantage mass per behaviour, the top pushed up and down.
    Audit(audit::Args),
    /// One anchor state across training: visits, actions taken, their advantages and A* per iteration.
    State(state::Args),
}

/// Entry point of the binary: parse, dispatch, print errors with their causes.
pub fn main() -> ExitCode {
    main_with(std::env::args_os())
}

/// [`main`] on the words `args` (the first one the program's name) instead of the process's: the entry point
/// of a program that embeds the command line (the Python package's `gigscope` command, whose process is the
/// Python interpreter). Help, version and a usage error exit the process as in the binary.
pub fn main_with<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let words: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let cli = Cli::parse_from(&words);
    if cli.command.as_ref().is_some_and(Command::prints_to_stdout) {
        end_quietly_on_closed_stdout();
    }
    let result = match cli.command {
        Some(Command::Tui(args)) => tui::run(args),
        Some(Command::Advantages(args)) => advantages::run(args),
        Some(Command::Stats(args)) => stats::run(args),
        Some(Command::Validate(args)) => validate::run(args),
        Some(Command::Convert(args)) => convert::run(args),
        Some(Command::Search(args)) => search::run(args),
        Some(Command::Webshop(cmd)) => webshop::run(cmd),
        Some(Command::Train(args)) => train::run(*args, &words),
        Some(Command::Truth(args)) => truth::run(args),
        Some(Command::Tokens(args)) => tokens::run(args),
        Some(Command::Render(args)) => render::run(args),
        Some(Command::Audit(args)) => audit::run(args),
        Some(Command::State(args)) => state::run(args),
        None => match cli.run {
            Some(run) => tui::run(tui::Args { run, view: cli.view }),
            None => {
                use clap::CommandFactory;
                let _ = Cli::command().print_help();
                return ExitCode::from(2);
            }
        },
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {}", error_message(&err));
            ExitCode::FAILURE
        }
    }
}

impl Command {
    /// The one-shot commands whose output is read by another program (`| head`, `| jq`); the TUI and the
    /// commands that train keep Rust's default, an error on a closed pipe.
    fn prints_to_stdout(&self) -> bool {
        matches!(
            self,
            Command::Advantages(_)
                | Command::Stats(_)
                | Command::Convert(_)
                | Command::Validate(_)
                | Command::Search(_)
                | Command::Webshop(_)
                | Command::Audit(_)
                | Command::State(_)
        )
    }
}

/// A reader that closes standard output early (`gigscope advantages RUN | head -1`) ends the process quietly,
/// as `cat` or `grep` end, instead of `println!` panicking on the broken pipe.
fn end_quietly_on_closed_stdout() {
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to its default at start-up, before any thread is started.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// An error and its causes on one line, each cause once: a cause whose text its parent already quotes (an
/// I/O error wrapped as "path: reason") is not repeated.
fn error_message(err: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if message.contains(&text) {
            continue;
        }
        if !message.is_empty() {
            message.push_str(": ");
        }
        message.push_str(&text);
    }
    message
}
