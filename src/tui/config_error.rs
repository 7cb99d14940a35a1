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
    #[error("[theme] {key}: {value} is not a colour (a name such as \"blue\", \"#rrggbb\", or 0-255)")]
    BadColor { key: String, value: String },
    #[error("unknown theme key {0:?}")]
    UnknownThemeKey(String),
    #[error("unknown theme {0:?} (dark, light or high-contrast)")]
    UnknownTheme(String),
    #[error("{file}: [keys] gives `quit` no key; give it one (the default is q)")]
    NoQuitKey { file: PathBuf },
    /// A key, colour or theme error met while reading a config file, named with that file.
    #[error("{file}: {error}")]
    InFile { file: PathBuf, error: Box<ConfigError> },
}

impl ConfigError {
    /// This error as met in `file`: named with it unless it names a file already.
    pub fn in_file(self, file: &std::path::Path) -> ConfigError {
        match self {
            ConfigError::Read { .. }
            | ConfigError::Parse { .. }
            | ConfigError::NoQuitKey { .. }
            | ConfigError::InFile { .. } => self,
            other => ConfigError::InFile { file: file.to_path_buf(), error: Box::new(other) },
        }
    }
}
