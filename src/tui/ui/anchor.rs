//! Anchor-group view: every step that shares the selected step's anchor state, with the group's mean/std and
//! the GiGPO formulas filled in with these numbers.

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, Widget, Wrap};

use super::{adv, adv_span, block, layout, trunc};
use crate::advantage::{Estimator, Norm};
use crate::tui::state::State;

/// Terms listed in the filled-in mean before eliding the rest.
const MAX_TERMS: usize = 8;

pub fn render(state: &State, area: Rect, buf: &mut Buffer) {
    let Some(r) = state.row_ref() else { return };
    let theme = &state.config.theme;
    let t = &state.derived.table;
    let ag = t.anchor_group_of(r);
    let id = t.row(r).step_group;
    let a = layout::anchor(area);
    let step = &state.run.episodes[r.episode as usize].steps[r.step as usize];
    let header = vec![
        Line::from(vec![
            Span::styled(format!("anchor group #{id} "), theme.title()),
            Span::raw(format!(
                "· {} member(s) · group {} · mean R {:.4} · std {:.4}",
                ag.members.len(),
                t.episode_groups[ag.episode_group as usize].name,
                ag.mean,
                ag.std
            )),
        ]),
        Line::styled(format!("anchor: {}", trunc(step.anchor_key(), area.width as usize * 2)), theme.dim()),
    ];
    Paragraph::new(header).wrap(Wrap { trim: true }).render(a.header, buf);

    let body = layout::table_body(a.members);
    let start = layout::window_start(state.sel.member, ag.members.len(), body.height as usize);
    let group_eps = state.group_episodes();
    let rows = ag.members.iter().enumerate().skip(start).take(body.height as usize).map(|(i, m)| {
        let ep = &state.run.episodes[m.episode as usize];
        let row = t.row(*m);
        let traj = group_eps.iter().position(|&e| e == m.episode).map_or("?".into(), |p| p.to_string());
        let this = if *m == r { "◀ this step" } else { "" };
        let r = Row::new(vec![
            Cell::from(traj),
            Cell::from(trunc(&ep.id, 12)),
            Cell::from(m.step.to_string()),
            Cell::from(ep.steps[m.step as usize].action.clone()),
            Cell::from(format!("{:.4}", row.ret)),
            Cell::from(adv_span(state, row.step_advantage)),
            Cell::from(this),
        ]);
        if i == state.sel.member { r.style(theme.selected()) } else { r }
    });
    Table::new(
        rows,
        [
            Constraint::Length(4),
            Constraint::Length(12),
            Constraint::Length(4),
            Constraint::Min(14),
            Constraint::Length(8),
            Constraint::Length(7),
            Constraint::Length(11),
        ],
    )
    .header(Row::new(["traj", "episode", "step", "action", "R_t", "A_S", ""]).style(theme.title()))
    .block(block(state, "Members (every trajectory of the group, any time step)"))
    .render(a.members, buf);

    Paragraph::new(formula(state))
        .wrap(Wrap { trim: false })
        .block(block(state, "Where the numbers come from"))
        .render(a.formula, buf);
}

/// The formulas for the selected member, filled in.
fn formula(state: &State) -> Vec<Line<'static>> {
    let Some(r) = state.row_ref() else { return vec![] };
    let t = &state.derived.table;
    let s = &state.settings;
    let ag = t.anchor_group_of(r);
    let Some(&m) = ag.members.get(state.sel.member) else { return vec![] };
    let row = t.row(m);
    let ep = &state.run.episodes[m.episode as usize];
    let n = ag.members.len();
    let mut lines = Vec::new();

    // R_t = Σ γ^k r_{t+k}, listing the non-zero terms.
    let shaped = &t.episode_rows(m.episode as usize)[m.step as usize..];
    let terms: Vec<String> = shaped
        .iter()
        .enumerate()
        .filter(|(_, x)| x.reward != 0.0)
        .map(|(k, x)| if k == 0 { format!("{:.4}", x.reward) } else { format!("{:.2}^{k}·{:.4}", s.gamma, x.reward) })
        .collect();
    let invalid = !ep.steps[m.step as usize].valid;
    lines.push(Line::from(format!(
        "R_t = Σ γ^k·r_(t+k){} = {}{} = {:.4}",
        if invalid { " − c" } else { "" },
        if terms.is_empty() { "0".into() } else { terms.join(" + ") },
        if invalid { format!(" − {:.2}", s.invalid_penalty) } else { String::new() },
        row.ret
    )));

    let rets: Vec<String> = ag.members.iter().take(MAX_TERMS).map(|&x| format!("{:.4}", t.row(x).ret)).collect();
    let more = if n > MAX_TERMS { format!(" + … ({} more)", n - MAX_TERMS) } else { String::new() };
    lines.push(Line::from(format!("mean_S = ({}{more}) / {n} = {:.4}", rets.join(" + "), ag.mean)));
    let factor = |std: f64| match s.norm {
        Norm::MeanNorm => ("1 (mean_norm)".to_string(), "1".to_string()),
        Norm::MeanStdNorm => (format!("std + 1e-6 = {:.4}", std + 1e-6), format!("{:.4}", std + 1e-6)),
    };
    let (f_text, f_num) = factor(ag.std);
    lines.push(Line::from(format!("std_S = {:.4} (sample, N−1) · F_S = {f_text}", ag.std)));
    if n <= 1 {
        lines.push(Line::from("A_S = 0: a singleton step group has no baseline to compare with"));
    } else {
        lines.push(Line::from(format!(
            "A_S = (R_t − mean_S) / F_S = ({:.4} − {:.4}) / {f_num} = {}",
            row.ret,
            ag.mean,
            adv(row.step_advantage)
        )));
    }
    let eg = t.episode_group_of(m.episode as usize);
    // A single-sample pool has baseline 0 and F 1: its advantage is its raw score.
    let (base, f_e) = if eg.pool_size <= 1 { (0.0, "1".to_string()) } else { (eg.mean, factor(eg.std).1) };
    lines.push(Line::from(format!(
        "A_E = (s − mean_E) / F_E = ({:.4} − {:.4}) / {f_e} = {} · group {}, pool {}",
        row.score,
        base,
        adv(row.episode_advantage),
        eg.name,
        eg.pool_size
    )));
    let combined = match s.estimator {
        Estimator::Gigpo => format!(
            "A = A_E + ω·A_S = {} + {:.2}·({}) = {}",
            adv(row.episode_advantage),
            s.omega,
            adv(row.step_advantage),
            adv(row.advantage)
        ),
        Estimator::Grpo | Estimator::Rloo => format!("A = A_E = {} ({:?})", adv(row.advantage), s.estimator),
        Estimator::Step => format!("A = A_S = {} (step component only)", adv(row.advantage)),
    };
    lines.push(Line::from(combined));
    lines
}
