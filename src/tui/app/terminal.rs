//! The terminal: raw mode, the alternate screen and mouse capture held by a guard that always gives them back
//! (on return, on a panic, and on the signals that end a terminal program: [`watch_signals`]), its events read
//! on a thread and translated into messages, and the state drawn.

use std::io::stdout;

use crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, KeyCode, KeyEventKind, KeyModifiers, MouseButton,
    MouseEventKind,
};
use crossterm::execute;
use ratatui::DefaultTerminal;
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::Signals;

use crate::tui::action::Action;
use crate::tui::msg::{InputKey, Msg};
use crate::tui::state::State;

/// Raw mode, alternate screen and mouse capture for as long as it lives; dropping it (also on an early
/// return) restores the terminal. A panic hook restores it too, before the panic message is printed.
pub struct TerminalGuard {
    pub terminal: DefaultTerminal,
}

impl TerminalGuard {
    pub fn new() -> Result<TerminalGuard, std::io::Error> {
        // ratatui's hook (installed by `try_init`) leaves raw mode and the alternate screen and then calls
        // this one, which releases the mouse before the default hook prints the panic.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = execute!(stdout(), DisableMouseCapture);
            previous(info);
        }));
        let terminal = ratatui::try_init()?;
        // A damaged TRL file's parquet panic is contained by its reader and must not reach the hooks above
        // (which would give the terminal back while the viewer goes on).
        crate::run::source::keep_contained_panics_quiet();
        execute!(stdout(), EnableMouseCapture)?;
        Ok(TerminalGuard { terminal })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Mouse capture off, raw mode and the alternate screen left; harmless when they were not on, and errors are
/// of no use here (a terminal that went away cannot be restored).
fn restore() {
    let _ = execute!(stdout(), DisableMouseCapture);
    ratatui::restore();
}

/// The signals that end a terminal program: `kill`'s default (TERM), Ctrl-C and Ctrl-\ sent from outside the
/// raw terminal (INT, QUIT), and the terminal going away (HUP: a closed SSH session).
const ENDING_SIGNALS: [i32; 4] = [SIGTERM, SIGINT, SIGHUP, SIGQUIT];

/// From now on the ending signals no longer kill the process outright: the first calls `send`, and the main
/// loop quits as `q` does (a burst stops at the end of its iteration, then the guard gives the terminal
/// back); a second one while the app still winds down gives the terminal back and exits at once, with the
/// shell's status for a signal (128 + its number).
pub fn watch_signals(send: impl FnOnce() -> bool + Send + 'static) -> Result<(), std::io::Error> {
    let mut signals = Signals::new(ENDING_SIGNALS)?;
    std::thread::Builder::new().name("gigscope-signals".into()).spawn(move || {
        let mut received = signals.forever();
        if received.next().is_some() && send() {
            if let Some(second) = received.next() {
                restore();
                std::process::exit(128 + second);
            }
        }
    })?;
    Ok(())
}

/// Read the terminal's events on a thread of their own, handing each to `send`; ends when the terminal read
/// fails or `send` says the main loop has gone.
pub fn read_events(send: impl Fn(Event) -> bool + Send + 'static) {
    std::thread::spawn(move || {
        while let Ok(ev) = event::read() {
            if !send(ev) {
                break;
            }
        }
    });
}

/// Translate a terminal event; `None` for events the TUI ignores (key releases, mouse moves).
pub fn translate(state: &State, ev: Event) -> Option<Msg> {
    match ev {
        Event::Key(k) if k.kind != KeyEventKind::Release => {
            // Ctrl-C always quits, whatever the keymap says, so the terminal can always be recovered.
            if k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL) {
                return Some(Msg::Action(Action::Quit));
            }
            if state.ui.input.is_some() {
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

pub fn draw(terminal: &mut DefaultTerminal, state: &State) -> Result<(), std::io::Error> {
    terminal.draw(|f| f.render_widget(state, f.area())).map(|_| ())
}
