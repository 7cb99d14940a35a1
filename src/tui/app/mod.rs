//! The app: a run opened ([`loading`]) and shown in a terminal held by a guard ([`terminal`]), every event
//! (keys, mouse, resizes, the run watcher's news, jobs' news, the ending signals) fed to `update` on one main
//! loop, and what `update` asks for carried out by the effect runner ([`effects`]); a frame is drawn only when
//! something changed. Keys come first: a turn that handled one draws it before merging the next part of the run.

mod effects;
mod error;
mod loading;
mod ray_burst;
mod terminal;

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crossterm::event::Event;

pub use effects::{task_source, write_episodes};
pub use error::AppError;
pub use loading::{open, open_as, start, Loading, Opening, Reading};

use self::effects::Effector;
use self::terminal::{draw, translate, TerminalGuard};
use super::action::Action;
use super::config::Config;
use super::msg::{Effects, Msg};
use super::runner::{JobNews, Runner};
use super::state::State;
use super::theme::color_enabled;
use super::update::{read_shown_text, update};
use crate::live::WatchOptions;
use crate::run::{Layout, SourceOptions};

#[derive(Debug, Clone)]
pub struct Options {
    pub run: PathBuf,
    /// Config file (keymap, theme); `None` reads the default location if it exists.
    pub config: Option<PathBuf>,
    /// Start in follow mode.
    pub follow: bool,
    /// How the run directory is watched (debounce of change events, periodic re-scan).
    pub watch: WatchOptions,
    /// WebShop catalog directory for live play and training bursts (`None`: the embedded demo catalog).
    pub catalog: Option<PathBuf>,
    /// Read the run as this layout instead of detecting it.
    pub from: Option<Layout>,
    pub source: SourceOptions,
    /// A built-in theme (`dark`, `light`, `high-contrast`) instead of the config's.
    pub theme: Option<String>,
    /// Workshop mode: high-contrast theme, wider spacing, a status line naming the view and what the
    /// highlighted number means.
    pub present: bool,
    /// Advantage settings over the run's recorded ones (`gigscope RUN --scale-rewards batch ...`).
    pub settings: crate::advantage::AdvantageOverrides,
}

/// Everything the main loop waits for, on one channel.
enum Incoming {
    Terminal(Event),
    Reading(Reading),
    Job(JobNews),
    /// One of the signals that end a terminal program arrived (see [`terminal::watch_signals`]).
    Signal,
}

/// A sender of one kind of [`Incoming`], for a thread: `false` once the main loop has gone.
fn sender<T: 'static>(
    tx: &mpsc::Sender<Incoming>,
    kind: fn(T) -> Incoming,
) -> impl Fn(T) -> bool + Send + Sync + 'static {
    let tx = tx.clone();
    move |item| tx.send(kind(item)).is_ok()
}

/// The "updated N s ago" clock.
const TICK: Duration = Duration::from_secs(1);

pub fn run(opts: Options) -> Result<(), AppError> {
    let color = color_enabled(std::env::var("NO_COLOR").ok().as_deref());
    let config = Config::load(opts.config.as_deref(), color)?.with_display(opts.theme.as_deref(), opts.present)?;
    // Errors that stop the run from being read at all print before the terminal is touched; the run itself
    // is read by the watcher's first scan, part by part, while the first frame is already on screen.
    let cache = crate::run::cache::default_root(crate::index::default_cache_dir());
    let (mut state, opening) = start(&opts.run, opts.from, &opts.source, config, cache)?;
    state.domain.open_with(opts.settings.clone())?;
    let (tx, rx) = mpsc::channel::<Incoming>();
    opening.spawn(opts.watch, sender(&tx, Incoming::Reading));
    // Before the terminal is taken: a signal from now on is answered by giving it back.
    let signal_tx = tx.clone();
    terminal::watch_signals(move || signal_tx.send(Incoming::Signal).is_ok())?;
    let send_job = sender(&tx, Incoming::Job);
    let runner = Runner::new(move |job| {
        send_job(job);
    });
    let mut app = App::new(state, Effector::new(opts.catalog.clone(), runner), opts.follow)?;
    terminal::read_events(sender(&tx, Incoming::Terminal));
    drop(tx);
    let mut next_tick = Instant::now() + TICK;
    loop {
        let wait = match app.loading.pending(&app.state) {
            true => Duration::ZERO,
            // A group held back while its writer may be adding to it is merged at its time.
            false => next_tick
                .min(app.loading.wake_at(&app.state).unwrap_or(next_tick))
                .saturating_duration_since(Instant::now()),
        };
        match rx.recv_timeout(wait) {
            // Everything queued (key repeat, wheel bursts, jobs' news) is handled before the next frame.
            Ok(first) => {
                let mut keyed = false;
                for incoming in std::iter::once(first).chain(rx.try_iter()) {
                    keyed |= matches!(incoming, Incoming::Terminal(_));
                    if app.take(incoming)?.is_break() {
                        return Ok(());
                    }
                }
                // Keys come first: what they changed is drawn before more of the run is merged, so that a key
                // waits for at most the part being merged when it came, not for one more.
                if keyed {
                    app.draw_if_changed()?;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
        }
        // One part of what the watcher read is merged per turn, so keys are answered between parts.
        app.redraw |= app.loading.merge_next(&mut app.state).0;
        let mut fx = app.loading.take_effects();
        if Instant::now() >= next_tick {
            next_tick = Instant::now() + TICK;
            fx.extend(update(&mut app.state, Msg::Tick(Instant::now())));
        }
        if app.apply(fx)?.is_break() {
            return Ok(());
        }
        app.draw_if_changed()?;
    }
}

/// What the main loop works on: the state, the effect runner, the run being read, and the terminal.
struct App {
    state: State,
    effector: Effector,
    /// What was read but not merged yet.
    loading: Loading,
    guard: TerminalGuard,
    /// Something changed since the last frame.
    redraw: bool,
}

impl App {
    /// Take the terminal and draw the first frame.
    fn new(mut state: State, effector: Effector, follow: bool) -> Result<App, AppError> {
        let mut guard = TerminalGuard::new()?;
        let size = guard.terminal.size()?;
        update(&mut state, Msg::Resize(size.width, size.height));
        if follow {
            update(&mut state, Msg::Action(Action::Follow));
        }
        draw(&mut guard.terminal, &state)?;
        Ok(App { state, effector, loading: Loading::default(), guard, redraw: false })
    }

    /// One event through `update` and the effect runner; `Break` when the app is to quit.
    fn take(&mut self, incoming: Incoming) -> Result<ControlFlow<()>, AppError> {
        let messages: Vec<Msg> = match incoming {
            Incoming::Reading(reading) => {
                self.redraw |= self.loading.receive(&mut self.state, reading)?;
                return Ok(ControlFlow::Continue(()));
            }
            Incoming::Job(job) => {
                let answer = self.effector.news(&self.state, job);
                answer.into_iter().chain([Msg::Jobs(self.effector.jobs())]).collect()
            }
            Incoming::Terminal(ev) => translate(&self.state, ev).into_iter().collect(),
            // As `q`: whatever the keymap says.
            Incoming::Signal => vec![Msg::Action(Action::Quit)],
        };
        for msg in messages {
            let fx = update(&mut self.state, msg);
            if self.apply(fx)?.is_break() {
                return Ok(ControlFlow::Break(()));
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// An update's effects through the effect runner; `Break` when the app is to quit.
    fn apply(&mut self, fx: Effects) -> Result<ControlFlow<()>, AppError> {
        let quit = self.effector.apply(&mut self.guard.terminal, &mut self.state, fx, &mut self.redraw)?;
        Ok(if quit { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
    }

    fn draw_if_changed(&mut self) -> Result<(), AppError> {
        if std::mem::take(&mut self.redraw) {
            read_shown_text(&mut self.state);
            draw(&mut self.guard.terminal, &self.state)?;
        }
        Ok(())
    }
}
