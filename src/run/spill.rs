//! Where a viewer keeps the text of episodes that have no line of their own (verl dumps, TRL logs, verifiers'
//! rollouts: built from other files): a spill file, so that it holds their numbers alone, as it does a
//! gigscope run's.
//!
//! Contract: [`TextSpill::append`] writes episodes as gigscope-run/1 lines at the spill's end and sets each
//! one's `read_from` to the [`LineSpan`] of its line, so that [`TextSpill::store`] reads it back exactly as a
//! run's line is read back (its checksum checked). The file is made in the first directory asked for where one
//! can be (the cache root's `text/`, else the system's temporary directory) and removed from the directory as
//! soon as it is open: it lasts while the process keeps it open (a kill, a crash, the viewer closing give its
//! space back) and no later open ever meets it. One made and not yet removed when its process was killed
//! (between two system calls) is named as that process's temporary and removed when the next spill is made
//! in the directory. Writes are positioned at the spill's own end, never past what was written whole: a
//! failed write (a full disk) leaves bytes no span names, the episodes not written keep no span (their text
//! stays in memory), and the error names the file.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::error::RunError;
use super::format::Episode;
use super::span::{line_checksum, LineSpan, ReadFrom};
use super::text_on_disk::TextStore;
use super::writer::remove_abandoned_temporaries;

/// The directory under the cache root where spills are made.
pub const SPILL_DIR: &str = "text";

/// Bytes of lines gathered before they are written: a few writes per part of a run, and no part's whole text
/// held twice.
const WRITE_BYTES: usize = 1 << 20;

/// Spills made by this process, to name each apart.
static SPILLS: AtomicU64 = AtomicU64::new(0);

/// An append-only file of episodes' lines, gone from its directory (see the module docs).
#[derive(Debug)]
pub struct TextSpill {
    file: Arc<File>,
    path: PathBuf,
    store: TextStore,
    /// Bytes and lines written whole.
    end: u64,
    lines: u64,
}

impl TextSpill {
    /// A spill in the first of `dirs` (each created if missing) where one can be made; else the error met in
    /// the last.
    pub fn create(dirs: &[PathBuf]) -> Result<TextSpill, RunError> {
        let none = std::io::Error::new(std::io::ErrorKind::NotFound, "no directory given for a spill file");
        let mut failed = RunError::io(PathBuf::new())(none);
        for dir in dirs {
            match TextSpill::create_in(dir) {
                Ok(spill) => return Ok(spill),
                Err(err) => failed = err,
            }
        }
        Err(failed)
    }

    fn create_in(dir: &Path) -> Result<TextSpill, RunError> {
        std::fs::create_dir_all(dir).map_err(RunError::io(dir))?;
        remove_abandoned_temporaries(dir);
        let n = SPILLS.fetch_add(1, Ordering::Relaxed);
        // `.NAME.tmpPID`: the name `remove_abandoned_temporaries` knows.
        let path = dir.join(format!(".spill-{n}.jsonl.tmp{}", std::process::id()));
        let file =
            OpenOptions::new().read(true).write(true).create_new(true).open(&path).map_err(RunError::io(&path))?;
        std::fs::remove_file(&path).map_err(RunError::io(&path))?;
        let file = Arc::new(file);
        let store = TextStore::kept_open(Arc::clone(&file), &path);
        Ok(TextSpill { file, path, store, end: 0, lines: 0 })
    }

    /// The store that reads the episodes written here back.
    pub fn store(&self) -> &TextStore {
        &self.store
    }

    /// Where the spill file was made (its name is gone from the directory once it is open): the tests check
    /// which of the directories was taken.
    #[cfg(test)]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write `episodes` at the end, each as one line, and set each one's `read_from` to its line. An episode
    /// whose numbers a line cannot carry (a reward that is not a finite number) is left in memory. On an error
    /// the episodes written before it keep their lines, the rest none.
    pub fn append(&mut self, episodes: &mut [Episode]) -> Result<(), RunError> {
        let mut lines = Vec::new();
        let mut pending: Vec<(usize, u64, u64)> = Vec::new();
        for i in 0..episodes.len() {
            if !finite_numbers(&episodes[i]) {
                continue;
            }
            let start = lines.len();
            serde_json::to_writer(&mut lines, &episodes[i])
                .map_err(|source| RunError::Encode { path: self.path.clone(), source })?;
            lines.push(b'\n');
            pending.push((i, start as u64, (lines.len() - start) as u64));
            if lines.len() >= WRITE_BYTES {
                self.write(&lines, &pending, episodes)?;
                (lines, pending) = (Vec::new(), Vec::new());
            }
        }
        self.write(&lines, &pending, episodes)
    }

    /// Write `lines` (episode `i`'s line at `start`, `len` bytes, for each of `pending`) whole at the end.
    fn write(&mut self, lines: &[u8], pending: &[(usize, u64, u64)], episodes: &mut [Episode]) -> Result<(), RunError> {
        if lines.is_empty() {
            return Ok(());
        }
        write_all_at(&self.file, lines, self.end).map_err(RunError::io(&self.path))?;
        for &(i, start, len) in pending {
            let bytes = &lines[start as usize..(start + len) as usize];
            self.lines += 1;
            let span = LineSpan { line: self.lines, offset: self.end + start, len, checksum: line_checksum(bytes) };
            episodes[i].read_from = ReadFrom(Some(span));
        }
        self.end += lines.len() as u64;
        Ok(())
    }
}

/// The episode's numbers are all finite: JSON has no other (a NaN would be written as `null` and read back as
/// an error, or as nothing).
fn finite_numbers(episode: &Episode) -> bool {
    let steps = episode.steps.iter().all(|s| s.reward.is_finite() && s.logprob.is_none_or(f64::is_finite));
    let advantages = episode.advantages.iter().flatten().all(|a| a.is_finite());
    let score = episode.outcome.as_ref().is_none_or(|o| o.score.is_finite());
    steps && advantages && score
}

#[cfg(unix)]
fn write_all_at(file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.write_all_at(bytes, offset)
}

#[cfg(not(unix))]
fn write_all_at(file: &File, bytes: &[u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Seek, SeekFrom, Write};
    let mut file = file;
    file.seek(SeekFrom::Start(offset))?;
    file.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::format::Step;

    #[test]
    fn episodes_read_back_as_written_and_the_file_is_gone_from_its_directory() {
        let dir = tempfile::tempdir().unwrap();
        let mut spill = TextSpill::create(&[dir.path().join("text")]).unwrap();
        assert_eq!(std::fs::read_dir(dir.path().join("text")).unwrap().count(), 0, "removed once open");
        let mut nan = Step::new("o", "a", 0.0);
        nan.reward = f64::NAN;
        let mut episodes = vec![
            Episode::new("a", "g", vec![Step::new("obs a", "act", 1.0)]),
            Episode::new("b", "g", vec![nan]),
            Episode::new("c", "g", vec![Step::new("obs c\n\"quoted\"", "act", 0.25)]),
        ];
        spill.append(&mut episodes).unwrap();
        spill.append(&mut episodes[..1]).unwrap();
        assert!(episodes[1].read_from.0.is_none(), "a NaN stays in memory");
        let (a, c) = (episodes[0].read_from.0.unwrap(), episodes[2].read_from.0.unwrap());
        assert_eq!((a.line, c.line), (3, 2), "the second append wrote a's line again, after c's");
        assert_eq!(*spill.store().read(&a).unwrap(), episodes[0]);
        assert_eq!(*spill.store().read(&c).unwrap(), episodes[2]);
    }

    #[test]
    fn a_spill_is_made_in_the_next_directory_when_the_first_cannot_hold_one() {
        let dir = tempfile::tempdir().unwrap();
        let not_a_dir = dir.path().join("file");
        std::fs::write(&not_a_dir, "").unwrap();
        let spill = TextSpill::create(&[not_a_dir.join("text"), dir.path().join("text")]).unwrap();
        assert!(spill.path().starts_with(dir.path().join("text")));
        assert!(TextSpill::create(&[not_a_dir.join("text")]).is_err());
    }
}
