//! The environments gigscope has, one line each: `gigscope train --env NAME`, the TUI's live play (the run's
//! `env`) and the policy's play pick them from here. This list is the one place that names the
//! implementations; each lives in its own folder and describes itself in a [`Registered`].
//!
//! Adding an environment: implement [`Environment`](super::Environment), [`Tasks`] and
//! [`PolicyFeatures`](super::PolicyFeatures) in a new folder, give it a `REGISTERED` entry, and add that line
//! below.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{EnvError, PageAnchor, Tasks};
use crate::run::Run;

/// Every environment, by name.
pub const ENVIRONMENTS: &[Registered] = &[
    crate::webshop::port::REGISTERED, // src/webshop/port.rs
    crate::sokoban::REGISTERED,       // src/sokoban/mod.rs
];

/// One registered environment.
#[derive(Clone, Copy)]
pub struct Registered {
    /// Its name: `--env NAME`, and `env` in `run.json`.
    pub name: &'static str,
    /// One line for `--help` and error messages.
    pub about: &'static str,
    /// The options it takes (`--env-option KEY=VALUE`), each with what it means.
    pub options: &'static [(&'static str, &'static str)],
    /// Its task list, set up with `options`.
    pub open: fn(&EnvOptions) -> Result<Arc<dyn Tasks>, EnvError>,
    /// Its anchor of an observation beyond the exact text (WebShop's page type), for recorded steps that lack
    /// the `page` it records when it plays; `None` where it has none (Sokoban).
    pub page_anchor: Option<fn(&str) -> &'static str>,
}

/// The registered environment called `name`.
pub fn find(name: &str) -> Result<&'static Registered, EnvError> {
    ENVIRONMENTS
        .iter()
        .find(|r| r.name == name)
        .ok_or_else(|| EnvError::Unknown { name: name.to_owned(), known: names() })
}

/// The registered names, comma-separated.
pub fn names() -> String {
    ENVIRONMENTS.iter().map(|r| r.name).collect::<Vec<_>>().join(", ")
}

/// The registered environment a run was recorded in: its `env`, else WebShop for a gigscope run that records
/// none ([`Run::is_webshop`]); `None` when gigscope does not have it.
pub fn of_run(run: &Run) -> Option<&'static Registered> {
    if run.is_webshop() {
        return find(crate::webshop::port::REGISTERED.name).ok();
    }
    let env = run.meta.as_ref().and_then(|m| m.env.as_deref())?;
    ENVIRONMENTS.iter().find(|r| r.name.eq_ignore_ascii_case(env))
}

/// The page anchor of the environment `run` was recorded in ([`of_run`]); `None` when that environment has none
/// or gigscope does not have it.
pub fn page_anchor(run: &Run) -> Option<PageAnchor> {
    let registered = of_run(run)?;
    Some(PageAnchor::new(registered.name, registered.page_anchor?))
}

/// [`page_anchor`] as a plain function, for a reader that takes episodes in lean on its own thread
/// ([`crate::run::LeanReading`]).
pub fn page_classifier(run: &Run) -> Option<crate::run::text_on_disk::PageClassifier> {
    of_run(run)?.page_anchor
}

/// The task list of environment `name` set up with `options`.
pub fn open(name: &str, options: &EnvOptions) -> Result<Arc<dyn Tasks>, EnvError> {
    check(name, options)?;
    (find(name)?.open)(options)
}

/// Environment `name` exists and takes every key of `options` (what can be said before setting it up).
pub fn check(name: &str, options: &EnvOptions) -> Result<(), EnvError> {
    options.check_known(find(name)?)
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

    fn check_known(&self, registered: &Registered) -> Result<(), EnvError> {
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
