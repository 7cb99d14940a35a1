use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use serde::Serialize;

use super::source::SourceFlags;
use crate::advantage::{compute, AdvantageSettings};
use crate::index::{default_cache_dir, TrajectoryIndex};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory (gigscope-run/1, a verl rollout dump or a TRL completions log).
    pub run: PathBuf,
    #[command(flatten)]
    pub source: SourceFlags,
    /// Query, e.g. `action:"buy now" AND success:false AND adv:<0`. Text fields: instruction, observation,
    /// action (as extracted from the response by the run's action rule), response (whole), thought; exact fields: id, group, page; numbers: success, valid, reward, return, adv, adv_e,
    /// adv_s, stored_adv, delta, iteration, step, step_group_size, episode, and a TRL run's `rewards.NAME` of
    /// each reward function (ranges `[a TO b]`, comparisons `<`, `<=`, `>`, `>=`).
    pub query: String,
    /// Show at most this many hits (best first, then file order).
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Print one JSON object with the total and the hits.
    #[arg(long)]
    pub json: bool,
    /// Cache directory for the index [default: $GIGSCOPE_CACHE, $XDG_CACHE_HOME/gigscope or ~/.cache/gigscope].
    #[arg(long)]
    pub cache: Option<PathBuf>,
}

#[derive(Serialize)]
struct JsonHit<'a> {
    episode: usize,
    id: &'a str,
    step: usize,
    /// The action extracted from the response.
    action: &'a str,
    /// The response as recorded.
    response: &'a str,
    reward: f64,
    advantage: f64,
    score: f32,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let run = args.source.open_anchored(&args.run)?;
    // The run's recorded settings, as the advantages it is searched by should be the ones it trained with.
    let settings = run
        .meta
        .as_ref()
        .and_then(|m| m.advantage.as_ref())
        .map_or_else(AdvantageSettings::default, |o| o.apply(AdvantageSettings::default()));
    let cache = match args.cache {
        Some(dir) => dir,
        None => default_cache_dir().context("no cache directory: set GIGSCOPE_CACHE or HOME, or pass --cache")?,
    };
    let mut index = TrajectoryIndex::open(&args.run, &cache, &settings)?;
    let table = compute(&run.episodes, &settings);
    if index.episodes_indexed() != run.episodes.len() {
        eprintln!("indexing {} episode(s) into {}", run.episodes.len(), index.dir().display());
    }
    index.update(&run.episodes, &table)?;
    let results = index.search(&args.query, args.limit)?;

    let mut out = std::io::stdout().lock();
    // A hit whose episode index is out of range would mean the index and the run disagree; `update` just
    // synchronised them, so such hits are skipped rather than trusted.
    let rows = results.hits.iter().filter_map(|hit| {
        let episode = run.episodes.get(hit.episode)?;
        let step = episode.steps.get(hit.step)?;
        let row = table.get_row(hit.episode, hit.step)?;
        Some(JsonHit {
            episode: hit.episode,
            id: &episode.id,
            step: hit.step,
            action: settings.action.extract(&step.action),
            response: &step.action,
            reward: step.reward,
            advantage: row.advantage,
            score: hit.score,
        })
    });
    if args.json {
        let hits: Vec<JsonHit> = rows.collect();
        serde_json::to_writer(&mut out, &serde_json::json!({ "total": results.total, "hits": hits }))?;
        writeln!(out)?;
    } else {
        writeln!(out, "{:<16} {:>4} {:>10}  action", "episode", "step", "adv")?;
        for hit in rows {
            writeln!(out, "{:<16} {:>4} {:>10.4}  {}", hit.id, hit.step, hit.advantage, hit.action)?;
        }
        writeln!(out, "{} of {} matching step(s)", results.hits.len(), results.total)?;
    }
    Ok(ExitCode::SUCCESS)
}
