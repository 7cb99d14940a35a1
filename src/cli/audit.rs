//! `gigscope audit RUN --iteration I`: the credit audit of one iteration (issue 26 item 4), the behaviours its
//! update pushes up and down the most ([`crate::advantage::audit`]), as a table or as JSON.
//!
//! Advantages are the run's under the usual settings flags (and `--estimator`); actions are extracted from the
//! responses by the run's action rule ([`crate::text::action`]); the token mass counts each step's masked
//! tokens from the run's token store, where it has one (the index's count where it records one, else the
//! record's mask). Grouped by `--query`, the steps each query matches are found in the run's search index
//! ([`crate::index`], brought up to date first under the same settings, as `gigscope search` does).

use std::collections::BTreeSet;
use std::io::{self, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use regex::Regex;
use serde::Serialize;

use super::estimate::estimate;
use super::flags::{FamilyFlags, SettingsFlags, TableOrJson as Format};
use super::source::SourceFlags;
use crate::advantage::audit::{audit, Audit, AuditRow, BehaviourCredit, Behaviours, Matched};
use crate::advantage::{compute, AdvantageSettings, AdvantageTable, RowRef};
use crate::index::{default_cache_dir, TrajectoryIndex};
use crate::run::tokens::TokenStore;
use crate::run::Run;
use crate::text::action::ActionRule;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory (gigscope-run/1, a verl rollout dump or a TRL completions log).
    pub run: PathBuf,
    /// The iteration audited; its change is taken from the run's previous iteration.
    #[arg(long)]
    pub iteration: i64,
    /// Group actions by this regex instead of by verb and target: its first capture group (else its whole
    /// match) is the behaviour; actions it does not match are "(unmatched)".
    #[arg(long, value_name = "REGEX", conflicts_with = "query")]
    pub by: Option<String>,
    /// Group steps by trajectory queries as `gigscope search` and the search view accept them (repeat for
    /// several): a step is the behaviour of the first query that matches it, named by the query; steps no query
    /// matches are "(unmatched)". E.g. `--query 'action:"buy now"' --query 'page:item AND NOT action:"buy now"'`.
    #[arg(long, value_name = "QUERY")]
    pub query: Vec<String>,
    /// Cache directory for the search index that `--query` uses [default: $GIGSCOPE_CACHE,
    /// $XDG_CACHE_HOME/gigscope or ~/.cache/gigscope].
    #[arg(long)]
    pub cache: Option<PathBuf>,
    /// Behaviours listed each way in the table (the JSON lists every behaviour).
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    #[command(flatten)]
    pub source: SourceFlags,
    #[command(flatten)]
    pub settings: SettingsFlags,
    #[command(flatten)]
    pub family: FamilyFlags,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let run = args.source.open_anchored(&args.run)?;
    let (settings, table) = estimate(&run, &args.settings, &args.family)?;
    let matched = if args.query.is_empty() { Vec::new() } else { query_matches(&run, &settings, &args)? };
    let behaviours = match &args.by {
        Some(re) => Behaviours::Pattern(Regex::new(re).with_context(|| format!("--by {re:?}"))?),
        None if !matched.is_empty() => Behaviours::Queries(&matched),
        None => Behaviours::Verbs,
    };
    let tokens = TokenStore::open(&run.dir).ok().filter(|store| store.episode_count() > 0);
    let iterations = iterations(&run);
    anyhow::ensure!(
        iterations.contains(&args.iteration),
        "{}: no episodes of iteration {} (the run has iterations {})",
        run.dir.display(),
        args.iteration,
        list(&iterations)
    );
    let previous = iterations.iter().copied().filter(|&i| i < args.iteration).max();
    let rule = settings.action;
    let now = audit_rows(&run, &table, args.iteration, rule, &behaviours, tokens.as_ref())?;
    let before = previous.map(|p| audit_rows(&run, &table, p, rule, &behaviours, None)).transpose()?;
    let result = audit(&now, before.as_deref());
    let out = AuditOut {
        run: run.dir.display().to_string(),
        iteration: args.iteration,
        previous_iteration: previous,
        by: args.by.clone(),
        queries: &args.query,
        action_regex: rule.pattern_text(),
        total: result.total,
        rows: result.rows,
        behaviours: result.behaviours.iter().map(|b| BehaviourOut::of(b, &run)).collect(),
    };
    let written = match args.format {
        Format::Json => writeln!(io::stdout().lock(), "{}", serde_json::to_string_pretty(&out)?),
        Format::Table => write_table(&mut io::stdout().lock(), &out, &result, args.top),
    };
    match written {
        Err(err) if err.kind() != io::ErrorKind::BrokenPipe => Err(err.into()),
        _ => Ok(ExitCode::SUCCESS),
    }
}

/// The steps each of `--query` matches, from the run's search index (updated first). The index holds GiGPO's
/// advantages under `settings` (as `gigscope search` does), whatever `--estimator` the audit's masses use.
fn query_matches(run: &Run, settings: &AdvantageSettings, args: &Args) -> anyhow::Result<Vec<Matched>> {
    let cache = match &args.cache {
        Some(dir) => dir.clone(),
        None => default_cache_dir().context("no cache directory: set GIGSCOPE_CACHE or HOME, or pass --cache")?,
    };
    let mut index = TrajectoryIndex::open(&args.run, &cache, settings)?;
    if index.episodes_indexed() != run.episodes.len() {
        eprintln!("indexing {} episode(s) into {}", run.episodes.len(), index.dir().display());
    }
    index.update(&run.episodes, &compute(&run.episodes, settings))?;
    args.query
        .iter()
        .map(|query| {
            let rows: BTreeSet<RowRef> = index
                .positions(query)
                .with_context(|| format!("--query {query:?}"))?
                .into_iter()
                .map(|(episode, step)| RowRef { episode: episode as u32, step: step as u32 })
                .collect();
            Ok(Matched { query: query.clone(), rows })
        })
        .collect()
}

/// The run's iterations, in order.
fn iterations(run: &Run) -> Vec<i64> {
    let mut seen: Vec<i64> = run.episodes.iter().map(|e| e.iteration).collect();
    seen.sort_unstable();
    seen.dedup();
    seen
}

fn list(iterations: &[i64]) -> String {
    if iterations.is_empty() {
        return "none".into();
    }
    iterations.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
}

/// The audit rows of `iteration`: each step's behaviour, final advantage and masked tokens (from `tokens`).
pub fn audit_rows(
    run: &Run,
    table: &AdvantageTable,
    iteration: i64,
    rule: ActionRule,
    behaviours: &Behaviours,
    tokens: Option<&TokenStore>,
) -> anyhow::Result<Vec<AuditRow>> {
    let mut rows = Vec::new();
    for (e, episode) in run.episodes.iter().enumerate().filter(|(_, e)| e.iteration == iteration) {
        let advantages = table.episode_rows(e);
        let indexed = tokens.map(|store| store.steps(&episode.id)).unwrap_or_default();
        for (t, (step, row)) in episode.steps.iter().zip(advantages).enumerate() {
            let at = RowRef { episode: e as u32, step: t as u32 };
            let counted = indexed.iter().find(|s| s.step == at.step).and_then(|s| s.trained);
            let masked_tokens = match (counted, tokens) {
                (Some(trained), _) => Some(trained),
                (None, Some(store)) => store
                    .read(&episode.id, at.step)
                    .with_context(|| format!("tokens of episode {} step {t}", episode.id))?
                    .map(|record| record.mask.iter().filter(|&&m| m).count() as u32),
                (None, None) => None,
            };
            let behaviour = behaviours.of(at, rule.extract(&step.action), step.page.as_deref());
            rows.push(AuditRow { at, behaviour, advantage: row.advantage, masked_tokens });
        }
    }
    Ok(rows)
}

/// `audit --format json`.
#[derive(Serialize)]
struct AuditOut<'a> {
    run: String,
    iteration: i64,
    previous_iteration: Option<i64>,
    by: Option<String>,
    /// The trajectory queries the steps were grouped by (empty: by `by`, else by verb and target).
    queries: &'a [String],
    /// The action regex the actions were extracted with (`null`: `<action>…</action>`, else the whole response).
    action_regex: Option<&'a str>,
    total: f64,
    rows: usize,
    behaviours: Vec<BehaviourOut<'a>>,
}

#[derive(Serialize)]
struct BehaviourOut<'a> {
    #[serde(flatten)]
    credit: &'a BehaviourCredit,
    /// Its rows as (episode id, step).
    rows: Vec<(&'a str, u32)>,
}

impl<'a> BehaviourOut<'a> {
    fn of(credit: &'a BehaviourCredit, run: &'a Run) -> BehaviourOut<'a> {
        let rows = credit.rows.iter().map(|r| (run.episodes[r.episode as usize].id.as_str(), r.step)).collect();
        BehaviourOut { credit, rows }
    }
}

fn signed(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:+.3}"))
}

fn write_table(out: &mut impl Write, o: &AuditOut<'_>, audit: &Audit, top: usize) -> io::Result<()> {
    writeln!(
        out,
        "{}: iteration {}, {} rows, total A {:.3}; change against {}",
        o.run,
        o.iteration,
        o.rows,
        o.total,
        o.previous_iteration.map_or_else(|| "no earlier iteration".into(), |p| format!("iteration {p}"))
    )?;
    let width = audit.behaviours.iter().map(|b| b.behaviour.chars().count()).max().unwrap_or(0).clamp(9, 48);
    for (title, list) in [
        ("pushed up", audit.pushed_up(top).collect::<Vec<_>>()),
        ("pushed down", audit.pushed_down(top).collect::<Vec<_>>()),
    ] {
        writeln!(out, "\n{title}")?;
        if list.is_empty() {
            writeln!(out, "  (none)")?;
            continue;
        }
        writeln!(
            out,
            "  {:<width$} {:>6} {:>10} {:>9} {:>12} {:>10}",
            "behaviour", "rows", "mass", "A/row", "token mass", "change"
        )?;
        for b in list {
            let name: String = b.behaviour.chars().take(width).collect();
            writeln!(
                out,
                "  {name:<width$} {:>6} {:>+10.3} {:>+9.3} {:>12} {:>10}",
                b.count,
                b.mass,
                if b.count == 0 { 0.0 } else { b.mass / b.count as f64 },
                signed(b.token_mass),
                signed(b.change)
            )?;
        }
    }
    Ok(())
}
