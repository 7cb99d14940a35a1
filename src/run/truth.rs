//! Monte-Carlo ground truth of one training iteration (`gigscope truth`): `RUN/truth/iteration-<I>.jsonl`.
//!
//! Plain data, so that every layer above (the CLI that writes it, the TUI that shows it) shares one definition.
//! One JSON object per line, each with a `kind`:
//!
//! - `header` (first line, exactly once): which run and iteration, K, the seed, the sample of episode groups and
//!   the settings (γ, shaping, invalid penalty) the returns were computed under;
//! - `row`: one step row of a sampled episode group: Q̂(s,a) of the action the row took from its own state s
//!   (rebuilt from its episode's recorded actions), V̂(s), A* = Q̂ − V̂, the standard errors of Q̂ and V̂, the
//!   rollouts behind each (K) and the environment's fingerprint of s, where it declares one;
//! - `divergence`: a recorded observation the environment did not reproduce while replaying an episode's
//!   actions (episode, step, both texts); that episode's rows from that step on have no truth;
//! - `agreement`: one per estimator, how its advantages over the rows agree with A*.
//!
//! The file is written whole to a temporary file and renamed into place, so a reader never sees half of one.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::error::RunError;
use super::format::RunMeta;
use super::layout::Layout;
use super::Run;

/// The header's `format`.
pub const TRUTH_FORMAT: &str = "gigscope-truth/1";
/// Directory inside a run that holds truth files.
pub const TRUTH_DIR: &str = "truth";

/// Directory inside a run where gigscope's trainer keeps the policy of every iteration.
pub const WEIGHTS_DIR: &str = "weights";

/// The weights of the policy that played iteration `iteration` (the behaviour policy: the weights before that
/// iteration's update), as gigscope's trainer writes them: `RUN/weights/iteration-<I>.ot`.
pub fn weights_path(run_dir: &Path, iteration: i64) -> PathBuf {
    run_dir.join(WEIGHTS_DIR).join(format!("iteration-{iteration}.ot"))
}

/// Where `gigscope truth` writes the truth of `iteration` by default.
pub fn truth_path(run_dir: &Path, iteration: i64) -> PathBuf {
    run_dir.join(TRUTH_DIR).join(format!("iteration-{iteration}.jsonl"))
}

/// The name a truth file records for the run in `run_dir` ([`TruthHeader::run`]): `run.json`'s `name`, else
/// the directory's name. Writers and readers both call this, so they agree.
pub fn truth_run_name(run_dir: &Path, meta: Option<&RunMeta>) -> String {
    meta.and_then(|m| m.name.clone()).filter(|n| !n.is_empty()).unwrap_or_else(|| {
        let dir = run_dir.canonicalize().unwrap_or_else(|_| run_dir.to_path_buf());
        dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    })
}

/// Which run a truth file belongs to: the name it is shown under ([`truth_run_name`]) and, where `run.json`
/// records one, the run's creation time. The creation record survives a copy of the run directory (its name
/// does not), so it decides where both the file and the run have one; otherwise the names must match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunIdentity {
    pub name: String,
    pub created: Option<String>,
}

impl RunIdentity {
    /// The identity of the run in `run_dir`, whose `run.json` is `meta`.
    pub fn of(run_dir: &Path, meta: Option<&RunMeta>) -> RunIdentity {
        RunIdentity { name: truth_run_name(run_dir, meta), created: meta.and_then(|m| m.created.clone()) }
    }

    /// Whether `header` was written for this run.
    pub fn owns(&self, header: &TruthHeader) -> bool {
        match (&self.created, &header.run_created) {
            (Some(mine), Some(theirs)) => mine == theirs,
            _ => self.name == header.run,
        }
    }
}

/// A run known by its name alone (no creation record).
impl From<&str> for RunIdentity {
    fn from(name: &str) -> RunIdentity {
        RunIdentity { name: name.to_owned(), created: None }
    }
}

impl From<&String> for RunIdentity {
    fn from(name: &String) -> RunIdentity {
        RunIdentity::from(name.as_str())
    }
}

impl From<&RunIdentity> for RunIdentity {
    fn from(identity: &RunIdentity) -> RunIdentity {
        identity.clone()
    }
}

/// Why no ground truth can be measured on a run's iteration. Checked by the command line before the training
/// plugin is loaded, and by the plugin itself (the TUI's path).
#[derive(Debug, thiserror::Error)]
pub enum NoTruth {
    #[error(
        "{run} was not trained by gigscope ({why}): there is no policy to branch with, so no Monte-Carlo truth; \
         the estimators still compute (`gigscope stats RUN --estimator NAME`)"
    )]
    NoPolicy { run: String, why: String },
    #[error("{run}: iteration {iteration} has no stored policy weights ({path} is missing){hint}")]
    NoWeights { run: String, iteration: i64, path: PathBuf, hint: &'static str },
    #[error("{run}: no episodes of iteration {iteration} (the run's iterations: {known})")]
    NoIteration { run: String, iteration: i64, known: String },
}

/// The weights of the policy that played `iteration` of `run`, if the truth can be measured there: the run was
/// trained by gigscope (not another trainer's layout, a conversion or an export), has episodes of that
/// iteration, and kept that iteration's weights.
pub fn branchable(run: &Run, iteration: i64) -> Result<PathBuf, NoTruth> {
    branchable_among(run, run.episodes.iter().map(|e| e.iteration), iteration)
}

/// [`branchable`] for a run whose episodes are held elsewhere (the TUI keeps them lean, outside `run.episodes`):
/// `iterations` are its episodes' iterations.
pub fn branchable_among(
    run: &Run,
    iterations: impl Iterator<Item = i64> + Clone,
    iteration: i64,
) -> Result<PathBuf, NoTruth> {
    let name = truth_run_name(&run.dir, run.meta.as_ref());
    let why = if run.layout != Layout::Gigscope {
        Some(format!("it was recorded by another trainer: {}", run.layout.name()))
    } else {
        match &run.meta {
            Some(meta) if meta.extra.contains_key("converted_from") => {
                Some("it was converted from another trainer's layout".into())
            }
            Some(meta) if meta.extra.contains_key("train") => None,
            _ => Some("run.json has no `train` record: a verl-agent export, or episodes played by hand".into()),
        }
    };
    if let Some(why) = why {
        return Err(NoTruth::NoPolicy { run: name, why });
    }
    if !iterations.clone().any(|i| i == iteration) {
        let known = match (iterations.clone().min(), iterations.max()) {
            (Some(a), Some(b)) => format!("{a}..={b}"),
            _ => "none".into(),
        };
        return Err(NoTruth::NoIteration { run: name, iteration, known });
    }
    let path = weights_path(&run.dir, iteration);
    if !path.is_file() {
        let hint = if run.dir.join(WEIGHTS_DIR).is_dir() {
            ""
        } else {
            "; the run has no weights/ directory: it was trained before gigscope kept every iteration's policy"
        };
        return Err(NoTruth::NoWeights { run: name, iteration, path, hint });
    }
    Ok(path)
}

/// The first line: what was measured, and under which settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TruthHeader {
    /// [`TRUTH_FORMAT`].
    pub format: String,
    /// The run's name: `run.json`'s `name`, else the run directory's name.
    pub run: String,
    /// `run.json`'s `created`, when it has one: the run's identity, which a copy of the run keeps
    /// ([`RunIdentity`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_created: Option<String>,
    pub iteration: i64,
    /// Continuations rolled out per action and per state (K).
    pub rollouts: usize,
    pub seed: u64,
    /// Episode groups measured (their ids, in file order), and how many the iteration has.
    pub groups: Vec<String>,
    pub groups_in_iteration: usize,
    /// The return settings (as the run's advantage engine uses them).
    pub gamma: f64,
    pub success_reward: bool,
    pub invalid_penalty: f64,
    #[serde(default)]
    pub efficiency_alpha1: f64,
    #[serde(default)]
    pub efficiency_alpha2: f64,
    /// The environment the continuations were played in (`webshop`, …) and its options (WebShop's catalog, …).
    pub env: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env_options: BTreeMap<String, String>,
}

/// One step row with its Monte-Carlo values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TruthRow {
    pub run: String,
    /// Episode id and step index (0-based) of the recorded row.
    pub episode: String,
    pub step: usize,
    /// Its episode group.
    pub group: String,
    /// Q̂(s, a): mean return of continuations that take the row's action from its state.
    pub q: f64,
    /// V̂(s): mean return of continuations that follow the policy from the state.
    pub v: f64,
    /// A*(s, a) = Q̂ − V̂.
    pub a_star: f64,
    /// Standard errors of Q̂ and V̂ (sample standard deviation / √K).
    pub q_se: f64,
    pub v_se: f64,
    /// Continuations behind each of Q̂ and V̂.
    pub k: usize,
    /// The environment's fingerprint of the row's full state
    /// ([`crate::env::Environment::state_fingerprint`]); rows with equal ones shared their continuations.
    /// Absent where the environment declares none (each row was then its own state).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

/// A recorded observation the environment did not reproduce.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TruthDivergence {
    pub episode: String,
    pub step: usize,
    pub recorded: String,
    pub replayed: String,
}

/// How one estimator's advantages agree with A* over the file's rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TruthAgreement {
    /// The estimator's name as `--estimator` takes it.
    pub estimator: String,
    /// Rows compared (rows where both the estimate and A* exist); written as `states` before issue 26.
    #[serde(alias = "states")]
    pub rows: usize,
    /// Spearman rank correlation (average ranks for ties); `None` when either side is constant.
    pub spearman: Option<f64>,
    /// Share of rows where the estimate and A* have the same sign (both zero counts as agreeing).
    pub sign_agreement: Option<f64>,
    /// The least-squares scale c minimising Σ (c·estimate − A*)², and the RMSE at that c.
    pub scale: Option<f64>,
    pub rmse: Option<f64>,
    /// Why the estimator gave no advantages on this iteration (a field the run lacks, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One line of a truth file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TruthLine {
    Header(TruthHeader),
    Row(TruthRow),
    Divergence(TruthDivergence),
    Agreement(TruthAgreement),
}

/// A whole truth file, read and checked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TruthFile {
    pub header: TruthHeader,
    pub rows: Vec<TruthRow>,
    pub divergences: Vec<TruthDivergence>,
    pub agreements: Vec<TruthAgreement>,
}

impl TruthFile {
    /// The row of `episode`'s step `step`, if it was measured.
    pub fn row(&self, episode: &str, step: usize) -> Option<&TruthRow> {
        self.rows.iter().find(|r| r.episode == episode && r.step == step)
    }

    /// The file's lines in order: header, rows, divergences, agreements.
    pub fn lines(&self) -> impl Iterator<Item = TruthLine> + '_ {
        std::iter::once(TruthLine::Header(self.header.clone()))
            .chain(self.rows.iter().cloned().map(TruthLine::Row))
            .chain(self.divergences.iter().cloned().map(TruthLine::Divergence))
            .chain(self.agreements.iter().cloned().map(TruthLine::Agreement))
    }

    /// The whole file as JSON Lines.
    pub fn to_jsonl(&self, path: &Path) -> Result<Vec<u8>, RunError> {
        let mut out = Vec::new();
        for line in self.lines() {
            serde_json::to_writer(&mut out, &line)
                .map_err(|source| RunError::Encode { path: path.to_path_buf(), source })?;
            out.push(b'\n');
        }
        Ok(out)
    }

    /// Write the file atomically (temporary file beside `path`, renamed), creating its directory.
    pub fn write(&self, path: &Path) -> Result<(), RunError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(RunError::io(dir))?;
        }
        super::write_atomic(path, &self.to_jsonl(path)?)
    }
}

/// Read the truth file at `path` and check that it is the truth of `iteration` of the run `run` (see
/// [`RunIdentity`]; a bare name matches [`TruthHeader::run`]): a file of another run or iteration, a missing or
/// repeated header, a row of another run than its header's or a broken line is an error naming the file and line.
pub fn read_truth(path: &Path, run: impl Into<RunIdentity>, iteration: i64) -> Result<TruthFile, RunError> {
    let run = run.into();
    let bad = |line: usize, message: String| RunError::BadTruth { path: path.to_path_buf(), line, message };
    let file = std::fs::File::open(path).map_err(RunError::io(path))?;
    let mut header: Option<TruthHeader> = None;
    let (mut rows, mut divergences, mut agreements) = (Vec::new(), Vec::new(), Vec::new());
    for (index, text) in BufReader::new(file).lines().enumerate() {
        let number = index + 1;
        let text = text.map_err(RunError::io(path))?;
        if text.trim().is_empty() {
            continue;
        }
        let line: TruthLine = serde_json::from_str(&text).map_err(|e| bad(number, e.to_string()))?;
        match (line, &header) {
            (TruthLine::Header(h), None) if number == 1 => {
                if h.format != TRUTH_FORMAT {
                    return Err(bad(number, format!("format {:?}, expected {TRUTH_FORMAT:?}", h.format)));
                }
                if !run.owns(&h) {
                    return Err(RunError::TruthMismatch {
                        path: path.to_path_buf(),
                        what: "run",
                        found: format!("{:?}", h.run),
                        expected: format!("{:?}", run.name),
                    });
                }
                if h.iteration != iteration {
                    return Err(RunError::TruthMismatch {
                        path: path.to_path_buf(),
                        what: "iteration",
                        found: h.iteration.to_string(),
                        expected: iteration.to_string(),
                    });
                }
                header = Some(h);
            }
            (_, None) => return Err(bad(number, "the first line must be the header (kind \"header\")".into())),
            (TruthLine::Header(_), Some(_)) => return Err(bad(number, "a second header".into())),
            (TruthLine::Row(row), Some(h)) if row.run != h.run => {
                return Err(bad(number, format!("a row of run {:?}, not {:?}", row.run, h.run)));
            }
            (TruthLine::Row(row), Some(_)) => rows.push(row),
            (TruthLine::Divergence(d), Some(_)) => divergences.push(d),
            (TruthLine::Agreement(a), Some(_)) => agreements.push(a),
        }
    }
    let header = header.ok_or_else(|| bad(1, "empty file: no header".into()))?;
    Ok(TruthFile { header, rows, divergences, agreements })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> TruthFile {
        let header = TruthHeader {
            format: TRUTH_FORMAT.into(),
            run: "r".into(),
            run_created: Some("2026-11-23T00:00:00Z".into()),
            iteration: 3,
            rollouts: 4,
            seed: 7,
            groups: vec!["it3-g0".into()],
            groups_in_iteration: 2,
            gamma: 0.95,
            success_reward: false,
            invalid_penalty: 0.1,
            efficiency_alpha1: 0.0,
            efficiency_alpha2: 0.0,
            env: "webshop".into(),
            env_options: BTreeMap::new(),
        };
        let row = TruthRow {
            run: "r".into(),
            episode: "it3-g0-e0".into(),
            step: 1,
            group: "it3-g0".into(),
            q: 0.5,
            v: 0.25,
            a_star: 0.25,
            q_se: 0.1,
            v_se: 0.05,
            k: 4,
            state: Some("step 1 item".into()),
        };
        let divergence =
            TruthDivergence { episode: "it3-g0-e1".into(), step: 2, recorded: "a".into(), replayed: "b".into() };
        let agreement = TruthAgreement {
            estimator: "gigpo".into(),
            rows: 1,
            spearman: None,
            sign_agreement: Some(1.0),
            scale: Some(0.5),
            rmse: Some(0.0),
            error: None,
        };
        TruthFile { header, rows: vec![row], divergences: vec![divergence], agreements: vec![agreement] }
    }

    #[test]
    fn a_written_file_reads_back_and_is_checked_against_its_run_and_iteration() {
        let dir = tempfile::tempdir().unwrap();
        let path = truth_path(dir.path(), 3);
        let file = sample();
        file.write(&path).unwrap();
        assert_eq!(read_truth(&path, "r", 3).unwrap(), file);
        assert_eq!(file.row("it3-g0-e0", 1).map(|r| r.a_star), Some(0.25));
        let other_run = read_truth(&path, "other", 3).unwrap_err().to_string();
        assert!(other_run.contains("run \"r\"") && other_run.contains("\"other\""), "{other_run}");
        let other_iteration = read_truth(&path, "r", 4).unwrap_err().to_string();
        assert!(other_iteration.contains("iteration 3") && other_iteration.contains('4'), "{other_iteration}");
    }

    #[test]
    fn broken_files_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let text = String::from_utf8(sample().to_jsonl(&path).unwrap()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let cases = [
            (format!("{}\n", lines[1]), "line 1: the first line must be the header"),
            (format!("{}\n{}\n", lines[0], lines[0]), "line 2: a second header"),
            (format!("{}\n{{\"kind\":\"row\"}}\n", lines[0]), "line 2: missing field"),
            (format!("{}\n{}\n", lines[0], lines[1].replace("\"run\":\"r\"", "\"run\":\"x\"")), "line 2: a row of run"),
            (String::new(), "no header"),
        ];
        for (text, expected) in cases {
            std::fs::write(&path, text).unwrap();
            let message = read_truth(&path, "r", 3).unwrap_err().to_string();
            assert!(message.contains(expected) && message.contains("t.jsonl"), "{message} / {expected}");
        }
    }
}
