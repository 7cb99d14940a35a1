//! Finding and loading the training plugin, on first use only, and calling it.
//!
//! The plugin is a shared library (`libgigscope_train.so`, built by `cargo build --release -p gigscope-train`)
//! that links tch and libtorch; loading it is what loads libtorch. It is looked for at `$GIGSCOPE_TRAIN_LIB`,
//! else next to the running executable, else in `../lib/` beside it. Once loaded it stays loaded for the life of
//! the process (its threads and libtorch's state must never see it unmapped); a failed load is not remembered,
//! so a plugin built while the TUI runs is found by the next burst.
//!
//! The C ABI (both sides are gigscope's own code of one build, which the handshake checks):
//! - `const char *gigscope_train_handshake(void)`: [`HANDSHAKE`] of the build the plugin came from;
//! - `int32_t gigscope_train_call(const uint8_t *request, size_t len, emit_fn emit, void *ctx,
//!   const atomic_bool *cancel)`: runs one [`super::Request`] (JSON) on the calling thread; `emit(ctx, kind,
//!   bytes, len)` receives events (`EMIT_EVENT`, JSON), the result (`EMIT_RESULT`, JSON) or the error
//!   (`EMIT_ERROR`, text); `cancel` is read between iterations. Returns 0, or 1 after an error. Panics in the
//!   plugin are caught there and come back as errors.

use std::ffi::{c_char, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;

/// What the plugin and the host must agree on: the protocol, gigscope's version and the build (a hash of the
/// sources, from `build.rs`), NUL-terminated for the C ABI. A plugin from another build is refused.
pub const HANDSHAKE: &str = concat!(
    "gigscope-train protocol 1; gigscope ",
    env!("CARGO_PKG_VERSION"),
    "; build ",
    env!("GIGSCOPE_BUILD_ID"),
    "\0"
);

/// Training cannot be loaded: what was looked for, what went wrong, how to get it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unavailable(pub String);

/// The environment variable naming the plugin file; it replaces the default places.
pub const PLUGIN_ENV: &str = "GIGSCOPE_TRAIN_LIB";
/// The plugin's file name on this platform (`libgigscope_train.so` on Linux).
#[cfg(not(target_os = "macos"))]
pub const PLUGIN_FILE: &str = "libgigscope_train.so";
#[cfg(target_os = "macos")]
pub const PLUGIN_FILE: &str = "libgigscope_train.dylib";

pub const EMIT_EVENT: u32 = 0;
pub const EMIT_RESULT: u32 = 1;
pub const EMIT_ERROR: u32 = 2;

pub const HANDSHAKE_SYMBOL: &[u8] = b"gigscope_train_handshake";
pub const CALL_SYMBOL: &[u8] = b"gigscope_train_call";

/// `emit(ctx, kind, bytes, len)`.
pub type EmitFn = unsafe extern "C" fn(*mut c_void, u32, *const u8, usize);
type HandshakeFn = unsafe extern "C" fn() -> *const c_char;
type CallFn = unsafe extern "C" fn(*const u8, usize, EmitFn, *mut c_void, *const AtomicBool) -> i32;

/// The loaded plugin.
pub struct Plugin {
    pub path: PathBuf,
    call: CallFn,
}

/// What one call sent back, in the order it came.
pub enum Reply<'a> {
    Event(&'a [u8]),
    Result(&'a [u8]),
    Error(&'a [u8]),
}

impl Plugin {
    /// Run `request` (JSON) on this thread; `on_reply` sees every event and the result or error.
    pub fn call(&self, request: &[u8], cancel: &AtomicBool, mut on_reply: impl FnMut(Reply<'_>)) {
        let mut sink: &mut dyn FnMut(Reply<'_>) = &mut on_reply;
        let ctx = (&mut sink) as *mut &mut dyn FnMut(Reply<'_>) as *mut c_void;
        // SAFETY: `call` is the plugin's `gigscope_train_call` of the same build (handshake checked); the
        // pointers stay valid for the call, which uses them only on this thread before it returns.
        unsafe { (self.call)(request.as_ptr(), request.len(), emit, ctx, cancel) };
    }
}

/// The host's `emit`: hands the bytes to the closure behind `ctx`. A panic in it must not unwind into the
/// plugin, so it is caught (and the reply lost) here.
unsafe extern "C" fn emit(ctx: *mut c_void, kind: u32, bytes: *const u8, len: usize) {
    // SAFETY: `ctx` is the `&mut dyn FnMut` that `Plugin::call` passed for the duration of the call; `bytes`
    // holds `len` bytes for the duration of this call.
    let sink = unsafe { &mut *(ctx as *mut &mut dyn FnMut(Reply<'_>)) };
    let bytes = if len == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(bytes, len) } };
    let _ = catch_unwind(AssertUnwindSafe(|| {
        sink(match kind {
            EMIT_EVENT => Reply::Event(bytes),
            EMIT_RESULT => Reply::Result(bytes),
            _ => Reply::Error(bytes),
        })
    }));
}

static LOADED: Mutex<Option<&'static Plugin>> = Mutex::new(None);

/// The plugin, loaded on the first call (this is when libtorch is loaded).
pub fn plugin() -> Result<&'static Plugin, Unavailable> {
    let mut loaded = LOADED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(plugin) = *loaded {
        return Ok(plugin);
    }
    let plugin: &'static Plugin = Box::leak(Box::new(load()?));
    *loaded = Some(plugin);
    Ok(plugin)
}

/// Where the plugin is looked for, in order, and whether the list came from [`PLUGIN_ENV`].
pub fn candidates() -> (Vec<PathBuf>, bool) {
    if let Some(path) = std::env::var_os(PLUGIN_ENV).filter(|p| !p.is_empty()) {
        return (vec![PathBuf::from(path)], true);
    }
    let mut out = Vec::new();
    if let Some(dir) = std::env::current_exe().ok().and_then(|exe| exe.parent().map(Path::to_path_buf)) {
        out.push(dir.join(PLUGIN_FILE));
        out.push(dir.join("..").join("lib").join(PLUGIN_FILE));
    }
    (out, false)
}

const HOW_TO_GET_IT: &str = "Build it with `./scripts/dev run` (sets up libtorch and builds the plugin next to \
     gigscope), or `cargo build --release -p gigscope-train` where libtorch is set up (README, Set-up), or point \
     GIGSCOPE_TRAIN_LIB at it. Everything else in gigscope works without it.";

fn load() -> Result<Plugin, Unavailable> {
    let (paths, from_env) = candidates();
    let Some(path) = paths.iter().find(|p| p.is_file()) else {
        let looked = paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ");
        let looked = if from_env {
            format!("{PLUGIN_ENV}={looked} does not exist")
        } else if looked.is_empty() {
            format!("the executable's directory is unknown and {PLUGIN_ENV} is not set")
        } else {
            format!("not at {looked} ({PLUGIN_ENV} is not set)")
        };
        return Err(Unavailable(format!(
            "training is unavailable: the training plugin {PLUGIN_FILE} (tch/libtorch) was not found: {looked}. \
             {HOW_TO_GET_IT}"
        )));
    };
    // SAFETY: loading runs the library's initialisers: the plugin's (gigscope's own code) and libtorch's.
    let library = match unsafe { libloading::Library::new(path) } {
        Ok(library) => library,
        Err(e) => {
            // libloading's message is "dlopen failed"; the loader's own words are its source.
            let mut why = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                why = format!("{why}: {s}");
                source = s.source();
            }
            let problem = if why.contains("libtorch") || why.contains("libc10") {
                format!(
                    "the training plugin {} was found but libtorch, which it is linked against, could not be \
                     loaded ({why}). Reinstall torch 2.13.0 where the plugin was built (`./scripts/dev run` \
                     sets up .venv and rebuilds the plugin), or put a libtorch 2.13 lib directory on \
                     LD_LIBRARY_PATH",
                    path.display()
                )
            } else {
                format!("the training plugin {} could not be loaded ({why})", path.display())
            };
            return Err(Unavailable(format!("training is unavailable: {problem}. {HOW_TO_GET_IT}")));
        }
    };
    let not_a_plugin = |what: &str| {
        Unavailable(format!(
            "training is unavailable: {} is not a gigscope training plugin ({what}). {HOW_TO_GET_IT}",
            path.display()
        ))
    };
    // SAFETY: the symbols have these signatures in every build of the plugin (checked by the handshake
    // string, which names the protocol and the build, before anything else is called).
    let handshake: HandshakeFn = match unsafe { library.get::<HandshakeFn>(HANDSHAKE_SYMBOL) } {
        Ok(f) => *f,
        Err(e) => return Err(not_a_plugin(&e.to_string())),
    };
    let theirs = unsafe { CStr::from_ptr(handshake()) }.to_string_lossy().into_owned();
    let ours = HANDSHAKE.trim_end_matches('\0');
    if theirs != ours {
        return Err(Unavailable(format!(
            "training is unavailable: the training plugin {} belongs to another build of gigscope (it says \
             \"{theirs}\", this gigscope is \"{ours}\"); rebuild it with `./scripts/dev run` or `cargo build \
             --release -p gigscope-train`",
            path.display()
        )));
    }
    let call: CallFn = match unsafe { library.get::<CallFn>(CALL_SYMBOL) } {
        Ok(f) => *f,
        Err(e) => return Err(not_a_plugin(&e.to_string())),
    };
    // Never unloaded: libtorch keeps threads and process-wide state that must not outlive its code.
    std::mem::forget(library);
    Ok(Plugin { path: path.clone(), call })
}
