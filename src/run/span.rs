//! Where a record is on disk, and how to tell that the file still holds it.
//!
//! Contract: plain data and positioned reads, nothing of any record format. A [`LineSpan`] names a line by its
//! number, byte range and [`line_checksum`]; whoever kept one reads the line back with [`read_at`] and checks
//! the checksum, so a file truncated, replaced or rewritten since is noticed, never read as other text.
//! [`FileIdentity`] (device and inode) and [`Stamp`] (identity, size, modification time) tell from a `stat`
//! alone whether a file was replaced, grew or was rewritten. Every reader of `run/` takes these from here.

use std::fs::{File, Metadata};
use std::time::SystemTime;

/// Checksum of a line's bytes (XXH3-64), to tell that a file still holds the line that was read.
pub fn line_checksum(bytes: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot(bytes)
}

/// Where a record's line is in its file: its 1-based number, the byte offset and length of the whole line
/// (newline included) and a checksum of those bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LineSpan {
    pub line: u64,
    pub offset: u64,
    pub len: u64,
    pub checksum: u64,
}

/// Where a reader found a record: the span of its line in `episodes.jsonl` (gigscope-run/1), `None` for
/// records made in memory or converted from other layouts. Not part of the record: never written, and equal
/// to any other, since records equal in content are equal wherever they were read.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadFrom(pub Option<LineSpan>);

impl PartialEq for ReadFrom {
    fn eq(&self, _: &ReadFrom) -> bool {
        true
    }
}

/// Fill `buf` from `file` at `offset` (a positioned read: no shared file position, so readers on several
/// threads may share one open file).
#[cfg(unix)]
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}

#[cfg(not(unix))]
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = file;
    file.seek(SeekFrom::Start(offset))?;
    file.read_exact(buf)
}

/// Identity of the file behind a path (device and inode), to notice when it is replaced (e.g. by an atomic
/// rename).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileIdentity {
    dev: u64,
    ino: u64,
}

impl FileIdentity {
    #[cfg(unix)]
    pub fn of(meta: &Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        FileIdentity { dev: meta.dev(), ino: meta.ino() }
    }
    #[cfg(not(unix))]
    pub fn of(_meta: &Metadata) -> Self {
        FileIdentity { dev: 0, ino: 0 }
    }
}

/// What identifies a file's content without reading it: size, modification time and identity, so that
/// growth, rewrites and replacement (an atomic rename) are noticed from a `stat`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub len: u64,
    pub modified: Option<SystemTime>,
    pub identity: FileIdentity,
}

impl Stamp {
    pub fn of(meta: &Metadata) -> Self {
        Stamp { len: meta.len(), modified: meta.modified().ok(), identity: FileIdentity::of(meta) }
    }

    /// How the file changed from `self` to `now`, for a notice.
    pub fn change(self, now: Stamp) -> &'static str {
        if self.identity != now.identity {
            "was replaced"
        } else if now.len < self.len {
            "shrank"
        } else if now.len > self.len {
            "grew"
        } else {
            "was rewritten"
        }
    }
}
