//! Compare view: two trajectories of one group side by side, aligned at the first step where they diverge.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Widget};

use super::{adv, adv_span, block, clamp_add, hint, layout, trunc, Component, Hint};
use crate::run::{Episode, Step};
use crate::text::action::ActionRule;
use crate::tui::action::Action;
use crate::tui::state::{State, View};

pub struct Compare;

impl Component for Compare {
    fn title(&self) -> &'static str {
        "Compare"
    }

    fn crumbs(&self, state: &State) -> Vec<String> {
        let mut v = super::groups::Groups.crumbs(state);
        if let Some(e) = state.episode_index() {
            v.push(format!("ep {}", state.domain.episodes.at(e).id));
        }
        if let Some(o) = state.other_index() {
            v.push(format!("vs {}", state.domain.episodes.at(o).id));
        }
        v
    }

    fn hints(&self, _state: &State) -> Vec<Hint> {
        use Action::*;
        vec![
            hint(&[Up, Down], "scroll", "scroll the steps"),
            hint(&[PrevItem, NextItem], "other traj", "compare with another trajectory of the group"),
            hint(&[Open], "episode", "the first trajectory in the episode view"),
        ]
    }

    fn highlight(&self, state: &State) -> Option<String> {
        let (ea, eb) = (state.episode_index()?, state.other_index()?);
        let (a, b) = (state.domain.episode(ea).ok()?, state.domain.episode(eb).ok()?);
        let d = divergence(a, b, state.domain.settings.action);
        let t = &state.domain.derived.table;
        let at = |e: usize| t.episode_rows(e).get(d).map_or("—".to_string(), |r| adv(r.advantage));
        Some(format!("at the first divergent step {d}: A {} for trajectory A, {} for B", at(ea), at(eb)))
    }

    fn enter(&self, state: &mut State) {
        state.ui.compare.scroll = 0;
        if state.ui.compare.other == state.ui.sel.traj {
            let n = state.group_episodes().len();
            state.ui.compare.other = if n > 1 { (state.ui.sel.traj + 1) % n } else { state.ui.sel.traj };
        }
    }

    fn selects_step(&self) -> bool {
        true
    }

    fn shown_episodes(&self, state: &State) -> Vec<usize> {
        state.episode_index().into_iter().chain(state.other_index()).collect()
    }

    fn render(&self, state: &State, area: Rect, buf: &mut Buffer) {
        render(state, area, buf);
    }

    fn move_by(&self, state: &mut State, by: isize) {
        state.ui.compare.scroll = clamp_add(state.ui.compare.scroll, by, compare_len(state));
    }

    fn open(&self, state: &mut State) {
        state.ui.view = View::Episode;
    }

    fn back_to(&self) -> View {
        View::Groups
    }

    /// Another trajectory, skipping the one compared against itself.
    fn item(&self, state: &mut State, by: isize) {
        let n = state.group_episodes().len();
        if n > 1 {
            let mut o = state.ui.compare.other;
            loop {
                o = (o as isize + by).rem_euclid(n as isize) as usize;
                if o != state.ui.sel.traj {
                    break;
                }
            }
            state.ui.compare.other = o;
            state.ui.compare.scroll = 0;
        }
    }
}

fn compare_len(state: &State) -> usize {
    let len = |e: Option<usize>| e.map_or(0, |e| state.domain.episodes.at(e).steps.len());
    len(state.episode_index()).max(len(state.other_index()))
}

/// The first step at which two trajectories differ in state or action (their common prefix length); actions
/// as `rule` reads them from the responses, so the same action with different thoughts does not diverge.
pub fn divergence(a: &Episode, b: &Episode, rule: ActionRule) -> usize {
    let same =
        |x: &Step, y: &Step| rule.extract(&x.action) == rule.extract(&y.action) && x.anchor_key() == y.anchor_key();
    a.steps.iter().zip(&b.steps).take_while(|(x, y)| same(x, y)).count()
}

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let theme = &state.config.theme;
    let (Some(ea), Some(eb)) = (state.episode_index(), state.other_index()) else { return };
    let read = |e: usize| state.domain.episode(e);
    let (a, b) = match (read(ea), read(eb)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(err), _) | (_, Err(err)) => return super::unreadable(state, err, area, buf),
    };
    let (a, b): (&Episode, &Episode) = (a, b);
    let t = &state.domain.derived.table;
    let d = divergence(a, b, state.domain.settings.action);
    let [head, table] = ratatui::layout::Layout::vertical([Constraint::Length(2), Constraint::Min(0)]).areas(area);
    let describe = |e: &Episode, traj: usize| {
        format!("{} (traj {traj}, return {:.3}, {})", e.id, e.total_reward(), if e.success() { "✓" } else { "✗" })
    };
    let head_lines = vec![
        Line::from(vec![
            Span::styled("A ", theme.title()),
            Span::raw(describe(a, state.ui.sel.traj + 1)),
            Span::styled("   B ", theme.title()),
            Span::raw(describe(b, state.ui.compare.other + 1)),
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
    let start = first + state.ui.compare.scroll.min(len.saturating_sub(first + 1));
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
        let mark = if i == d {
            "▶"
        } else if i < d {
            "="
        } else {
            ""
        };
        let row = Row::new(vec![Cell::from(format!("{mark}{i}")), aa, av, ba, bv]);
        if i == d {
            row.style(theme.selected())
        } else {
            row
        }
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
    .column_spacing(super::spacing(state))
    .header(Row::new(["step", "A action", "A adv", "B action", "B adv"]).style(theme.title()))
    .block(block(state, "Side by side (▶ first divergent step)", table))
    .render(table, buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divergence_is_common_prefix_of_states_and_actions() {
        let a = Episode::new("a", "g", vec![Step::new("s", "x", 0.0), Step::new("t", "y", 0.0)]);
        let b = Episode::new("b", "g", vec![Step::new("s", "x", 0.0), Step::new("t", "z", 0.0)]);
        let tagged = ActionRule::Tagged;
        assert_eq!(divergence(&a, &b, tagged), 1);
        assert_eq!(divergence(&a, &a, tagged), 2);
        let c = Episode::new("c", "g", vec![Step::new("other", "x", 0.0)]);
        assert_eq!(divergence(&a, &c, tagged), 0);
    }

    #[test]
    fn the_same_action_with_other_thoughts_does_not_diverge() {
        let step = |response: &str| Step::new("s", response, 0.0);
        let a = Episode::new("a", "g", vec![step("<think>a</think><action>up</action>"), step("<action>up</action>")]);
        let b = Episode::new("b", "g", vec![step("<think>b</think><action>up</action>"), step("down")]);
        assert_eq!(divergence(&a, &b, ActionRule::Tagged), 1);
        let whole = ActionRule::pattern(r"(?s).*").unwrap();
        assert_eq!(divergence(&a, &b, whole), 0, "a rule that keeps the whole response sees the thoughts");
    }
}
