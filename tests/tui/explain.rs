//! The anchor view's explanation panel shows the engine's numbers: for every estimator and norm (and both
//! poolings), every row of the fixture run is opened in the anchor view and the panel's A, A_E and A_S are
//! compared with what `gigscope advantages --format jsonl` prints for that row; every term's stated formula
//! gives the engine's value (`explain::consistent`).

use std::path::Path;
use std::process::Command;

use clap::ValueEnum;
use gigscope::advantage::explain::{self, Symbol};
use gigscope::advantage::{Estimator, Norm, Pooling};
use gigscope::tui::{open, update, Action, Config, Msg, State};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

const RUN: &str = "tests/fixtures/tui/basic";

fn render(s: &State) -> String {
    let mut terminal = Terminal::new(TestBackend::new(s.ui.size.0, s.ui.size.1)).unwrap();
    terminal.draw(|f| f.render_widget(s, f.area())).unwrap();
    let buf = terminal.backend().buffer();
    let mut out = String::new();
    for y in 0..buf.area.height {
        for x in 0..buf.area.width {
            out.push_str(buf[(x, y)].symbol());
        }
        out.push('\n');
    }
    out
}

/// The number after the last ` = ` of the panel line that starts with `label = `.
fn panel_value(screen: &str, label: &str) -> f64 {
    let prefix = format!("{label} = ");
    let line = screen
        .lines()
        .map(|l| l.trim_matches(|c| c == '│' || c == ' '))
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} on the screen:\n{screen}"));
    let last = line.rsplit(" = ").next().unwrap();
    let number = last.split_whitespace().next().unwrap();
    number.parse().unwrap_or_else(|_| panic!("{number:?} in {line:?}"))
}

fn engine_rows(estimator: &str, norm: &str, pooling: &str) -> Vec<serde_json::Value> {
    let out = Command::new(env!("CARGO_BIN_EXE_gigscope"))
        .args(["advantages", RUN, "--estimator", estimator, "--norm", norm, "--pooling", pooling, "--format", "jsonl"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn name<T: ValueEnum>(v: &T) -> String {
    v.to_possible_value().unwrap().get_name().to_string()
}

#[test]
fn the_panel_shows_the_engines_numbers_for_every_estimator_and_norm() {
    let mut checked = 0;
    for estimator in Estimator::value_variants() {
        for norm in Norm::value_variants() {
            for pooling in Pooling::value_variants() {
                let (e_name, n_name, p_name) = (name(estimator), name(norm), name(pooling));
                let rows = engine_rows(&e_name, &n_name, &p_name);
                let mut s = open(Path::new(RUN), Config::defaults(false).unwrap(), (220, 70)).unwrap().0;
                s.domain.settings.estimator = *estimator;
                s.domain.settings.norm = *norm;
                s.domain.settings.pooling = *pooling;
                s.apply_settings();
                for row in &rows {
                    let id = row["episode"].as_str().unwrap();
                    let e = s.domain.episodes.iter().position(|x| x.id == *id).unwrap();
                    let t = row["step"].as_u64().unwrap() as usize;
                    s.select_row(e, t);
                    update(&mut s, Msg::Action(Action::Anchor));
                    let what = format!("{e_name} {n_name} {p_name} {id} step {t}");
                    let x = explain::explain(
                        &s.domain.derived.table,
                        &s.domain.episodes,
                        &s.domain.derived.settings,
                        &s.domain.lengths,
                        s.row_ref().unwrap(),
                    )
                    .unwrap();
                    explain::consistent(&x).unwrap_or_else(|m| panic!("{what}: {m}"));
                    let screen = render(&s);
                    for (label, key, symbol) in [
                        ("A", "advantage", Symbol::Advantage),
                        ("A_E", "episode_advantage", Symbol::EpisodeAdvantage),
                        ("A_S", "step_advantage", Symbol::StepAdvantage),
                        ("R_t", "return", Symbol::Return),
                    ] {
                        let want = row[key].as_f64().unwrap();
                        let shown = panel_value(&screen, label);
                        let decimals = if symbol.is_advantage() { 3 } else { 4 };
                        assert!(
                            (shown - want).abs() <= 0.5 * 10f64.powi(-decimals) + 1e-12,
                            "{what}: the panel shows {label} = {shown}, gigscope advantages says {want}\n{screen}"
                        );
                        assert_eq!(x.term(symbol).unwrap().value, want, "{what}: {label}");
                    }
                    if *estimator == Estimator::Rloo {
                        let headline = screen
                            .lines()
                            .find(|l| l.contains("A = n/(n−1)·(s − mean_E)"))
                            .unwrap_or_else(|| panic!("{what}: RLOO's formula is shown\n{screen}"));
                        assert!(headline.contains("(rloo)"), "{headline}");
                        assert!(screen.contains("leave-one-out") || screen.contains("pool of one"), "{what}\n{screen}");
                        if screen.contains("leave-one-out") {
                            assert!(
                                screen.contains(&format!("the norm ({n_name}) and F are not used")),
                                "{what}\n{screen}"
                            );
                        }
                    }
                    if *norm == Norm::MeanStdNorm {
                        assert!(screen.contains("std + 1e-6"), "{what}: the engine's ε is shown\n{screen}");
                    }
                    checked += 1;
                }
            }
        }
    }
    assert_eq!(checked, 38 * 4 * 2 * 2);
}

/// At 80×24 the headline `A = …` is the panel's first line, and J scrolls the rest into view.
#[test]
fn the_headline_survives_80x24_and_the_panel_scrolls() {
    let mut s = open(Path::new(RUN), Config::defaults(false).unwrap(), (80, 24)).unwrap().0;
    update(&mut s, Msg::Action(Action::Open));
    while &*s.domain.derived.table.episode_groups[s.ui.sel.group as usize].name != "socks-it0" {
        update(&mut s, Msg::Action(Action::NextItem));
    }
    update(&mut s, Msg::Action(Action::Open));
    update(&mut s, Msg::Action(Action::Anchor));
    let screen = render(&s);
    assert!(screen.contains("A = A_E + ω·A_S = +4.0000 + 1.00·(+4.5125) = +8.512"), "{screen}");
    let last_before = screen.lines().rev().nth(3).unwrap().to_string();
    update(&mut s, Msg::Action(Action::ScrollDown));
    assert!(s.ui.anchor.formula_scroll > 0, "the panel does not fit at 80×24, so J scrolls it");
    let scrolled = render(&s);
    assert_ne!(scrolled.lines().rev().nth(3).unwrap(), last_before, "{scrolled}");
    for _ in 0..50 {
        update(&mut s, Msg::Action(Action::ScrollDown));
    }
    let bottom = render(&s);
    assert!(bottom.contains("A_E = (s − mean_E) / F_E"), "the last terms come into view:\n{bottom}");
    update(&mut s, Msg::Action(Action::ScrollUp));
    assert!(s.ui.anchor.formula_scroll < 50, "scrolling stops at the end");
}

/// A filled-in formula as the panel writes it (`+0.244 + 1.00·(+0.204)`, `0.95^2·10.0000 − 0.10`,
/// `(9.0250 − 4.5125) / 1`, `0.3000 + 1e-6`) worked out as a reader would; `None` when it is not one (symbols,
/// an elided list).
fn work_out(text: &str) -> Option<f64> {
    #[derive(Clone, Copy, PartialEq, Debug)]
    enum Tok {
        Num(f64),
        Op(char),
    }
    let mut toks = Vec::new();
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let operand_expected = matches!(toks.last(), None | Some(Tok::Op('+' | '−' | '·' | '/' | '^' | '(')));
        if c == ' ' {
            i += 1;
        } else if c.is_ascii_digit() || (operand_expected && (c == '+' || c == '-')) {
            let start = i;
            i += 1;
            while i < chars.len()
                && (chars[i].is_ascii_digit()
                    || chars[i] == '.'
                    || chars[i] == 'e'
                    || (chars[i] == '-' && chars[i - 1] == 'e'))
            {
                i += 1;
            }
            toks.push(Tok::Num(chars[start..i].iter().collect::<String>().parse().ok()?));
        } else if "+−·/^()".contains(c) {
            toks.push(Tok::Op(c));
            i += 1;
        } else {
            return None;
        }
    }
    // Precedence climbing: + − below · / below ^.
    fn expr(t: &[Tok], i: &mut usize, min: u8) -> Option<f64> {
        let mut lhs = match *t.get(*i)? {
            Tok::Num(v) => {
                *i += 1;
                v
            }
            Tok::Op('(') => {
                *i += 1;
                let v = expr(t, i, 0)?;
                (t.get(*i)? == &Tok::Op(')')).then_some(())?;
                *i += 1;
                v
            }
            _ => return None,
        };
        while let Some(&Tok::Op(op)) = t.get(*i) {
            let prec = match op {
                '+' | '−' => 1,
                '·' | '/' => 2,
                '^' => 3,
                _ => break,
            };
            if prec < min {
                break;
            }
            *i += 1;
            let rhs = expr(t, i, prec + 1)?;
            lhs = match op {
                '+' => lhs + rhs,
                '−' => lhs - rhs,
                '·' => lhs * rhs,
                '/' => lhs / rhs,
                _ => lhs.powf(rhs),
            };
        }
        Some(lhs)
    }
    let mut at = 0;
    let v = expr(&toks, &mut at, 0)?;
    (at == toks.len()).then_some(v)
}

/// Every filled-in formula the TUI shows (the anchor view's panel, present mode's status line) adds up: its
/// numbers as written, worked out by hand, give its value as written, for every row of the sample run and the
/// fixture under every engine estimator and norm.
#[test]
fn filled_in_formulas_add_up_at_the_shown_precision() {
    assert_eq!(work_out("+0.244 + 1.00·(+0.204)"), Some(0.244 + 0.204));
    assert_eq!(work_out("0.95^2·10.0000 − 0.10"), Some(0.95f64.powf(2.0) * 10.0 - 0.1));
    assert_eq!(work_out("(9.0250 − 4.5125) / 1"), Some(9.025 - 4.5125));
    assert_eq!(work_out("(1.0000 + … (3 more)) / 12"), None);
    let (mut checked, mut formulas) = (0, std::collections::BTreeSet::new());
    for run in ["sample_runs/webshop-gigpo", RUN] {
        for estimator in Estimator::value_variants() {
            for norm in Norm::value_variants() {
                let config = Config::defaults(false).unwrap().with_display(None, true).unwrap();
                let mut s = open(Path::new(run), config, (250, 80)).unwrap().0;
                s.domain.settings.estimator = *estimator;
                s.domain.settings.norm = *norm;
                s.apply_settings();
                for e in 0..s.domain.episodes.len() {
                    for t in 0..s.domain.episodes.at(e).steps.len() {
                        s.select_row(e, t);
                        update(&mut s, Msg::Action(Action::Anchor));
                        let screen = render(&s);
                        for line in screen.lines() {
                            let line = line.trim_matches(|c| c == '│' || c == ' ');
                            let parts: Vec<&str> = line.split(" = ").collect();
                            let [.., filled, value] = parts[..] else { continue };
                            let Some(worked) = work_out(filled) else { continue };
                            let value = value.split_whitespace().next().unwrap();
                            let decimals = value.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
                            let shown: f64 = value.parse().unwrap_or_else(|_| panic!("{value:?} in {line:?}"));
                            assert!(
                                (worked - shown).abs() <= 0.5 * 10f64.powi(-decimals) + 1e-9,
                                "{run} {estimator:?} {norm:?} episode {e} step {t}: {filled} gives {worked}, \
                                 shown {value}: {line}"
                            );
                            formulas.insert(parts[parts.len() - 3].to_string());
                            checked += 1;
                        }
                    }
                }
            }
        }
    }
    assert!(checked > 10_000, "{checked} filled-in formulas checked");
    for f in ["A_E + ω·A_S", "(R_t − mean_S) / F_S", "(s − mean_E) / F_E", "n/(n−1)·(s − mean_E)"] {
        assert!(formulas.iter().any(|x| x.ends_with(f)), "{f} among {formulas:?}");
    }
}
