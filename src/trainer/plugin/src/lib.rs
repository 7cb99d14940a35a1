//! gigscope's training plugin: `gigscope::trainer` (tch/libtorch) behind the C ABI that
//! `gigscope::plugin_host::loader` documents and calls. gigscope loads this library the first time training is
//! asked for, so only then is libtorch loaded.
//!
//! Nothing may unwind out of these functions: panics are caught and returned as errors, with the panic message
//! (recorded by this library's own panic hook, which prints nothing: the host may be drawing a TUI).

use std::cell::RefCell;
use std::ffi::{c_char, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::AtomicBool;
use std::sync::Once;

use gigscope::plugin_host::loader::{EmitFn, EMIT_ERROR, EMIT_EVENT, EMIT_RESULT};
use gigscope::plugin_host::HANDSHAKE;

/// The protocol, gigscope version and build this plugin speaks, NUL-terminated.
#[no_mangle]
pub extern "C" fn gigscope_train_handshake() -> *const c_char {
    HANDSHAKE.as_ptr().cast()
}

/// Run one request (JSON) on the calling thread; see `gigscope::plugin_host::loader`.
///
/// # Safety
/// `request` points to `len` readable bytes, `emit` may be called with `ctx` on this thread until the call
/// returns, and `cancel` points to an atomic bool that outlives the call.
#[no_mangle]
pub unsafe extern "C" fn gigscope_train_call(
    request: *const u8,
    len: usize,
    emit: EmitFn,
    ctx: *mut c_void,
    cancel: *const AtomicBool,
) -> i32 {
    let send = |kind: u32, bytes: &[u8]| unsafe { emit(ctx, kind, bytes.as_ptr(), bytes.len()) };
    quiet_panics();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let request = if len == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(request, len) } };
        let stop = unsafe { &*cancel };
        gigscope::trainer::service::serve(request, stop, &mut |json| send(EMIT_EVENT, json))
    }));
    match outcome {
        Ok(Ok(result)) => {
            send(EMIT_RESULT, &result);
            0
        }
        Ok(Err(error)) => {
            send(EMIT_ERROR, error.as_bytes());
            1
        }
        Err(payload) => {
            // The hook's record has the location; a panic re-raised from another thread (rayon) has only its
            // payload.
            let message = LAST_PANIC
                .with(|p| p.borrow_mut().take())
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            send(EMIT_ERROR, format!("the trainer panicked: {message}").as_bytes());
            1
        }
    }
}

thread_local! {
    static LAST_PANIC: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Panics in this library are recorded for the error message instead of printed.
fn quiet_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        std::panic::set_hook(Box::new(|info| {
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            let at = info.location().map_or(String::new(), |l| format!(" at {}:{}", l.file(), l.line()));
            LAST_PANIC.with(|p| *p.borrow_mut() = Some(format!("{message}{at}")));
        }));
    });
}
