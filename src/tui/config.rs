//! The TUI config file: `[keys]`, `[theme]`, `[advantages]` and `[burst]` tables, from `--config FILE` or
//! `$XDG_CONFIG_HOME/gigscope/config.toml` (else `~/.config/gigscope/config.toml`); a missing default file is
//! not an error, a broken one is.

use std::path::{Path, PathBuf};

pub use super::config_error::ConfigError;

use super::action::Action;
use super::keymap::{KeyTable, Keymap};
use super::theme::{Theme, ThemeTable};
use crate::ray_job::BurstTable;

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    keys: KeyTable,
    #[serde(default)]
    theme: ThemeTable,
    #[serde(default)]
    advantages: AdvantagesTable,
    /// `[burst.profiles.NAME]`: where bursts run (`crate::ray_job::profile`).
    #[serde(default)]
    burst: BurstTable,
}

/// `[advantages]`: how the TUI computes.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct AdvantagesTable {
    background_grouping_steps: Option<usize>,
}

/// Similarity grouping of runs this large takes long enough (its CPU time per step is in the README's
/// performance table) that the UI must not wait for it.
pub const BACKGROUND_GROUPING_STEPS: usize = 50_000;

/// Resolved keymap, theme and computing options.
#[derive(Clone, Debug)]
pub struct Config {
    pub keymap: Keymap,
    pub theme: Theme,
    /// Runs with at least this many steps group anchors by similarity in the background.
    pub background_grouping_steps: usize,
    /// Workshop mode (`--present`): high-contrast theme unless one is chosen, wider spacing, a status line that
    /// names the view and what the highlighted number means.
    pub present: bool,
    /// The burst profiles (`[burst.profiles.NAME]`).
    pub burst: BurstTable,
    /// The `[theme]` table as written, so that a theme chosen on the command line keeps its overrides.
    theme_table: ThemeTable,
}

impl Config {
    /// Defaults only (tests, and users without a config file).
    pub fn defaults(color: bool) -> Result<Config, ConfigError> {
        Config::from_str("", color)
    }

    pub fn from_str(text: &str, color: bool) -> Result<Config, ConfigError> {
        Config::parse(text, Path::new("config"), color)
    }

    fn parse(text: &str, file: &Path, color: bool) -> Result<Config, ConfigError> {
        let parsed: ConfigFile =
            toml::from_str(text).map_err(|e| ConfigError::Parse { file: file.to_path_buf(), reason: e.to_string() })?;
        let keymap = Keymap::new(&parsed.keys).map_err(|e| e.in_file(file))?;
        // Ctrl-C always quits, but nobody should have to know that to leave.
        if keymap.keys(Action::Quit).is_empty() {
            return Err(ConfigError::NoQuitKey { file: file.to_path_buf() });
        }
        Ok(Config {
            keymap,
            theme: Theme::new(&parsed.theme, color).map_err(|e| e.in_file(file))?,
            background_grouping_steps: parsed.advantages.background_grouping_steps.unwrap_or(BACKGROUND_GROUPING_STEPS),
            present: false,
            burst: parsed.burst,
            theme_table: parsed.theme,
        })
    }

    /// The display options of the command line: `theme` (a preset's name) replaces the config's preset, and
    /// `present` turns on workshop mode, with the high-contrast theme unless a theme is named (here or in the
    /// config). The config's colour overrides stay on top either way.
    pub fn with_display(mut self, theme: Option<&str>, present: bool) -> Result<Config, ConfigError> {
        let named = self.theme_table.contains_key("preset");
        let preset = match (theme, present && !named) {
            (Some(t), _) => Some(t),
            (None, true) => Some("high-contrast"),
            (None, false) => None,
        };
        if let Some(preset) = preset {
            self.theme = Theme::with_preset(preset, &self.theme_table, self.theme.color)?;
        }
        self.present = present;
        Ok(self)
    }

    /// Load `explicit` (must exist) or the default location (may be missing).
    pub fn load(explicit: Option<&Path>, color: bool) -> Result<Config, ConfigError> {
        let (path, required) = match explicit {
            Some(p) => (Some(p.to_path_buf()), true),
            None => (default_path(), false),
        };
        let Some(path) = path else { return Config::defaults(color) };
        match std::fs::read_to_string(&path) {
            Ok(text) => Config::parse(&text, &path, color),
            Err(e) if !required && e.kind() == std::io::ErrorKind::NotFound => Config::defaults(color),
            Err(e) => Err(ConfigError::Read { file: path, reason: e.to_string() }),
        }
    }
}

/// `$XDG_CONFIG_HOME/gigscope/config.toml`, else `~/.config/gigscope/config.toml` (the CLI reads its burst profiles there
/// too).
pub fn default_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("gigscope").join("config.toml"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_overrides_keys_and_theme() {
        let c = Config::from_str("[keys]\nquit = [\"x\"]\n[theme]\naccent = \"blue\"\n", true).unwrap();
        assert_eq!(c.keymap.labels(Action::Quit), "x");
        assert_eq!(c.theme.accent, ratatui::style::Color::Blue);
    }

    #[test]
    fn themes_come_from_the_config_or_the_command_line_and_present_mode_picks_high_contrast() {
        let light = Config::from_str("[theme]\npreset = \"light\"\naccent = \"red\"\n", true).unwrap();
        assert_eq!(light.theme.heat_fg, ratatui::style::Color::Black);
        // --present keeps a theme the config names; --theme replaces it, the colour overrides stay.
        let kept = Config::from_str("[theme]\npreset = \"light\"\n", true).unwrap().with_display(None, true).unwrap();
        assert!(kept.present);
        assert_eq!(kept.theme.selected_bg, light.theme.selected_bg);
        let flag = light.with_display(Some("high-contrast"), false).unwrap();
        assert_eq!(flag.theme.accent, ratatui::style::Color::Red);
        assert_eq!(flag.theme.selected_bg, ratatui::style::Color::Rgb(0, 0x40, 0xff));
        let present = Config::defaults(true).unwrap().with_display(None, true).unwrap();
        assert_eq!(present.theme.selected_bg, ratatui::style::Color::Rgb(0, 0x40, 0xff));
        assert!(Config::defaults(true).unwrap().with_display(Some("neon"), false).is_err());
    }

    #[test]
    fn unknown_action_or_section_is_an_error() {
        assert!(Config::from_str("[keys]\nfly = [\"x\"]\n", true).is_err());
        assert!(Config::from_str("[colours]\n", true).is_err());
    }

    #[test]
    fn a_keymap_without_a_key_for_quit_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, "[keys]\nquit = []\n").unwrap();
        let err = Config::load(Some(&file), true).unwrap_err();
        assert!(matches!(&err, ConfigError::NoQuitKey { file: named } if *named == file), "{err:?}");
        let message = err.to_string();
        assert!(message.starts_with(&format!("{}: ", file.display())) && message.contains("quit"), "{message}");
    }

    #[test]
    fn a_bad_key_or_colour_is_refused_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        for (text, what) in
            [("[keys]\nquit = [\"ctrl-nope\"]\n", "ctrl-nope"), ("[theme]\naccent = \"blurple\"\n", "accent")]
        {
            std::fs::write(&file, text).unwrap();
            let message = Config::load(Some(&file), true).unwrap_err().to_string();
            assert!(message.starts_with(&format!("{}: ", file.display())) && message.contains(what), "{message}");
        }
    }

    #[test]
    fn explicit_missing_file_is_an_error() {
        assert!(matches!(
            Config::load(Some(Path::new("/nonexistent/gigscope.toml")), true),
            Err(ConfigError::Read { .. })
        ));
    }
}
