//! `gigscope advantages RUN`: recompute every step's advantages and print them (jsonl, csv or a table).

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context};
use serde::Serialize;

use super::estimate::{estimate, FamilyFlags};
use super::source::SourceFlags;
use crate::advantage::estimators::EstimatorKind;
use crate::advantage::{
    trl, AdvantageOverrides, AdvantageSettings, AdvantageTable, Aggregation, AnchorKind, EngineInput, Estimator, Norm,
    Pooling, RewardWeights, ScaleRewards,
};
use crate::run::text_on_disk::TextStore;
use crate::run::LeanReading;
use crate::run::{Episode, Run};

/// Advantage settings as flags; each one left out falls back to the run's `run.json` (`advantage`), then to
/// the defaults (gigpo, γ 0.95, ω 1.0, mean_norm, steps, penalty 0.1, exact anchors, no shaping). A TRL log
/// records TRL's defaults instead (grpo, scale_rewards group, weights 1.0, sum_then_normalize).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct SettingsFlags {
    /// Estimator: GiGPO (A_E + ω·A_S), GRPO (A_E alone), RLOO, GiGPO's step component alone, or one of GiGPO's
    /// successors: hgpo, graphgpo, proxmo, soft-page, q-minus-v [default: the one `run.json` records the run was
    /// trained with (`estimator`), else `advantage.estimator`, else gigpo].
    #[arg(long, value_enum)]
    pub estimator: Option<EstimatorKind>,
    /// Discount factor γ of the step returns.
    #[arg(long, value_name = "G")]
    pub gamma: Option<f64>,
    /// Weight ω of the step advantage.
    #[arg(long, value_name = "W")]
    pub omega: Option<f64>,
    /// Normalisation: F = 1 (mean_norm) or sample std + 1e-6 (mean_std_norm).
    #[arg(long, value_enum)]
    pub norm: Option<Norm>,
    /// Episode baseline pool: every step row (steps) or each trajectory's first row (trajectories).
    #[arg(long, value_enum)]
    pub pooling: Option<Pooling>,
    /// Penalty subtracted from the score and return of invalid-action steps.
    #[arg(long, value_name = "C")]
    pub invalid_penalty: Option<f64>,
    /// Anchor-state grouping: identical anchors, WebShop page type, or difflib similarity.
    #[arg(long, value_enum)]
    pub anchor: Option<AnchorKind>,
    /// Similarity anchors with threshold θ (0 < θ < 1): difflib ratio with each cluster's first member.
    #[arg(long, value_name = "THETA")]
    pub similarity: Option<f64>,
    /// Binary success reward: 10 on the last step of a successful episode, 0 elsewhere
    /// (`--success-reward=false` turns off one recorded in run.json).
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub success_reward: Option<bool>,
    /// Efficiency bonus α₁/(mean tokens per step) for successful episodes.
    #[arg(long, value_name = "A")]
    pub efficiency_alpha1: Option<f64>,
    /// Efficiency bonus α₂/(number of steps) for successful episodes.
    #[arg(long, value_name = "A")]
    pub efficiency_alpha2: Option<f64>,
    /// TRL GRPO normalisation of A_E (TRL's `scale_rewards`): r − group mean, divided by the group's std + 1e-4
    /// (group), the step's whole batch's std + 1e-4 (batch), or nothing (none). The default for a TRL log.
    #[arg(long, value_enum)]
    pub scale_rewards: Option<ScaleRewards>,
    /// TRL GRPO: one weight per reward function, in the order of the log's reward columns (TRL's
    /// `reward_weights`; default 1.0 each).
    #[arg(long, value_name = "W1,W2,...", value_delimiter = ',', allow_hyphen_values = true)]
    pub reward_weights: Option<Vec<f64>>,
    /// TRL GRPO: combine several reward functions by weighted sum then scale_rewards (sum_then_normalize), or
    /// normalise each in its group, sum, then normalise over the batch (normalize_then_sum). TRL's
    /// `multi_objective_aggregation`.
    #[arg(long, value_enum)]
    pub aggregation: Option<Aggregation>,
}

impl SettingsFlags {
    /// The flags that were given, as overrides.
    pub(crate) fn overrides(&self) -> anyhow::Result<AdvantageOverrides> {
        if let (Some(kind @ (AnchorKind::Exact | AnchorKind::Page)), Some(_)) = (self.anchor, self.similarity) {
            bail!("--similarity selects similarity anchors; it cannot be combined with --anchor {kind:?}");
        }
        Ok(AdvantageOverrides {
            // A successor estimator is computed beside GiGPO's components (`super::estimate`).
            estimator: self.estimator.map(|k| k.engine().unwrap_or(Estimator::Gigpo)),
            gamma: self.gamma,
            omega: self.omega,
            norm: self.norm,
            pooling: self.pooling,
            invalid_penalty: self.invalid_penalty,
            anchor: self.anchor,
            similarity: self.similarity,
            success_reward: self.success_reward,
            efficiency_alpha1: self.efficiency_alpha1,
            efficiency_alpha2: self.efficiency_alpha2,
            scale_rewards: self.scale_rewards,
            reward_weights: match &self.reward_weights {
                Some(weights) => Some(RewardWeights::new(weights).context("--reward-weights")?),
                None => None,
            },
            aggregation: self.aggregation,
        })
    }

    /// Flags over the run's recorded settings over the defaults, checked.
    pub fn resolve(&self, run: &Run) -> anyhow::Result<AdvantageSettings> {
        let recorded = run.meta.as_ref().and_then(|m| m.advantage.as_ref());
        let base = recorded.map_or_else(AdvantageSettings::default, |r| r.apply(AdvantageSettings::default()));
        let settings = self.overrides()?.apply(base);
        settings.validate().with_context(|| format!("advantage settings for {}", run.dir.display()))?;
        check_reward_weights(&settings, run)?;
        check_page_anchors(&settings, run)?;
        Ok(settings)
    }
}

/// Page anchors are an environment's (WebShop's page types): a run whose environment has none, and whose steps
/// record none, has nothing to group by.
fn check_page_anchors(settings: &AdvantageSettings, run: &Run) -> anyhow::Result<()> {
    let pages_recorded = run.episodes.iter().any(|e| e.steps.iter().any(|s| s.page.is_some()));
    let no_page_anchor = crate::env::page_anchor(run).is_none();
    if settings.anchor == crate::advantage::AnchorMode::Page && no_page_anchor && !pages_recorded {
        let env = run.meta.as_ref().and_then(|m| m.env.as_deref()).unwrap_or("not recorded");
        bail!(
            "--anchor page groups steps by WebShop page type, but {} is not a WebShop run (env: {env}, {}) and its steps record no page",
            run.dir.display(),
            run.layout.name()
        );
    }
    Ok(())
}

/// TRL refuses reward weights whose number differs from the number of reward functions; so does gigscope,
/// against the reward functions the run's first episode records (one reward where none are recorded).
fn check_reward_weights(settings: &AdvantageSettings, run: &Run) -> anyhow::Result<()> {
    let (Some(weights), Some(_)) = (settings.reward_weights, settings.scale_rewards) else { return Ok(()) };
    let names = run.episodes.iter().find_map(trl::reward_names);
    let expected = names.as_ref().map_or(1, Vec::len);
    if weights.len() != expected && !run.episodes.is_empty() {
        let what = match &names {
            Some(names) => format!("{} reward functions ({})", names.len(), names.join(", ")),
            None => "one reward per episode (no per-function rewards recorded)".to_string(),
        };
        bail!("{} reward weight(s) given, but {} has {what}", weights.len(), run.dir.display());
    }
    Ok(())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Jsonl,
    Csv,
    Table,
}

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
            let skipped = super::stream::advantages(
                &args.run,
                &settings,
                reading,
                super::stream::KEPT_BYTES,
                stdout,
                args.format,
            );
            match skipped {
                Ok(skipped) => {
                    warn_broken(&args.run, skipped.broken_lines);
                    Ok(())
                }
                Err(err) => match err.downcast::<io::Error>() {
                    Ok(io) => Err(io),
                    Err(other) => return Err(other),
                },
            }
        }
        None => {
            let run = args.source.open_anchored(&args.run)?;
            let (_, table) = estimate(&run, &args.settings, &args.family)?;
            let stdout = io::stdout().lock();
            write_rows(BufWriter::new(stdout), &run.episodes, &table, args.format)
        }
    };
    match result {
        // `gigscope advantages RUN | head` is normal use, not an error.
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => Ok(ExitCode::SUCCESS),
        Err(err) => Err(err).context("writing to standard output"),
        Ok(()) => Ok(ExitCode::SUCCESS),
    }
}

/// The settings to stream `args`' run with and the reading that takes its episodes in lean form (with its
/// environment's page anchor), or `None` when it must be read
/// whole: another layout, a successor estimator (asked for, or the one the run was trained with), or TRL's batch scaling (which couple episode groups).
fn streamable(args: &Args) -> anyhow::Result<Option<(AdvantageSettings, LeanReading)>> {
    let layout = crate::run::source::resolve_layout(&args.run, args.source.from, false)?;
    if layout != crate::run::Layout::Gigscope {
        return Ok(None);
    }
    // The run's description (a broken run.json is an error here as in the whole read), without its episodes.
    if !args.run.join(crate::run::EPISODES_FILE).is_file() {
        return Err(crate::run::RunError::NoEpisodes(args.run.clone()).into());
    }
    let mut described = Run::empty(&args.run, layout);
    described.meta = crate::run::read_meta(&args.run)?;
    if super::estimate::chosen_family(&described, &args.settings, &args.family)?.is_some() {
        return Ok(None);
    }
    let settings = args.settings.resolve(&described)?;
    let reading = || {
        let store = TextStore::new(&args.run.join(crate::run::EPISODES_FILE));
        LeanReading::new(store, crate::env::page_classifier, &described)
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

/// One output record: exactly the keys of the `--format jsonl` contract, in this order ([`COLUMNS`]).
#[derive(Serialize)]
pub struct OutRow<'a> {
    pub episode: &'a str,
    pub group: &'a str,
    pub iteration: i64,
    pub step: usize,
    pub reward: f64,
    #[serde(rename = "return")]
    pub ret: f64,
    pub episode_advantage: f64,
    pub step_advantage: f64,
    pub advantage: f64,
    pub step_group: u32,
    pub step_group_size: usize,
}

/// The output's columns (the `--format csv` header, the keys of `--format jsonl`), in order.
pub const COLUMNS: [&str; 11] = [
    "episode",
    "group",
    "iteration",
    "step",
    "reward",
    "return",
    "episode_advantage",
    "step_advantage",
    "advantage",
    "step_group",
    "step_group_size",
];

pub(super) fn out_rows<'a>(episodes: &'a [Episode], table: &'a AdvantageTable) -> impl Iterator<Item = OutRow<'a>> {
    (0..episodes.len()).flat_map(move |e| episode_rows(episodes, table, e))
}

/// The output rows of episode `e` of `input`, whose table is `table`.
pub(super) fn episode_rows<'a, I: EngineInput + ?Sized>(
    input: &'a I,
    table: &'a AdvantageTable,
    e: usize,
) -> impl Iterator<Item = OutRow<'a>> {
    table.episode_rows(e).into_iter().enumerate().map(move |(t, row)| OutRow {
        episode: input.episode_id(e),
        group: input.group(e),
        iteration: input.iteration(e),
        step: t,
        reward: row.reward,
        ret: row.ret,
        episode_advantage: row.episode_advantage,
        step_advantage: row.step_advantage,
        advantage: row.advantage,
        step_group: row.step_group,
        step_group_size: table.anchor_groups[row.step_group as usize].members.len(),
    })
}

fn write_rows(out: impl Write, episodes: &[Episode], table: &AdvantageTable, format: Format) -> io::Result<()> {
    let mut writer = RowWriter::new(out, format)?;
    for row in out_rows(episodes, table) {
        writer.row(&row)?;
    }
    writer.finish()
}

/// Writes output rows in one of the formats, header first.
pub(super) struct RowWriter<W: Write> {
    out: W,
    format: Format,
}

impl<W: Write> RowWriter<W> {
    pub(super) fn new(mut out: W, format: Format) -> io::Result<Self> {
        match format {
            Format::Jsonl => {}
            Format::Csv => writeln!(out, "{}", COLUMNS.join(","))?,
            Format::Table => writeln!(
                out,
                "{:<16} {:<12} {:>4} {:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>5}",
                "episode", "group", "iter", "step", "reward", "return", "A_E", "A_S", "A", "sgroup", "size"
            )?,
        }
        Ok(RowWriter { out, format })
    }

    pub(super) fn row(&mut self, r: &OutRow<'_>) -> io::Result<()> {
        let out = &mut self.out;
        match self.format {
            Format::Jsonl => {
                serde_json::to_writer(&mut *out, r)?;
                out.write_all(b"\n")
            }
            Format::Csv => writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{}",
                csv_field(r.episode),
                csv_field(r.group),
                r.iteration,
                r.step,
                number(r.reward),
                number(r.ret),
                number(r.episode_advantage),
                number(r.step_advantage),
                number(r.advantage),
                r.step_group,
                r.step_group_size
            ),
            Format::Table => writeln!(
                out,
                "{:<16} {:<12} {:>4} {:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>5}",
                clip(r.episode, 16),
                clip(r.group, 12),
                r.iteration,
                r.step,
                Fixed4(r.reward),
                Fixed4(r.ret),
                Fixed4(r.episode_advantage),
                Fixed4(r.step_advantage),
                Fixed4(r.advantage),
                r.step_group,
                r.step_group_size
            ),
        }
    }

    pub(super) fn finish(mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// `x` with four decimals, exactly as `{:.4}` prints it (width and alignment from the caller's format spec).
///
/// `{:.4}` formats the exact binary value (Grisu, falling back to Dragon's bignum arithmetic often at four
/// decimals), which was a third of `gigscope advantages`' time on a 1,000-step run. Here x·10⁴ is rounded
/// instead: for |x| < 10⁵ the product's rounding error is below 10⁻⁶, so whenever its fraction is further than
/// that from one half, rounding it decides the same digits; the rare product nearer a tie (and huge or
/// non-finite values) goes to `{:.4}` itself.
struct Fixed4(f64);

impl std::fmt::Display for Fixed4 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let scaled = self.0.abs() * 1e4;
        // NaN and infinities fail the first test.
        let decided = scaled < 1e9 && (scaled.fract() - 0.5).abs() >= 1e-6;
        if !decided {
            return f.pad(&format!("{:.4}", self.0));
        }
        // `{:.4}` signs by the sign bit: -0.00001 and -0.0 print as -0.0000.
        let units = scaled.round() as u64;
        let mut buf = [0u8; 20];
        let mut at = buf.len();
        let mut rest = units;
        for place in 0.. {
            if place == 4 {
                at -= 1;
                buf[at] = b'.';
            }
            at -= 1;
            buf[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 && place >= 4 {
                break;
            }
        }
        if self.0.is_sign_negative() {
            at -= 1;
            buf[at] = b'-';
        }
        // Only ASCII digits, '.' and '-' were written.
        f.pad(std::str::from_utf8(&buf[at..]).unwrap_or_default())
    }
}

/// Shortest round-trip form, the same digits as the JSON output.
fn number(x: f64) -> String {
    serde_json::to_string(&x).unwrap_or_else(|_| x.to_string())
}

/// RFC 4180 quoting when the field needs it.
fn csv_field(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\"")).into()
    } else {
        s.into()
    }
}

/// At most `width` characters, marking a cut with `…`.
pub(crate) fn clip(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_string()
    } else {
        let mut cut: String = s.chars().take(width.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::Fixed4;

    fn same_as_std(x: f64) {
        assert_eq!(format!("{:>9}", Fixed4(x)), format!("{x:>9.4}"), "{x:e}");
    }

    #[test]
    fn fixed4_prints_what_std_prints_at_ties_signs_and_edges() {
        for x in [
            0.0,
            -0.0,
            0.00005,
            0.00015,
            0.00025,
            -0.00005,
            -0.00001,
            1.00005,
            2.5e-5,
            0.12345,
            9999.99995,
            99999.99995,
            1e5,
            -1e9,
            1e300,
            5e-324,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            0.1 + 0.2,
        ] {
            same_as_std(x);
        }
    }

    proptest! {
        #[test]
        fn fixed4_prints_what_std_prints(x in any::<f64>()) {
            same_as_std(x);
        }

        #[test]
        fn fixed4_prints_what_std_prints_near_advantage_ties(k in -2_000_000_000i64..2_000_000_000, d in -3i32..=3) {
            // k/20000 sits on a four-decimal tie; a few ulps either side test the fallback's border.
            let mut x = k as f64 / 20000.0;
            for _ in 0..d.abs() {
                x = if d > 0 { x.next_up() } else { x.next_down() };
            }
            same_as_std(x);
        }

        #[test]
        fn fixed4_prints_what_std_prints_for_advantage_sized_values(x in -50.0f64..50.0) {
            same_as_std(x);
        }
    }
}
