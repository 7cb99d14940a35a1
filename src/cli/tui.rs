use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory.
    pub run: PathBuf,
}

impl Args {
    pub fn for_run(run: PathBuf) -> Self {
        Args { run }
    }
}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("the TUI is not implemented yet")
}
