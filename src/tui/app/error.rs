//! Why the app could not start or went on: the config, the run, its watcher, or the terminal.

use crate::live::LiveError;
use crate::run::RunError;
use crate::tui::config::ConfigError;

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Live(#[from] LiveError),
    #[error("advantage settings: {0}")]
    Settings(#[from] crate::advantage::SettingsError),
    #[error("terminal: {0}")]
    Terminal(#[from] std::io::Error),
}
