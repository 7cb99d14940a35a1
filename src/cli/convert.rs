//! `gigscope convert SRC --out DIR`: any run gigscope reads, written as gigscope-run/1 (to share it, to index
//! it, or to open it with tools that only read gigscope's own layout). A run with a file that could not be
//! read (or one still being written) is not converted: the copy would pass for the whole run.
//!
//! The copy's `run.json` records the advantage settings the run was trained with: the advantage flags given
//! (over what the source records), else, for a TRL log whose stored advantages the recorded settings do not
//! reproduce, the `scale_rewards`, reward weights and aggregation that do ([`reproducing_trl_settings`]; TRL's
//! log records none of them), said on standard error; else what the source records, unchanged.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use serde_json::Value;

use super::flags::SettingsFlags;
use super::source::SourceFlags;
use crate::advantage::reconcile::{reproducing_trl_settings, trl_flags};
use crate::advantage::{AdvantageOverrides, AdvantageSettings};
use crate::run::{GroupSizes, Run, RunMeta, RunWriter, FORMAT_V1};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory to read (gigscope-run/1, a verl rollout dump or a TRL completions log).
    pub run: PathBuf,
    #[command(flatten)]
    pub source: SourceFlags,
    /// Directory to write the gigscope-run/1 copy to; it must not exist yet (nothing is overwritten).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The advantage settings to record in the copy's `run.json` (TRL's `--scale-rewards`, `--reward-weights`,
    /// `--aggregation` above all: a TRL log records none of them).
    #[command(flatten)]
    pub settings: SettingsFlags,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.out.exists() {
        bail!("{}: already exists (convert writes a new directory and never overwrites one)", args.out.display());
    }
    // Written beside the target and renamed into place at the end, so an interrupted conversion never leaves
    // a directory that looks like a complete run.
    let parent = args.out.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = args.out.file_name().context("--out needs a directory name")?.to_string_lossy();
    remove_abandoned_staging(parent, &name);
    let staging = parent.join(format!(".{name}.converting{}", std::process::id()));
    let written = if streamable(&args)? { write_streamed(&args, &staging) } else { write_whole(&args, &staging) };
    let result = written.and_then(|copied| {
        std::fs::rename(&staging, &args.out).with_context(|| format!("writing {}", args.out.display()))?;
        Ok(copied)
    });
    let (run, episodes) = match result {
        Ok(copied) => copied,
        Err(err) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(err);
        }
    };
    eprintln!(
        "{}: {episodes} episode(s), {} metrics record(s) from the {} in {}",
        args.out.display(),
        run.metrics.len(),
        run.layout.name(),
        args.run.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Whether the run is copied as it is read, without holding it: unless settings are to be recorded (flags given,
/// or a TRL log's to be found from its stored advantages), which take the whole run.
fn streamable(args: &Args) -> anyhow::Result<bool> {
    let layout = crate::run::source::resolve_layout(&args.run, args.source.from, false)?;
    Ok(layout != crate::run::Layout::Trl && args.settings.overrides()? == AdvantageOverrides::default())
}

/// The run read whole, then written to `staging` with the settings to record; the run and its episode count.
fn write_whole(args: &Args, staging: &Path) -> anyhow::Result<(Run, usize)> {
    let run = args.source.open(&args.run)?;
    refuse_skipped(args, &run)?;
    let settings = settings_to_record(args, &run)?;
    let mut writer = RunWriter::create(staging).with_context(|| format!("writing {}", args.out.display()))?;
    for episode in &run.episodes {
        writer.append_episode(episode)?;
    }
    finish_copy(&mut writer, &run, settings.as_ref()).with_context(|| format!("writing {}", args.out.display()))?;
    let episodes = run.episodes.len();
    Ok((run, episodes))
}

/// The run's episodes written to `staging` as they are read ([`Run::stream_as`]); the run (without its
/// episodes) and how many were written.
fn write_streamed(args: &Args, staging: &Path) -> anyhow::Result<(Run, usize)> {
    let writing = || format!("writing {}", args.out.display());
    let mut writer = RunWriter::create(staging).with_context(writing)?;
    let (mut episodes, mut groups, mut failed) = (0, GroupSizes::default(), None);
    let run = Run::stream_as(&args.run, args.source.from, &args.source.options(), |_, read| {
        for episode in read {
            groups.add(&episode.group, episode.iteration);
            if failed.is_none() {
                match writer.append_episode(&episode) {
                    Ok(()) => episodes += 1,
                    Err(err) => failed = Some(err),
                }
            }
        }
    })?;
    let partial = groups.partial(&run.meta.as_ref().map(RunMeta::group_sizes).unwrap_or_default());
    super::source::report(&args.run, &run, &partial);
    refuse_skipped(args, &run)?;
    if let Some(err) = failed {
        return Err(anyhow::Error::new(err).context(writing()));
    }
    finish_copy(&mut writer, &run, None).with_context(writing)?;
    Ok((run, episodes))
}

/// A run with a file that could not be read is not converted: a copy without it would look like the whole run.
fn refuse_skipped(args: &Args, run: &Run) -> anyhow::Result<()> {
    if run.skipped.is_empty() {
        return Ok(());
    }
    let files: Vec<String> = run.skipped.iter().map(|s| s.file.clone()).collect();
    bail!(
        "{}: {} file(s) could not be read ({}); nothing written to {} (see `gigscope validate`)",
        args.run.display(),
        files.len(),
        files.join(", "),
        args.out.display()
    )
}

/// Staging directories `.NAME.converting<pid>` left by a conversion that was killed (its process is gone) are
/// removed; one whose process still runs is another conversion at work and is left alone.
fn remove_abandoned_staging(parent: &Path, name: &str) {
    let prefix = format!(".{name}.converting");
    let Ok(entries) = std::fs::read_dir(parent) else { return };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(pid) = file_name.to_str().and_then(|n| n.strip_prefix(&prefix)).and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !crate::run::process_alive(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The settings the copy's `run.json` records, when they are not the source's own (module docs).
fn settings_to_record(args: &Args, run: &Run) -> anyhow::Result<Option<AdvantageSettings>> {
    let resolved = args.settings.resolve(run)?;
    if args.settings.overrides()? != AdvantageOverrides::default() {
        return Ok(Some(resolved));
    }
    let inferred = reproducing_trl_settings(&run.episodes, &resolved);
    if let Some(found) = &inferred {
        eprintln!(
            "{}: the stored advantages are reproduced by `{}` (TRL's log does not record them): recorded in \
             run.json; pass the flags to record others",
            args.run.display(),
            trl_flags(found)
        );
    }
    Ok(inferred)
}

/// The copy's `run.json` and metrics, after its episodes.
fn finish_copy(writer: &mut RunWriter, run: &Run, settings: Option<&AdvantageSettings>) -> anyhow::Result<()> {
    let mut meta = run.meta.clone().unwrap_or_default();
    if meta.format.as_deref() != Some(FORMAT_V1) {
        // Where the run came from is kept: the source layout and its own format tag.
        let origin = serde_json::json!({
            "layout": run.layout.name(),
            "format": meta.format,
            "path": run.dir.display().to_string(),
        });
        meta.extra.insert("converted_from".to_string(), origin);
    }
    meta = RunMeta { format: Some(FORMAT_V1.to_string()), ..meta };
    if let Some(settings) = settings {
        meta.advantage = Some(AdvantageOverrides::from_settings(settings));
    }
    if !run.notices.is_empty() {
        let notices = run.notices.iter().cloned().map(Value::String).collect();
        meta.extra.insert("reader_notices".to_string(), Value::Array(notices));
    }
    writer.write_meta(&meta)?;
    for record in &run.metrics {
        writer.append_metrics(record)?;
    }
    Ok(())
}
