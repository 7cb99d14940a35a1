//! `gigscope advantages RUN`: recompute every step's advantages and print them (jsonl, csv or a table).

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;

use super::estimate::{chosen_family, estimate};
use super::flags::{note_unrecorded_states, FamilyFlags, SettingsFlags};
use super::rows::{episode_rows, Format, OutRow, RowWriter, TableWidths};
use super::source::SourceFlags;
use crate::advantage::{AdvantageSettings, AdvantageTable, AnchorMode};
use crate::run::text_on_disk::{PageClassifier, TextStore};
use crate::run::tokens::Lengths;
use crate::run::LeanReading;
use crate::run::{Episode, Run};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory (gigscope-run/1, a verl rollout dump or a TRL completions log).
    pub run: PathBuf,
    #[command(flatten)]
    pub source: SourceFlags,
    #[command(flatten)]
    pub settings: SettingsFlags,
    #[command(flatten)]
    pub family: FamilyFlags,
    /// Output format: one JSON object per step, CSV, or a readable table.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let result = match streamable(&args)? {
        // A gigscope run under settings that keep episode groups apart: streamed, group by group.
        Some((settings, reading)) => {
            let stdout = BufWriter::new(io::stdout().lock());
            let streamed = super::stream::advantages(
                &args.run,
                &settings,
                reading,
                super::stream::KEPT_BYTES,
                stdout,
                args.format,
            );
            match streamed {
                Ok(streamed) => {
                    warn_broken(&args.run, streamed.broken_lines);
                    note_lengths(&settings, &streamed.lengths);
                    note_unrecorded_states(&settings, &args.run, streamed.unrecorded_states, streamed.steps);
                    Ok(())
                }
                Err(err) => match err.downcast::<io::Error>() {
                    Ok(io) => Err(io),
                    Err(other) => return Err(other),
                },
            }
        }
        None if crate::run::source::resolve_layout(&args.run, args.source.from, false)?
            != crate::run::Layout::Gigscope =>
        {
            // A trainer's own layout: streamed where its groups can be computed alone, else read whole.
            let stdout = BufWriter::new(io::stdout().lock());
            match super::stream_layouts::advantages(
                &args.run,
                &args.source,
                &args.settings,
                &args.family,
                stdout,
                args.format,
            ) {
                Ok(Some((settings, streamed))) => {
                    note_lengths(&settings, &streamed.lengths);
                    Ok(())
                }
                Ok(None) => whole(&args)?,
                Err(err) => match err.downcast::<io::Error>() {
                    Ok(io) => Err(io),
                    Err(other) => return Err(other),
                },
            }
        }
        None => whole(&args)?,
    };
    match result {
        // `gigscope advantages RUN | head` is normal use, not an error.
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(err) => Err(err).context("writing to standard output"),
        Ok(()) => Ok(ExitCode::SUCCESS),
    }
}

/// The run read whole, its advantages computed (an error where they cannot be) and written (what writing gave):
/// the estimators of GiGPO's successors, and runs whose episode groups cannot be computed alone.
fn whole(args: &Args) -> anyhow::Result<io::Result<()>> {
    let run = args.source.open_anchored(&args.run)?;
    let (settings, table) = estimate(&run, &args.settings, &args.family)?;
    note_lengths(&settings, &run.lengths);
    let stdout = io::stdout().lock();
    Ok(write_rows(BufWriter::new(stdout), &run.episodes, &table, args.format))
}

/// Under DEPO's α₁ term, whether its tokens per step were counted from the token store or estimated, on stderr.
fn note_lengths(settings: &AdvantageSettings, lengths: &Lengths) {
    if settings.efficiency_alpha1 != 0.0 {
        eprintln!("note: tokens per step (α₁'s efficiency term): {}", lengths.describe());
    }
}

/// The settings to stream `args`' run with and the reading that takes its episodes in lean form (with its
/// environment's page anchor), or `None` when it is not streamed so: another layout (streamed by
/// [`super::stream_layouts`]), a successor estimator (asked for, or the one the run was trained with), or TRL's
/// scaling (read whole).
fn streamable(args: &Args) -> anyhow::Result<Option<(AdvantageSettings, LeanReading)>> {
    let layout = crate::run::source::resolve_layout(&args.run, args.source.from, false)?;
    if layout != crate::run::Layout::Gigscope {
        return Ok(None);
    }
    // The run's description (a damaged run.json is read as absent, as in the whole read), without its episodes.
    crate::run::check_episodes_file(&args.run)?;
    let mut described = Run::empty(&args.run, layout);
    described.meta = super::source::meta_or_warn(&args.run);
    if chosen_family(&described, &args.settings, &args.family)?.is_some() {
        return Ok(None);
    }
    let settings = args.settings.resolve(&described)?;
    // Only page anchors need the page of a step that records none: classifying every observation costs a tenth
    // of the read otherwise.
    let classifier: fn(&Run) -> Option<PageClassifier> = match settings.anchor {
        AnchorMode::Page => crate::env_registry::page_classifier,
        _ => |_| None,
    };
    let reading = || {
        let store = TextStore::new(&args.run.join(crate::run::EPISODES_FILE));
        LeanReading::new(store, classifier, &described)
    };
    Ok(settings.scale_rewards.is_none().then(|| (settings, reading())))
}

/// The reader's warning about skipped lines, as the whole read gives it.
fn warn_broken(dir: &std::path::Path, broken: usize) {
    if broken > 0 {
        eprintln!(
            "warning: {}: skipped {broken} broken line(s) of the episodes (see `gigscope validate`)",
            dir.display()
        );
    }
}

pub(super) fn out_rows<'a>(episodes: &'a [Episode], table: &'a AdvantageTable) -> impl Iterator<Item = OutRow<'a>> {
    (0..episodes.len()).flat_map(move |e| episode_rows(episodes, table, e))
}

fn write_rows(out: impl Write, episodes: &[Episode], table: &AdvantageTable, format: Format) -> io::Result<()> {
    let mut widths = TableWidths::default();
    for episode in episodes {
        widths.fit(&episode.id, &episode.group);
    }
    let mut writer = RowWriter::new(out, format, widths)?;
    for row in out_rows(episodes, table) {
        writer.row(&row)?;
    }
    writer.finish()
}
