//! A small file system of its own for disk-full tests: a tmpfs mounted on a temporary directory, filled by a
//! filler file so that exactly `k` pages are left for the writer under test.
//!
//! tmpfs counts space in pages (4 KiB): a write fails with ENOSPC exactly when it needs a page beyond those
//! left, so stepping the free space one page at a time makes every write that allocates fail at some level.
//! The filler is written until the disk is full, then cut back by `k` pages, so the free space is exact whatever
//! the writer left before.
//!
//! Mounting needs root (or CAP_SYS_ADMIN), as the test command has in CI. Where `mount` is refused the test
//! fails, saying so: a disk-full test that skipped would pass on a machine where it checked nothing.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// tmpfs's unit of space.
pub const PAGE: u64 = 4096;

const FILLER: &str = ".filler";

/// A mounted tmpfs, unmounted when dropped.
pub struct SmallFs {
    dir: tempfile::TempDir,
}

impl SmallFs {
    /// A tmpfs of `bytes` (rounded up to pages) mounted on a fresh temporary directory.
    pub fn mount(bytes: u64) -> SmallFs {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes},mode=0755"), "tmpfs"])
            .arg(dir.path())
            .output()
            .expect("running mount");
        assert!(
            out.status.success(),
            "the disk-full tests need a small file system of their own: `mount -t tmpfs` was refused ({}). Run the \
             tests as root (as CI does) or with CAP_SYS_ADMIN, e.g. `unshare -rm cargo test ...`",
            String::from_utf8_lossy(&out.stderr).trim()
        );
        SmallFs { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fill the file system so that exactly `pages` pages are free (the filler file outside `path()`'s
    /// subdirectories, ignored by every writer).
    pub fn leave_free(&self, pages: u64) {
        let filler = self.filler();
        let mut file = OpenOptions::new().create(true).append(true).open(&filler).unwrap();
        let block = vec![0u8; 64 * PAGE as usize];
        let mut size = PAGE;
        loop {
            match file.write(&block[..size as usize]) {
                Ok(0) => break,
                Ok(_) => {}
                Err(err) if err.kind() == std::io::ErrorKind::StorageFull => {
                    if size == PAGE {
                        break;
                    }
                    size = PAGE;
                }
                Err(err) => panic!("filling {}: {err}", filler.display()),
            }
        }
        let len = file.metadata().unwrap().len();
        // Whole pages only: the partial page the last write may have taken is given back with them.
        let keep = (len / PAGE).saturating_sub(pages) * PAGE;
        file.set_len(keep).unwrap();
        let free = self.free_pages();
        assert!(
            free == pages || (keep == 0 && free < pages),
            "{}: {free} pages free after filling, {pages} wanted",
            self.path().display()
        );
    }

    /// Remove the filler: the whole file system is free again but for what the writers wrote.
    pub fn free_all(&self) {
        let _ = std::fs::remove_file(self.filler());
    }

    /// Pages free now.
    pub fn free_pages(&self) -> u64 {
        statvfs(self.path()).0
    }

    /// Pages in use, filler left out.
    pub fn used_pages(&self) -> u64 {
        let (free, total) = statvfs(self.path());
        let filler = std::fs::metadata(self.filler()).map_or(0, |m| m.len().div_ceil(PAGE));
        total - free - filler
    }

    fn filler(&self) -> PathBuf {
        self.path().join(FILLER)
    }

    /// Everything on the file system but the filler is removed.
    pub fn clear(&self) {
        for entry in std::fs::read_dir(self.path()).unwrap().flatten() {
            if entry.file_name() == FILLER {
                continue;
            }
            let path = entry.path();
            if path.is_dir() {
                std::fs::remove_dir_all(&path).unwrap();
            } else {
                std::fs::remove_file(&path).unwrap();
            }
        }
    }
}

impl Drop for SmallFs {
    fn drop(&mut self) {
        // Lazily: a file still open somewhere does not keep the mount (and the temporary directory) alive.
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

/// Pages free and pages in all on the file system of `path`.
fn statvfs(path: &Path) -> (u64, u64) {
    use std::os::unix::ffi::OsStrExt;
    let c_path = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: statvfs fills the zeroed struct it is given from a NUL-terminated path.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::statvfs(c_path.as_ptr(), &mut stat) }, 0, "statvfs {}", path.display());
    let unit = stat.f_frsize as u64;
    (stat.f_bavail as u64 * unit / PAGE, stat.f_blocks as u64 * unit / PAGE)
}

/// Files under `dir` (recursively) whose names mark them temporary: a write's `.NAME.tmp<pid>`, the
/// exporter's `.run.json.<pid>.<hex>.tmp`, convert's staging `.OUT.converting<pid>`.
pub fn temporaries(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return found };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name == FILLER {
            continue;
        }
        if name.contains(".tmp") || name.contains("converting") {
            found.push(entry.path());
        }
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            found.extend(temporaries(&entry.path()));
        }
    }
    found
}

/// Whether a finished child's standard error shows an abort, a panic or a C++ exception rather than an error.
pub fn crashed(status: std::process::ExitStatus, stderr: &str) -> bool {
    use std::os::unix::process::ExitStatusExt;
    status.signal().is_some()
        || status.code() == Some(101)
        || stderr.contains("panicked at")
        || stderr.contains("terminate called")
        || stderr.contains("c10::Error")
        || stderr.contains("Exception raised from")
}
