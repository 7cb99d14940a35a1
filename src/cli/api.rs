//! The command line for a program that embeds it (the Python package, `src/python`): a run opened and its
//! advantages computed exactly as `gigscope advantages RUN FLAGS...` does, from the same flag words parsed by the
//! same clap definitions, so that every flag of the command works there with the same meaning, defaults and
//! errors; and `gigscope render` run on its own argument words. Nothing here prints: a run's broken lines and the reader's notices stay on the [`Run`] for the caller
//! to report its own way. A refused flag word is a [`clap::Error`] inside the `anyhow::Error` (its kind tells an
//! unknown flag from a bad value).

use std::path::Path;

use clap::Parser;

use super::advantages::out_rows;
use super::estimate::estimate;
use super::flags::{FamilyFlags, SettingsFlags};
use super::source::SourceFlags;
use crate::advantage::{run_stats, AdvantageTable, RunStats};
use crate::run::Run;

pub use super::rows::{OutRow as AdvantageRow, COLUMNS as ADVANTAGE_COLUMNS};
pub use crate::run::tokens::{StepTokens, VALUE_COLUMNS as TOKEN_VALUE_COLUMNS};

/// `gigscope render`'s arguments (the run, `--out FILE`, `--episode ID`, `--overview`, the settings flags, ...).
#[derive(Parser, Debug)]
#[command(name = "gigscope render", no_binary_name = true)]
struct RenderWords {
    #[command(flatten)]
    args: super::render::Args,
}

/// The flags that choose how a run is read (`--from`, `--group-size`).
#[derive(Parser, Debug)]
#[command(name = "gigscope", no_binary_name = true)]
struct OpenFlags {
    #[command(flatten)]
    source: SourceFlags,
}

/// The advantage settings and the estimator family's settings, as `gigscope advantages` and `stats` take them.
#[derive(Parser, Debug)]
#[command(name = "gigscope advantages", no_binary_name = true)]
struct SettingsWords {
    #[command(flatten)]
    settings: SettingsFlags,
    #[command(flatten)]
    family: FamilyFlags,
}

/// The run in `dir` read as the commands that compute advantages read it (layout detected unless `--from` is
/// among `flags`; page anchors filled in), `flags` being words such as `--from=trl` or `--group-size=8`.
pub fn open(dir: &Path, flags: &[String]) -> anyhow::Result<Run> {
    let flags = OpenFlags::try_parse_from(flags)?;
    flags.source.read_anchored(dir)
}

/// The advantage table of `run` under settings `flags` (words such as `--estimator=grpo`, `--gamma=0.9`),
/// resolved over the run's recorded settings as `gigscope advantages` resolves them.
pub fn advantages(run: &Run, flags: &[String]) -> anyhow::Result<AdvantageTable> {
    let words = SettingsWords::try_parse_from(flags)?;
    let (_, table) = estimate(run, &words.settings, &words.family)?;
    Ok(table)
}

/// The rows `gigscope advantages --format jsonl` prints for `run` and its table, in the same order.
pub fn advantage_rows<'a>(run: &'a Run, table: &'a AdvantageTable) -> impl Iterator<Item = AdvantageRow<'a>> {
    out_rows(&run.episodes, table)
}

/// What `gigscope stats --json` prints for `run` under settings `flags`.
pub fn stats(run: &Run, flags: &[String]) -> anyhow::Result<RunStats> {
    let table = advantages(run, flags)?;
    Ok(run_stats(&run.episodes, &table))
}

/// What `gigscope render WORDS...` does, `words` being its arguments after `render` (the run directory,
/// `--out=FILE`, `--episode=ID`, `--overview`, `--size=WxH`, the settings flags): the picture is written as the
/// command writes it, from the same code.
pub fn render(words: &[String]) -> anyhow::Result<()> {
    let words = RenderWords::try_parse_from(words)?;
    super::render::run(words.args)?;
    Ok(())
}

/// An error as the command line prints it after `error: `: each cause once, joined by `: `.
pub fn message(err: &anyhow::Error) -> String {
    super::error_message(err)
}

/// The tokens of `episode`'s step `step` (every step with tokens without it) from the run's token store, as
/// `gigscope tokens` reads them, with each step's index; an error naming the run, the file and the record
/// for a step that is not recorded or cannot be read.
pub fn tokens(run: &Run, episode: &str, step: Option<u32>) -> anyhow::Result<Vec<(u32, StepTokens)>> {
    let store = crate::run::tokens::TokenStore::open(&run.dir)?;
    let steps = super::tokens::steps(&store, &run.dir, episode, step)?;
    steps
        .into_iter()
        .map(|step| match store.read(episode, step)? {
            Some(tokens) => Ok((step, tokens)),
            None => anyhow::bail!("{}: no tokens recorded for episode {episode:?} step {step}", run.dir.display()),
        })
        .collect()
}
