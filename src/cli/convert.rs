//! `gigscope convert SRC --out DIR`: any run gigscope reads, written as gigscope-run/1 (to share it, to index
//! it, or to open it with tools that only read gigscope's own layout). A run with a file that could not be
//! read (or one still being written) is not converted: the copy would pass for the whole run.
//!
//! The copy's `run.json` records the advantage settings the run was trained with: the advantage flags given
//! (over what the source records), else, for a TRL log whose stored advantages the recorded settings do not
//! reproduce, the `scale_rewards`, reward weights and aggregation that do ([`reproducing_trl_settings`]; TRL's
//! log records none of them), said on standard error; else what the source records, unchanged.
//!
//! The run is streamed ([`Run::stream_as`]): its episodes are written as they are read, and `run.json` last,
//! so memory grows with a part of the run, not with the run. The search for a TRL log's settings reads the run
//! again, an iteration (TRL's batch, within which the settings act) at a time: once to check the recorded
//! settings while keeping the first iteration with stored advantages (the candidates' probe), then once for
//! each few candidates that reproduce the probe ([`reproducing_among`]), until one reproduces the whole run;
//! what it finds is what the search over the run read whole finds. Only a TRL log whose episode groups span
//! iterations (no TRL trainer writes one) is read whole for the search, its iterations not being apart.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use serde_json::Value;

use super::flags::{EpisodeFacts, SettingsFlags};
use super::source::SourceFlags;
use crate::advantage::reconcile::{reproducing_among, reproducing_trl_settings, trl_flags, ProbeFacts, Reproduction};
use crate::advantage::stats::compare_stored;
use crate::advantage::{compute, AdvantageOverrides, AdvantageSettings};
use crate::run::{Episode, GroupSizes, Layout, Run, RunMeta, RunWriter, FORMAT_V1};

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
    let written = match write_streamed(&args, &staging) {
        Ok(Some(copied)) => Ok(copied),
        Ok(None) => {
            let _ = std::fs::remove_dir_all(&staging);
            write_whole(&args, &staging)
        }
        Err(err) => Err(err),
    };
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

/// The run read whole, then written to `staging` with the settings to record; the run and its episode count.
/// Its problems were said by the streamed pass before it.
fn write_whole(args: &Args, staging: &Path) -> anyhow::Result<(Run, usize)> {
    let run = Run::open_as(&args.run, args.source.from, &args.source.options())?;
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

/// The run's episodes written to `staging` as they are read ([`Run::stream_as`]), then the settings to record
/// found (the run read again for a TRL log's: see the module's comment); the run (without its episodes) and
/// how many were written. `None` where the run must be read whole for its settings.
fn write_streamed(args: &Args, staging: &Path) -> anyhow::Result<Option<(Run, usize)>> {
    let writing = || format!("writing {}", args.out.display());
    let mut writer = RunWriter::create(staging).with_context(writing)?;
    let (mut counted, mut failed) = (Counted::default(), None);
    let run = Run::stream_as(&args.run, args.source.from, &args.source.options(), |_, read| {
        counted.add(&read);
        for episode in read {
            if failed.is_none() {
                if let Err(err) = writer.append_episode(&episode) {
                    failed = Some(err);
                }
            }
        }
    })?;
    let partial = counted.groups.partial(&run.meta.as_ref().map(RunMeta::group_sizes).unwrap_or_default());
    super::source::report(&args.run, &run, &partial);
    refuse_skipped(args, &run)?;
    if let Some(err) = failed {
        return Err(anyhow::Error::new(err).context(writing()));
    }
    let given = args.settings.overrides()? != AdvantageOverrides::default();
    let settings = if given {
        Some(args.settings.resolve_with(&run, &counted.facts)?)
    } else if run.layout == Layout::Trl {
        if counted.spans_iterations {
            return Ok(None);
        }
        let resolved = args.settings.resolve_with(&run, &counted.facts)?;
        let inferred = reproducing_streamed(args, &counted, &resolved)?;
        say_inferred(args, inferred.as_ref());
        inferred
    } else {
        None
    };
    finish_copy(&mut writer, &run, settings.as_ref()).with_context(writing)?;
    Ok(Some((run, counted.episodes)))
}

/// What the first pass of a conversion counts of the episodes it copies: the groups' sizes (for the partial
/// groups), what resolving the settings needs, and for a TRL log's search, each iteration's episodes.
#[derive(Default)]
struct Counted {
    episodes: usize,
    groups: GroupSizes,
    facts: EpisodeFacts,
    probe: ProbeFacts,
    iteration_episodes: HashMap<i64, usize>,
    /// Each group's first iteration, by the group's hash ([`Counted::hasher`]): whether some group has
    /// episodes in two iterations.
    group_iteration: HashMap<u64, i64>,
    hasher: std::collections::hash_map::RandomState,
    spans_iterations: bool,
}

impl Counted {
    fn add(&mut self, episodes: &[Episode]) {
        self.episodes += episodes.len();
        self.facts.add(episodes);
        self.probe.add(episodes);
        for episode in episodes {
            self.groups.add(&episode.group, episode.iteration);
            *self.iteration_episodes.entry(episode.iteration).or_default() += 1;
            let first = *self.group_iteration.entry(self.hasher.hash_one(&episode.group)).or_insert(episode.iteration);
            self.spans_iterations |= first != episode.iteration;
        }
    }
}

/// [`reproducing_trl_settings`] of the run, read again an iteration at a time (see the module's comment).
fn reproducing_streamed(
    args: &Args,
    counted: &Counted,
    settings: &AdvantageSettings,
) -> anyhow::Result<Option<AdvantageSettings>> {
    let Some(first) = counted.probe.first_stored_iteration.filter(|_| settings.scale_rewards.is_some()) else {
        return Ok(None);
    };
    let mut probe = Vec::new();
    if reproduced_over_run(args, counted, std::slice::from_ref(settings), Some((first, &mut probe)))?[0] != Some(false)
    {
        return Ok(None);
    }
    let whole = probe.len() == counted.episodes;
    let mut failure = None;
    let found = reproducing_among(settings, &probe, whole, counted.probe.reward_functions(), |batch| {
        let checked = match failure {
            Some(_) => Ok(Vec::new()),
            None => reproduced_over_run(args, counted, batch, None),
        };
        match checked {
            Ok(verdicts) => verdicts.into_iter().map(|v| v == Some(true)).collect(),
            Err(err) => {
                failure = Some(err);
                Vec::new()
            }
        }
    });
    match failure {
        Some(err) => Err(err),
        None => Ok(found),
    }
}

/// Whether each of `candidates` reproduces the stored advantages of the run (`None`: no row to compare), the
/// run read once more, each iteration computed alone once its last episode has come (of the episodes the first
/// pass counted); the episodes of iteration `probe.0`, kept in `probe.1`.
fn reproduced_over_run(
    args: &Args,
    counted: &Counted,
    candidates: &[AdvantageSettings],
    mut probe: Option<(i64, &mut Vec<Episode>)>,
) -> anyhow::Result<Vec<Option<bool>>> {
    let mut found = vec![Reproduction::default(); candidates.len()];
    let mut check = |episodes: Vec<Episode>, iteration: i64| {
        for (candidate, reproduction) in candidates.iter().zip(found.iter_mut()) {
            reproduction.add(compare_stored(episodes.as_slice(), &compute(&episodes, candidate)));
        }
        if let Some((_, kept)) = probe.as_mut().filter(|(probed, _)| *probed == iteration) {
            kept.extend(episodes);
        }
    };
    let mut left = counted.iteration_episodes.clone();
    let mut open: HashMap<i64, Vec<Episode>> = HashMap::new();
    let mut seen = 0;
    Run::stream_as(&args.run, args.source.from, &args.source.options(), |_, episodes| {
        for episode in episodes {
            // What the first pass did not see (the run grew meanwhile) is not in the copy either.
            let Some(count) = left.get_mut(&episode.iteration).filter(|_| seen < counted.episodes) else { continue };
            seen += 1;
            let iteration = episode.iteration;
            open.entry(iteration).or_default().push(episode);
            *count = count.saturating_sub(1);
            if *count == 0 {
                check(open.remove(&iteration).unwrap_or_default(), iteration);
            }
        }
    })?;
    // Iterations with episodes this pass did not find (the run changed meanwhile), without them.
    let mut rest: Vec<(i64, Vec<Episode>)> = open.into_iter().collect();
    rest.sort_by_key(|(iteration, _)| *iteration);
    for (iteration, episodes) in rest {
        check(episodes, iteration);
    }
    Ok(found.iter().map(Reproduction::verdict).collect())
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

/// The settings the copy's `run.json` records, when they are not the source's own (module docs), found in the
/// run read whole.
fn settings_to_record(args: &Args, run: &Run) -> anyhow::Result<Option<AdvantageSettings>> {
    let resolved = args.settings.resolve(run)?;
    if args.settings.overrides()? != AdvantageOverrides::default() {
        return Ok(Some(resolved));
    }
    let inferred = reproducing_trl_settings(&run.episodes, &resolved);
    say_inferred(args, inferred.as_ref());
    Ok(inferred)
}

/// Settings found to reproduce the stored advantages are said on standard error.
fn say_inferred(args: &Args, inferred: Option<&AdvantageSettings>) {
    if let Some(found) = inferred {
        eprintln!(
            "{}: the stored advantages are reproduced by `{}` (TRL's log does not record them): recorded in \
             run.json; pass the flags to record others",
            args.run.display(),
            trl_flags(found)
        );
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The `convert` command line `args`, parsed.
    fn parsed(args: &[&str]) -> Args {
        #[derive(clap::Parser)]
        struct Command {
            #[command(flatten)]
            args: Args,
        }
        let line = std::iter::once("convert").chain(args.iter().copied());
        <Command as clap::Parser>::try_parse_from(line).expect("arguments").args
    }

    /// Every file under `dir`, relative to it, with its bytes.
    fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
        let mut found = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(at) = stack.pop() {
            for entry in std::fs::read_dir(&at).expect("listed") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let bytes = std::fs::read(&path).expect("read");
                    found.push((path.strip_prefix(dir).expect("below").to_path_buf(), bytes));
                }
            }
        }
        found.sort();
        found
    }

    #[test]
    fn a_streamed_copy_is_the_copy_of_the_run_read_whole() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
        let trl = |name: &str| fixtures.join("trl").join(name).display().to_string();
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_runs/webshop-gigpo").display().to_string();
        let verl = fixtures.join("verl/v1").display().to_string();
        let cases: Vec<Vec<String>> = vec![
            // TRL logs whose stored advantages other settings reproduce (the search reads the run again), or
            // the recorded ones.
            vec![trl("batch_weights")],
            vec![trl("normalize_then_sum")],
            vec![trl("scale_none")],
            vec![trl("num_iterations")],
            vec![trl("default")],
            // Settings given.
            vec![trl("batch_weights"), "--scale-rewards".into(), "none".into()],
            vec![verl, "--scale-rewards".into(), "batch".into()],
            vec![sample, "--gamma".into(), "0.9".into()],
        ];
        let tmp = tempfile::tempdir().expect("tempdir");
        for (k, case) in cases.iter().enumerate() {
            let (whole, streamed) = (tmp.path().join(format!("whole{k}")), tmp.path().join(format!("streamed{k}")));
            let mut line: Vec<&str> = case.iter().map(String::as_str).collect();
            let out = tmp.path().join(format!("out{k}")).display().to_string();
            line.extend(["--out", &out]);
            let args = parsed(&line);
            let (read, episodes) = write_whole(&args, &whole).expect("read whole");
            let (streamed_run, streamed_episodes) =
                write_streamed(&args, &streamed).expect("streamed").expect("not read whole");
            assert!(episodes > 0, "{case:?}");
            assert_eq!((streamed_episodes, streamed_run.notices), (episodes, read.notices), "{case:?}");
            let (whole, streamed) = (files(&whole), files(&streamed));
            assert_eq!(whole.len(), 3, "{case:?}: {:?}", whole.iter().map(|f| &f.0).collect::<Vec<_>>());
            for ((path, bytes), (streamed_path, streamed_bytes)) in whole.iter().zip(&streamed) {
                assert_eq!(path, streamed_path, "{case:?}");
                assert!(bytes == streamed_bytes, "{case:?}: {} differs", path.display());
            }
        }
        // The search found the settings batch_weights was trained with (TRL's batch scaling), on the whole run.
        let meta = std::fs::read_to_string(tmp.path().join("streamed0/run.json")).expect("run.json");
        assert!(meta.contains(r#""scale_rewards":"batch""#) || meta.contains(r#""scale_rewards": "batch""#), "{meta}");
    }
}
