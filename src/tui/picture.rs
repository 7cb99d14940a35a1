//! The TUI's screens as pictures to share (`gigscope render`): a view drawn exactly as the terminal shows it,
//! cell by cell, written as a self-contained SVG or HTML file for a slide, a paper or an issue thread.
//!
//! Contract:
//! - A picture is made of [`Frame`]s, each the buffer that `impl Widget for &State` draws for one view, so it
//!   shows the same numbers, signs, colours and cuts as the TUI at that size; nothing is recomputed here.
//! - An episode's picture is its episode view with the chosen step selected, then that step's anchor-group view
//!   (the group's members and the formula filled in); the overview's picture is the overview view (its table and
//!   charts). The state is prepared by [`update`] as a key press would, so the text each view shows is read
//!   before drawing, as in the app.
//! - The file holds everything it needs: no font, script or stylesheet is fetched. Text is laid on a grid of
//!   fixed cells (each run of text stretched to its cells' width), so the picture keeps the terminal's columns
//!   whatever monospace font the reader has. Colours the terminal leaves to its own palette (`Reset`) take the
//!   page's foreground and background; the 16 named colours and the 256-colour indices take xterm's values.

use std::fmt::Write as _;
use std::path::Path;

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier};
use ratatui::widgets::Widget;
use unicode_width::UnicodeWidthStr;

use super::action::Action;
use super::msg::Msg;
use super::state::State;
use super::update::update;

/// Width and height of one terminal cell in the picture, in pixels, and the font size that fills it.
pub const CELL_WIDTH: u32 = 9;
pub const CELL_HEIGHT: u32 = 18;
const FONT_SIZE: u32 = 15;
/// Room above each frame for its caption.
const CAPTION_HEIGHT: u32 = 24;

/// The file formats a picture is written as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PictureFormat {
    Svg,
    Html,
}

impl PictureFormat {
    /// The format a file name asks for by its extension (`.svg`, `.html`/`.htm`).
    pub fn of_path(path: &Path) -> Option<PictureFormat> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "svg" => Some(PictureFormat::Svg),
            "html" | "htm" => Some(PictureFormat::Html),
            _ => None,
        }
    }
}

/// The page's own colours: what the terminal's default foreground and background are in the picture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Page {
    pub foreground: (u8, u8, u8),
    pub background: (u8, u8, u8),
}

impl Page {
    /// A dark terminal (the default and high-contrast themes).
    pub const DARK: Page = Page { foreground: (0xd7, 0xda, 0xe0), background: (0x10, 0x12, 0x16) };
    /// A light terminal (the light theme).
    pub const LIGHT: Page = Page { foreground: (0x10, 0x10, 0x10), background: (0xff, 0xff, 0xff) };
}

/// One view as drawn, with a caption saying what it is.
pub struct Frame {
    pub caption: String,
    pub buffer: Buffer,
}

/// Draw the state's current view into a buffer of the state's size, after reading what it shows.
fn draw(state: &mut State, caption: String) -> Frame {
    super::update::read_shown_text(state);
    let (width, height) = state.ui.size;
    let mut buffer = Buffer::empty(Rect::new(0, 0, width, height));
    (&*state).render(buffer.area, &mut buffer);
    Frame { caption, buffer }
}

/// Episode `episode` (an index into the run's episodes) with step `step` selected: its episode view, then the
/// step's anchor-group view.
pub fn episode_frames(state: &mut State, episode: usize, step: usize) -> Vec<Frame> {
    state.select_row(episode, step);
    let name = state.domain.episodes.get(episode).map(|e| e.id.to_string()).unwrap_or_default();
    update(state, Msg::Action(Action::Episode));
    let first = draw(state, format!("episode {name}, step {step}"));
    update(state, Msg::Action(Action::Anchor));
    let second = draw(state, format!("episode {name}, step {step}: its anchor-state group"));
    vec![first, second]
}

/// The run's overview: the per-iteration table and its charts.
pub fn overview_frames(state: &mut State) -> Vec<Frame> {
    update(state, Msg::Action(Action::Overview));
    vec![draw(state, "run overview".into())]
}

/// `frames` as one picture in `format`, titled `title`.
pub fn write(frames: &[Frame], title: &str, page: Page, format: PictureFormat) -> String {
    let svg = svg(frames, title, page);
    match format {
        PictureFormat::Svg => svg,
        PictureFormat::Html => {
            let background = hex(page.background);
            format!(
                "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n\
                 <style>body {{ margin: 0; background: {background}; }} svg {{ display: block; }}</style>\n\
                 </head>\n<body>\n{}</body>\n</html>\n",
                escape(title),
                svg.trim_start_matches("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
            )
        }
    }
}

/// The size in pixels of the picture of `frames`.
pub fn picture_size(frames: &[Frame]) -> (u32, u32) {
    let width = frames.iter().map(|f| f.buffer.area.width as u32 * CELL_WIDTH).max().unwrap_or(0);
    let height = frames.iter().map(|f| CAPTION_HEIGHT + f.buffer.area.height as u32 * CELL_HEIGHT).sum();
    (width, height)
}

/// Where the top left corner of cell (`column`, `row`) of frame `index` of `frames` is in the picture.
pub fn cell_origin(frames: &[Frame], index: usize, column: u16, row: u16) -> (u32, u32) {
    let above: u32 = frames[..index].iter().map(|f| CAPTION_HEIGHT + f.buffer.area.height as u32 * CELL_HEIGHT).sum();
    (column as u32 * CELL_WIDTH, above + CAPTION_HEIGHT + row as u32 * CELL_HEIGHT)
}

fn svg(frames: &[Frame], title: &str, page: Page) -> String {
    let (width, height) = picture_size(frames);
    let mut out = String::new();
    out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" font-family=\"'DejaVu Sans Mono', Menlo, Consolas, monospace\" \
         font-size=\"{FONT_SIZE}\">"
    );
    let _ = writeln!(out, "<title>{}</title>", escape(title));
    let _ = writeln!(out, "<rect width=\"100%\" height=\"100%\" fill=\"{}\"/>", hex(page.background));
    for (index, frame) in frames.iter().enumerate() {
        let (_, top) = cell_origin(frames, index, 0, 0);
        let _ = writeln!(
            out,
            "<text x=\"2\" y=\"{}\" fill=\"{}\" font-style=\"italic\" opacity=\"0.75\">{}</text>",
            top - 7,
            hex(page.foreground),
            escape(&frame.caption)
        );
        for row in 0..frame.buffer.area.height {
            write_row(&mut out, frames, index, row, page);
        }
    }
    out.push_str("</svg>\n");
    out
}

/// How one cell looks: its colours (the page's where the terminal's default) and what changes its text.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Look {
    foreground: (u8, u8, u8),
    background: (u8, u8, u8),
    bold: bool,
    italic: bool,
    underlined: bool,
    crossed: bool,
    dim: bool,
}

fn look(cell: &ratatui::buffer::Cell, page: Page) -> Look {
    let m = cell.modifier;
    let mut foreground = rgb(cell.fg).unwrap_or(page.foreground);
    let mut background = rgb(cell.bg).unwrap_or(page.background);
    if m.contains(Modifier::REVERSED) {
        std::mem::swap(&mut foreground, &mut background);
    }
    if m.contains(Modifier::HIDDEN) {
        foreground = background;
    }
    Look {
        foreground,
        background,
        bold: m.contains(Modifier::BOLD),
        italic: m.contains(Modifier::ITALIC),
        underlined: m.contains(Modifier::UNDERLINED),
        crossed: m.contains(Modifier::CROSSED_OUT),
        dim: m.contains(Modifier::DIM),
    }
}

/// One row of a frame: runs of cells that look alike, their backgrounds as rectangles, their text stretched to
/// exactly their cells' width. A wide symbol (two cells) hides the cell after it, as on a terminal.
fn write_row(out: &mut String, frames: &[Frame], index: usize, row: u16, page: Page) {
    let buffer = &frames[index].buffer;
    let mut runs: Vec<(u16, u16, Look, String)> = Vec::new();
    let mut hidden = 0usize;
    for column in 0..buffer.area.width {
        let cell = &buffer[(column, row)];
        let symbol = if hidden > 0 {
            hidden -= 1;
            ""
        } else {
            hidden = cell.symbol().width().saturating_sub(1);
            cell.symbol()
        };
        let cell_look = look(cell, page);
        match runs.last_mut() {
            Some((_, cells, run_look, text)) if *run_look == cell_look => {
                *cells += 1;
                text.push_str(symbol);
            }
            _ => runs.push((column, 1, cell_look, symbol.to_owned())),
        }
    }
    for (column, cells, run_look, text) in runs {
        let (x, y) = cell_origin(frames, index, column, row);
        let width = cells as u32 * CELL_WIDTH;
        if run_look.background != page.background {
            let _ = writeln!(
                out,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{width}\" height=\"{CELL_HEIGHT}\" fill=\"{}\"/>",
                hex(run_look.background)
            );
        }
        let shown = text.trim_end();
        if shown.trim().is_empty() {
            continue;
        }
        // The text keeps its leading spaces; its width is the cells it covers up to its last visible symbol.
        let length = shown.width() as u32 * CELL_WIDTH;
        let mut attributes = format!("fill=\"{}\"", hex(run_look.foreground));
        if run_look.bold {
            attributes.push_str(" font-weight=\"bold\"");
        }
        if run_look.italic {
            attributes.push_str(" font-style=\"italic\"");
        }
        if run_look.dim {
            attributes.push_str(" opacity=\"0.6\"");
        }
        match (run_look.underlined, run_look.crossed) {
            (true, true) => attributes.push_str(" text-decoration=\"underline line-through\""),
            (true, false) => attributes.push_str(" text-decoration=\"underline\""),
            (false, true) => attributes.push_str(" text-decoration=\"line-through\""),
            (false, false) => {}
        }
        let baseline = y + CELL_HEIGHT - 5;
        let _ = writeln!(
            out,
            "<text x=\"{x}\" y=\"{baseline}\" textLength=\"{length}\" lengthAdjust=\"spacingAndGlyphs\" \
             xml:space=\"preserve\" {attributes}>{}</text>",
            escape(shown)
        );
    }
}

/// A colour as the picture paints it; `None` for the terminal's default.
fn rgb(color: Color) -> Option<(u8, u8, u8)> {
    Some(match color {
        Color::Reset => return None,
        Color::Rgb(r, g, b) => (r, g, b),
        Color::Black => XTERM16[0],
        Color::Red => XTERM16[1],
        Color::Green => XTERM16[2],
        Color::Yellow => XTERM16[3],
        Color::Blue => XTERM16[4],
        Color::Magenta => XTERM16[5],
        Color::Cyan => XTERM16[6],
        Color::Gray => XTERM16[7],
        Color::DarkGray => XTERM16[8],
        Color::LightRed => XTERM16[9],
        Color::LightGreen => XTERM16[10],
        Color::LightYellow => XTERM16[11],
        Color::LightBlue => XTERM16[12],
        Color::LightMagenta => XTERM16[13],
        Color::LightCyan => XTERM16[14],
        Color::White => XTERM16[15],
        Color::Indexed(i) => indexed(i),
    })
}

/// xterm's 16 colours.
const XTERM16: [(u8, u8, u8); 16] = [
    (0x00, 0x00, 0x00),
    (0xcd, 0x00, 0x00),
    (0x00, 0xcd, 0x00),
    (0xcd, 0xcd, 0x00),
    (0x00, 0x00, 0xee),
    (0xcd, 0x00, 0xcd),
    (0x00, 0xcd, 0xcd),
    (0xe5, 0xe5, 0xe5),
    (0x7f, 0x7f, 0x7f),
    (0xff, 0x00, 0x00),
    (0x00, 0xff, 0x00),
    (0xff, 0xff, 0x00),
    (0x5c, 0x5c, 0xff),
    (0xff, 0x00, 0xff),
    (0x00, 0xff, 0xff),
    (0xff, 0xff, 0xff),
];

/// xterm's 256-colour palette: the 16 colours, a 6×6×6 cube, then 24 greys.
fn indexed(i: u8) -> (u8, u8, u8) {
    match i {
        0..=15 => XTERM16[i as usize],
        16..=231 => {
            let level = |v: u8| if v == 0 { 0 } else { 55 + 40 * v };
            let v = i - 16;
            (level(v / 36), level(v / 6 % 6), level(v % 6))
        }
        _ => {
            let grey = 8 + 10 * (i - 232);
            (grey, grey, grey)
        }
    }
}

fn hex((r, g, b): (u8, u8, u8)) -> String {
    format!("#{r:02x}{g:02x}{b:02x}")
}

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            // Characters XML 1.0 does not allow (a control character in a run's text) are shown as U+FFFD.
            c if (c as u32) < 0x20 && c != '\t' && c != '\n' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_palette_is_xterms() {
        assert_eq!(indexed(16), (0, 0, 0));
        assert_eq!(indexed(196), (255, 0, 0));
        assert_eq!(indexed(231), (255, 255, 255));
        assert_eq!(indexed(232), (8, 8, 8));
        assert_eq!(indexed(255), (238, 238, 238));
        assert_eq!(indexed(9), XTERM16[9]);
    }

    #[test]
    fn text_is_escaped_for_xml() {
        assert_eq!(escape("a<b & \"c\">\u{1}"), "a&lt;b &amp; &quot;c&quot;&gt;\u{fffd}");
    }

    #[test]
    fn the_format_is_the_files_extension() {
        assert_eq!(PictureFormat::of_path(Path::new("a/b.SVG")), Some(PictureFormat::Svg));
        assert_eq!(PictureFormat::of_path(Path::new("b.htm")), Some(PictureFormat::Html));
        assert_eq!(PictureFormat::of_path(Path::new("b.png")), None);
    }
}
