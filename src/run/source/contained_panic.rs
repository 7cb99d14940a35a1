//! A decoder of outside input that panics on damaged data, contained: [`contain`] runs it and turns a panic
//! into an error carrying the panic's message, which the caller reports with the file it was reading.
//!
//! parquet's readers assert on damaged pages in places no check before them can reach (a plain-encoded text
//! value whose length runs past its page, a level run past its buffer, ...): the checks in `trl.rs` refuse the
//! damage found so far, and this closes the rest of the class, so a damaged TRL file is one file reported, not
//! a crashed viewer.
//!
//! Contract:
//! - a panic inside `contain` on this thread is caught and returned as `Err(message)`; nothing else about the
//!   closure changes (no panic, no cost: the value is returned as it is);
//! - such a panic is not printed and does not run the process's other panic hooks (the TUI's hooks restore the
//!   terminal, libFuzzer's aborts): the first `contain` puts a quiet wrapper around the hook then in place, and
//!   a program that installs hooks of its own afterwards calls [`keep_contained_panics_quiet`] once they are in
//!   (the TUI does, after taking the terminal);
//! - panics anywhere else, on this thread outside `contain` or on other threads, reach the hooks as before; so
//!   a caller contains the decoder's calls alone, not its own code around them (a panic there is a bug).

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// Whether this thread is inside [`contain`] (a panic now is contained and must stay quiet).
    static CONTAINING: Cell<bool> = const { Cell::new(false) };
}

/// Run `decode`; a panic inside it comes back as `Err` with its message.
pub fn contain<T>(decode: impl FnOnce() -> T) -> Result<T, String> {
    static QUIET_HOOK: Once = Once::new();
    QUIET_HOOK.call_once(keep_contained_panics_quiet);
    let outer = CONTAINING.replace(true);
    // What `decode` touched is left as the panic found it: callers give it the decoder alone (dropped on an
    // error), never their own records.
    let outcome = catch_unwind(AssertUnwindSafe(decode));
    CONTAINING.set(outer);
    outcome.map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string())
    })
}

/// Wrap the panic hook now in place so that it stays silent for panics inside [`contain`]. Call it after
/// installing a hook of one's own; calling it again only adds another wrapper.
pub fn keep_contained_panics_quiet() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !CONTAINING.get() {
            previous(info);
        }
    }));
}
