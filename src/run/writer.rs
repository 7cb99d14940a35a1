//! Writing run directories: whole lines appended with one write each, `run.json` replaced atomically.
//!
//! A JSON Lines file this writer appends to only ever ends in a complete line:
//! - opening a file whose last line is unfinished (a writer killed mid-append, a disk that filled) first cuts
//!   that torn tail off and keeps its bytes in a side file, `<file>.torn` (appended to, never overwritten), so
//!   the next record starts a line of its own instead of being glued to the torn one;
//! - an append that fails part-way (a full disk) is cut back to the file's length before it, so a failed
//!   write leaves the file as it was and the error names the file.
//!
//! Opening a run also removes the temporary files of atomic replacements whose writer was killed before the
//! rename ([`remove_abandoned_temporaries`]), in the run directory and in its subdirectories, whose files are
//! replaced the same way (an iteration's policy weights in `weights/`, truth files in `truth/`).
//!
//! One writer appends to a run at a time: the cut assumes nobody else is mid-append when the file is opened.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::error::RunError;
use super::format::{Episode, MetricsRecord, RunMeta, EPISODES_FILE, METRICS_FILE, RUN_META_FILE};

/// Appends episodes and metrics to a run directory (creating it if needed).
#[derive(Debug)]
pub struct RunWriter {
    dir: PathBuf,
    episodes: Appender,
    metrics: Appender,
}

impl RunWriter {
    /// Open `dir` for appending; existing lines are kept.
    pub fn create(dir: &Path) -> Result<Self, RunError> {
        std::fs::create_dir_all(dir).map_err(RunError::io(dir))?;
        remove_abandoned_temporaries(dir);
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                remove_abandoned_temporaries(&entry.path());
            }
        }
        Ok(RunWriter {
            dir: dir.to_path_buf(),
            episodes: Appender::open(dir.join(EPISODES_FILE))?,
            metrics: Appender::open(dir.join(METRICS_FILE))?,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Replace `run.json` atomically.
    pub fn write_meta(&self, meta: &RunMeta) -> Result<(), RunError> {
        let path = self.dir.join(RUN_META_FILE);
        let mut text =
            serde_json::to_string_pretty(meta).map_err(|source| RunError::Encode { path: path.clone(), source })?;
        text.push('\n');
        write_atomic(&path, text.as_bytes())
    }

    pub fn append_episode(&mut self, episode: &Episode) -> Result<(), RunError> {
        self.episodes.append(episode)
    }

    pub fn append_metrics(&mut self, metrics: &MetricsRecord) -> Result<(), RunError> {
        self.metrics.append(metrics)
    }
}

/// An append-only JSON Lines file.
#[derive(Debug)]
struct Appender {
    path: PathBuf,
    file: File,
}

impl Appender {
    fn open(path: PathBuf) -> Result<Self, RunError> {
        let mut file =
            OpenOptions::new().create(true).read(true).append(true).open(&path).map_err(RunError::io(&path))?;
        cut_torn_tail(&path, &mut file)?;
        Ok(Appender { path, file })
    }

    /// One `write` of the whole line, newline included, so a concurrent reader never sees half a record
    /// followed by another writer's bytes, then a flush.
    fn append(&mut self, record: &impl Serialize) -> Result<(), RunError> {
        let mut line =
            serde_json::to_vec(record).map_err(|source| RunError::Encode { path: self.path.clone(), source })?;
        line.push(b'\n');
        let before = self.file.metadata().map_err(RunError::io(&self.path))?.len();
        if let Err(err) = self.file.write_all(&line).and_then(|()| self.file.flush()) {
            // Whatever part of the line reached the file is taken back, so that the file still ends in a
            // whole line; if even that fails, the next open cuts the torn tail.
            let _ = self.file.set_len(before);
            return Err(RunError::io(&self.path)(err));
        }
        Ok(())
    }
}

/// The side file that keeps the bytes of a torn last line cut from `path`.
pub fn torn_tail_file(path: &Path) -> PathBuf {
    let mut name = path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".torn");
    path.with_file_name(name)
}

/// If `file` (at `path`) does not end in a newline, move the bytes after its last newline to
/// [`torn_tail_file`] (appended, with a newline of their own) and cut them from `file`.
fn cut_torn_tail(path: &Path, file: &mut File) -> Result<(), RunError> {
    let len = file.metadata().map_err(RunError::io(path))?.len();
    if len == 0 {
        return Ok(());
    }
    // Read backwards in blocks until a newline is found: a torn tail is one partial record, so this reads
    // about one line, not the file.
    let mut end = len;
    let mut tail: Vec<u8> = Vec::new();
    let cut_at = loop {
        let start = end.saturating_sub(64 * 1024);
        let mut block = vec![0; (end - start) as usize];
        if let Err(err) = file.seek(SeekFrom::Start(start)).and_then(|_| file.read_exact(&mut block)) {
            return Err(RunError::io(path)(err));
        }
        if end == len && block.last() == Some(&b'\n') {
            return Ok(());
        }
        match block.iter().rposition(|&b| b == b'\n') {
            Some(i) => {
                tail.splice(0..0, block[i + 1..].iter().copied());
                break start + i as u64 + 1;
            }
            None if start == 0 => {
                tail.splice(0..0, block);
                break 0;
            }
            None => {
                tail.splice(0..0, block);
                end = start;
            }
        }
    };
    let side = torn_tail_file(path);
    tail.push(b'\n');
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(&side)
        .and_then(|mut f| f.write_all(&tail).and_then(|()| f.sync_all()))
        .map_err(RunError::io(&side))?;
    file.set_len(cut_at).map_err(RunError::io(path))
}

/// Write `bytes` to a temporary file beside `path`, sync it, and rename it over `path`.
/// Whether process `pid` still runs.
pub fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        // Signal 0 checks that the process exists without sending anything; EPERM means it exists.
        let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
        // SAFETY: kill with signal 0 has no effect on the target.
        let status = unsafe { libc::kill(pid, 0) };
        status == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Temporary files `.NAME.tmp<pid>` that [`write_atomic`] left in `dir` because its process was killed between
/// creating and renaming them (a checkpoint, `run.json`) are removed; one whose process still runs belongs to a
/// writer at work and is left alone.
pub fn remove_abandoned_temporaries(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(name) = file_name.to_str().filter(|n| n.starts_with('.')) else { continue };
        let Some(pid) = name.rsplit_once(".tmp").and_then(|(_, pid)| pid.parse::<u32>().ok()) else { continue };
        if !process_alive(pid) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp{}", std::process::id()));
    let result = (|| {
        let mut file = File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(err) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(RunError::io(path)(err));
    }
    Ok(())
}
