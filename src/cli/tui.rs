use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory.
    pub run: PathBuf,
    /// Config file with [keys] and [theme] tables (default: ~/.config/gigscope/config.toml if present).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Start in follow mode: jump to the newest episodes as they are written.
    #[arg(long)]
    pub follow: bool,
    /// How often the run directory is checked for new lines, in milliseconds.
    #[arg(long, default_value_t = 250)]
    pub poll_ms: u64,
}

impl Args {
    pub fn for_run(run: PathBuf) -> Self {
        Args { run, config: None, follow: false, poll_ms: 250 }
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let opts = crate::tui::Options {
        run: args.run.clone(),
        config: args.config,
        follow: args.follow,
        poll_interval: Duration::from_millis(args.poll_ms.max(10)),
    };
    crate::tui::run(opts).with_context(|| format!("gigscope tui {}", args.run.display()))?;
    Ok(ExitCode::SUCCESS)
}
