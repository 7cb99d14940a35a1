use std::path::PathBuf;
use std::process::ExitCode;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory.
    pub run: PathBuf,
    /// Query, e.g. `action:"buy now" AND success:false AND adv:<-1`.
    pub query: String,
}

pub fn run(_args: Args) -> anyhow::Result<ExitCode> {
    anyhow::bail!("`search` is not implemented yet")
}
