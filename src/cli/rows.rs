//! The rows `gigscope advantages` prints, one per step, and the writer of its three formats (jsonl, csv,
//! table), shared by the whole read and the streamed one.

use std::io::{self, Write};

use serde::Serialize;

use crate::advantage::{AdvantageTable, EngineInput};
use crate::run::IdRef;

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Jsonl,
    Csv,
    Table,
}

/// One output record: exactly the keys of the `--format jsonl` contract, in this order ([`COLUMNS`]).
///
/// `reward` and `return` are `None` (null, an empty CSV field, `unscored` in the table) for an unscored TRL
/// completion: every reward function returned None ([`crate::advantage::trl::is_unscored`]); its advantages
/// are 0, as TRL gives it. `stored_advantage` is the trainer's own advantage of the step where the run
/// recorded one, and `delta` is stored − recomputed `advantage`.
#[derive(Serialize)]
pub struct OutRow<'a> {
    pub episode: IdRef<'a>,
    pub group: &'a str,
    pub iteration: i64,
    pub step: usize,
    pub reward: Option<f64>,
    #[serde(rename = "return")]
    pub ret: Option<f64>,
    pub episode_advantage: f64,
    pub step_advantage: f64,
    pub advantage: f64,
    pub step_group: u32,
    pub step_group_size: usize,
    pub stored_advantage: Option<f64>,
    pub delta: Option<f64>,
}

/// The output's columns (the `--format csv` header, the keys of `--format jsonl`), in order.
pub const COLUMNS: [&str; 13] = [
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
    "stored_advantage",
    "delta",
];

/// The output rows of episode `e` of `input`, whose table is `table`.
pub(super) fn episode_rows<'a, I: EngineInput + ?Sized>(
    input: &'a I,
    table: &'a AdvantageTable,
    e: usize,
) -> impl Iterator<Item = OutRow<'a>> {
    let scored = !crate::advantage::trl::unscored(input, e);
    let stored = input.recorded_advantages(e);
    table.episode_rows(e).into_iter().enumerate().map(move |(t, row)| {
        let stored_advantage = stored.as_deref().and_then(|a| a.get(t)).copied();
        OutRow {
            episode: input.episode_id(e),
            group: input.group(e),
            iteration: input.iteration(e),
            step: t,
            reward: scored.then_some(row.reward),
            ret: scored.then_some(row.ret),
            episode_advantage: row.episode_advantage,
            step_advantage: row.step_advantage,
            advantage: row.advantage,
            step_group: row.step_group,
            step_group_size: table.anchor_groups.size(row.step_group as usize),
            stored_advantage,
            delta: stored_advantage.map(|s| s - row.advantage),
        }
    })
}

/// The widths of the table's text columns: as wide as the longest episode id and group name, so that no id is
/// cut (a cut id can read the same as its group's other rollouts: `s1-0ebb4354-023…` four times).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TableWidths {
    episode: usize,
    group: usize,
}

impl Default for TableWidths {
    /// The headers' widths.
    fn default() -> Self {
        TableWidths { episode: "episode".len(), group: "group".len() }
    }
}

impl TableWidths {
    /// Widened to hold episode id `id` of group `group`.
    pub(super) fn fit(&mut self, id: &str, group: &str) {
        self.episode = self.episode.max(id.chars().count());
        self.group = self.group.max(group.chars().count());
    }
}

/// Writes output rows in one of the formats, header first.
pub(super) struct RowWriter<W: Write> {
    out: W,
    format: Format,
    widths: TableWidths,
    /// A JSON line being written, kept between rows for its room.
    line: Vec<u8>,
}

impl<W: Write> RowWriter<W> {
    /// A writer of `format`; `widths` (the table's only) must fit every row's episode id and group.
    pub(super) fn new(mut out: W, format: Format, widths: TableWidths) -> io::Result<Self> {
        match format {
            Format::Jsonl => {}
            Format::Csv => writeln!(out, "{}", COLUMNS.join(","))?,
            Format::Table => writeln!(
                out,
                "{:<ew$} {:<gw$} {:>4} {:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>5} {:>9} {:>9}",
                "episode",
                "group",
                "iter",
                "step",
                "reward",
                "return",
                "A_E",
                "A_S",
                "A",
                "sgroup",
                "size",
                "stored",
                "delta",
                ew = widths.episode,
                gw = widths.group,
            )?,
        }
        Ok(RowWriter { out, format, widths, line: Vec::new() })
    }

    pub(super) fn row(&mut self, r: &OutRow<'_>) -> io::Result<()> {
        let out = &mut self.out;
        match self.format {
            Format::Jsonl => {
                self.line.clear();
                json_line(&mut self.line, r);
                out.write_all(&self.line)
            }
            Format::Csv => writeln!(
                out,
                "{},{},{},{},{},{},{},{},{},{},{},{},{}",
                csv_field(&r.episode.joined()),
                csv_field(r.group),
                r.iteration,
                r.step,
                optional(r.reward),
                optional(r.ret),
                number(r.episode_advantage),
                number(r.step_advantage),
                number(r.advantage),
                r.step_group,
                r.step_group_size,
                optional(r.stored_advantage),
                optional(r.delta)
            ),
            Format::Table => writeln!(
                out,
                "{:<ew$} {:<gw$} {:>4} {:>4} {:>9} {:>9} {:>9} {:>9} {:>9} {:>7} {:>5} {:>9} {:>9}",
                r.episode,
                r.group,
                r.iteration,
                r.step,
                Cell(r.reward.map(Fixed4), "unscored"),
                Cell(r.ret.map(Fixed4), "unscored"),
                Fixed4(r.episode_advantage),
                Fixed4(r.step_advantage),
                Fixed4(r.advantage),
                r.step_group,
                r.step_group_size,
                Cell(r.stored_advantage.map(Fixed4), "—"),
                Cell(r.delta.map(Fixed4), "—"),
                ew = self.widths.episode,
                gw = self.widths.group,
            ),
        }
    }

    pub(super) fn finish(mut self) -> io::Result<()> {
        self.flush()
    }

    pub(super) fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// `r` as one JSON line (newline included): byte for byte what `serde_json::to_writer` writes for [`OutRow`]
/// (keys in [`COLUMNS`]' order; numbers in serde_json's forms, non-finite ones and absent ones `null`), written
/// straight into `line` without serde's per-field dispatch, which was most of the cost of writing a row.
fn json_line(line: &mut Vec<u8>, r: &OutRow<'_>) {
    use serde_json::ser::{CompactFormatter, Formatter};
    let mut f = CompactFormatter;
    // Writing into a Vec cannot fail.
    let number = |line: &mut Vec<u8>, x: Option<f64>| match x {
        Some(x) if x.is_finite() => {
            let _ = CompactFormatter.write_f64(line, x);
        }
        _ => line.extend_from_slice(b"null"),
    };
    line.extend_from_slice(b"{\"episode\":");
    json_str(line, &r.episode.joined());
    line.extend_from_slice(b",\"group\":");
    json_str(line, r.group);
    line.extend_from_slice(b",\"iteration\":");
    let _ = f.write_i64(line, r.iteration);
    line.extend_from_slice(b",\"step\":");
    let _ = f.write_u64(line, r.step as u64);
    line.extend_from_slice(b",\"reward\":");
    number(line, r.reward);
    line.extend_from_slice(b",\"return\":");
    number(line, r.ret);
    line.extend_from_slice(b",\"episode_advantage\":");
    number(line, Some(r.episode_advantage));
    line.extend_from_slice(b",\"step_advantage\":");
    number(line, Some(r.step_advantage));
    line.extend_from_slice(b",\"advantage\":");
    number(line, Some(r.advantage));
    line.extend_from_slice(b",\"step_group\":");
    let _ = f.write_u32(line, r.step_group);
    line.extend_from_slice(b",\"step_group_size\":");
    let _ = f.write_u64(line, r.step_group_size as u64);
    line.extend_from_slice(b",\"stored_advantage\":");
    number(line, r.stored_advantage);
    line.extend_from_slice(b",\"delta\":");
    number(line, r.delta);
    line.extend_from_slice(b"}\n");
}

/// `s` as a JSON string, as serde_json writes it: quoted as it is when nothing in it needs escaping (serde_json
/// escapes only `"`, `\\` and control characters), else through serde_json.
fn json_str(line: &mut Vec<u8>, s: &str) {
    if s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        let _ = serde_json::to_writer(&mut *line, s);
    } else {
        line.push(b'"');
        line.extend_from_slice(s.as_bytes());
        line.push(b'"');
    }
}

/// `x` with four decimals, exactly as `{:.4}` prints it (width and alignment from the caller's format spec).
///
/// `{:.4}` formats the exact binary value (Grisu, falling back to Dragon's bignum arithmetic often at four
/// decimals), which costs more than the rest of writing a table row. Here x·10⁴ is rounded instead: for
/// |x| < 10⁵ the product's rounding error is below 10⁻⁶, so whenever its fraction is further than that from one
/// half, rounding it decides the same digits; the rare product nearer a tie (and huge or non-finite values) goes
/// to `{:.4}` itself.
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

/// A table cell that may hold no number: the number, else what stands for its absence (padded alike).
struct Cell(Option<Fixed4>, &'static str);

impl std::fmt::Display for Cell {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.0 {
            Some(x) => std::fmt::Display::fmt(x, f),
            None => f.pad(self.1),
        }
    }
}

/// [`number`], or an empty CSV field for no number.
fn optional(x: Option<f64>) -> String {
    x.map(number).unwrap_or_default()
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

    use super::{json_line, Fixed4, OutRow};

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
        fn a_json_line_is_what_serde_json_writes(
            episode in any::<String>(),
            group in "[a-z\"\\\\\\x00-\\x1f\\u{e9}]{0,8}",
            iteration in any::<i64>(),
            step in any::<usize>(),
            numbers in proptest::array::uniform5(any::<f64>()),
            present in proptest::array::uniform4(any::<bool>()),
            step_group in any::<u32>(),
            step_group_size in any::<usize>(),
        ) {
            let [reward, ret, stored, delta] = [numbers[0], numbers[1], numbers[2], numbers[4]];
            let row = OutRow {
                episode: crate::run::IdRef::whole(&episode),
                group: &group,
                iteration,
                step,
                reward: present[0].then_some(reward),
                ret: present[1].then_some(ret),
                episode_advantage: numbers[3],
                step_advantage: -numbers[3],
                advantage: numbers[4],
                step_group,
                step_group_size,
                stored_advantage: present[2].then_some(stored),
                delta: present[3].then_some(delta),
            };
            let mut line = Vec::new();
            json_line(&mut line, &row);
            let mut expected = serde_json::to_vec(&row).expect("serialises");
            expected.push(b'\n');
            prop_assert_eq!(String::from_utf8(line).expect("utf-8"), String::from_utf8(expected).expect("utf-8"));
        }

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
