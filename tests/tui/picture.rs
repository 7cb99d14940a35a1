//! `gigscope render`: the picture shows what the TUI draws for the same selection, cell for cell, and a real
//! headless Chromium (Debian's `chromium`, installed by `.ci/run`) paints it so: ink exactly where the TUI has
//! a symbol, the advantage colours on the numbers the TUI colours, the selection bar on the selected row.

use std::path::{Path, PathBuf};
use std::process::Command;

use gigscope::tui::picture::{cell_origin, episode_frames, overview_frames, picture_size, Frame};
use gigscope::tui::{open, update, Action, Config, Msg, State};
use ratatui::backend::TestBackend;
use ratatui::style::Color;
use ratatui::Terminal;

const RUN: &str = "tests/fixtures/tui/basic";
const SIZE: (u16, u16) = (120, 40);

fn state() -> State {
    open(Path::new(RUN), Config::defaults(true).unwrap(), SIZE).unwrap().0
}

/// What the TUI's terminal shows for `state`, one string per row.
fn terminal_rows(state: &State) -> Vec<String> {
    let mut terminal = Terminal::new(TestBackend::new(SIZE.0, SIZE.1)).unwrap();
    terminal.draw(|f| f.render_widget(state, f.area())).unwrap();
    let buffer = terminal.backend().buffer();
    (0..SIZE.1).map(|y| (0..SIZE.0).map(|x| buffer[(x, y)].symbol()).collect::<String>()).collect()
}

fn render(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_gigscope")).arg("render").arg(RUN).args(args).output().unwrap()
}

/// The text of each row of the frame that starts at `top` pixels in an SVG written by `gigscope render`: each
/// `<text>` placed at its column (x / cell width), padded as the terminal pads.
fn svg_rows(svg: &str, top: u32) -> Vec<String> {
    let text = regex::Regex::new(r#"<text x="(\d+)" y="(\d+)" textLength[^>]*>([^<]*)</text>"#).unwrap();
    let mut rows = vec![vec![' '; SIZE.0 as usize]; SIZE.1 as usize];
    for c in text.captures_iter(svg) {
        let (x, baseline): (u32, u32) = (c[1].parse().unwrap(), c[2].parse().unwrap());
        let Some(row) = (baseline + 5).checked_sub(top + 24 + 18).map(|y| y / 18) else { continue };
        let Some(cells) = rows.get_mut(row as usize) else { continue };
        let unescaped = c[3].replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", "\"").replace("&amp;", "&");
        for (i, ch) in unescaped.chars().enumerate() {
            cells[(x / 9) as usize + i] = ch;
        }
    }
    rows.into_iter().map(|r| r.into_iter().collect()).collect()
}

#[test]
fn an_episode_picture_is_the_episode_view_and_its_anchor_group_as_the_tui_draws_them() {
    let mut tui = state();
    update(&mut tui, Msg::Action(Action::Open));
    update(&mut tui, Msg::Action(Action::Open));
    update(&mut tui, Msg::Action(Action::Down));
    let episode = tui.episode_index().unwrap();
    let id = tui.domain.episodes.at(episode).id.to_string();
    let episode_view = terminal_rows(&tui);
    update(&mut tui, Msg::Action(Action::Anchor));
    let anchor_view = terminal_rows(&tui);

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("episode.svg");
    let done = render(&["--episode", &id, "--step", "1", "--out", out.to_str().unwrap()]);
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let svg = std::fs::read_to_string(&out).unwrap();
    let trimmed = |rows: Vec<String>| rows.into_iter().map(|r| r.trim_end().to_string()).collect::<Vec<_>>();
    assert_eq!(trimmed(svg_rows(&svg, 0)), trimmed(episode_view), "the episode view, step 1 selected");
    let second = 24 + SIZE.1 as u32 * 18;
    assert_eq!(trimmed(svg_rows(&svg, second)), trimmed(anchor_view), "then the step's anchor-state group");
}

#[test]
fn bad_requests_are_refused_with_what_was_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("x.png");
    let done = render(&["--overview", "--out", png.to_str().unwrap()]);
    assert!(!done.status.success());
    assert!(String::from_utf8_lossy(&done.stderr).contains(".svg or .html"));
    let svg = dir.path().join("x.svg");
    let done = render(&["--episode", "no-such-episode", "--out", svg.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&done.stderr).contains("no episode \"no-such-episode\""));
    assert!(!svg.exists(), "nothing is written for a refused request");
    let done = render(&["--overview", "--size", "60x20", "--out", svg.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&done.stderr).contains("80x24"), "{}", String::from_utf8_lossy(&done.stderr));
}

/// The screenshot headless Chromium takes of `page` at the picture's size.
fn screenshot(page: &Path, (width, height): (u32, u32), dir: &Path) -> png::Decoder<std::io::BufReader<std::fs::File>> {
    let shot = dir.join("shot.png");
    let profile = dir.join("chromium-profile");
    let done = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium is installed (.ci/run installs Debian's chromium)");
    assert!(shot.exists(), "chromium took no screenshot: {}", String::from_utf8_lossy(&done.stderr));
    png::Decoder::new(std::io::BufReader::new(std::fs::File::open(shot).unwrap()))
}

/// A decoded RGB(A) screenshot.
struct Pixels {
    width: u32,
    channels: usize,
    data: Vec<u8>,
}

impl Pixels {
    fn at(&self, x: u32, y: u32) -> (u8, u8, u8) {
        let i = (y * self.width + x) as usize * self.channels;
        (self.data[i], self.data[i + 1], self.data[i + 2])
    }

    /// The pixels of cell (`column`, `row`) of frame `index`, less a one-pixel margin (anti-aliasing of the
    /// neighbours' glyphs may reach the border).
    fn cell(&self, frames: &[Frame], index: usize, column: u16, row: u16) -> Vec<(u8, u8, u8)> {
        let (x0, y0) = cell_origin(frames, index, column, row);
        (y0 + 1..y0 + 17).flat_map(|y| (x0 + 1..x0 + 8).map(move |x| (x, y))).map(|(x, y)| self.at(x, y)).collect()
    }
}

fn decode(decoder: png::Decoder<std::io::BufReader<std::fs::File>>) -> Pixels {
    let mut reader = decoder.read_info().unwrap();
    let mut data = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut data).unwrap();
    let channels = match info.color_type {
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        other => panic!("unexpected screenshot colour type {other:?}"),
    };
    Pixels { width: info.width, channels, data }
}

fn near(a: (u8, u8, u8), b: (u8, u8, u8), within: i32) -> bool {
    let d = |x: u8, y: u8| (x as i32 - y as i32).abs();
    d(a.0, b.0) <= within && d(a.1, b.1) <= within && d(a.2, b.2) <= within
}

#[test]
fn headless_chromium_paints_the_picture_where_the_tui_draws_it() {
    let dir = tempfile::tempdir().unwrap();
    let page: PathBuf = dir.path().join("overview.html");
    let mut tui = state();
    let id = tui.domain.episodes.at(0).id.to_string();
    let frames = episode_frames(&mut tui, 0, 0);
    let done = render(&["--episode", &id, "--out", page.to_str().unwrap()]);
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let (width, height) = picture_size(&frames);
    let pixels = decode(screenshot(&page, (width, height), dir.path()));

    let background = (0x10, 0x12, 0x16);
    let green = (0x00, 0xcd, 0x00);
    let red = (0xcd, 0x00, 0x00);
    let selected = (0x30, 0x38, 0x48);
    let (mut agree, mut cells, mut green_cells, mut red_cells, mut selected_cells) = (0, 0, 0, 0, 0);
    for (index, frame) in frames.iter().enumerate() {
        let area = frame.buffer.area;
        for row in 0..area.height {
            for column in 0..area.width {
                let cell = &frame.buffer[(column, row)];
                let painted = pixels.cell(&frames, index, column, row);
                let cell_bg = match cell.bg {
                    Color::Reset => background,
                    Color::Rgb(r, g, b) => (r, g, b),
                    _ => continue,
                };
                if cell.bg == Color::Rgb(0x30, 0x38, 0x48) {
                    selected_cells += 1;
                    assert!(painted.iter().any(|&p| near(p, selected, 2)), "selection bar at ({column}, {row})");
                }
                let ink = painted.iter().any(|&p| !near(p, cell_bg, 40));
                cells += 1;
                let has_symbol = !cell.symbol().trim().is_empty();
                if ink == has_symbol {
                    agree += 1;
                }
                let digit = cell.symbol().chars().next().is_some_and(|c| c.is_ascii_digit());
                if digit && cell.fg == Color::Green {
                    green_cells += 1;
                    assert!(painted.iter().any(|&p| near(p, green, 60)), "green digit at ({column}, {row})");
                }
                if digit && cell.fg == Color::Red {
                    red_cells += 1;
                    assert!(painted.iter().any(|&p| near(p, red, 60)), "red digit at ({column}, {row})");
                }
            }
        }
    }
    assert!(green_cells > 0 && red_cells > 0, "the fixture has positive and negative advantages");
    assert!(selected_cells > 0, "a row is selected");
    let share = agree as f64 / cells as f64;
    assert!(share > 0.98, "ink where the TUI has a symbol and none where it has none: {agree} of {cells} cells");
}

#[test]
fn the_overview_picture_holds_the_overview_and_its_charts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("overview.svg");
    let done = render(&["--overview", "--out", out.to_str().unwrap()]);
    assert!(done.status.success(), "{}", String::from_utf8_lossy(&done.stderr));
    let svg = std::fs::read_to_string(&out).unwrap();
    let mut tui = state();
    let frames = overview_frames(&mut tui);
    update(&mut tui, Msg::Action(Action::Overview));
    let rows: Vec<String> = terminal_rows(&tui).into_iter().map(|r| r.trim_end().to_string()).collect();
    assert_eq!(svg_rows(&svg, 0).into_iter().map(|r| r.trim_end().to_string()).collect::<Vec<_>>(), rows);
    assert!(rows.iter().any(|r| r.contains("success rate by iteration")), "the success chart is part of it");
    assert!(rows.iter().any(|r| r.contains("advantages by iteration")), "and the advantages' spread");
    assert_eq!(frames.len(), 1);
}
