//! The environments gigscope has, one line each: `gigscope train --env NAME`, the TUI's live play (the run's
//! `env`), the policy's play and ground truth pick them from here, and the TUI and the CLI look up what a run's
//! environment can do ([`capabilities`]) instead of asking for one by name. This list is the one place that
//! names the implementations; it sits above them (they import the port [`crate::env`] and never this), and
//! the trainer, the TUI and the CLI sit above it and reach every environment through the port alone.
//!
//! Adding a third environment touches these files and no others:
//! - `src/<name>/` (new): [`Environment`](crate::env::Environment), [`Tasks`] and
//!   [`PolicyFeatures`](crate::env::PolicyFeatures) implemented over the port, and a `REGISTERED`
//!   [`Registered`] entry declaring its name, options, opener and [`Capabilities`];
//! - `src/lib.rs`: `pub mod <name>;` (the module declaration Rust needs);
//! - this file: its line in [`ENVIRONMENTS`];
//! - its tests (`tests/env/<name>.rs` and its `mod` line in `tests/env/main.rs`); `tests/env/port.rs` already
//!   holds every registered environment to the registry's invariants (it opens, its capabilities match what it
//!   does).
//!
//! The TUI, the CLI (`--env` lists [`ENVIRONMENTS`]), the trainer and the training plugin do not change.

use std::sync::Arc;

use crate::env::{Capabilities, EnvError, EnvOptions, PageAnchor, Registered, Tasks};
use crate::run::{Layout, Run};

/// Every environment, by name.
pub const ENVIRONMENTS: &[Registered] = &[
    crate::webshop::tasks::REGISTERED, // src/webshop/tasks.rs
    crate::sokoban::REGISTERED,        // src/sokoban/mod.rs
    crate::toy_shop::REGISTERED,       // src/toy_shop/mod.rs
];

/// The environment of a gigscope run that records no `env`: gigscope's own trainer and play wrote WebShop runs
/// before runs named their environment (another trainer's layout that does not say has none).
pub const UNRECORDED_ENV: &str = crate::webshop::tasks::NAME;

/// The registered environment called `name`.
pub fn find(name: &str) -> Result<&'static Registered, EnvError> {
    ENVIRONMENTS
        .iter()
        .find(|r| r.name == name)
        .ok_or_else(|| EnvError::Unknown { name: name.to_owned(), known: names() })
}

/// The registered names, comma-separated, stand-ins left out: the environments error messages offer.
pub fn names() -> String {
    ENVIRONMENTS.iter().filter(|r| !r.stand_in).map(|r| r.name).collect::<Vec<_>>().join(", ")
}

/// The registered environment a run was recorded in: its `env` (any case), else [`UNRECORDED_ENV`] for a
/// gigscope run that records none; `None` when gigscope does not have it.
pub fn of_run(run: &Run) -> Option<&'static Registered> {
    let env = match run.meta.as_ref().and_then(|m| m.env.as_deref()) {
        Some(env) => env,
        None if run.layout == Layout::Gigscope => UNRECORDED_ENV,
        None => return None,
    };
    ENVIRONMENTS.iter().find(|r| r.name.eq_ignore_ascii_case(env))
}

/// What the environment `run` was recorded in can do ([`of_run`]); [`Capabilities::NONE`] when gigscope does
/// not have it.
pub fn capabilities(run: &Run) -> Capabilities {
    of_run(run).map_or(Capabilities::NONE, |r| r.capabilities)
}

/// The page anchor of the environment `run` was recorded in ([`of_run`]); `None` when that environment has none
/// or gigscope does not have it.
pub fn page_anchor(run: &Run) -> Option<PageAnchor> {
    let registered = of_run(run)?;
    Some(PageAnchor::new(registered.name, registered.capabilities.page_anchor?))
}

/// [`page_anchor`] as a plain function, for a reader that takes episodes in lean on its own thread
/// ([`crate::run::LeanReading`]).
pub fn page_classifier(run: &Run) -> Option<crate::run::text_on_disk::PageClassifier> {
    of_run(run)?.capabilities.page_anchor
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
