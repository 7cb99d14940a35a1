//! The training plugin while it is being built, so that the TUI can open before it is ready.
//!
//! `./scripts/dev run` builds the viewer, opens the TUI at once, and builds the plugin (installing torch first
//! when needed) in the background. While it works, the builder keeps a status file beside the place where the
//! plugin will be, `<plugin>.building` (e.g. `target/release/libgigscope_train.so.building`), with lines:
//! - first: `gigscope-train build: pid PID, N crates` (the builder's process; how many crates the build has in
//!   all, fresh ones included, or 0 when unknown);
//! - `installing torch VERSION` while torch is being installed;
//! - `compiled NAME` for each crate cargo has compiled or found fresh;
//! - last, only when the build failed: `failed: WHY`.
//!
//! The builder removes the file once the plugin is in place, and keeps the whole output in `<plugin>.build.log`.
//! A file whose builder process is gone and that names no failure is a build that was stopped. Reading the file
//! is cheap (a few hundred short lines): the TUI reads it once a second while its burst dialog is open, and a
//! burst asked for meanwhile waits for the build to end ([`PluginBuild::in_progress`]).

use std::path::{Path, PathBuf};

use super::loader::candidates;

/// The suffix of the status file, after the plugin's file name.
pub const BUILDING_SUFFIX: &str = ".building";
/// The suffix of the full build log, after the plugin's file name.
pub const BUILD_LOG_SUFFIX: &str = ".build.log";

/// What a background build of the plugin is doing, as its status file says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginBuild {
    /// The build's whole output.
    pub log: PathBuf,
    pub phase: BuildPhase,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BuildPhase {
    InstallingTorch(String),
    /// `compiled` crates of `of` (0: unknown) done; the last one named.
    Compiling {
        compiled: usize,
        of: usize,
        last: Option<String>,
    },
    Failed(String),
    /// The builder is gone without saying why (killed, or the machine restarted).
    Stopped,
}

impl PluginBuild {
    /// How far a build in progress is, in a few words: `installing torch 2.13.0`, `57 of 320 crates compiled
    /// (serde)`; how it ended otherwise.
    pub fn progress(&self) -> String {
        match &self.phase {
            BuildPhase::InstallingTorch(version) => format!("installing torch {version}"),
            BuildPhase::Compiling { compiled, of, last } => {
                let of = if *of > 0 { format!(" of {of}") } else { String::new() };
                let last = last.as_ref().map(|l| format!(" ({l})")).unwrap_or_default();
                format!("{compiled}{of} crates compiled{last}")
            }
            BuildPhase::Failed(why) => format!("failed: {why}"),
            BuildPhase::Stopped => "stopped".into(),
        }
    }

    /// Still working: a burst asked for now should wait for it.
    pub fn in_progress(&self) -> bool {
        matches!(self.phase, BuildPhase::InstallingTorch(_) | BuildPhase::Compiling { .. })
    }
}

impl std::fmt::Display for PluginBuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.phase {
            BuildPhase::InstallingTorch(version) => {
                write!(f, "the trainer is being built: installing torch {version} (about a minute, 4.7 GB)")
            }
            BuildPhase::Compiling { .. } => write!(f, "the trainer is being built: {}", self.progress()),
            BuildPhase::Failed(why) => {
                write!(f, "building the trainer failed: {why} (log: {})", self.log.display())
            }
            BuildPhase::Stopped => {
                write!(f, "building the trainer stopped before it ended (log: {})", self.log.display())
            }
        }
    }
}

/// The background build of the plugin, where one is (or was, and failed) beside a place the plugin is looked for.
pub fn plugin_build() -> Option<PluginBuild> {
    candidates().0.iter().find_map(|plugin| read_status(plugin, crate::run::process_alive))
}

/// The build of the plugin at `plugin`, from its status file; `alive` says whether a process id still runs.
pub fn read_status(plugin: &Path, alive: impl Fn(u32) -> bool) -> Option<PluginBuild> {
    let status = with_suffix(plugin, BUILDING_SUFFIX);
    let text = std::fs::read_to_string(&status).ok()?;
    Some(PluginBuild { log: with_suffix(plugin, BUILD_LOG_SUFFIX), phase: parse_status(&text, alive) })
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The phase a status file's text describes (see the module's contract).
pub fn parse_status(text: &str, alive: impl Fn(u32) -> bool) -> BuildPhase {
    let mut lines = text.lines();
    let header = lines.next().unwrap_or_default();
    let pid = header_number(header, "pid ");
    let of = header_number(header, ", ").unwrap_or(0) as usize;
    let (mut compiled, mut last, mut torch) = (0, None, None);
    for line in lines {
        if let Some(why) = line.strip_prefix("failed: ") {
            return BuildPhase::Failed(why.to_string());
        } else if let Some(name) = line.strip_prefix("compiled ") {
            compiled += 1;
            last = Some(name.to_string());
            torch = None;
        } else if let Some(version) = line.strip_prefix("installing torch ") {
            torch = Some(version.to_string());
        }
    }
    // A header that names no process (written by hand, or cut) is taken as a live build.
    if pid.is_some_and(|pid| !alive(pid as u32)) {
        return BuildPhase::Stopped;
    }
    match torch {
        Some(version) => BuildPhase::InstallingTorch(version),
        None => BuildPhase::Compiling { compiled, of, last },
    }
}

/// The number right after `key` in `header`.
fn header_number(header: &str, key: &str) -> Option<u64> {
    let rest = &header[header.find(key)? + key.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}
