#![cfg(target_os = "linux")]

//! The peak resident memory of a `gigscope` command, its own: for the tests that fail a binary whose memory
//! grows with the run (`tests/advantage/stream_memory.rs`, `tests/run/stream_memory.rs`).

use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

/// Runs `gigscope ARGS` to its end with its output to /dev/null and its standard error to `stderr`, and
/// returns its exit status and peak resident memory (KiB, `ru_maxrss` from `wait4` on that process alone).
///
/// Not spawned from here directly: Linux counts in a process's `ru_maxrss` the peak of the memory it had before
/// `exec`, and a child spawned from this process starts from this process's memory (std spawns with
/// `posix_spawn`, which shares it until `exec`; a `fork` would copy it). Built with `--all-features`, this test
/// binary links libtorch and holds about 370 MB, which `gigscope` would be charged with. So `/bin/sh` (a small
/// process) starts it in the background and exits, and this process, a child subreaper, inherits it and reaps
/// it with `wait4`: its figure is its own (plus at most the shell's megabyte or so).
pub fn peak_of(args: &[&OsStr], stderr: &Path) -> (ExitStatus, u64) {
    // SAFETY: sets this process's child-subreaper flag, nothing else.
    let set = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1 as libc::c_ulong, 0, 0, 0) };
    assert_eq!(set, 0, "prctl(PR_SET_CHILD_SUBREAPER): {}", std::io::Error::last_os_error());
    let shell = Command::new("/bin/sh")
        .arg("-c")
        .arg(r#""$@" </dev/null >/dev/null & echo $!"#)
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_gigscope"))
        .args(args)
        .stdin(Stdio::null())
        .stderr(File::create(stderr).expect("stderr file"))
        .output()
        .expect("/bin/sh runs");
    assert!(shell.status.success(), "/bin/sh failed: {}", shell.status);
    let pid: libc::pid_t = String::from_utf8_lossy(&shell.stdout).trim().parse().expect("the pid sh printed");
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain old data (all zeros is a value); `wait4` writes both out-parameters.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4 on gigscope: {}", std::io::Error::last_os_error());
    (ExitStatus::from_raw(status), usage.ru_maxrss as u64)
}

pub fn mb(kib: u64) -> f64 {
    kib as f64 / 1024.0
}
