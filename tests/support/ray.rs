//! A Ray head on loopback for the tests that submit bursts to a real Ray (`tests/train/ray.rs`, the TUI's
//! `tests/tui/ray_e2e.rs`): Ray pinned and pip-installed by `./scripts/dev test` into `target/ray-venv`, or
//! `$GIGSCOPE_TEST_RAY` naming a `ray` executable. The head is stopped when its [`Head`] is dropped, so
//! whatever happens to the test (an assertion failing, a panic), `ray stop` runs.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use gigscope::ray_job::RayClient;

/// A bound on waiting for the dashboard, so that a broken Ray fails the test instead of hanging it (not a
/// timing goal).
const PATIENCE: Duration = Duration::from_secs(120);

/// A port free on loopback now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The `ray` executable, or `None` (skip) where it is not installed, which CI does not allow.
pub fn ray_executable() -> Option<PathBuf> {
    let path = std::env::var_os("GIGSCOPE_TEST_RAY")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ray-venv/bin/ray"));
    if path.is_file() {
        return Some(path);
    }
    assert!(std::env::var_os("CI").is_none(), "{} is missing: `./scripts/dev test` installs Ray", path.display());
    eprintln!("{} not installed: skipping", path.display());
    None
}

/// A Ray head on loopback (one CPU, its dashboard answering at [`Head::address`]), stopped when dropped.
pub struct Head {
    ray: PathBuf,
    /// The dashboard's address, `http://127.0.0.1:PORT`.
    pub address: String,
    _temp: tempfile::TempDir,
}

impl Head {
    /// Start a head with `ray` and wait until its dashboard answers.
    pub fn start(ray: PathBuf) -> Head {
        // Short: Ray's socket paths live under it.
        let temp = tempfile::Builder::new().prefix("gsray").tempdir_in("/tmp").unwrap();
        let dashboard = free_port();
        let ports = [
            ("--port", free_port()),
            ("--dashboard-port", dashboard),
            ("--ray-client-server-port", free_port()),
            ("--dashboard-agent-listen-port", free_port()),
            ("--metrics-export-port", free_port()),
        ];
        let mut cmd = Command::new(&ray);
        cmd.args(["start", "--head", "--dashboard-host", "127.0.0.1", "--node-ip-address", "127.0.0.1"])
            .args(["--num-cpus", "1", "--include-dashboard", "true", "--disable-usage-stats"])
            .arg("--temp-dir")
            .arg(temp.path());
        for (flag, port) in ports {
            cmd.arg(flag).arg(port.to_string());
        }
        // Made before starting, so that a head that started but never answers is stopped all the same.
        let head = Head { ray, address: format!("http://127.0.0.1:{dashboard}"), _temp: temp };
        let out = cmd.env("RAY_USAGE_STATS_ENABLED", "0").output().unwrap();
        let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
        assert!(out.status.success(), "ray start: {}{}", text(&out.stdout), text(&out.stderr));
        let client = RayClient::new(&head.address).unwrap();
        let since = Instant::now();
        while client.version().is_err() {
            assert!(since.elapsed() < PATIENCE, "the dashboard at {} never answered", head.address);
            std::thread::sleep(Duration::from_millis(250));
        }
        head
    }

    /// A client of its dashboard.
    pub fn client(&self) -> RayClient {
        RayClient::new(&self.address).unwrap()
    }
}

impl Drop for Head {
    fn drop(&mut self) {
        let _ = Command::new(&self.ray).args(["stop", "--force"]).stdout(Stdio::null()).stderr(Stdio::null()).status();
    }
}
