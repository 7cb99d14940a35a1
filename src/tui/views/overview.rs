//! Run overview: per-iteration table, success/return charts, the advantages' spread per iteration, step-group
//! size histogram, metrics.jsonl values. Every figure comes from [`crate::tui::domain::Derived`], computed when
//! the episodes or the settings change; drawing only lays it out.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Bar, BarChart, BarGroup, Chart, Dataset, GraphType, Paragraph, Row, Table, Widget};

use super::{block, clamp_add, go, hint, layout, Component, Hint, ListRegion};
use crate::advantage::stats::{records_success, AdvantageQuantiles, Quantiles};
use crate::run::bursts::BurstSpan;
use crate::tui::action::Action;
use crate::tui::domain::IterationStats;
use crate::tui::state::{State, View};

pub struct Overview;

impl Component for Overview {
    fn title(&self) -> &'static str {
        "Overview"
    }

    fn crumbs(&self, state: &State) -> Vec<String> {
        let it = state.domain.derived.iterations.get(state.ui.sel.iteration);
        it.map(|it| if it.is_play() { "played groups".to_string() } else { format!("iter {}", it.iteration) })
            .into_iter()
            .collect()
    }

    fn hints(&self, state: &State) -> Vec<Hint> {
        let mut hints = vec![
            hint(&[Action::Up, Action::Down], "move", "select an iteration (the played groups are the last row)"),
            hint(&[Action::Open], "groups", "the groups of the selected iteration"),
        ];
        if state.domain.tokens.summaries().is_some() {
            hints.push(hint(&[Action::TokenJump], "token outliers", "the steps of largest mismatch and KL, in turn"));
        }
        hints
    }

    fn highlight(&self, state: &State) -> Option<String> {
        let it = state.domain.derived.iterations.get(state.ui.sel.iteration)?;
        let succeeded = if records_success(&state.domain.episodes) {
            format!(", {:.0}% succeeded", 100.0 * it.stats.success_rate)
        } else {
            String::new()
        };
        let bursts = state.domain.marked_bursts();
        let marks: Vec<String> =
            state.domain.bursts_of(&bursts, &it.stats.groups).into_iter().map(BurstSpan::mark).collect();
        let written =
            if marks.is_empty() { String::new() } else { format!(" (written by burst {})", marks.join(", ")) };
        Some(format!(
            "{}{written}: {} episodes in {} groups{succeeded}, mean return {:.3}, {:.0}% of groups zero-variance (A_E = 0)",
            if it.is_play() { "played groups".to_string() } else { format!("iteration {}", it.iteration) },
            it.stats.episodes,
            it.stats.groups.len(),
            it.stats.mean_return,
            100.0 * it.stats.zero_variance_share
        ))
    }

    fn render(&self, state: &State, area: Rect, buf: &mut Buffer) {
        let a = areas(state, area);
        iterations(state, a.table, buf);
        charts(state, a.charts, buf);
        advantages(state, a.advantages, buf);
        histogram(state, a.histogram, buf);
        if let Some(m) = a.metrics {
            metrics(state, m, buf);
        }
        if let Some(t) = a.tokens {
            tokens(state, t, buf);
        }
    }

    fn list(&self, state: &State, body: Rect) -> Option<ListRegion> {
        let rect = layout::table_body(areas(state, body).table);
        Some(ListRegion { rect, len: state.domain.derived.iterations.len(), selected: state.ui.sel.iteration })
    }

    fn move_by(&self, state: &mut State, by: isize) {
        let n = state.domain.derived.iterations.len();
        state.ui.sel.iteration = clamp_add(state.ui.sel.iteration, by, n);
        state.ui.sel.group = state.current_groups().first().copied().unwrap_or(0);
        state.ui.sel.traj = 0;
    }

    fn open(&self, state: &mut State) {
        go(state, View::Groups);
    }
}

pub struct OverviewAreas {
    pub table: Rect,
    pub charts: Rect,
    /// The spread of the advantages per training iteration.
    pub advantages: Rect,
    pub histogram: Rect,
    pub metrics: Option<Rect>,
    /// The run's token figures per iteration, when it has tokens.
    pub tokens: Option<Rect>,
}

pub fn areas(state: &State, body: Rect) -> OverviewAreas {
    let wanted = state.domain.derived.iterations.len() as u16 + 3;
    let table_h = wanted.min((body.height / 2).max(5)).min(body.height);
    let [table, bottom] = Layout::vertical([Constraint::Length(table_h), Constraint::Min(0)]).areas(body);
    let [charts, right] = Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(bottom);
    let spread_h = advantage_rows(state, right.height / 2).0 as u16 + 3;
    let [advantages, right] = Layout::vertical([Constraint::Length(spread_h), Constraint::Min(0)]).areas(right);
    let (right, tokens) = if state.domain.tokens.summaries().is_some() {
        let [r, t] = Layout::vertical([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(right);
        (r, Some(t))
    } else {
        (right, None)
    };
    let (histogram, metrics) = if state.domain.run.metrics.is_empty() {
        (right, None)
    } else {
        let [h, m] = Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(right);
        (h, Some(m))
    };
    OverviewAreas { table, charts, advantages, histogram, metrics, tokens }
}

fn pct(v: f64) -> String {
    format!("{:.0}%", v * 100.0)
}

/// The iterations table's column headers in full, abbreviated (the help's glyph list says what each
/// abbreviation stands for), and the width a column gets where there is room.
const ITERATION_COLUMNS: [(&str, &str, u16); 9] = [
    ("iter", "it", 5),
    ("eps", "eps", 6),
    ("groups", "grp", 6),
    ("success", "succ", 7),
    ("return", "ret", 8),
    ("steps/ep", "st/ep", 8),
    ("tok/step", "tok/st", 8),
    ("zero-var", "0-var", 8),
    ("sg size", "sg", 7),
];

/// The columns' headers and widths in `width`: the roomy widths where they fit, else each column as wide as
/// its widest cell and header, with the full headers where they fit and the abbreviated ones where not, so
/// that no header is cut mid-word.
fn iteration_columns(cells: &[Vec<String>], spacing: u16, width: u16) -> (Vec<&'static str>, Vec<Constraint>) {
    let fitted = |short: bool, roomy: bool| -> (Vec<&'static str>, Vec<u16>) {
        ITERATION_COLUMNS
            .iter()
            .enumerate()
            .map(|(c, &(full, abbreviated, room))| {
                let name = if short { abbreviated } else { full };
                let cell = cells.iter().map(|row| row[c].chars().count()).max().unwrap_or(0);
                let least = cell.max(name.chars().count()) as u16;
                (name, if roomy { least.max(room) } else { least })
            })
            .unzip()
    };
    let total = |w: &[u16]| w.iter().sum::<u16>() + spacing * (w.len() as u16 - 1);
    let (names, widths) = [(false, true), (false, false)]
        .into_iter()
        .map(|(short, roomy)| fitted(short, roomy))
        .find(|(_, w)| total(w) <= width)
        .unwrap_or_else(|| fitted(true, false));
    (names, widths.into_iter().map(Constraint::Length).collect())
}

fn iterations(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let its = &state.domain.derived.iterations;
    let body = layout::table_body(area);
    let start = layout::window_start(state.ui.sel.iteration, its.len(), body.height as usize);
    // TRL's completions record no success: "—", not "0%".
    let success = records_success(&state.domain.episodes);
    // Which bursts wrote each iteration's groups, on runs whose bursts tell groups apart: a last column,
    // its room kept before the others are fitted.
    let bursts = state.domain.marked_bursts();
    let marks: Vec<String> = its
        .iter()
        .map(|it| {
            let marks = state.domain.bursts_of(&bursts, &it.stats.groups).into_iter().map(BurstSpan::mark);
            marks.collect::<Vec<String>>().join(",")
        })
        .collect();
    let burst_w = marks.iter().map(|m| m.chars().count()).max().unwrap_or(0).max("burst".len()) as u16;
    let room = if bursts.is_empty() { body.width } else { body.width.saturating_sub(burst_w + super::spacing(state)) };
    let cells: Vec<Vec<String>> = its
        .iter()
        .zip(&marks)
        .map(|(it, marks)| {
            let mut row = vec![
                it.label(),
                it.stats.episodes.to_string(),
                it.stats.groups.len().to_string(),
                if success { pct(it.stats.success_rate) } else { "—".into() },
                format!("{:.3}", it.stats.mean_return),
                format!("{:.1}", it.stats.mean_len),
                it.stats.tokens_per_step.map_or("—".into(), |t| format!("{t:.1}")),
                pct(it.stats.zero_variance_share),
                format!("{:.2}", it.stats.mean_step_group_size),
            ];
            if !bursts.is_empty() {
                row.push(marks.clone());
            }
            row
        })
        .collect();
    let (mut names, mut widths) = iteration_columns(&cells, super::spacing(state), room);
    if !bursts.is_empty() {
        names.push("burst");
        widths.push(Constraint::Length(burst_w));
    }
    let rows = cells.iter().enumerate().skip(start).take(body.height as usize).map(|(i, row)| {
        let row = Row::new(row.clone());
        if i == state.ui.sel.iteration {
            row.style(theme.selected())
        } else {
            row
        }
    });
    let header = Row::new(names).style(theme.title());
    let mut title = layout::rows_title("Iterations", start, body.height as usize, its.len());
    if start == 0 && its.len() <= body.height as usize {
        title = format!("Iterations ({})", its.len());
    }
    if state.domain.run.layout != crate::run::Layout::Gigscope {
        title.push_str(&format!(" · {}", state.domain.run.layout.name()));
    }
    if let Some(note) = state.domain.run.notices.last() {
        title.push_str(&format!(" · note: {note}"));
    }
    Table::new(rows, widths)
        .column_spacing(super::spacing(state))
        .header(header)
        .block(block(state, title, area))
        .render(area, buf);
}

fn charts(state: &State, area: Rect, buf: &mut Buffer) {
    let its = &state.domain.derived.iterations;
    // Played groups are no training iteration: the charts leave them out.
    let training: Vec<_> = its.iter().filter(|i| !i.is_play()).collect();
    let returns: Vec<(f64, f64)> = training.iter().map(|i| (i.iteration as f64, i.stats.mean_return)).collect();
    if !records_success(&state.domain.episodes) {
        // A run without success (TRL's completions) gets the return chart alone.
        return line_chart(state, "mean return by iteration", &returns, None, area, buf);
    }
    let [top, bottom] = Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(area);
    let success: Vec<(f64, f64)> = training.iter().map(|i| (i.iteration as f64, i.stats.success_rate)).collect();
    line_chart(state, "success rate by iteration", &success, Some((0.0, 1.0)), top, buf);
    line_chart(state, "mean return by iteration", &returns, None, bottom, buf);
}

pub(crate) fn line_chart(
    state: &State,
    title: &str,
    data: &[(f64, f64)],
    y: Option<(f64, f64)>,
    area: Rect,
    buf: &mut Buffer,
) {
    let theme = &state.config.theme;
    let x0 = data.first().map_or(0.0, |p| p.0);
    let x1 = data.last().map_or(1.0, |p| p.0).max(x0 + 1.0);
    let (y0, y1) = y.unwrap_or_else(|| {
        let lo = data.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
        let hi = data.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
        if lo.is_finite() && hi > lo {
            (lo, hi)
        } else {
            (lo.min(0.0), lo.max(0.0) + 1.0)
        }
    });
    let last = data.last().map_or(String::new(), |p| format!(" · last {:.3}", p.1));
    if area.height < CHART_MIN_HEIGHT {
        return compact_chart(state, &format!("{title}{last}"), data, (y0, y1), area, buf);
    }
    let ds = Dataset::default()
        .marker(Marker::Braille)
        .graph_type(if data.len() > 1 { GraphType::Line } else { GraphType::Scatter })
        .style(theme.accent())
        .data(data);
    Chart::new(vec![ds])
        .block(block(state, format!("{title}{last}"), area))
        .x_axis(Axis::default().bounds([x0, x1]).labels([format!("{x0}"), format!("{x1}")]).style(theme.dim()))
        .y_axis(Axis::default().bounds([y0, y1]).labels([format!("{y0:.2}"), format!("{y1:.2}")]).style(theme.dim()))
        .render(area, buf);
}

/// The least height a chart is drawn with as a chart: its border, the x axis and its labels, and two rows of
/// plot, so that the y axis's two labels sit on rows of their own. Lower, [`compact_chart`] draws it.
const CHART_MIN_HEIGHT: u16 = 6;

/// A chart too low for its axes: the values as one line of bars, eighths of the y range `y`, between the
/// range's ends as labels (`0.00 ▁▂▁▃ 1.00`), so that what is drawn reads against its labels; more values
/// than columns are averaged in buckets.
fn compact_chart(state: &State, title: &str, data: &[(f64, f64)], y: (f64, f64), area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    block(state, title.to_string(), area).render(area, buf);
    let inner = layout::inner(area);
    if inner.height == 0 || data.is_empty() {
        return;
    }
    let (lo, hi) = (format!("{:.2}", y.0), format!("{:.2}", y.1));
    let room = (inner.width as usize).saturating_sub(lo.len() + hi.len() + 2).max(1);
    let columns = data.len().min(room);
    const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let bars: String = (0..columns)
        .map(|c| {
            let from = c * data.len() / columns;
            let bucket = &data[from..((c + 1) * data.len() / columns).max(from + 1)];
            let v = bucket.iter().map(|p| p.1).sum::<f64>() / bucket.len() as f64;
            let at = if y.1 > y.0 { ((v - y.0) / (y.1 - y.0) * 7.0).round().clamp(0.0, 7.0) } else { 0.0 };
            LEVELS[at as usize]
        })
        .collect();
    let line = Line::from(vec![
        Span::styled(format!("{lo} "), theme.dim()),
        Span::styled(bars, theme.accent()),
        Span::styled(format!(" {hi}"), theme.dim()),
    ]);
    Paragraph::new(line).render(inner, buf);
}

/// A channel of the advantage panel: its name and its quantiles.
type Channel = (&'static str, fn(&AdvantageQuantiles) -> &Quantiles);

/// The channels of the advantage panel: A alone, or A, A_E and A_S for each iteration where there is room.
fn channels(all: bool) -> &'static [Channel] {
    const ALL: [Channel; 3] = [("A", |q| &q.advantage), ("A_E", |q| &q.episode), ("A_S", |q| &q.step)];
    if all {
        &ALL
    } else {
        &ALL[..1]
    }
}

/// How many rows the advantage panel wants within `most` (its border and scale line not counted, at least
/// one), and whether they show the three channels of every training iteration or A alone.
fn advantage_rows(state: &State, most: u16) -> (usize, bool) {
    let most = most.saturating_sub(3).max(1) as usize;
    let n = state.domain.derived.training_iterations().filter(|i| i.advantages.is_some()).count().max(1);
    if 3 * n <= most {
        (3 * n, true)
    } else {
        (n.min(most), false)
    }
}

/// Per training iteration, the spread of the advantages over its steps under the current settings, on one
/// scale shared by every row with 0 marked: whiskers from the 5th to the 95th percentile, the box from the 25th
/// to the 75th, the median a heavy bar. A for every iteration; A_E and A_S beside it where the panel has room.
/// The rows follow the selected iteration when they do not all fit.
fn advantages(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let rows: Vec<(usize, &IterationStats, &AdvantageQuantiles)> = state
        .domain
        .derived
        .iterations
        .iter()
        .enumerate()
        .filter(|(_, it)| !it.is_play())
        .filter_map(|(i, it)| it.advantages.as_ref().map(|q| (i, it, q)))
        .collect();
    let inner = layout::inner(area);
    let (_, all) = advantage_rows(state, area.height);
    let channels = channels(all);
    let legend = "├p5–p95┤ █p25–p75 ┃median";
    let title = ["advantages by iteration · ", "advantages · ", "A · "]
        .into_iter()
        .map(|name| format!("{name}{legend}"))
        .find(|t| t.chars().count() <= area.width.saturating_sub(2) as usize)
        .unwrap_or_else(|| format!("A · {legend}"));
    block(state, title, area).render(area, buf);
    if inner.height < 2 || inner.width < 12 {
        return;
    }
    if rows.is_empty() {
        Paragraph::new(Line::styled("no steps", theme.dim())).render(inner, buf);
        return;
    }
    // One scale for every row (0 on it), so that the rows compare.
    let (mut lo, mut hi) = (0.0f64, 0.0f64);
    for (_, _, q) in &rows {
        for (_, of) in channels {
            lo = lo.min(of(q).at[0]);
            hi = hi.max(of(q).at[4]);
        }
    }
    if !(hi - lo).is_finite() || hi - lo < 1e-12 {
        (lo, hi) = (lo - 1.0, hi + 1.0);
    }
    let label_w = rows.iter().map(|(_, it, _)| it.label().len()).max().unwrap_or(1) + if all { 4 } else { 0 };
    let strip_x = inner.x + label_w as u16 + 1;
    let strip_w = inner.width.saturating_sub(label_w as u16 + 1);
    let col = |v: f64| -> u16 {
        let at = ((v - lo) / (hi - lo) * f64::from(strip_w.saturating_sub(1))).round();
        strip_x + (at.max(0.0) as u16).min(strip_w.saturating_sub(1))
    };
    let zero = col(0.0);
    let lines = inner.height as usize - 1;
    let per = channels.len();
    let selected = rows.iter().position(|(i, _, _)| *i == state.ui.sel.iteration);
    let start = layout::window_start(selected.unwrap_or(0), rows.len(), (lines / per).max(1));
    let shown = rows.iter().skip(start).flat_map(|row| channels.iter().enumerate().map(move |(k, c)| (row, k, c)));
    for (y, ((i, it, q), k, (name, of))) in (inner.y..).zip(shown.take(lines)) {
        let label = match (k, all) {
            (0, true) => format!("{:>w$} {name:<3}", it.label(), w = label_w - 4),
            (_, true) => format!("{:>w$}{name:<3}", "", w = label_w - 3),
            _ => format!("{:>label_w$}", it.label()),
        };
        let style = if *i == state.ui.sel.iteration { theme.selected() } else { theme.dim() };
        buf.set_string(inner.x, y, label, style);
        buf.set_string(zero, y, "┊", theme.dim());
        let [p5, p25, p50, p75, p95] = of(q).at.map(col);
        for x in p5..=p95 {
            buf.set_string(x, y, "─", theme.accent());
        }
        buf.set_string(p5, y, "├", theme.accent());
        buf.set_string(p95, y, "┤", theme.accent());
        for x in p25..=p75 {
            buf.set_string(x, y, "█", theme.accent());
        }
        buf.set_string(p50, y, "┃", theme.title());
    }
    // The scale under the rows: its ends, and 0 where it falls.
    let y = inner.y + inner.height - 1;
    let (left, right) = (format!("{lo:.2}"), format!("{hi:.2}"));
    buf.set_string(strip_x, y, &left, theme.dim());
    let right_x = (strip_x + strip_w).saturating_sub(right.len() as u16);
    buf.set_string(right_x, y, &right, theme.dim());
    if zero > strip_x + left.len() as u16 && zero + 1 < right_x {
        buf.set_string(zero, y, "0", theme.dim());
    }
}

/// Sizes above this are pooled into one bar so the chart stays readable.
const HIST_MAX: usize = 10;

fn histogram(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let sizes = &state.domain.derived.size_histogram;
    let total: usize = sizes.values().sum();
    let singletons = sizes.get(&1).copied().unwrap_or(0) as f64;
    let inner_w = area.width.saturating_sub(2) as usize;
    // Sizes above `pool` share one bar; `pool` shrinks until every bar is wide enough for its count and its
    // label, so no count is lost.
    let bars_for = |pool: usize| -> Vec<(String, u64)> {
        let mut counts = vec![0u64; pool + 1];
        for (&size, &n) in sizes {
            counts[size.clamp(1, pool + 1) - 1] += n as u64;
        }
        counts
            .iter()
            .enumerate()
            .filter(|(_, &c)| c > 0)
            .map(|(i, &c)| (if i == pool { format!(">{pool}") } else { (i + 1).to_string() }, c))
            .collect()
    };
    let width_of = |bars: &[(String, u64)]| {
        bars.iter().map(|(l, c)| l.chars().count().max(c.to_string().len())).max().unwrap_or(1)
    };
    let mut pool = HIST_MAX;
    let mut bars = bars_for(pool);
    while pool > 1 && bars.len() * (width_of(&bars) + 1) > inner_w {
        pool -= 1;
        bars = bars_for(pool);
    }
    let need = width_of(&bars);
    let width = (inner_w / bars.len().max(1)).saturating_sub(1).clamp(need, need.max(5)) as u16;
    let bars: Vec<Bar> = bars
        .into_iter()
        .map(|(label, c)| {
            Bar::default().value(c).text_value(c.to_string()).label(Line::from(label)).style(theme.accent())
        })
        .collect();
    let title = format!(
        "step-group sizes · {total} · {:.0}% size 1",
        if total == 0 { 0.0 } else { singletons / total as f64 * 100.0 }
    );
    BarChart::default()
        .block(block(state, title, area))
        .data(BarGroup::default().bars(&bars))
        .bar_width(width)
        .bar_gap(1)
        .render(area, buf);
}

fn metrics(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let it = state.domain.derived.iterations.get(state.ui.sel.iteration).map(|i| i.iteration);
    // The metrics of the selected iteration, else the latest record.
    let rec =
        state.domain.run.metrics.iter().rev().find(|m| Some(m.iteration) == it).or(state.domain.run.metrics.last());
    let lines: Vec<Line> = match rec {
        None => vec![],
        Some(r) => {
            let mut v = vec![Line::styled(format!("iteration {}", r.iteration), theme.title())];
            v.extend(r.values.iter().filter_map(|(k, val)| {
                val.as_f64().map(|x| Line::from(format!("{k:<18} {}", super::trunc(&format!("{x:.4}"), 12))))
            }));
            v
        }
    };
    Paragraph::new(lines)
        .block(block(state, format!("metrics.jsonl ({} records)", state.domain.run.metrics.len()), area))
        .render(area, buf);
}

/// The run's token figures per iteration (from the token summaries' thread), the selected iteration's row
/// highlighted, and the largest mismatch and KL with the key that jumps to them.
fn tokens(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let Some(figures) = state.domain.tokens.summaries() else { return };
    let selected = state.domain.derived.iterations.get(state.ui.sel.iteration).filter(|i| !i.is_play());
    let cell = |v: Option<f64>, decimals: usize| v.map_or("—".to_string(), |v| format!("{v:.decimals$}"));
    let rows: Vec<Row> = figures
        .by_iteration
        .iter()
        .map(|(iteration, s)| {
            let row = Row::new(vec![
                iteration.map_or("?".into(), |i| i.to_string()),
                s.tokens.to_string(),
                s.trained.to_string(),
                s.clip_fraction().map_or("—".into(), |f| format!("{:.1}%", 100.0 * f)),
                cell(s.mean_kl(), 4),
                cell(s.mean_entropy(), 3),
                s.largest_mismatch.map_or("—".into(), |(m, _)| format!("{m:.4}")),
            ]);
            if selected.is_some_and(|it| Some(it.iteration) == *iteration) {
                row.style(theme.selected())
            } else {
                row
            }
        })
        .collect();
    let key = state.config.keymap.first_label(Action::TokenJump).unwrap_or_default();
    let top = |name: &str, list: &[crate::tui::tokens::Outlier]| {
        list.first()
            .map(|o| Line::styled(format!("largest {name} {:.4}: {} step {}", o.value, o.episode, o.step), theme.dim()))
    };
    let outliers: Vec<Line> =
        [top("mismatch", &figures.largest_mismatch), top("KL", &figures.largest_kl)].into_iter().flatten().collect();
    let mut title = format!("Tokens by iteration · {} steps", figures.steps);
    if figures.pending > 0 {
        title.push_str(&format!(" · summarizing, {} to go", figures.pending));
    }
    if figures.unreadable > 0 {
        title.push_str(&format!(" · {} unreadable", figures.unreadable));
    }
    if !outliers.is_empty() {
        title.push_str(&format!(" · {key}: outliers"));
    }
    let b = block(state, title, area);
    let inner = b.inner(area);
    b.render(area, buf);
    let [table, below] = Layout::vertical([Constraint::Min(0), Constraint::Length(outliers.len() as u16)]).areas(inner);
    Table::new(
        rows,
        [
            Constraint::Length(4),
            Constraint::Length(8),
            Constraint::Length(8),
            Constraint::Length(6),
            Constraint::Length(7),
            Constraint::Length(6),
            Constraint::Length(7),
        ],
    )
    .column_spacing(1)
    .header(Row::new(["iter", "tokens", "trained", "clip", "KL", "entr", "mism"]).style(theme.title()))
    .render(table, buf);
    Paragraph::new(outliers).render(below, buf);
}
