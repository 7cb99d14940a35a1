//! The directory the trajectory index is written through: tantivy's memory-mapped directory, whose write errors
//! name the file they happened in.
//!
//! tantivy reports a failed write without its file: an indexing thread that met a full disk ends as "Internal
//! error: 'No space left on device'", a failed flush as "An IO error occurred", with no path. Every write
//! through [`NamingDirectory`] (a segment's files, a delete file, the atomic replacement of `meta.json` and
//! `.managed.json`) that fails says which file it was writing, as `<path>: <reason>` with the error's kind kept,
//! so the message the user sees names the file whatever tantivy wraps it in. tantivy does not always pass such an
//! error on: an indexing thread that failed can leave the writer to report only "An index writer was killed", so
//! the first failed write is also kept ([`WriteFailures`]) for the index to name where tantivy does not. Reads,
//! locks and deletes are the memory-mapped directory's own.

use std::fmt;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tantivy::directory::error::{DeleteError, LockError, OpenDirectoryError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, FileSlice, Lock, MmapDirectory, TerminatingWrite,
    WatchCallback, WatchHandle, WritePtr,
};

#[derive(Clone)]
pub(crate) struct NamingDirectory {
    root: PathBuf,
    inner: MmapDirectory,
    failures: WriteFailures,
}

/// The first write through a [`NamingDirectory`] that failed, as its named error says it (`<path>: <reason>`),
/// shared by the directory's clones and the index that asks for it.
#[derive(Clone, Debug, Default)]
pub(crate) struct WriteFailures(Arc<Mutex<Option<String>>>);

impl WriteFailures {
    fn record(&self, error: &io::Error) {
        let mut first = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        first.get_or_insert_with(|| error.to_string());
    }

    /// The first failed write since the last call, if any.
    pub(crate) fn take(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take()
    }
}

impl fmt::Debug for NamingDirectory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "NamingDirectory({})", self.root.display())
    }
}

impl NamingDirectory {
    /// The directory at `root`, whose failed writes are kept in `failures`.
    pub(crate) fn open(root: &Path, failures: WriteFailures) -> Result<Self, OpenDirectoryError> {
        Ok(NamingDirectory { root: root.to_path_buf(), inner: MmapDirectory::open(root)?, failures })
    }
}

/// `error` with `path` in front of its message, of the same kind, kept in `failures` if it is the first.
fn naming(failures: &WriteFailures, path: &Path, error: io::Error) -> io::Error {
    let named = io::Error::new(error.kind(), format!("{}: {error}", path.display()));
    failures.record(&named);
    named
}

/// A file being written: every error of a write, flush or the final terminate names it.
struct NamingWriter {
    path: PathBuf,
    failures: WriteFailures,
    inner: Box<dyn TerminatingWrite + Send + Sync>,
}

impl Write for NamingWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf).map_err(|e| naming(&self.failures, &self.path, e))
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().map_err(|e| naming(&self.failures, &self.path, e))
    }
}

impl TerminatingWrite for NamingWriter {
    fn terminate_ref(&mut self, token: AntiCallToken) -> io::Result<()> {
        self.inner.terminate_ref(token).map_err(|e| naming(&self.failures, &self.path, e))
    }
}

impl Directory for NamingDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn open_read(&self, path: &Path) -> Result<FileSlice, OpenReadError> {
        self.inner.open_read(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    /// A file that cannot be created (a full disk can refuse even that) is named as a failed write is.
    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let full = self.root.join(path);
        let failed = |e: io::Error| OpenWriteError::wrap_io_error(naming(&self.failures, &full, e), path.to_path_buf());
        let inner = match self.inner.open_write(path) {
            Ok(writer) => writer.into_inner().map_err(|e| failed(e.into_error()))?,
            Err(OpenWriteError::IoError { io_error, .. }) => {
                return Err(failed(io::Error::new(io_error.kind(), io_error.to_string())))
            }
            Err(other) => return Err(other),
        };
        Ok(BufWriter::new(Box::new(NamingWriter { path: full.clone(), failures: self.failures.clone(), inner })))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    /// The error names the file replaced (`meta.json`), tantivy's own the temporary it was written to.
    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.inner.atomic_write(path, data).map_err(|e| naming(&self.failures, &self.root.join(path), e))
    }

    fn sync_directory(&self) -> io::Result<()> {
        self.inner.sync_directory().map_err(|e| naming(&self.failures, &self.root, e))
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}
