//! Compare view: two trajectories of one group side by side, aligned at the first step where they diverge.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Widget};

use super::{adv_span, block, layout, trunc};
use crate::run::Episode;
use crate::tui::state::State;

/// The first step at which two trajectories differ in state or action (their common prefix length).
pub fn divergence(a: &Episode, b: &Episode) -> usize {
    a.steps
        .iter()
        .zip(&b.steps)
        .take_while(|(x, y)| x.action == y.action && x.anchor_key() == y.anchor_key())
        .count()
}

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let (Some(ea), Some(eb)) = (state.episode_index(), state.other_index()) else { return };
    let (a, b) = (&state.run.episodes[ea], &state.run.episodes[eb]);
    let t = &state.derived.table;
    let d = divergence(a, b);
    let [head, table] = ratatui::layout::Layout::vertical([Constraint::Length(2), Constraint::Min(0)]).areas(area);
    let describe = |e: &Episode, traj: usize| {
        format!("{} (traj {traj}, return {:.3}, {})", e.id, e.total_reward(), if e.success() { "✓" } else { "✗" })
    };
    let head_lines = vec![
        Line::from(vec![
            Span::styled("A ", theme.title()),
            Span::raw(describe(a, state.sel.traj + 1)),
            Span::styled("   B ", theme.title()),
            Span::raw(describe(b, state.sel.other + 1)),
        ]),
        Line::styled(
            if d == 0 {
                "they differ from the first step".to_string()
            } else {
                format!("steps 0–{} identical (same states, same actions); aligned at step {d}", d - 1)
            },
            theme.dim(),
        ),
    ];
    Paragraph::new(head_lines).render(head, buf);

    let body = layout::table_body(table);
    let len = a.steps.len().max(b.steps.len());
    // The shared prefix is summarised in the header; rows start one step before the split for context.
    let first = d.saturating_sub(1);
    let start = first + state.sel.compare_scroll.min(len.saturating_sub(first + 1));
    let half = (body.width.saturating_sub(4 + 7 * 2 + 3) / 2) as usize;
    let side = |e: usize, ep: &Episode, i: usize| -> (Cell<'static>, Cell<'static>) {
        match (ep.steps.get(i), t.episode_rows(e).get(i)) {
            (Some(s), Some(r)) => (Cell::from(trunc(&s.action, half)), Cell::from(adv_span(state, r.advantage))),
            _ => (Cell::from("—"), Cell::from("")),
        }
    };
    let rows = (start..len).take(body.height as usize).map(|i| {
        let (aa, av) = side(ea, a, i);
        let (ba, bv) = side(eb, b, i);
        let mark = if i == d { "▶" } else if i < d { "=" } else { "" };
        let row = Row::new(vec![Cell::from(format!("{mark}{i}")), aa, av, ba, bv]);
        if i == d { row.style(theme.selected()) } else { row }
    });
    Table::new(
        rows,
        [
            Constraint::Length(4),
            Constraint::Length(half as u16),
            Constraint::Length(7),
            Constraint::Length(half as u16),
            Constraint::Length(7),
        ],
    )
    .header(Row::new(["step", "A action", "A adv", "B action", "B adv"]).style(theme.title()))
    .block(block(state, "Side by side (▶ first divergent step)"))
    .render(table, buf);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::Step;

    #[test]
    fn divergence_is_common_prefix_of_states_and_actions() {
        let a = Episode::new("a", "g", vec![Step::new("s", "x", 0.0), Step::new("t", "y", 0.0)]);
        let b = Episode::new("b", "g", vec![Step::new("s", "x", 0.0), Step::new("t", "z", 0.0)]);
        assert_eq!(divergence(&a, &b), 1);
        assert_eq!(divergence(&a, &a), 2);
        let c = Episode::new("c", "g", vec![Step::new("other", "x", 0.0)]);
        assert_eq!(divergence(&a, &c), 0);
    }
}
