//! `gigscope._native`: the engine as the Python package (`python/gigscope`) sees it. A run is read once by the
//! library's own readers; its episodes, steps, advantages and truth files come back as `pyarrow.Table`s whose
//! columns are built here and handed over through the Arrow C data interface, never as Python objects row by
//! row. Advantage settings arrive as the command line's flag words and are parsed by the command line's own
//! definitions (`gigscope::cli::api`), so every flag of `gigscope advantages` works with the same meaning and
//! error. `render` writes a picture through `gigscope render`'s own code; `main` is the command line itself,
//! for the package's `gigscope` command.
//!
//! Errors are `gigscope.GigscopeError` carrying the library's message with its causes (file, line, field); an
//! unknown settings keyword is a `TypeError`. Broken lines and the reader's notices become `UserWarning`s.

use std::collections::BTreeSet;
use std::ffi::{CString, OsString};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use arrow_array::{ArrayRef, BooleanArray, Float32Array, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_pyarrow::{IntoPyArrow, Table};
use arrow_schema::{Field, Schema};
use gigscope::cli::api;
use gigscope::run::truth::{read_truth, truth_path, truth_run_name};
use gigscope::run::Run as RunData;
use pyo3::exceptions::{PyTypeError, PyUserWarning};
use pyo3::prelude::*;
use pyo3::types::PyType;

/// A run read by the library, with the flags it was opened with.
#[pyclass(name = "Run", module = "gigscope._native", frozen)]
struct Run {
    data: RunData,
}

/// Read the run in `path` as `gigscope advantages` reads it; `flags` are `--from=LAYOUT`, `--group-size=N`.
#[pyfunction]
fn open(py: Python<'_>, path: PathBuf, flags: Vec<String>) -> PyResult<Run> {
    let data = py.detach(|| api::open(&path, &flags)).map_err(|err| to_py(py, err))?;
    let warn = |message: String| -> PyResult<()> {
        let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
        PyErr::warn(py, py.get_type::<PyUserWarning>().as_any(), &message, 2)
    };
    if !data.errors.is_empty() {
        let first = &data.errors[0];
        warn(format!(
            "{}: skipped {} broken line(s) of the episodes, the first at {first} (see `gigscope validate`)",
            path.display(),
            data.errors.len()
        ))?;
    }
    for notice in &data.notices {
        warn(notice.clone())?;
    }
    Ok(Run { data })
}

#[pymethods]
impl Run {
    /// The directory the run was read from.
    #[getter]
    fn path(&self) -> PathBuf {
        self.data.dir.clone()
    }

    /// The layout it was read as (`gigscope-run/1`, `verl rollout dump`, ...).
    #[getter]
    fn layout(&self) -> &'static str {
        self.data.layout.name()
    }

    fn __len__(&self) -> usize {
        self.data.episodes.len()
    }

    /// One row per episode.
    fn episodes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let e = &self.data.episodes;
        table(
            py,
            vec![
                ("episode", strings(e.iter().map(|e| e.id.as_str()))),
                ("group", strings(e.iter().map(|e| e.group.as_str()))),
                ("iteration", ints(e.iter().map(|e| e.iteration))),
                ("task", opt_strings(e.iter().map(|e| e.task.as_ref().map(|t| t.id.as_str())))),
                ("instruction", strings(e.iter().map(|e| e.instruction()))),
                ("steps", ints(e.iter().map(|e| e.steps.len() as i64))),
                ("success", bools(e.iter().map(|e| e.success()))),
                ("score", opt_floats(e.iter().map(|e| e.outcome.as_ref().map(|o| o.score)))),
                ("total_reward", floats(e.iter().map(|e| e.total_reward()))),
            ],
        )
    }

    /// One row per step of every episode, in the run's order.
    fn steps<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let rows: Vec<_> =
            self.data.episodes.iter().flat_map(|e| e.steps.iter().enumerate().map(move |(t, s)| (e, t, s))).collect();
        table(
            py,
            vec![
                ("episode", strings(rows.iter().map(|(e, _, _)| e.id.as_str()))),
                ("group", strings(rows.iter().map(|(e, _, _)| e.group.as_str()))),
                ("iteration", ints(rows.iter().map(|(e, _, _)| e.iteration))),
                ("step", ints(rows.iter().map(|(_, t, _)| *t as i64))),
                ("observation", strings(rows.iter().map(|(_, _, s)| &*s.observation))),
                ("anchor", opt_strings(rows.iter().map(|(_, _, s)| s.anchor.as_deref()))),
                ("action", strings(rows.iter().map(|(_, _, s)| s.action.as_str()))),
                ("reward", floats(rows.iter().map(|(_, _, s)| s.reward))),
                ("valid", bools(rows.iter().map(|(_, _, s)| s.valid))),
                ("page", opt_strings(rows.iter().map(|(_, _, s)| s.page.as_deref()))),
                ("state", opt_strings(rows.iter().map(|(_, _, s)| s.state.as_deref()))),
                ("tokens", opt_ints(rows.iter().map(|(_, _, s)| s.tokens.map(|n| n as i64)))),
                ("logprob", opt_floats(rows.iter().map(|(_, _, s)| s.logprob))),
                ("thought", opt_strings(rows.iter().map(|(_, _, s)| s.thought.as_deref()))),
                (
                    "trainer_advantage",
                    opt_floats(rows.iter().map(|(e, t, _)| e.advantages.as_ref().and_then(|a| a.get(*t).copied()))),
                ),
            ],
        )
    }

    /// The advantages of every step under settings `flags`: the columns and rows of
    /// `gigscope advantages --format jsonl`.
    fn advantages<'py>(&self, py: Python<'py>, flags: Vec<String>) -> PyResult<Bound<'py, PyAny>> {
        let data = &self.data;
        let columns = py
            .detach(|| {
                let adv = api::advantages(data, &flags)?;
                let rows: Vec<api::AdvantageRow<'_>> = api::advantage_rows(data, &adv).collect();
                let columns: Vec<ArrayRef> = vec![
                    strings(rows.iter().map(|r| r.episode.joined())),
                    strings(rows.iter().map(|r| r.group)),
                    ints(rows.iter().map(|r| r.iteration)),
                    ints(rows.iter().map(|r| r.step as i64)),
                    opt_floats(rows.iter().map(|r| r.reward)),
                    opt_floats(rows.iter().map(|r| r.ret)),
                    floats(rows.iter().map(|r| r.episode_advantage)),
                    floats(rows.iter().map(|r| r.step_advantage)),
                    floats(rows.iter().map(|r| r.advantage)),
                    ints(rows.iter().map(|r| i64::from(r.step_group))),
                    ints(rows.iter().map(|r| r.step_group_size as i64)),
                    opt_floats(rows.iter().map(|r| r.stored_advantage)),
                    opt_floats(rows.iter().map(|r| r.delta)),
                ];
                anyhow::Ok(columns)
            })
            .map_err(|err| to_py(py, err))?;
        table(py, api::ADVANTAGE_COLUMNS.into_iter().zip(columns).collect())
    }

    /// One row per episode group under settings `flags`: `gigscope stats --json`'s `groups`.
    fn groups<'py>(&self, py: Python<'py>, flags: Vec<String>) -> PyResult<Bound<'py, PyAny>> {
        let data = &self.data;
        let stats = py.detach(|| api::stats(data, &flags)).map_err(|err| to_py(py, err))?;
        let g = &stats.groups;
        table(
            py,
            vec![
                ("group", strings(g.iter().map(|g| g.name.as_str()))),
                ("episodes", ints(g.iter().map(|g| g.episodes as i64))),
                ("steps", ints(g.iter().map(|g| g.steps as i64))),
                ("success_rate", opt_floats(g.iter().map(|g| g.success_rate))),
                ("mean", floats(g.iter().map(|g| g.mean))),
                ("std", floats(g.iter().map(|g| g.std))),
                ("pool_size", ints(g.iter().map(|g| g.pool_size as i64))),
                ("zero_variance", bools(g.iter().map(|g| g.zero_variance.is_some()))),
                ("step_groups", ints(g.iter().map(|g| g.step_groups as i64))),
                ("singleton_step_groups", ints(g.iter().map(|g| g.singleton_step_groups as i64))),
            ],
        )
    }

    /// `gigscope stats --json` under settings `flags`, as JSON text.
    fn stats_json(&self, py: Python<'_>, flags: Vec<String>) -> PyResult<String> {
        let data = &self.data;
        py.detach(|| Ok(serde_json::to_string(&api::stats(data, &flags)?)?)).map_err(|err| to_py(py, err))
    }

    /// One row per token of `episode`'s step `step` (every step with tokens when `None`) from the run's token
    /// store: the columns of `gigscope tokens --format jsonl` in its order, the channels and derived values as
    /// float32 (the stored values exactly), null where absent, `clipped` a boolean.
    #[pyo3(signature = (episode, step=None))]
    fn tokens<'py>(&self, py: Python<'py>, episode: &str, step: Option<u32>) -> PyResult<Bound<'py, PyAny>> {
        let data = &self.data;
        let steps = py.detach(|| api::tokens(data, episode, step)).map_err(|err| to_py(py, err))?;
        let rows: Vec<(u32, &api::StepTokens, usize)> =
            steps.iter().flat_map(|(s, t)| (0..t.len()).map(move |i| (*s, t, i))).collect();
        let mut columns = vec![
            ("step", ints(rows.iter().map(|(s, _, _)| i64::from(*s)))),
            ("index", ints(rows.iter().map(|(_, _, i)| *i as i64))),
            ("id", ints(rows.iter().map(|(_, t, i)| i64::from(t.ids[*i])))),
            ("text", opt_strings(rows.iter().map(|(_, t, i)| t.token_text(*i)))),
            ("offset", ints(rows.iter().map(|(_, t, i)| i64::from(t.offset(*i))))),
            ("mask", ints(rows.iter().map(|(_, t, i)| i64::from(t.mask[*i])))),
        ];
        let values: Vec<[Option<f32>; 12]> = rows.iter().map(|(_, t, i)| t.row_values(*i)).collect();
        for (k, name) in api::TOKEN_VALUE_COLUMNS.into_iter().enumerate() {
            let column: ArrayRef = if name == "clipped" {
                Arc::new(BooleanArray::from_iter(values.iter().map(|v| v[k].map(|c| c != 0.0))))
            } else {
                Arc::new(Float32Array::from_iter(values.iter().map(|v| v[k])))
            };
            columns.push((name, column));
        }
        table(py, columns)
    }

    /// The rows and the estimators' agreements of every truth file the run has
    /// (`RUN/truth/iteration-<I>.jsonl`, one per iteration of its episodes), each with its iteration.
    fn truth<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let data = &self.data;
        let name = truth_run_name(&data.dir, data.meta.as_ref());
        let iterations: BTreeSet<i64> = data.episodes.iter().map(|e| e.iteration).collect();
        let files = py
            .detach(|| {
                iterations
                    .into_iter()
                    .map(|i| (i, truth_path(&data.dir, i)))
                    .filter(|(_, path)| path.is_file())
                    .map(|(i, path)| read_truth(&path, &name, i).map(|file| (i, file)))
                    .collect::<Result<Vec<_>, _>>()
            })
            .map_err(|err| to_py(py, err.into()))?;
        let rows: Vec<_> = files.iter().flat_map(|(i, f)| f.rows.iter().map(move |r| (*i, r))).collect();
        let agreements: Vec<_> = files.iter().flat_map(|(i, f)| f.agreements.iter().map(move |a| (*i, a))).collect();
        let rows = table(
            py,
            vec![
                ("iteration", ints(rows.iter().map(|(i, _)| *i))),
                ("episode", strings(rows.iter().map(|(_, r)| r.episode.as_str()))),
                ("step", ints(rows.iter().map(|(_, r)| r.step as i64))),
                ("group", strings(rows.iter().map(|(_, r)| r.group.as_str()))),
                ("q", floats(rows.iter().map(|(_, r)| r.q))),
                ("v", floats(rows.iter().map(|(_, r)| r.v))),
                ("a_star", floats(rows.iter().map(|(_, r)| r.a_star))),
                ("q_se", floats(rows.iter().map(|(_, r)| r.q_se))),
                ("v_se", floats(rows.iter().map(|(_, r)| r.v_se))),
                ("k", ints(rows.iter().map(|(_, r)| r.k as i64))),
            ],
        )?;
        let agreements = table(
            py,
            vec![
                ("iteration", ints(agreements.iter().map(|(i, _)| *i))),
                ("estimator", strings(agreements.iter().map(|(_, a)| a.estimator.as_str()))),
                ("states", ints(agreements.iter().map(|(_, a)| a.rows as i64))),
                ("spearman", opt_floats(agreements.iter().map(|(_, a)| a.spearman))),
                ("sign_agreement", opt_floats(agreements.iter().map(|(_, a)| a.sign_agreement))),
                ("scale", opt_floats(agreements.iter().map(|(_, a)| a.scale))),
                ("rmse", opt_floats(agreements.iter().map(|(_, a)| a.rmse))),
                ("error", opt_strings(agreements.iter().map(|(_, a)| a.error.as_deref()))),
            ],
        )?;
        Ok((rows, agreements))
    }
}

/// `gigscope render WORDS...` (the run directory, `--out=FILE`, ...): the picture written by the command's own
/// code.
#[pyfunction]
fn render(py: Python<'_>, words: Vec<String>) -> PyResult<()> {
    py.detach(|| api::render(&words)).map_err(|err| to_py(py, err))
}

/// The command line on `argv` (`sys.argv`: the first word is the program's name); returns its exit status.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<OsString>) -> u8 {
    let code = py.detach(|| gigscope::cli::main_with(argv));
    // `ExitCode` keeps its number private; the command line only makes codes from a `u8`.
    (0..=u8::MAX).find(|&n| ExitCode::from(n) == code).unwrap_or(1)
}

fn strings(values: impl Iterator<Item = impl AsRef<str>>) -> ArrayRef {
    Arc::new(StringArray::from_iter_values(values))
}

fn ints(values: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(values))
}

fn floats(values: impl Iterator<Item = f64>) -> ArrayRef {
    Arc::new(Float64Array::from_iter_values(values))
}

fn bools(values: impl Iterator<Item = bool>) -> ArrayRef {
    Arc::new(BooleanArray::from_iter(values.map(Some)))
}

/// A column with nulls where `values` has `None` (a field the record leaves out).
fn opt_strings<'a>(values: impl Iterator<Item = Option<&'a str>>) -> ArrayRef {
    Arc::new(StringArray::from_iter(values))
}

fn opt_ints(values: impl Iterator<Item = Option<i64>>) -> ArrayRef {
    Arc::new(Int64Array::from_iter(values))
}

fn opt_floats(values: impl Iterator<Item = Option<f64>>) -> ArrayRef {
    Arc::new(Float64Array::from_iter(values))
}

/// A `pyarrow.Table` of these named columns (one record batch; every column nullable, as pyarrow's own).
fn table<'py>(py: Python<'py>, columns: Vec<(&str, ArrayRef)>) -> PyResult<Bound<'py, PyAny>> {
    let fields: Vec<Field> = columns.iter().map(|(name, a)| Field::new(*name, a.data_type().clone(), true)).collect();
    let schema = Arc::new(Schema::new(fields));
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    let built = RecordBatch::try_new(schema.clone(), arrays).and_then(|batch| Table::try_new(vec![batch], schema));
    built.map_err(|err| to_py(py, err.into()))?.into_pyarrow(py)
}

/// The Python exception for a library error: `TypeError` for a settings keyword no flag has, else
/// `gigscope.GigscopeError` with the message and its causes as the command line prints them (after `error: `).
fn to_py(py: Python<'_>, err: anyhow::Error) -> PyErr {
    if let Some(flag_err) = err.downcast_ref::<clap::Error>() {
        // clap's rendering is "error: MESSAGE", a blank line, then usage: the message alone is kept.
        let rendered = flag_err.to_string();
        let message = rendered.lines().next().unwrap_or_default().trim_start_matches("error: ").to_string();
        if flag_err.kind() == clap::error::ErrorKind::UnknownArgument {
            return PyTypeError::new_err(message);
        }
        return gigscope_error(py, message);
    }
    gigscope_error(py, api::message(&err))
}

fn gigscope_error(py: Python<'_>, message: String) -> PyErr {
    match py.import("gigscope").and_then(|m| m.getattr("GigscopeError")).and_then(|c| Ok(c.cast_into::<PyType>()?)) {
        Ok(class) => PyErr::from_type(class, message),
        Err(err) => err,
    }
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(open, m)?)?;
    m.add_function(wrap_pyfunction!(render, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    m.add_class::<Run>()?;
    Ok(())
}
