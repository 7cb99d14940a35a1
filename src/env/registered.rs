//! What an environment declares about itself in its registry entry ([`Registered`]): its name, its options, how
//! to open its task list, and its [`Capabilities`], the things beyond the port's minimum that the TUI, the CLI
//! and the trainer ask about (page anchors, typed actions, pages of segments) instead of asking for an
//! environment by name. Each environment writes its entry in its own folder; the list of entries is the
//! registry above the environments (`crate::env_registry`).

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::tasks::{EnvError, Tasks};

/// One registered environment.
#[derive(Clone, Copy)]
pub struct Registered {
    /// Its name: `--env NAME`, and `env` in `run.json` ([`Tasks::env_name`] says the same).
    pub name: &'static str,
    /// One line for `--help` and error messages.
    pub about: &'static str,
    /// The options it takes (`--env-option KEY=VALUE`), each with what it means. An environment that takes
    /// `catalog` gets the TUI's `--catalog`.
    pub options: &'static [(&'static str, &'static str)],
    /// Its task list, set up with `options`.
    pub open: fn(&EnvOptions) -> Result<Arc<dyn Tasks>, EnvError>,
    /// What it can do beyond the port's minimum.
    pub capabilities: Capabilities,
    /// A stand-in for tests and smoke runs (the trainer's toy shop): it opens and plays like the others, but the
    /// list of environments that error messages offer leaves it out.
    pub stand_in: bool,
}

/// What an environment can do beyond the port's minimum, declared once in its entry; the TUI and the CLI look
/// these up by a run's `env` ([`Capabilities::NONE`] for a run of an environment gigscope does not have).
#[derive(Clone, Copy)]
pub struct Capabilities {
    /// Its anchor of an observation beyond the exact text (WebShop's page type), for recorded steps that lack
    /// the `page` it records when it plays; `None` where it has none (Sokoban). Grouping steps by page anchor
    /// is offered on its runs only.
    pub page_anchor: Option<fn(&str) -> &'static str>,
    /// Its observations are pages of ` [SEP] `-separated elements, shown one element per line.
    pub paged_observations: bool,
    /// It offers action templates (`name[<what>]`, [`super::episode::template_name`]) whose argument the player types;
    /// this is how the prompt asks for it and what Enter does (WebShop: `type a WebShop search query · Enter
    /// searches`).
    pub typed_action: Option<&'static str>,
    /// What opening it sets up, shown while it opens when that takes a while (WebShop: its catalog, search
    /// index and goals).
    pub opening: Option<&'static str>,
}

impl Capabilities {
    /// Nothing beyond the port: no page anchor, plain-text observations, no typed actions, quick to open.
    pub const NONE: Capabilities =
        Capabilities { page_anchor: None, paged_observations: false, typed_action: None, opening: None };

    /// Whether steps can be grouped by its page anchor.
    pub fn has_page_anchors(&self) -> bool {
        self.page_anchor.is_some()
    }
}

/// An environment's settings as `KEY=VALUE` text (WebShop: `catalog`, `goal_source`; Sokoban: `size`,
/// `boxes`), read by the environment itself; an unknown key is an error naming the known ones.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct EnvOptions(pub BTreeMap<String, String>);

impl EnvOptions {
    /// Options from `KEY=VALUE` strings.
    pub fn parse(pairs: &[String]) -> Result<EnvOptions, String> {
        let mut options = EnvOptions::default();
        for pair in pairs {
            let (key, value) = pair.split_once('=').ok_or_else(|| format!("{pair:?} is not KEY=VALUE"))?;
            options.set(key.trim(), value.trim());
        }
        Ok(options)
    }

    pub fn set(&mut self, key: &str, value: impl Into<String>) {
        self.0.insert(key.to_owned(), value.into());
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// Option `key` of environment `env` read as a `T`, `None` when it is not given.
    pub fn value<T: FromStr>(&self, env: &str, key: &str) -> Result<Option<T>, EnvError>
    where
        T::Err: std::fmt::Display,
    {
        self.get(key)
            .map(|v| {
                v.parse().map_err(|e: T::Err| EnvError::BadOption {
                    env: env.to_owned(),
                    key: key.to_owned(),
                    why: format!("{v:?}: {e}"),
                })
            })
            .transpose()
    }

    /// Every key is an option of `registered` (otherwise an error naming the ones it knows).
    pub fn check_known(&self, registered: &Registered) -> Result<(), EnvError> {
        match self.0.keys().find(|k| !registered.options.iter().any(|(known, _)| known == k)) {
            None => Ok(()),
            Some(key) => {
                let known: Vec<&str> = registered.options.iter().map(|(k, _)| *k).collect();
                Err(EnvError::BadOption {
                    env: registered.name.to_owned(),
                    key: key.clone(),
                    why: format!("not an option of {} (known: {})", registered.name, known.join(", ")),
                })
            }
        }
    }
}
