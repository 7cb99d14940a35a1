//! Colours and styles. The embedded default (`assets/theme.toml`) overlaid by the user's `[theme]`; `NO_COLOR`
//! strips every colour and keeps only modifiers, so meaning never depends on colour alone.

use std::collections::BTreeMap;

use ratatui::style::{Color, Modifier, Style};

use super::config::ConfigError;

pub const DEFAULT_THEME: &str = include_str!("../../assets/theme.toml");

/// Theme values as written in TOML: a colour or a list of colours.
#[derive(Clone, Debug, serde::Deserialize)]
#[serde(untagged)]
pub enum ThemeValue {
    One(String),
    Ramp(Vec<String>),
}

pub type ThemeTable = BTreeMap<String, ThemeValue>;

#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    pub color: bool,
    pub accent: Color,
    pub border: Color,
    pub title: Color,
    pub dim: Color,
    pub positive: Color,
    pub negative: Color,
    pub warn: Color,
    pub selected_bg: Color,
    pub heat_positive: Vec<Color>,
    pub heat_negative: Vec<Color>,
}

impl Theme {
    /// The default theme with `overrides` on top; `color: false` for `NO_COLOR`.
    pub fn new(overrides: &ThemeTable, color: bool) -> Result<Theme, ConfigError> {
        #[derive(serde::Deserialize)]
        struct File {
            theme: ThemeTable,
        }
        let defaults: File = toml::from_str(DEFAULT_THEME)
            .map_err(|e| ConfigError::Parse { file: "embedded theme".into(), reason: e.to_string() })?;
        let mut table = defaults.theme;
        for (k, v) in overrides {
            if !table.contains_key(k) {
                return Err(ConfigError::UnknownThemeKey(k.clone()));
            }
            table.insert(k.clone(), v.clone());
        }
        let one = |k: &str| -> Result<Color, ConfigError> {
            match table.get(k) {
                Some(ThemeValue::One(s)) => parse_color(s),
                _ => Err(ConfigError::BadColor(k.to_string())),
            }
        };
        let ramp = |k: &str| -> Result<Vec<Color>, ConfigError> {
            match table.get(k) {
                Some(ThemeValue::Ramp(v)) if !v.is_empty() => v.iter().map(|s| parse_color(s)).collect(),
                _ => Err(ConfigError::BadColor(k.to_string())),
            }
        };
        Ok(Theme {
            color,
            accent: one("accent")?,
            border: one("border")?,
            title: one("title")?,
            dim: one("dim")?,
            positive: one("positive")?,
            negative: one("negative")?,
            warn: one("warn")?,
            selected_bg: one("selected_bg")?,
            heat_positive: ramp("heat_positive")?,
            heat_negative: ramp("heat_negative")?,
        })
    }

    /// The built-in theme, coloured unless `NO_COLOR` asks otherwise (used by tests and as a fallback).
    pub fn default_with_color(color: bool) -> Theme {
        Theme::new(&ThemeTable::new(), color).expect("the embedded theme parses (checked by a unit test)")
    }

    fn fg(&self, c: Color) -> Style {
        if self.color { Style::new().fg(c) } else { Style::new() }
    }

    pub fn accent(&self) -> Style {
        self.fg(self.accent)
    }
    pub fn border(&self) -> Style {
        self.fg(self.border)
    }
    pub fn title(&self) -> Style {
        self.fg(self.title).add_modifier(Modifier::BOLD)
    }
    pub fn dim(&self) -> Style {
        if self.color { Style::new().fg(self.dim) } else { Style::new().add_modifier(Modifier::DIM) }
    }
    pub fn warn(&self) -> Style {
        self.fg(self.warn).add_modifier(Modifier::BOLD)
    }
    /// The selected row: a background colour, or reverse video without colour.
    pub fn selected(&self) -> Style {
        if self.color {
            Style::new().bg(self.selected_bg).add_modifier(Modifier::BOLD)
        } else {
            Style::new().add_modifier(Modifier::REVERSED)
        }
    }
    /// A signed number: green / red, no colour for zero.
    pub fn signed(&self, v: f64) -> Style {
        if v > 0.0 {
            self.fg(self.positive)
        } else if v < 0.0 {
            self.fg(self.negative)
        } else {
            Style::new()
        }
    }
    /// Heatmap cell for `v` relative to the largest magnitude `max`.
    pub fn heat(&self, v: f64, max: f64) -> Style {
        if !self.color || v == 0.0 || max <= 0.0 {
            return Style::new();
        }
        let ramp = if v > 0.0 { &self.heat_positive } else { &self.heat_negative };
        let level = ((v.abs() / max) * ramp.len() as f64).ceil() as usize;
        let bg = ramp[level.clamp(1, ramp.len()) - 1];
        Style::new().bg(bg).fg(Color::White)
    }
}

fn parse_color(s: &str) -> Result<Color, ConfigError> {
    s.parse::<Color>().map_err(|_| ConfigError::BadColor(s.to_string()))
}

/// `NO_COLOR` set to anything non-empty disables colour (https://no-color.org).
pub fn color_enabled(no_color: Option<&str>) -> bool {
    no_color.is_none_or(str::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_theme_parses_and_overrides_apply() {
        let t = Theme::default_with_color(true);
        assert_eq!(t.heat_positive.len(), 4);
        let mut o = ThemeTable::new();
        o.insert("accent".into(), ThemeValue::One("#ff0000".into()));
        assert_eq!(Theme::new(&o, true).unwrap().accent, Color::Rgb(255, 0, 0));
        o.insert("nonsense".into(), ThemeValue::One("red".into()));
        assert!(Theme::new(&o, true).is_err());
    }

    #[test]
    fn no_color_strips_colours() {
        let t = Theme::default_with_color(false);
        assert_eq!(t.signed(1.0), Style::new());
        assert_eq!(t.heat(1.0, 1.0), Style::new());
        assert!(t.selected().add_modifier.contains(Modifier::REVERSED));
        assert!(!color_enabled(Some("1")));
        assert!(color_enabled(Some("")));
        assert!(color_enabled(None));
    }
}
