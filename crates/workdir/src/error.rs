//! What can go wrong, as the model and the operator should read it.

use std::io;

/// A refused or failed file operation.
#[derive(Debug, thiserror::Error)]
pub enum WorkdirError {
    /// The path is absolute, leads outside the work directory (by `..` or a symlink), or goes
    /// through a symlink where none is followed.
    #[error(
        "`{path}` is outside the work directory or reached through a symlink; use a plain path inside it"
    )]
    Outside {
        /// The path as given.
        path: String,
    },
    /// The path is not usable at all (empty, or holding a NUL byte).
    #[error("`{path}` is not a valid path: {reason}")]
    InvalidPath {
        /// The path as given (NUL bytes shown as `\0`).
        path: String,
        /// Why.
        reason: &'static str,
    },
    /// The path names something other than what the operation needs: a FIFO, socket or device
    /// where a regular file is needed, a file where a directory is needed.
    #[error("`{path}` is {found}, not {expected}")]
    WrongKind {
        /// The path as given.
        path: String,
        /// What is there.
        found: &'static str,
        /// What the operation needs.
        expected: &'static str,
    },
    /// The operating system refused or failed.
    #[error("`{path}`: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// The error.
        #[source]
        source: io::Error,
    },
}

impl WorkdirError {
    /// True when the caller asked for something not allowed (as opposed to a failure).
    pub fn is_refusal(&self) -> bool {
        !matches!(self, WorkdirError::Io { .. })
    }

    /// Maps an I/O error of an operation on `path`: escapes and symlink refusals become
    /// [`WorkdirError::Outside`].
    pub(crate) fn from_io(path: &str, source: io::Error) -> Self {
        // cap-std reports an escape as PermissionDenied with this text; O_NOFOLLOW on a symlink
        // is ELOOP.
        let escaped = source.kind() == io::ErrorKind::PermissionDenied
            && source.to_string().contains("outside of the filesystem");
        let symlink = source.raw_os_error() == Some(ELOOP);
        if escaped || symlink {
            WorkdirError::Outside { path: path.to_owned() }
        } else if source.raw_os_error() == Some(ENXIO) {
            // A non-blocking open of a FIFO with no reader, or of a device with nothing behind it.
            WorkdirError::WrongKind {
                path: path.to_owned(),
                found: "a FIFO or device",
                expected: "a regular file",
            }
        } else {
            WorkdirError::Io { path: path.to_owned(), source }
        }
    }
}

/// `ELOOP` on Linux and the BSDs' numbering differs; these are the Linux and macOS values.
#[cfg(target_os = "linux")]
const ELOOP: i32 = 40;
/// `ENXIO` (the same on Linux and macOS).
const ENXIO: i32 = 6;
#[cfg(not(target_os = "linux"))]
const ELOOP: i32 = 62;
