//! Where a record is on disk, and how to tell that the file still holds it.
//!
//! Contract: plain data and positioned reads, nothing of any record format. A [`LineSpan`] names a line by its
//! number, byte range and [`line_checksum`]; whoever kept one reads the line back with [`read_at`] and checks
//! the checksum, so a file truncated, replaced or rewritten since is noticed, never read as other text.
//! [`FileIdentity`] (device and inode) and [`Stamp`] (identity, size, modification time) tell from a `stat`
//! alone whether a file was replaced, grew or was rewritten. Every reader of `run/` takes these from here.

use std::fs::{File, Metadata};
use std::time::SystemTime;

use super::packed_column::{shrink_slack, U32Column};

/// Checksum of a line's bytes, to tell that a file still holds the line that was read: the low 32 bits of
/// XXH3-64, as CRC-32 guards a zip member. A line rewritten since goes unnoticed once in 2³² reads; 32 bits more
/// cost 4 bytes for each line a viewer keeps.
pub fn line_checksum(bytes: &[u8]) -> u32 {
    content_checksum(bytes) as u32
}

/// Checksum of a file's bytes or of a part of one (XXH3-64), where one is kept per file, not per line.
pub fn content_checksum(bytes: &[u8]) -> u64 {
    twox_hash::XxHash3_64::oneshot(bytes)
}

/// Where a record's line is in its file: its 1-based number, the byte offset and length of the whole line
/// (newline included) and a checksum of those bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LineSpan {
    pub line: u64,
    pub offset: u64,
    pub len: u64,
    pub checksum: u32,
}

/// Many [`LineSpan`]s pushed in order and read back by index, in about 6 bytes a span rather than 32: a span
/// that begins where the one before it ends (its offset plus length, on the next line), as the lines of one file
/// read through do, keeps its length and checksum alone. Every [`SpanColumn::CHECKPOINT`]th span, and each that
/// does not follow the one before (a line skipped as broken, another file), also keeps where it begins; reading
/// a span back adds up at most that many lengths. Lengths are below 4 GiB ([`SpanColumn::fits`]).
#[derive(Clone, Debug, Default)]
pub struct SpanColumn {
    /// Line lengths, as narrow as they allow (a line under 64 KiB in 2 bytes).
    lens: U32Column,
    checksums: Vec<u32>,
    /// Where every `CHECKPOINT`th span begins: (offset, line).
    checkpoints: Vec<(u64, u64)>,
    /// The other spans that do not follow the one before, by index: (index, offset, line).
    jumps: Vec<(u32, u64, u64)>,
    /// Where a span that follows the last one begins: (offset, line).
    next: (u64, u64),
}

impl SpanColumn {
    const CHECKPOINT: usize = 32;

    /// Whether `span` can be pushed (its length is below 4 GiB).
    pub fn fits(span: &LineSpan) -> bool {
        u32::try_from(span.len).is_ok()
    }

    /// Append `span`, which must [fit](Self::fits); more than 2³² spans is a bug, not input to report.
    pub fn push(&mut self, span: &LineSpan) {
        let (i, len) = (self.lens.len(), u32::try_from(span.len).expect("SpanColumn: a span of 4 GiB or more"));
        let begins = (span.offset, span.line);
        if i % Self::CHECKPOINT == 0 {
            self.checkpoints.push(begins);
        } else if begins != self.next {
            self.jumps.push((u32::try_from(i).expect("SpanColumn: more than 2³² spans"), span.offset, span.line));
        }
        self.next = (span.offset.wrapping_add(span.len), span.line.wrapping_add(1));
        self.lens.push(len);
        self.checksums.push(span.checksum);
    }

    /// Span `i` (below the number pushed).
    pub fn get(&self, i: usize) -> LineSpan {
        let mut from = i - i % Self::CHECKPOINT;
        let (mut offset, mut line) = self.checkpoints[i / Self::CHECKPOINT];
        let jump = self.jumps.partition_point(|&(at, _, _)| at as usize <= i);
        if let Some(&(at, jump_offset, jump_line)) = jump.checked_sub(1).map(|j| &self.jumps[j]) {
            if at as usize > from {
                (from, offset, line) = (at as usize, jump_offset, jump_line);
            }
        }
        offset = offset.wrapping_add(self.lens.sum(from..i));
        line = line.wrapping_add((i - from) as u64);
        LineSpan { line, offset, len: u64::from(self.lens.get(i)), checksum: self.checksums[i] }
    }

    /// Room for `more` spans.
    pub fn reserve(&mut self, more: usize) {
        self.lens.reserve_exact(more);
        self.checksums.reserve(more);
    }

    /// Give back the room grown beyond what is held, where that is more than a quarter.
    pub fn shrink_slack(&mut self) {
        self.lens.shrink_slack();
        shrink_slack(&mut self.checksums);
        shrink_slack(&mut self.checkpoints);
        shrink_slack(&mut self.jumps);
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Every span reads back as pushed, whether it follows the one before or jumps (forwards, backwards, to
        /// another file's offsets), on either side of a checkpoint.
        #[test]
        fn spans_read_back_as_pushed(
            moves in proptest::collection::vec((0u8..4, 0u64..300, 0u64..5, proptest::num::u32::ANY), 0..120),
        ) {
            let (mut column, mut pushed) = (SpanColumn::default(), Vec::new());
            let (mut offset, mut line) = (0u64, 1u64);
            for (kind, len, skip, checksum) in moves {
                match kind {
                    // A line skipped (broken), or a jump anywhere.
                    1 => (offset, line) = (offset + len, line + skip + 1),
                    2 => (offset, line) = (len * 7, skip),
                    _ => {}
                }
                let span = LineSpan { line, offset, len, checksum };
                column.push(&span);
                pushed.push(span);
                (offset, line) = (offset + len, line + 1);
            }
            proptest::prop_assert_eq!(column.lens.len(), pushed.len());
            for (i, span) in pushed.iter().enumerate() {
                proptest::prop_assert_eq!(column.get(i), *span, "span {}", i);
            }
        }
    }

    #[test]
    fn a_file_read_through_keeps_no_jump_and_a_checkpoint_every_32_spans() {
        let mut column = SpanColumn::default();
        let mut offset = 10;
        for line in 1..=100u64 {
            column.push(&LineSpan { line, offset, len: line * 3, checksum: line as u32 });
            offset += line * 3;
        }
        assert!(column.jumps.is_empty());
        assert_eq!(column.checkpoints.len(), 4);
        assert_eq!(column.get(99), LineSpan { line: 100, offset: offset - 300, len: 300, checksum: 100 });
    }
}
