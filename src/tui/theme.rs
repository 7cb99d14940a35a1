//! Colours and styles. The embedded default (`assets/theme.toml`) overlaid by the user's `[theme]`; `NO_COLOR`
//! strips every colour and keeps only modifiers, so meaning never depends on colour alone.

use std::collections::BTreeMap;

use ratatui::style::{Color, Modifier, Style};

use super::config_error::ConfigError;

pub const DEFAULT_THEME: &str = include_str!("../../assets/theme.toml");

/// For a light terminal background: dark text colours, pale selection and heatmap shades under black text.
pub const LIGHT_THEME: &str = r##"
[theme]
accent = "blue"
border = "black"
title = "blue"
dim = "#505050"
positive = "#006400"
negative = "#b00000"
warn = "#8b4500"
selected_bg = "#bcd4ff"
selected_fg = "black"
heat_positive = ["#dcf5dc", "#a8e6a8", "#5fcf5f", "#2e9e2e"]
heat_negative = ["#fbdcdc", "#f4a9a9", "#e86a6a", "#c62828"]
heat_fg = "black"
"##;

/// For a projector: bright text on the terminal's dark background, a saturated selection, heatmap shades bright
/// enough to tell apart under black text.
pub const HIGH_CONTRAST_THEME: &str = r##"
[theme]
accent = "#00ffff"
border = "#ffffff"
title = "#ffffff"
dim = "#c0c0c0"
positive = "#5fff5f"
negative = "#ff6060"
warn = "#ffff00"
selected_bg = "#0040ff"
selected_fg = "#ffffff"
heat_positive = ["#b0ffb0", "#70f070", "#30d030", "#00b000"]
heat_negative = ["#ffc0c0", "#ff9090", "#ff6464", "#ff4040"]
heat_fg = "#000000"
"##;

/// The built-in themes by name (`--theme NAME`, or `preset = "NAME"` under `[theme]`).
pub const PRESETS: &[(&str, &str)] =
    &[("dark", DEFAULT_THEME), ("light", LIGHT_THEME), ("high-contrast", HIGH_CONTRAST_THEME)];

/// Keys a preset may leave out, with their value in the dark theme.
const OPTIONAL: &[(&str, &str)] = &[("selected_fg", "reset"), ("heat_fg", "white")];

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
    /// Text on the selection (`reset`: the row's own colours).
    pub selected_fg: Color,
    pub heat_positive: Vec<Color>,
    pub heat_negative: Vec<Color>,
    /// Text on heatmap cells.
    pub heat_fg: Color,
}

impl Theme {
    /// The preset `overrides` names (`preset = "light"`; the dark one by default) with the rest of `overrides`
    /// on top; `color: false` for `NO_COLOR`.
    pub fn new(overrides: &ThemeTable, color: bool) -> Result<Theme, ConfigError> {
        let preset = match overrides.get("preset") {
            Some(ThemeValue::One(name)) => name.as_str(),
            Some(ThemeValue::Ramp(_)) => {
                return Err(ConfigError::BadColor { key: "preset".into(), value: "a list".into() })
            }
            None => "dark",
        };
        Theme::with_preset(preset, overrides, color)
    }

    /// The preset `name` with `overrides` on top (a `preset` key in them is ignored).
    pub fn with_preset(name: &str, overrides: &ThemeTable, color: bool) -> Result<Theme, ConfigError> {
        #[derive(serde::Deserialize)]
        struct File {
            theme: ThemeTable,
        }
        let text = PRESETS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
            .ok_or_else(|| ConfigError::UnknownTheme(name.to_string()))?;
        let defaults: File = toml::from_str(text)
            .map_err(|e| ConfigError::Parse { file: format!("embedded theme {name}").into(), reason: e.to_string() })?;
        let mut table = defaults.theme;
        for (k, v) in OPTIONAL {
            table.entry(k.to_string()).or_insert_with(|| ThemeValue::One(v.to_string()));
        }
        for (k, v) in overrides {
            if k == "preset" {
                continue;
            }
            if !table.contains_key(k) {
                return Err(ConfigError::UnknownThemeKey(k.clone()));
            }
            table.insert(k.clone(), v.clone());
        }
        let one = |k: &str| -> Result<Color, ConfigError> {
            match table.get(k) {
                Some(ThemeValue::One(s)) => parse_color(k, s),
                Some(ThemeValue::Ramp(_)) => Err(ConfigError::BadColor { key: k.to_string(), value: "a list".into() }),
                None => Err(ConfigError::BadColor { key: k.to_string(), value: "nothing".into() }),
            }
        };
        let ramp = |k: &str| -> Result<Vec<Color>, ConfigError> {
            match table.get(k) {
                Some(ThemeValue::Ramp(v)) if !v.is_empty() => v.iter().map(|s| parse_color(k, s)).collect(),
                Some(ThemeValue::Ramp(_)) => Err(ConfigError::BadColor { key: k.to_string(), value: "[]".into() }),
                Some(ThemeValue::One(s)) => Err(ConfigError::BadColor {
                    key: k.to_string(),
                    value: format!("{s:?} (a list of colours is wanted)"),
                }),
                None => Err(ConfigError::BadColor { key: k.to_string(), value: "nothing".into() }),
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
            selected_fg: one("selected_fg")?,
            heat_positive: ramp("heat_positive")?,
            heat_negative: ramp("heat_negative")?,
            heat_fg: one("heat_fg")?,
        })
    }

    /// The built-in theme, coloured unless `NO_COLOR` asks otherwise (used by tests and as a fallback).
    pub fn default_with_color(color: bool) -> Theme {
        Theme::new(&ThemeTable::new(), color).expect("the embedded theme parses (checked by a unit test)")
    }

    fn fg(&self, c: Color) -> Style {
        if self.color {
            Style::new().fg(c)
        } else {
            Style::new()
        }
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
        if self.color {
            Style::new().fg(self.dim)
        } else {
            Style::new().add_modifier(Modifier::DIM)
        }
    }
    pub fn warn(&self) -> Style {
        self.fg(self.warn).add_modifier(Modifier::BOLD)
    }
    /// The selected row: a background colour, or reverse video without colour.
    pub fn selected(&self) -> Style {
        if self.color {
            let s = Style::new().bg(self.selected_bg).add_modifier(Modifier::BOLD);
            if self.selected_fg == Color::Reset {
                s
            } else {
                s.fg(self.selected_fg)
            }
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
        Style::new().bg(bg).fg(self.heat_fg)
    }
}

/// The colour `s` given for the theme key `key`.
fn parse_color(key: &str, s: &str) -> Result<Color, ConfigError> {
    s.parse::<Color>().map_err(|_| ConfigError::BadColor { key: key.to_string(), value: format!("{s:?}") })
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
    fn every_preset_parses_and_a_preset_key_selects_one() {
        for (name, _) in PRESETS {
            let t = Theme::with_preset(name, &ThemeTable::new(), true).unwrap();
            assert_eq!(t.heat_positive.len(), 4, "{name}");
        }
        let mut o = ThemeTable::new();
        o.insert("preset".into(), ThemeValue::One("light".into()));
        o.insert("accent".into(), ThemeValue::One("red".into()));
        let t = Theme::new(&o, true).unwrap();
        assert_eq!((t.heat_fg, t.accent), (Color::Black, Color::Red), "the preset, then the overrides");
        o.insert("preset".into(), ThemeValue::One("neon".into()));
        assert!(matches!(Theme::new(&o, true), Err(ConfigError::UnknownTheme(_))));
    }

    /// WCAG contrast of the high-contrast theme's pairs that carry meaning: selection, heatmap cells, text.
    #[test]
    fn high_contrast_pairs_are_readable() {
        fn rgb(c: Color) -> (f64, f64, f64) {
            match c {
                Color::Rgb(r, g, b) => (r as f64, g as f64, b as f64),
                Color::Black => (0.0, 0.0, 0.0),
                Color::White => (255.0, 255.0, 255.0),
                other => panic!("{other:?}: the high-contrast theme uses exact colours"),
            }
        }
        fn luminance(c: Color) -> f64 {
            let (r, g, b) = rgb(c);
            let lin = |v: f64| {
                let v = v / 255.0;
                if v <= 0.03928 {
                    v / 12.92
                } else {
                    ((v + 0.055) / 1.055).powf(2.4)
                }
            };
            0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b)
        }
        fn contrast(a: Color, b: Color) -> f64 {
            let (x, y) = (luminance(a), luminance(b));
            (x.max(y) + 0.05) / (x.min(y) + 0.05)
        }
        let t = Theme::with_preset("high-contrast", &ThemeTable::new(), true).unwrap();
        assert!(contrast(t.selected_fg, t.selected_bg) >= 4.5);
        for bg in t.heat_positive.iter().chain(&t.heat_negative) {
            assert!(contrast(t.heat_fg, *bg) >= 4.5, "{bg:?}");
        }
        let black = Color::Black;
        for fg in [t.accent, t.border, t.title, t.dim, t.positive, t.negative, t.warn] {
            assert!(contrast(fg, black) >= 7.0, "{fg:?} on a black screen");
        }
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
