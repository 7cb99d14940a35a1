//! Key bindings: TOML `[keys]` tables mapping action names to key names, the embedded default overlaid by the
//! user's config. The same `Keymap` resolves key presses and generates the help popup and hint bar.

use std::collections::{BTreeMap, HashMap};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::Action;
use super::config_error::ConfigError;

/// The embedded default keymap (`assets/keymap.toml`).
pub const DEFAULT_KEYMAP: &str = include_str!("../../assets/keymap.toml");

/// A key with the modifiers that matter for matching (shift is folded into the character).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
    pub alt: bool,
}

impl Key {
    pub fn from_event(ev: &KeyEvent) -> Key {
        Key {
            code: ev.code,
            ctrl: ev.modifiers.contains(KeyModifiers::CONTROL),
            alt: ev.modifiers.contains(KeyModifiers::ALT),
        }
    }

    /// Parse a key name such as `q`, `G`, `ctrl-c`, `pagedown`, `f1`.
    pub fn parse(name: &str) -> Result<Key, ConfigError> {
        let bad = || ConfigError::BadKey(name.to_string());
        let mut rest = name;
        let (mut ctrl, mut alt) = (false, false);
        loop {
            // A lone "-" is the minus key, not a modifier separator.
            if let Some(r) = rest.strip_prefix("ctrl-").filter(|r| !r.is_empty()) {
                ctrl = true;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("alt-").filter(|r| !r.is_empty()) {
                alt = true;
                rest = r;
            } else {
                break;
            }
        }
        let mut chars = rest.chars();
        let code = match (chars.next(), chars.next()) {
            (Some(c), None) => KeyCode::Char(c),
            _ => match rest.to_ascii_lowercase().as_str() {
                "enter" => KeyCode::Enter,
                "esc" => KeyCode::Esc,
                "tab" => KeyCode::Tab,
                "backtab" => KeyCode::BackTab,
                "backspace" => KeyCode::Backspace,
                "space" => KeyCode::Char(' '),
                "up" => KeyCode::Up,
                "down" => KeyCode::Down,
                "left" => KeyCode::Left,
                "right" => KeyCode::Right,
                "pageup" => KeyCode::PageUp,
                "pagedown" => KeyCode::PageDown,
                "home" => KeyCode::Home,
                "end" => KeyCode::End,
                "delete" => KeyCode::Delete,
                f if f.starts_with('f') => KeyCode::F(f[1..].parse().map_err(|_| bad())?),
                _ => return Err(bad()),
            },
        };
        Ok(Key { code, ctrl, alt })
    }

    /// Short display form for the hint bar and help: `^C`, `↑`, `PgDn`, `q`.
    pub fn label(&self) -> String {
        let base = match self.code {
            KeyCode::Char(' ') => "Space".to_string(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::Enter => "Enter".into(),
            KeyCode::Esc => "Esc".into(),
            KeyCode::Tab => "Tab".into(),
            KeyCode::BackTab => "S-Tab".into(),
            KeyCode::Backspace => "Bksp".into(),
            KeyCode::Up => "↑".into(),
            KeyCode::Down => "↓".into(),
            KeyCode::Left => "←".into(),
            KeyCode::Right => "→".into(),
            KeyCode::PageUp => "PgUp".into(),
            KeyCode::PageDown => "PgDn".into(),
            KeyCode::Home => "Home".into(),
            KeyCode::End => "End".into(),
            KeyCode::Delete => "Del".into(),
            KeyCode::F(n) => format!("F{n}"),
            other => format!("{other:?}"),
        };
        match (self.ctrl, self.alt) {
            (true, _) => format!("^{}", base.to_uppercase()),
            (false, true) => format!("M-{base}"),
            (false, false) => base,
        }
    }
}

/// Action names → key names, as written in TOML.
pub type KeyTable = BTreeMap<Action, Vec<String>>;

#[derive(Clone, Debug)]
pub struct Keymap {
    by_key: HashMap<Key, Action>,
    /// Keys of each action in the order the config lists them (first one is shown in the hint bar).
    by_action: BTreeMap<Action, Vec<Key>>,
}

impl Keymap {
    /// The default keymap with `overrides` replacing the keys of the actions they name.
    pub fn new(overrides: &KeyTable) -> Result<Keymap, ConfigError> {
        #[derive(serde::Deserialize)]
        struct File {
            keys: KeyTable,
        }
        let defaults: File = toml::from_str(DEFAULT_KEYMAP)
            .map_err(|e| ConfigError::Parse { file: "embedded keymap".into(), reason: e.to_string() })?;
        let mut table = defaults.keys;
        for (action, keys) in overrides {
            table.insert(*action, keys.clone());
        }
        let mut by_key = HashMap::new();
        let mut by_action = BTreeMap::new();
        for (action, names) in &table {
            let mut keys = Vec::new();
            for name in names {
                let key = Key::parse(name)?;
                if let Some(other) = by_key.insert(key, *action) {
                    if other != *action {
                        return Err(ConfigError::KeyConflict { key: name.clone(), first: other, second: *action });
                    }
                }
                keys.push(key);
            }
            by_action.insert(*action, keys);
        }
        Ok(Keymap { by_key, by_action })
    }

    /// Shift is not part of [`Key`]: terminals disagree on whether shifted letters carry SHIFT, and the
    /// character already says it.
    pub fn action(&self, ev: &KeyEvent) -> Option<Action> {
        self.by_key.get(&Key::from_event(ev)).copied()
    }

    pub fn keys(&self, action: Action) -> &[Key] {
        self.by_action.get(&action).map(Vec::as_slice).unwrap_or(&[])
    }

    /// All keys of an action joined for the help popup, e.g. `k ↑`.
    pub fn labels(&self, action: Action) -> String {
        self.keys(action).iter().map(Key::label).collect::<Vec<_>>().join(" ")
    }

    /// The first key of an action, for the hint bar; `None` when the user unbound it.
    pub fn first_label(&self, action: Action) -> Option<String> {
        self.keys(action).first().map(Key::label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn default_keymap_resolves_vim_and_arrow_keys() {
        let km = Keymap::new(&KeyTable::new()).unwrap();
        assert_eq!(km.action(&ev(KeyCode::Char('j'), KeyModifiers::NONE)), Some(Action::Down));
        assert_eq!(km.action(&ev(KeyCode::Down, KeyModifiers::NONE)), Some(Action::Down));
        assert_eq!(km.action(&ev(KeyCode::Char('c'), KeyModifiers::CONTROL)), Some(Action::Quit));
        assert_eq!(km.action(&ev(KeyCode::Char('G'), KeyModifiers::SHIFT)), Some(Action::Bottom));
        assert_eq!(km.action(&ev(KeyCode::Char('x'), KeyModifiers::NONE)), None);
    }

    #[test]
    fn override_replaces_an_actions_keys() {
        let mut o = KeyTable::new();
        o.insert(Action::Quit, vec!["x".into()]);
        let km = Keymap::new(&o).unwrap();
        assert_eq!(km.action(&ev(KeyCode::Char('x'), KeyModifiers::NONE)), Some(Action::Quit));
        assert_eq!(km.action(&ev(KeyCode::Char('q'), KeyModifiers::NONE)), None);
        assert_eq!(km.labels(Action::Quit), "x");
    }

    #[test]
    fn conflicting_binding_is_an_error() {
        let mut o = KeyTable::new();
        o.insert(Action::Quit, vec!["j".into()]);
        assert!(matches!(Keymap::new(&o), Err(ConfigError::KeyConflict { .. })));
    }

    #[test]
    fn key_names_parse() {
        assert_eq!(Key::parse("ctrl-d").unwrap().label(), "^D");
        assert_eq!(Key::parse("pagedown").unwrap().code, KeyCode::PageDown);
        assert_eq!(Key::parse("f1").unwrap().code, KeyCode::F(1));
        assert_eq!(Key::parse("-").unwrap().code, KeyCode::Char('-'));
        assert!(Key::parse("nosuchkey").is_err());
    }
}
