//! The token strip of a step: its response as a row of tokens, wrapped, each coloured by the chosen channel
//! ([`TokenChannel`]), with a summary line over it and a legend under it. Drawn from the tokens the domain
//! read for the shown episode ([`crate::tui::tokens::RunTokens`]): no I/O here.
//!
//! Styles, so that meaning never depends on colour alone: a value on the heat ramp (its sign and size against
//! the step's largest magnitude; bold without colour where it is at least half of that), 0 plain, null
//! (not recorded) italic and underlined, masked tokens (mask 0) dim, a trained token of a turn the policy did
//! not write (observation, tool output) in the warning style, and `clipped` 1 in the negative ramp's top shade.

use std::ops::Range;

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::run::tokens::{foreign_turns, StepSummary, StepTokens};
use crate::tui::theme::Theme;
use crate::tui::tokens::{logprob_channel, TokenChannel};

/// How one token looks, by what it is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Look {
    Value(f32),
    Null,
    Masked,
    Defect,
}

pub fn null_style(theme: &Theme) -> Style {
    theme.dim().add_modifier(Modifier::ITALIC | Modifier::UNDERLINED)
}

pub fn style(theme: &Theme, channel: TokenChannel, look: Look, max: f64) -> Style {
    match look {
        Look::Masked => theme.dim(),
        Look::Null => null_style(theme),
        Look::Defect => theme.warn().add_modifier(Modifier::REVERSED),
        Look::Value(v) if channel == TokenChannel::Clipped => {
            if v != 0.0 {
                theme.heat(-1.0, 1.0).add_modifier(Modifier::BOLD)
            } else {
                Style::new()
            }
        }
        Look::Value(v) if !v.is_finite() => theme.warn(),
        Look::Value(v) => {
            let s = theme.heat(f64::from(v), max);
            if !theme.color && max > 0.0 && f64::from(v).abs() >= max / 2.0 {
                s.add_modifier(Modifier::BOLD)
            } else {
                s
            }
        }
    }
}

/// What token `i` is, for its style.
pub fn look(tokens: &StepTokens, channel: TokenChannel, foreign: &[Range<usize>], i: usize) -> Look {
    if tokens.mask[i] && foreign.iter().any(|r| r.contains(&i)) {
        Look::Defect
    } else if !tokens.mask[i] {
        Look::Masked
    } else {
        channel.value(tokens, i).map_or(Look::Null, Look::Value)
    }
}

/// Token `i`'s text as the strip shows it: line ends and tabs as visible marks, an empty text as `∅`, an id
/// the tokenizer did not know as `⟨id⟩`.
pub fn token_label(tokens: &StepTokens, i: usize) -> String {
    match tokens.token_text(i) {
        None => format!("⟨{}⟩", tokens.ids[i]),
        Some("") => "∅".into(),
        Some(t) => t.replace('\n', "↵").replace('\t', "⇥").replace('\r', "␍"),
    }
}

/// The strip's lines at `width` columns: tokens one after another, a line broken where the next token does
/// not fit and after a token that ends a line of the response; a token wider than the strip is cut. With them,
/// the token each line begins with.
pub fn strip_lines(
    theme: &Theme,
    tokens: &StepTokens,
    channel: TokenChannel,
    width: usize,
) -> (Vec<Line<'static>>, Vec<usize>) {
    let width = width.max(1);
    let foreign = foreign_turns(tokens);
    let max = (0..tokens.len())
        .filter(|&i| tokens.mask[i])
        .filter_map(|i| channel.value(tokens, i))
        .filter(|v| v.is_finite())
        .fold(0f64, |m, v| m.max(f64::from(v).abs()));
    let mut lines = Vec::new();
    // The token each line begins with (or goes on with), pushed with the line.
    let mut starts = Vec::new();
    let mut line: Vec<Span<'static>> = Vec::new();
    let (mut used, mut start) = (0usize, 0usize);
    for i in 0..tokens.len() {
        let label = token_label(tokens, i);
        let s = style(theme, channel, look(tokens, channel, &foreign, i), max);
        let mut rest: Vec<char> = label.chars().collect();
        if line.is_empty() {
            start = i;
        }
        while !rest.is_empty() {
            if used > 0 && used + rest.len() > width {
                lines.push(Line::from(std::mem::take(&mut line)));
                starts.push(start);
                (used, start) = (0, i);
            }
            let take = rest.len().min(width - used);
            line.push(Span::styled(rest.drain(..take).collect::<String>(), s));
            used += take;
        }
        if tokens.token_text(i).is_some_and(|t| t.ends_with('\n')) {
            lines.push(Line::from(std::mem::take(&mut line)));
            starts.push(start);
            used = 0;
        }
    }
    if !line.is_empty() {
        lines.push(Line::from(line));
        starts.push(start);
    }
    (lines, starts)
}

fn figure(value: Option<f64>, decimals: usize) -> String {
    value.map_or("—".into(), |v| format!("{v:.decimals$}"))
}

/// The step's summary at `width` columns: tokens trained, clip fraction, mean KL, mean entropy, largest
/// mismatch ("—": its channels were not recorded), then the trained tokens of turns the policy did not write.
pub fn summary_lines(theme: &Theme, s: &StepSummary, width: usize) -> Vec<Line<'static>> {
    let figures = [
        format!("{}/{} trained", s.trained, s.tokens),
        format!("clipped {}", s.clip_fraction().map_or("—".into(), |f| format!("{:.1}%", 100.0 * f))),
        format!("KL {}", figure(s.mean_kl(), 4)),
        format!("entropy {}", figure(s.mean_entropy(), 3)),
        format!("mismatch max {}", s.largest_mismatch.map_or("—".into(), |(m, i)| format!("{m:.4} (token {i})"))),
    ];
    let mut lines = Vec::new();
    let mut line = String::new();
    for f in figures {
        if !line.is_empty() && line.chars().count() + 3 + f.chars().count() > width {
            lines.push(Line::raw(std::mem::take(&mut line)));
        }
        if !line.is_empty() {
            line.push_str(" · ");
        }
        line.push_str(&f);
    }
    lines.push(Line::raw(line));
    if s.foreign_trained > 0 {
        let defect =
            format!("⚠ {} observation/tool token(s) trained (mask 1): a defect of the data", s.foreign_trained);
        crate::tui::ui::text::wrap(&defect, width, &mut |l| lines.push(Line::styled(l.to_string(), theme.warn())));
    }
    lines
}

/// The legend: what each look means.
pub fn legend_line(theme: &Theme, channel: TokenChannel) -> Line<'static> {
    let mut spans = vec![Span::styled("legend ", theme.dim())];
    if channel == TokenChannel::Clipped {
        spans.push(Span::styled("clipped", style(theme, channel, Look::Value(1.0), 1.0)));
        spans.push(Span::raw(" "));
        spans.push(Span::raw("not"));
    } else {
        spans.push(Span::styled("−", style(theme, channel, Look::Value(-1.0), 1.0)));
        spans.push(Span::raw(" "));
        spans.push(Span::raw("0"));
        spans.push(Span::raw(" "));
        spans.push(Span::styled("+", style(theme, channel, Look::Value(1.0), 1.0)));
    }
    for (text, look) in [("null", Look::Null), ("masked", Look::Masked), ("trained obs/tool", Look::Defect)] {
        spans.push(Span::raw(" "));
        spans.push(Span::styled(text, style(theme, channel, look, 1.0)));
    }
    Line::from(spans)
}

/// The pane's title within `width` columns: the channel (and, for the log-probability, whose) with the key
/// that cycles it, and the episode's token figures where they fit.
pub fn title(tokens: &StepTokens, channel: TokenChannel, key: &str, episode: &StepSummary, width: usize) -> String {
    let name = match channel {
        TokenChannel::Logprob => format!("{} ({})", channel.name(), logprob_channel(tokens).name()),
        _ => channel.name().to_string(),
    };
    let short = format!("Tokens · {name} ({key})");
    let long = format!("{short} · episode: {} tokens, {} trained", episode.tokens, episode.trained);
    if long.chars().count() <= width {
        long
    } else {
        short
    }
}
