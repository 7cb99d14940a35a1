//! The terminal side: set up and always restore the terminal, read keys/mouse/resize on a thread, receive
//! the run watcher's events (`crate::live`) on the same channel, tick once a second for the status bar, feed
//! everything to `update`, and draw only when it says something changed.

use std::io::stdout;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, KeyCode, KeyEventKind, KeyModifiers, MouseButton,
    MouseEventKind,
};
use crossterm::execute;
use ratatui::DefaultTerminal;

use super::action::Action;
use super::config::{Config, ConfigError};
use super::state::State;
use crate::live::{self, LiveError, LiveEvent, Tails, WatchOptions, Watcher};
use crate::run::RunError;
use super::theme::color_enabled;
use super::update::{update, Effects, InputKey, Msg};
use crate::advantage::AdvantageSettings;
use crate::index::{IndexError, SearchResults, TrajectoryIndex};

#[derive(Debug, Clone)]
pub struct Options {
    pub run: PathBuf,
    /// Config file (keymap, theme); `None` reads the default location if it exists.
    pub config: Option<PathBuf>,
    /// Start in follow mode.
    pub follow: bool,
    /// How the run directory is watched (debounce of change events, periodic re-scan).
    pub watch: WatchOptions,
}

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Run(#[from] RunError),
    #[error(transparent)]
    Live(#[from] LiveError),
    #[error("terminal: {0}")]
    Terminal(#[from] std::io::Error),
}

/// Raw mode, alternate screen and mouse capture for as long as it lives; dropping it (also on an early
/// return) restores the terminal. A panic hook restores it too, before the panic message is printed.
struct TerminalGuard {
    terminal: DefaultTerminal,
}

impl TerminalGuard {
    fn new() -> Result<TerminalGuard, std::io::Error> {
        // ratatui's hook (installed by `try_init`) leaves raw mode and the alternate screen and then calls
        // this one, which releases the mouse before the default hook prints the panic.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = execute!(stdout(), DisableMouseCapture);
            previous(info);
        }));
        let terminal = ratatui::try_init()?;
        execute!(stdout(), EnableMouseCapture)?;
        Ok(TerminalGuard { terminal })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let _ = execute!(stdout(), DisableMouseCapture);
        ratatui::restore();
    }
}

/// Translate a terminal event; `None` for events the TUI ignores (key releases, mouse moves).
fn translate(state: &State, ev: Event) -> Option<Msg> {
    match ev {
        Event::Key(k) if k.kind != KeyEventKind::Release => {
            // Ctrl-C always quits, whatever the keymap says, so the terminal can always be recovered.
            if k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL) {
                return Some(Msg::Action(Action::Quit));
            }
            if state.input.is_some() {
                // The search prompt takes keys as text.
                return match k.code {
                    KeyCode::Char(c) => Some(Msg::Input(InputKey::Char(c))),
                    KeyCode::Backspace => Some(Msg::Input(InputKey::Backspace)),
                    KeyCode::Enter => Some(Msg::Input(InputKey::Submit)),
                    KeyCode::Esc => Some(Msg::Input(InputKey::Cancel)),
                    _ => None,
                };
            }
            state.config.keymap.action(&k).map(Msg::Action)
        }
        Event::Mouse(m) => match m.kind {
            MouseEventKind::ScrollDown => Some(Msg::Wheel { col: m.column, row: m.row, down: true }),
            MouseEventKind::ScrollUp => Some(Msg::Wheel { col: m.column, row: m.row, down: false }),
            MouseEventKind::Down(MouseButton::Left) => Some(Msg::Click { col: m.column, row: m.row }),
            _ => None,
        },
        Event::Resize(w, h) => Some(Msg::Resize(w, h)),
        _ => None,
    }
}

/// Results listed per search; `total` still counts every match.
const SEARCH_LIMIT: usize = 1000;

/// The run's search index, opened on first use and reopened when the settings change (the advantage
/// fields it indexes depend on them). Brought up to date with the episodes before every search.
#[derive(Default)]
struct Searcher {
    index: Option<(AdvantageSettings, TrajectoryIndex)>,
}

impl Searcher {
    fn search(&mut self, state: &State, query: &str) -> Result<SearchResults, IndexError> {
        if self.index.as_ref().is_none_or(|(s, _)| *s != state.settings) {
            self.index = None;
            self.index = Some((state.settings, TrajectoryIndex::open_default(&state.run.dir, &state.settings)?));
        }
        let (_, index) = self.index.as_mut().expect("opened above");
        index.update(&state.run.episodes, &state.derived.table)?;
        index.search(query, SEARCH_LIMIT)
    }
}

fn draw(terminal: &mut DefaultTerminal, state: &State) -> Result<(), std::io::Error> {
    terminal.draw(|f| f.render_widget(state, f.area())).map(|_| ())
}

/// Carry out an update's effects; `true` when the app should quit.
fn apply(
    terminal: &mut DefaultTerminal,
    searcher: &mut Searcher,
    state: &mut State,
    fx: Effects,
    redraw: &mut bool,
) -> Result<bool, std::io::Error> {
    *redraw |= fx.redraw;
    if let Some(query) = fx.search {
        // Show "searching…" while the index catches up with the run.
        draw(terminal, state)?;
        let result = searcher.search(state, &query).map_err(|e| e.to_string());
        *redraw |= update(state, Msg::SearchDone { query, result }).redraw;
    }
    Ok(fx.quit)
}

/// Open a run directory and read all of it into a fresh state, for a terminal of `size`. The readers'
/// positions are returned for [`Watcher::spawn`], which continues from exactly there.
pub fn open(dir: &Path, config: Config, size: (u16, u16)) -> Result<(State, Tails), AppError> {
    let (run, tails) = live::open(dir)?;
    Ok((State::new(run, config, size), tails))
}

/// Everything the main loop waits for, on one channel.
enum Incoming {
    Terminal(Event),
    Live(LiveEvent),
}

/// The "updated N s ago" clock.
const TICK: Duration = Duration::from_secs(1);

pub fn run(opts: Options) -> Result<(), AppError> {
    let color = color_enabled(std::env::var("NO_COLOR").ok().as_deref());
    let config = Config::load(opts.config.as_deref(), color)?;
    // Open and read before touching the terminal, so errors print normally.
    let (mut state, tails) = open(&opts.run, config, (80, 24))?;
    let (tx, rx) = mpsc::channel::<Incoming>();
    let (_watcher, live_rx) = Watcher::spawn(&opts.run, tails, opts.watch)?;
    let live_tx = tx.clone();
    std::thread::spawn(move || {
        // Ends when the watcher stops (its sender is dropped) or the main loop has gone.
        while let Ok(ev) = live_rx.recv() {
            if live_tx.send(Incoming::Live(ev)).is_err() {
                break;
            }
        }
    });

    let mut guard = TerminalGuard::new()?;
    let size = guard.terminal.size()?;
    update(&mut state, Msg::Resize(size.width, size.height));
    if opts.follow {
        update(&mut state, Msg::Action(Action::Follow));
    }
    std::thread::spawn(move || {
        // Ends when the terminal read fails or the main loop has gone (send fails).
        while let Ok(ev) = event::read() {
            if tx.send(Incoming::Terminal(ev)).is_err() {
                break;
            }
        }
    });

    draw(&mut guard.terminal, &state)?;
    let mut next_tick = Instant::now() + TICK;
    let mut searcher = Searcher::default();
    loop {
        let wait = next_tick.saturating_duration_since(Instant::now());
        let mut redraw = false;
        match rx.recv_timeout(wait) {
            Ok(first) => {
                // Handle everything queued (key repeat, wheel bursts, a batch of live events), then draw once.
                let mut live_events = Vec::new();
                for incoming in std::iter::once(first).chain(rx.try_iter()) {
                    match incoming {
                        Incoming::Live(ev) => live_events.push(ev),
                        Incoming::Terminal(ev) => {
                            if let Some(msg) = translate(&state, ev) {
                                let fx = update(&mut state, msg);
                                if apply(&mut guard.terminal, &mut searcher, &mut state, fx, &mut redraw)? {
                                    return Ok(());
                                }
                            }
                        }
                    }
                }
                if !live_events.is_empty() {
                    redraw |= update(&mut state, Msg::Live(live_events, Instant::now())).redraw;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
        }
        let now = Instant::now();
        if now >= next_tick {
            next_tick = now + TICK;
            redraw |= update(&mut state, Msg::Tick(now)).redraw;
        }
        if redraw {
            draw(&mut guard.terminal, &state)?;
        }
    }
}
