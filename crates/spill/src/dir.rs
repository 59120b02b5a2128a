//! The directory of temporary files and the mapping of I/O errors to SQLSTATEs.

use crate::SpillStats;
use pgerror::{codes, PgError, PgResult};
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// The directory where one server keeps its temporary files (`<data_dir>/pgsql_tmp`).
/// Cheap to clone; clones share the directory and its counters across sessions and threads.
#[derive(Clone, Debug)]
pub struct SpillDir {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    files: AtomicU64,
    bytes: AtomicU64,
}

impl SpillDir {
    /// Creates the directory if needed and removes everything in it: files of a previous
    /// run are garbage (a crash can leave some only where unlinked files are unsupported).
    pub fn open(path: impl Into<PathBuf>) -> PgResult<SpillDir> {
        let path = path.into();
        let failed = |what: &str, e: io::Error| {
            io_error(&format!("could not {what} \"{}\"", path.display()), e)
        };
        std::fs::create_dir_all(&path).map_err(|e| failed("create directory", e))?;
        for entry in std::fs::read_dir(&path).map_err(|e| failed("open directory", e))? {
            let entry = entry.map_err(|e| failed("read directory", e))?;
            let leftover = entry.path();
            let removed = match entry.file_type() {
                Ok(t) if t.is_dir() => std::fs::remove_dir_all(&leftover),
                _ => std::fs::remove_file(&leftover),
            };
            removed.map_err(|e| {
                io_error(
                    &format!("could not remove file \"{}\"", leftover.display()),
                    e,
                )
            })?;
        }
        Ok(SpillDir {
            inner: Arc::new(Inner {
                path,
                files: AtomicU64::new(0),
                bytes: AtomicU64::new(0),
            }),
        })
    }

    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Everything written through this directory since it was opened.
    pub fn stats(&self) -> SpillStats {
        SpillStats {
            files: self.inner.files.load(Ordering::Relaxed),
            bytes: self.inner.bytes.load(Ordering::Relaxed),
        }
    }

    /// A new temporary file, already unlinked (O_TMPFILE where the file system has it,
    /// else created and removed at once): it disappears when closed, even by kill -9.
    pub(crate) fn create_file(&self) -> PgResult<File> {
        tempfile::tempfile_in(self.path()).map_err(|e| self.error("create", e))
    }

    pub(crate) fn record_file(&self, bytes: u64) {
        self.inner.files.fetch_add(1, Ordering::Relaxed);
        self.inner.bytes.fetch_add(bytes, Ordering::Relaxed);
    }

    /// `verb` is "create", "write to" or "read from".
    pub(crate) fn error(&self, verb: &str, e: io::Error) -> PgError {
        io_error(
            &format!(
                "could not {verb} temporary file in \"{}\"",
                self.path().display()
            ),
            e,
        )
    }
}

/// ENOSPC and quota errors are 53100 disk_full, everything else 58030 io_error, as
/// PostgreSQL reports them; the message ends with the system's text for the error.
fn io_error(context: &str, e: io::Error) -> PgError {
    let code = match e.kind() {
        io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => codes::DISK_FULL,
        _ => codes::IO_ERROR,
    };
    let text = e.to_string();
    // "No space left on device (os error 28)" → "No space left on device", like PG's %m
    let reason = match text.rfind(" (os error ") {
        Some(at) => &text[..at],
        None => &text,
    };
    PgError::new(code, format!("{context}: {reason}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_removes_leftovers_and_keeps_the_directory() {
        let parent = tempfile::tempdir().unwrap();
        let path = parent.path().join("pgsql_tmp");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("pgsql_tmp123.0"), b"left by a crash").unwrap();
        std::fs::create_dir(path.join("pgsql_tmp123.sharedfileset")).unwrap();
        std::fs::write(path.join("pgsql_tmp123.sharedfileset").join("0.0"), b"x").unwrap();
        let dir = SpillDir::open(&path).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        // a missing directory is created
        let fresh = SpillDir::open(parent.path().join("a/b")).unwrap();
        assert!(fresh.path().is_dir());
    }

    #[test]
    fn open_on_a_file_is_an_io_error() {
        let file = tempfile::NamedTempFile::new().unwrap();
        let e = SpillDir::open(file.path()).unwrap_err();
        assert_eq!(e.code, codes::IO_ERROR);
        assert!(
            e.message.starts_with("could not create directory"),
            "{}",
            e.message
        );
    }

    #[test]
    fn no_space_is_disk_full() {
        let e = io_error(
            "could not write to temporary file in \"x\"",
            io::Error::from_raw_os_error(28),
        );
        assert_eq!(e.code, codes::DISK_FULL);
        assert_eq!(
            e.message,
            "could not write to temporary file in \"x\": No space left on device"
        );
        let e = io_error(
            "could not read from temporary file in \"x\"",
            io::Error::from_raw_os_error(5),
        );
        assert_eq!(e.code, codes::IO_ERROR);
        assert_eq!(
            e.message,
            "could not read from temporary file in \"x\": Input/output error"
        );
    }
}
