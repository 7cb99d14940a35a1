//! `gigscope tokens RUN --episode ID [--step N] --format jsonl|table`: one row per token of a step (every
//! step of the episode without `--step`) from the run's token store, with the recorded channels (null where
//! the trainer recorded none) and the values derived from them.
//!
//! The jsonl keys, in this order: `step`, `index`, `id`, `text`, `offset`, `mask`, the channels
//! (`advantage`, `old_logprob`, `rollout_logprob`, `ref_logprob`, `entropy`, `ratio`, `clipped`), then
//! `mismatch`, `mismatch_weight`, `kl_k1`, `kl_k3`, `effective_weight`. Floats are written in their shortest
//! float32 form (they read back as the stored f32 exactly); a value that is not finite as the string `"NaN"`,
//! `"Infinity"` or `"-Infinity"`; `clipped` as a boolean.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::bail;

use crate::run::tokens::{StepTokens, TokenStore, VALUE_COLUMNS};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Jsonl,
    Table,
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Run directory holding a token store (`tokens/`).
    pub run: PathBuf,
    /// The episode's id.
    #[arg(long)]
    pub episode: String,
    /// The step's index in the episode (from 0); every step with tokens when left out.
    #[arg(long)]
    pub step: Option<u32>,
    /// One JSON object per token, or a readable table.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    crate::run::check_run_dir(&args.run)?;
    let store = TokenStore::open(&args.run)?;
    for error in store.errors() {
        eprintln!("warning: {}: {error}", args.run.display());
    }
    let steps = steps(&store, &args.run, &args.episode, args.step)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let mut failed = false;
    for step in steps {
        let tokens = match store.read(&args.episode, step) {
            Ok(Some(tokens)) => tokens,
            Ok(None) => {
                eprintln!(
                    "error: {}: no tokens recorded for episode {:?} step {step}",
                    args.run.display(),
                    args.episode
                );
                failed = true;
                continue;
            }
            Err(err) => {
                eprintln!("error: {err}");
                failed = true;
                continue;
            }
        };
        let written = match args.format {
            Format::Jsonl => write_jsonl(&mut out, step, &tokens),
            Format::Table => write_table(&mut out, step, &tokens),
        };
        if let Err(err) = written.and_then(|()| out.flush()) {
            // A reader that stopped reading (`| head`) ends the output quietly.
            if err.kind() == std::io::ErrorKind::BrokenPipe {
                return Ok(ExitCode::SUCCESS);
            }
            return Err(err.into());
        }
    }
    Ok(if failed { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

/// The steps asked for: `step`, or every step of `episode` with tokens; an error naming the run when the
/// episode has none.
pub(crate) fn steps(store: &TokenStore, run: &Path, episode: &str, step: Option<u32>) -> anyhow::Result<Vec<u32>> {
    let steps: Vec<u32> = match step {
        Some(step) => vec![step],
        None => store.steps(episode).into_iter().map(|s| s.step).collect(),
    };
    if steps.is_empty() {
        bail!(
            "{}: no tokens recorded for episode {episode:?} (the token store has {} episode(s))",
            run.display(),
            store.episode_count()
        );
    }
    Ok(steps)
}

fn json_number(v: f32) -> String {
    if v.is_nan() {
        "\"NaN\"".to_string()
    } else if v.is_infinite() {
        if v > 0.0 { "\"Infinity\"" } else { "\"-Infinity\"" }.to_string()
    } else {
        // Debug is the shortest text that reads back as this f32 (with an exponent where needed: valid JSON).
        format!("{v:?}")
    }
}

fn write_jsonl(out: &mut impl Write, step: u32, tokens: &StepTokens) -> std::io::Result<()> {
    for (i, id) in tokens.ids.iter().enumerate() {
        let text = tokens.token_text(i).map_or_else(|| "null".to_string(), |t| serde_json::Value::from(t).to_string());
        write!(
            out,
            "{{\"step\":{step},\"index\":{i},\"id\":{id},\"text\":{text},\"offset\":{},\"mask\":{}",
            tokens.offset(i),
            u8::from(tokens.mask[i])
        )?;
        for (&key, value) in VALUE_COLUMNS.iter().zip(tokens.row_values(i)) {
            let value = match (key, value) {
                (_, None) => "null".to_string(),
                ("clipped", Some(c)) => (c != 0.0).to_string(),
                (_, Some(v)) => json_number(v),
            };
            write!(out, ",\"{key}\":{value}")?;
        }
        writeln!(out, "}}")?;
    }
    Ok(())
}

fn write_table(out: &mut impl Write, step: u32, tokens: &StepTokens) -> std::io::Result<()> {
    let recorded: Vec<&str> = tokens.recorded().iter().map(|c| c.name()).collect();
    writeln!(
        out,
        "step {step}: {} token(s), {} trained; channels: {}",
        tokens.len(),
        tokens.mask.iter().filter(|&&m| m).count(),
        if recorded.is_empty() { "none".to_string() } else { recorded.join(", ") }
    )?;
    let heads = ["idx", "id", "text", "m", "adv", "old_lp", "roll_lp", "ref_lp", "ent", "ratio", "clip"];
    let tail = ["mism", "is_w", "k1", "k3", "eff_w"];
    write!(out, "{:>5} {:>7} {:<16} {:>1}", heads[0], heads[1], heads[2], heads[3])?;
    for head in heads[4..].iter().chain(&tail) {
        write!(out, " {head:>9}")?;
    }
    writeln!(out)?;
    for (i, id) in tokens.ids.iter().enumerate() {
        let text = tokens.token_text(i).map_or_else(|| "<unknown id>".to_string(), |t| format!("{t:?}"));
        let text = super::rows::clip(&text, 16);
        write!(out, "{i:>5} {id:>7} {text:<16} {:>1}", u8::from(tokens.mask[i]))?;
        for (&key, value) in VALUE_COLUMNS.iter().zip(tokens.row_values(i)) {
            let cell = match (key, value) {
                (_, None) => "·".to_string(),
                ("clipped", Some(c)) => if c != 0.0 { "yes" } else { "no" }.to_string(),
                (_, Some(v)) => format!("{v:.4}"),
            };
            write!(out, " {cell:>9}")?;
        }
        writeln!(out)?;
    }
    Ok(())
}
