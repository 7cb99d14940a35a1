//! What is wrong with a TUI config file: shared by the config's reader and the keymap and theme it builds,
//! below all three.

use std::path::PathBuf;

use super::action::Action;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {file}: {reason}")]
    Read { file: PathBuf, reason: String },
    #[error("{file}: {reason}")]
    Parse { file: PathBuf, reason: String },
    #[error("unknown key name {0:?}")]
    BadKey(String),
    #[error("key {key:?} is bound to both {first:?} and {second:?}")]
    KeyConflict { key: String, first: Action, second: Action },
    #[error("bad colour {0:?}")]
    BadColor(String),
    #[error("unknown theme key {0:?}")]
    UnknownThemeKey(String),
    #[error("unknown theme {0:?} (dark, light or high-contrast)")]
    UnknownTheme(String),
    #[error("{file}: [keys] gives `quit` no key; give it one (the default is q)")]
    NoQuitKey { file: PathBuf },
}
