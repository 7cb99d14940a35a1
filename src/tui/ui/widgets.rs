//! The pieces every view and the frame draw with: a themed block, advantages as signed text and spans, cut
//! text, the column gap, a term of an explanation, and the hint a key is advertised by. Below the views and
//! the frame, which both use them.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders};

use crate::advantage::explain::{self, Term};
use crate::tui::action::Action;
use crate::tui::state::State;

/// A bordered block drawn over `area`, with the theme's border and title styles; a title longer than the top
/// border is cut with `…`, leaving a stroke of the border after it (ratatui would cut it silently).
pub fn block<'a>(state: &State, title: impl Into<Line<'a>>, area: Rect) -> Block<'a> {
    let title = fit_line(title.into(), area.width.saturating_sub(3) as usize);
    Block::default()
        .borders(Borders::ALL)
        .border_style(state.config.theme.border())
        .title(title.style(state.config.theme.title()))
}

/// A signed advantage as text: always a sign, so meaning survives without colour.
pub fn adv(v: f64) -> String {
    if v == 0.0 {
        " 0.000".into()
    } else {
        format!("{v:+.3}")
    }
}

pub fn adv_span(state: &State, v: f64) -> Span<'static> {
    Span::styled(adv(v), state.config.theme.signed(v))
}

/// A difference as plain decimals (`-2.260`), in scientific notation only when tiny (`+3.1e-9`), never `e0`.
pub fn diff_text(d: f64) -> String {
    if d == 0.0 {
        "0".into()
    } else if d.abs() >= 1e-3 {
        format!("{d:+.3}")
    } else {
        format!("{d:+.1e}")
    }
}

/// A device as libtorch names it (`Cpu`, `Cuda(0)`) in the words of the CLI (`cpu`, `cuda:0`).
pub fn device_label(device: &str) -> String {
    device.to_lowercase().replace('(', ":").replace(')', "")
}

/// The gap between table columns: wider in present mode.
/// "stored advantages match `…`: apply? (y)", while settings that reproduce them are offered.
pub fn offer_line(state: &State) -> Option<String> {
    let found = state.offered_settings()?;
    let keys = state.config.keymap.first_label(Action::ApplyReconciled).unwrap_or_default();
    Some(format!("{}: apply? ({keys})", crate::tui::reconcile_offer::offer_text(found)))
}

pub fn spacing(state: &State) -> u16 {
    if state.ui.present {
        2
    } else {
        1
    }
}

/// Cut an id to `width` characters keeping its end, where ids differ (`…goal-9-1-0`).
pub fn trunc_start(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    let keep = width.saturating_sub(1);
    let mut out = String::from("…");
    out.extend(s.chars().skip(n - keep));
    out
}

/// `line` cut to `width` columns with `…` as its last when it does not fit, so that a cut shows (a bar's
/// line is otherwise cut at the edge mid-word).
pub fn fit_line<'a>(line: Line<'a>, width: usize) -> Line<'a> {
    if line.width() <= width {
        return line;
    }
    let mut left = width.saturating_sub(1);
    let mut spans: Vec<Span<'a>> = Vec::new();
    for span in line.spans {
        if left == 0 {
            break;
        }
        let mut kept = String::new();
        for c in span.content.chars() {
            let w = unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
            if w > left {
                left = 0;
                break;
            }
            left -= w;
            kept.push(c);
        }
        spans.push(Span::styled(kept, span.style));
    }
    spans.push(Span::raw("…"));
    Line::from(spans).style(line.style)
}

/// Cut `s` to `width` characters, marking the cut with `…`.
pub fn trunc(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut out: String = s.chars().take(width.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// One term as a line of text: `label = formula = filled = value`.
pub fn term_text(term: &Term) -> String {
    let value = if term.symbol.is_advantage() { explain::signed(term.value) } else { explain::num(term.value) };
    let mut parts = vec![term.label.clone(), term.formula.clone()];
    if !term.filled.is_empty() {
        parts.push(term.filled.clone());
    }
    // `F_S = 1 (mean_norm)` says its value already.
    if !(term.filled.is_empty() && term.formula.starts_with(|c: char| c.is_ascii_digit())) {
        parts.push(value);
    }
    parts.join(" = ")
}

/// A key the hint bar advertises and the help lists: the actions (each shown by its first bound key), a word
/// or two for the bar, and a line for the help. One list drives both.
#[derive(Clone, Debug, PartialEq)]
pub struct Hint {
    pub actions: Vec<Action>,
    pub label: &'static str,
    pub help: &'static str,
    /// Kept on the bar however narrow the terminal (help, quit, back).
    pub essential: bool,
    /// On the bar only where every other hint fits too: keys the screen already names beside what they act on.
    pub spare: bool,
}
