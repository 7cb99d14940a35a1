use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory.
    pub run: PathBuf,
    #[command(flatten)]
    pub view: ViewArgs,
}

/// The TUI's options, shared by `gigscope tui RUN` and the bare `gigscope RUN`.
#[derive(clap::Args, Debug)]
pub struct ViewArgs {
    /// Config file with [keys] and [theme] tables (default: ~/.config/gigscope/config.toml if present).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Start in follow mode: jump to the newest episodes as they are written.
    #[arg(long)]
    pub follow: bool,
    /// Re-read the run directory at least this often, in milliseconds, even when no change event arrives
    /// (file systems where change notification does not work).
    #[arg(long, default_value_t = 1000)]
    pub rescan_ms: u64,
    /// WebShop catalog directory for live play and training bursts (default: the embedded demo catalog).
    #[arg(long, value_name = "DIR")]
    pub catalog: Option<PathBuf>,
    /// Colour theme: dark (the default), light (for a light terminal background) or high-contrast (projectors);
    /// also `preset = "NAME"` under [theme] in the config file.
    #[arg(long, value_name = "NAME", value_parser = ["dark", "light", "high-contrast"])]
    pub theme: Option<String>,
    /// Workshop mode: high-contrast theme (unless --theme or the config names one), wider spacing, and a status
    /// line that names the view and says what the highlighted number means.
    #[arg(long)]
    pub present: bool,
    #[command(flatten)]
    pub source: super::source::SourceFlags,
    /// The advantage settings to open the run with, over those it records (`--scale-rewards batch
    /// --reward-weights 1,2` for a TRL run trained so); the settings panel marks them and `R` puts back the
    /// run's own.
    #[command(flatten)]
    pub settings: super::flags::SettingsFlags,
}

fn watch_options(rescan_ms: u64) -> crate::live::WatchOptions {
    crate::live::WatchOptions { rescan: Duration::from_millis(rescan_ms.max(10)), ..Default::default() }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Args { run, view } = args;
    let opts = crate::tui::Options {
        run: run.clone(),
        config: view.config,
        follow: view.follow,
        watch: watch_options(view.rescan_ms),
        catalog: view.catalog,
        from: view.source.from,
        source: view.source.options(),
        theme: view.theme,
        present: view.present,
        settings: view.settings.overrides()?,
    };
    crate::tui::run(opts).with_context(|| format!("gigscope tui {}", run.display()))?;
    Ok(ExitCode::SUCCESS)
}
