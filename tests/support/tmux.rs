//! The real binary in a detached tmux session, driven with send-keys and read with capture-pane: shared by
//! the end-to-end test modules.
//!
//! Needs tmux. Without it a test is skipped locally, but fails when `CI` is set: CI must install tmux.
//! Each session runs on a tmux server of its own (`-L`): on one shared server, a test whose session was the
//! last one ends the server while another test's `new-session` is connecting to it, and that start fails.
//! Waiting for text polls the screen until it appears (or a generous deadline passes); nothing asserts on how
//! long anything took.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Whether tmux is there; panics in CI when it is not.
pub fn tmux_available() -> bool {
    let ok = Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success());
    if !ok {
        assert!(std::env::var_os("CI").is_none(), "tmux is required in CI (apt-get install -y tmux)");
        eprintln!("tmux not found: skipping the end-to-end test");
    }
    ok
}

pub struct Session {
    pub name: String,
    /// The socket name (`tmux -L`) of this session's own server; short, as a socket path has a length limit.
    socket: String,
    /// Where that socket is: tmux leaves the file behind when its server ends.
    socket_path: String,
    _home: tempfile::TempDir,
}

impl Session {
    /// Start `gigscope tui DIR ARGS…` in a detached 120×40 session, re-reading the run every 200 ms.
    pub fn start(test: &str, dir: &std::path::Path, args: &str) -> Session {
        Session::launch(test, &format!("tui {} --rescan-ms 200 {args}", dir.display()), (120, 40))
    }

    /// Start `gigscope COMMAND_LINE` in a detached `width`×`height` session. The shell prints
    /// `EXITED:<code>` when the binary ends and then stays, so a crash is visible on screen instead of
    /// closing the session. An empty config home, so a developer's own keymap cannot change what keys do.
    pub fn launch(test: &str, command_line: &str, size: (u16, u16)) -> Session {
        Session::launch_with_env(test, "", command_line, size)
    }

    /// [`Session::launch`] with `env` (`VAR=value …`) added to the binary's environment.
    pub fn launch_with_env(test: &str, env: &str, command_line: &str, (width, height): (u16, u16)) -> Session {
        static SERVERS: AtomicU32 = AtomicU32::new(0);
        let name = format!("gigscope-e2e-{}-{test}", std::process::id());
        let socket = format!("gs-e2e-{}-{}", std::process::id(), SERVERS.fetch_add(1, Ordering::Relaxed));
        let home = tempfile::tempdir().expect("tempdir");
        let cmd = format!(
            "env XDG_CONFIG_HOME={0} XDG_CACHE_HOME={0} {env} {1} {command_line}; echo EXITED:$?; sleep 600",
            home.path().display(),
            env!("CARGO_BIN_EXE_gigscope"),
        );
        let (w, h) = (width.to_string(), height.to_string());
        let out = Command::new("tmux")
            .args(["-L", &socket, "new-session", "-d", "-s", &name, "-x", &w, "-y", &h, "sh", "-c", &cmd])
            .output()
            .expect("tmux runs");
        assert!(out.status.success(), "tmux new-session failed: {}", String::from_utf8_lossy(&out.stderr));
        let mut session = Session { name, socket, socket_path: String::new(), _home: home };
        session.socket_path = session.pane("#{socket_path}");
        session
    }

    /// `tmux -L SOCKET ARGS… -t SESSION`: a command to this session's own server.
    fn tmux(&self, args: &[&str]) -> Command {
        let mut command = Command::new("tmux");
        command.args(["-L", &self.socket]).args(args).args(["-t", &self.name]);
        command
    }

    pub fn screen(&self) -> String {
        let out = self.tmux(&["capture-pane", "-p"]).output().expect("capture");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Poll the screen until it contains every one of `texts`; fail with the screen if it never does.
    pub fn wait_for(&self, texts: &[&str]) -> String {
        self.wait_until(&format!("{texts:?}"), |screen| texts.iter().all(|t| screen.contains(t)))
    }

    /// Poll the screen until `ready` holds for it (a key's effect, not just text that was there before the key);
    /// fail with `what` and the screen if it never does.
    pub fn wait_until(&self, what: &str, ready: impl Fn(&str) -> bool) -> String {
        // A bound for failure only (a training burst may be on screen first), never a timing assertion.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let screen = self.screen();
            assert!(!screen.contains("EXITED:"), "gigscope exited:\n{screen}");
            if ready(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "waited for {what}; the screen is:\n{screen}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Press keys, one per call: tmux would otherwise pass Escape plus the next key as one Alt-chord. Separate
    /// calls still reach the TUI in one read when it is slow to read them, and crossterm takes ESC then ESC as a
    /// single Esc and ESC then a key as Alt+key; so an Escape may only be the last key, and the caller waits for
    /// its effect before pressing more.
    pub fn keys(&self, keys: &[&str]) {
        if let Some(early) = keys.iter().rev().skip(1).position(|k| *k == "Escape") {
            panic!("Escape must be the last key pressed at once (found before {} more): {keys:?}", early + 1);
        }
        for k in keys {
            let status = self.tmux(&["send-keys"]).arg(k).status().expect("send-keys");
            assert!(status.success());
        }
    }
}

impl Session {
    /// Type text literally (no key-name interpretation).
    pub fn type_text(&self, text: &str) {
        let status = self.tmux(&["send-keys", "-l"]).arg(text).status().expect("send-keys");
        assert!(status.success());
    }
}

impl Session {
    /// One format of the session's pane, as `tmux display` expands it.
    pub fn pane(&self, format: &str) -> String {
        let out = self.tmux(&["display", "-p"]).arg(format).output().expect("tmux display");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The gigscope process the pane's shell started (its child: `env` execs the binary).
    pub fn gigscope_pid(&self) -> String {
        let shell = self.pane("#{pane_pid}");
        let child = std::fs::read_dir("/proc").ok().into_iter().flatten().find_map(|entry| {
            let pid = entry.ok()?.file_name().into_string().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // `pid (comm) state ppid …`: comm may hold spaces, so the fields after its closing parenthesis.
            let (comm, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
            (rest.split(' ').nth(1)? == shell && comm == "gigscope").then_some(pid)
        });
        child.unwrap_or_else(|| panic!("no gigscope process under the pane's shell {shell}"))
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // The server is this session's alone: ending it leaves no tmux process behind.
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).status();
        let _ = std::fs::remove_file(&self.socket_path);
    }
}

impl Session {
    /// From a view of the run: open the burst dialog (`t`) and set a burst of 1 iteration, 2 goals and groups of
    /// 2, the dialog left open for Enter to start it.
    pub fn set_up_small_burst(&self) {
        self.wait_for(&["Iterations"]);
        self.keys(&["t"]);
        self.wait_for(&["Training burst", "iterations         5"]);
        self.keys(&["h", "h", "h", "j", "h", "h", "h", "j", "h", "h"]);
        self.wait_for(&["iterations         1", "goals / iteration  2", "group size N       2"]);
    }
}
