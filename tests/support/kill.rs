//! What the kill-anywhere tests share: kill points drawn from a fixed seed, and what a run must show after a
//! kill (every complete line kept, nothing wrong but what a kill may leave).

use std::path::Path;
use std::process::Command;

/// Pseudo-random numbers from a fixed seed (a linear congruential generator's high bits): every run of a test
/// kills at the same points.
pub struct Schedule(pub u64);

impl Schedule {
    pub fn next(&mut self, below: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % below
    }
}

/// The complete lines of `bytes`.
pub fn complete(bytes: &[u8]) -> &[u8] {
    &bytes[..bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1)]
}

/// The lines of `complete` (whole lines, in iteration order) before its last iteration's first line: what a
/// trainer continuing the run keeps (`--resume` drops the lines of the iteration its checkpoint does not cover
/// and plays that iteration again).
pub fn finished_iterations(complete: &[u8]) -> &[u8] {
    let iteration =
        |line: &[u8]| serde_json::from_slice::<serde_json::Value>(line).ok().and_then(|v| v["iteration"].as_i64());
    let lines: Vec<&[u8]> = complete.split_inclusive(|b| *b == b'\n').collect();
    let Some(last) = lines.iter().filter_map(|l| iteration(l)).max() else { return &complete[..0] };
    let end: usize = lines.iter().take_while(|l| iteration(l).is_none_or(|i| i < last)).map(|l| l.len()).sum();
    &complete[..end]
}

fn validate_output(bin: &str, run: &Path) -> std::process::Output {
    Command::new(bin).arg("validate").arg(run).output().expect("validate runs")
}

/// `BIN validate RUN`: `Ok` when it finds nothing wrong, else its report (the problems, then the summary).
pub fn validate(bin: &str, run: &Path) -> Result<(), String> {
    let out = validate_output(bin, run);
    match out.status.success() {
        true => Ok(()),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout)),
    }
}

/// `BIN validate RUN`'s problems: the lines of its standard error (none when it finds nothing wrong).
pub fn validate_problems(bin: &str, run: &Path) -> Vec<String> {
    String::from_utf8_lossy(&validate_output(bin, run).stderr).lines().map(str::to_owned).collect()
}

/// [`validate_problems`] beyond what a kill may leave: an unfinished last line, a torn tail, a group cut short.
pub fn unexplained_problems(bin: &str, run: &Path) -> Vec<String> {
    let explained = |p: &String| p.contains("partial") || p.contains("unfinished") || p.contains("torn");
    validate_problems(bin, run).into_iter().filter(|p| !explained(p)).collect()
}
