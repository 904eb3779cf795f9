//! [`Workdir`]: every file operation resolved beneath one directory handle.

use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::ambient_authority;
use cap_std::fs::{Dir, File, FileType, OpenOptions};

use crate::error::WorkdirError;

/// Caps that keep a call's time and memory bounded whatever the directory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes `read_file` returns at most (the rest is never read).
    pub max_read: u64,
    /// Files `search_text` opens at most.
    pub max_search_files: usize,
    /// Bytes of each file `search_text` looks at.
    pub max_search_bytes: u64,
    /// Matching lines `search_text` returns at most.
    pub max_matches: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_read: 64 * 1024,
            max_search_files: 10_000,
            max_search_bytes: 1024 * 1024,
            max_matches: 100,
        }
    }
}

/// What [`Workdir::read`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadResult {
    /// The text (invalid UTF-8 replaced), at most the cap.
    pub text: String,
    /// The file's size in bytes.
    pub size: u64,
    /// True when the file is larger than what was read.
    pub truncated: bool,
}

/// A directory the tools cannot leave. Cheap to clone (one shared handle).
#[derive(Debug, Clone)]
pub struct Workdir {
    root: Arc<Dir>,
    shown: PathBuf,
    pub(crate) limits: Limits,
}

/// The kind of a file type, for messages.
pub(crate) fn kind_name(file_type: FileType) -> &'static str {
    use cap_std::fs::FileTypeExt;
    if file_type.is_file() {
        "a regular file"
    } else if file_type.is_dir() {
        "a directory"
    } else if file_type.is_symlink() {
        "a symlink"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() || file_type.is_block_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

impl Workdir {
    /// Opens `root` (which must be a directory) with the default [`Limits`].
    pub fn open(root: &Path) -> Result<Self, WorkdirError> {
        let shown = root.display().to_string();
        let dir = Dir::open_ambient_dir(root, ambient_authority())
            .map_err(|source| WorkdirError::Io { path: shown.clone(), source })?;
        Ok(Self { root: Arc::new(dir), shown: root.to_path_buf(), limits: Limits::default() })
    }

    /// The same directory with other limits.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The directory as it was named when opened (for display only).
    pub fn path(&self) -> &Path {
        &self.shown
    }

    /// Checks what the model gave before any system call: not empty, no NUL, relative. The
    /// confinement itself does not depend on this; it only gives clearer messages.
    pub(crate) fn relative<'a>(&self, requested: &'a str) -> Result<&'a Path, WorkdirError> {
        let invalid = |reason| WorkdirError::InvalidPath { path: requested.replace('\0', "\\0"), reason };
        if requested.is_empty() {
            return Err(invalid("it is empty"));
        }
        if requested.contains('\0') {
            return Err(invalid("it holds a NUL byte"));
        }
        let path = Path::new(requested);
        if path.is_absolute()
            || path.components().any(|c| matches!(c, Component::Prefix(_) | Component::RootDir))
        {
            return Err(WorkdirError::Outside { path: requested.to_owned() });
        }
        Ok(path)
    }

    /// Opens a regular file beneath the root, non-blocking (a FIFO never hangs the open), and
    /// checks the opened handle itself: what was opened is what is judged.
    fn open_regular(&self, requested: &str, options: &OpenOptions) -> Result<File, WorkdirError> {
        let path = self.relative(requested)?;
        let file = self.root.open_with(path, options).map_err(|e| WorkdirError::from_io(requested, e))?;
        let file_type = file.metadata().map_err(|e| WorkdirError::from_io(requested, e))?.file_type();
        if !file_type.is_file() {
            return Err(WorkdirError::WrongKind {
                path: requested.to_owned(),
                found: kind_name(file_type),
                expected: "a regular file",
            });
        }
        Ok(file)
    }

    /// Reads at most `cap` bytes of a regular file (symlinks inside the directory are
    /// followed; nothing outside it can be reached).
    pub fn read(&self, requested: &str, cap: u64) -> Result<ReadResult, WorkdirError> {
        let mut options = OpenOptions::new();
        options.read(true).nonblock(true);
        let file = self.open_regular(requested, &options)?;
        let size = file.metadata().map_err(|e| WorkdirError::from_io(requested, e))?.len();
        read_capped(file, size, cap).map_err(|e| WorkdirError::from_io(requested, e))
    }

    /// Replaces (or creates) a regular file, creating missing parent directories. Never writes
    /// through a symlink: a link as the last component is refused, whatever it points to.
    pub fn write(&self, requested: &str, content: &str) -> Result<u64, WorkdirError> {
        let path = self.relative(requested)?;
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            match self.root.metadata(parent) {
                Ok(meta) if meta.is_dir() => {}
                Ok(meta) => {
                    return Err(WorkdirError::WrongKind {
                        path: parent.display().to_string(),
                        found: kind_name(meta.file_type()),
                        expected: "a directory",
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    self.root.create_dir_all(parent).map_err(|e| WorkdirError::from_io(requested, e))?;
                }
                Err(e) => return Err(WorkdirError::from_io(requested, e)),
            }
        }
        // A clearer message for what is plainly not a file; the handle check below is what
        // holds if the path changes in between.
        if let Ok(meta) = self.root.symlink_metadata(path)
            && !meta.is_file()
        {
            let found = kind_name(meta.file_type());
            return Err(if meta.is_symlink() {
                WorkdirError::Outside { path: requested.to_owned() }
            } else {
                WorkdirError::WrongKind { path: requested.to_owned(), found, expected: "a regular file" }
            });
        }
        let mut options = OpenOptions::new();
        // No truncate here: a file is emptied only once the handle shows it is a regular file.
        options.write(true).create(true).nonblock(true).follow(FollowSymlinks::No);
        let mut file = self.open_regular(requested, &options)?;
        let io = |e| WorkdirError::from_io(requested, e);
        file.set_len(0).map_err(io)?;
        file.write_all(content.as_bytes()).map_err(io)?;
        file.flush().map_err(io)?;
        Ok(content.len() as u64)
    }

    /// The entries of a directory, sorted: directories end in `/`, symlinks in `@` (not
    /// followed).
    pub fn list(&self, requested: &str) -> Result<Vec<String>, WorkdirError> {
        let dir = self.open_dir(requested)?;
        let entries = dir.entries().map_err(|e| WorkdirError::from_io(requested, e))?;
        let mut names: Vec<String> = entries
            .filter_map(Result::ok)
            .map(|entry| {
                let name = entry.file_name().to_string_lossy().into_owned();
                match entry.file_type() {
                    Ok(t) if t.is_dir() => format!("{name}/"),
                    Ok(t) if t.is_symlink() => format!("{name}@"),
                    _ => name,
                }
            })
            .collect();
        names.sort();
        Ok(names)
    }

    /// Opens a directory beneath the root (`.` is the root itself).
    pub(crate) fn open_dir(&self, requested: &str) -> Result<Dir, WorkdirError> {
        let path = self.relative(requested)?;
        let dir = self.root.open_dir(path).map_err(|e| {
            if e.raw_os_error() == Some(ENOTDIR) {
                WorkdirError::WrongKind {
                    path: requested.to_owned(),
                    found: "a file",
                    expected: "a directory",
                }
            } else {
                WorkdirError::from_io(requested, e)
            }
        })?;
        Ok(dir)
    }
}

/// `ENOTDIR` (the same on Linux and macOS).
const ENOTDIR: i32 = 20;

/// Reads at most `cap` bytes of `file` (of `size` bytes) as text.
pub(crate) fn read_capped(file: File, size: u64, cap: u64) -> std::io::Result<ReadResult> {
    let mut bytes = Vec::with_capacity(size.min(cap) as usize);
    file.take(cap).read_to_end(&mut bytes)?;
    let truncated = size > bytes.len() as u64;
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(err) => {
            // A cut in the middle of a character is not corruption: drop the partial tail.
            let valid = err.utf8_error().valid_up_to();
            let bytes = err.into_bytes();
            if truncated && bytes.len() - valid < 4 && err_is_tail(&bytes[valid..]) {
                String::from_utf8_lossy(&bytes[..valid]).into_owned()
            } else {
                String::from_utf8_lossy(&bytes).into_owned()
            }
        }
    };
    Ok(ReadResult { text, size, truncated })
}

/// True when `tail` is the start of a multi-byte UTF-8 character.
fn err_is_tail(tail: &[u8]) -> bool {
    tail.first().is_some_and(|b| *b >= 0xc0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The boundary itself, without `write`'s friendlier pre-check: an open for writing
    /// through a dangling link to outside fails, and nothing is created there.
    #[test]
    fn the_handle_level_open_refuses_a_dangling_link_by_itself() {
        let inside = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path().join("x"), inside.path().join("link")).unwrap();
        std::os::unix::fs::symlink("../../../../../../../../tmp", inside.path().join("up")).unwrap();
        let workdir = Workdir::open(inside.path()).unwrap();
        let mut options = OpenOptions::new();
        options.write(true).create(true).nonblock(true).follow(FollowSymlinks::No);
        assert!(matches!(workdir.open_regular("link", &options), Err(WorkdirError::Outside { .. })));
        // Following links is confined too: a link climbing out is an escape.
        let mut following = OpenOptions::new();
        following.write(true).create(true);
        assert!(workdir.open_regular("link", &following).is_err());
        assert!(workdir.open_regular("up/looprail-escape-probe", &following).is_err());
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
        assert!(!Path::new("/tmp/looprail-escape-probe").exists());
    }
}
