//! File tools for looprail agents, confined by construction to a work directory.
//!
//! A model's tool arguments are untrusted input: a path may be absolute, climb with `..`, hold
//! a NUL byte, or name a symlink that a cloned repository planted to point outside. Checking
//! path strings cannot close every hole (a dangling link's target does not exist yet, and a
//! path can change between the check and the use), so [`Workdir`] does not check strings: it
//! holds an open handle on the directory and resolves every open, create and listing beneath
//! that handle with [`cap_std`] (`openat2(RESOLVE_BENEATH)` on Linux). Nothing can name a file
//! outside it.
//!
//! On top of that, the tools:
//! - never write through a symlink (the last component is opened without following it);
//! - read and write only regular files: a FIFO, socket or device is refused after opening it
//!   non-blocking, judged by the opened handle itself, so a swap between check and use changes
//!   nothing and a FIFO never hangs a call;
//! - read at most a byte cap, without loading the rest of the file;
//! - search without following symlinks, within a cap on files and bytes.
//!
//! ```
//! use looprail_workdir::Workdir;
//!
//! let dir = tempfile::tempdir()?;
//! let workdir = Workdir::open(dir.path())?;
//! workdir.write("notes/todo.txt", "ship it")?;
//! assert_eq!(workdir.read("notes/todo.txt", 1024)?.text, "ship it");
//! assert!(workdir.write("../escape.txt", "no").is_err());
//! assert!(workdir.write("/etc/passwd", "no").is_err());
//!
//! // The same operations as agent tools: read_file, list_dir, search_text, write_file.
//! let tools = workdir.tools();
//! assert_eq!(tools.definitions().len(), 4);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod access;
mod error;
mod search;
mod tools;

pub use access::{Limits, ReadResult, Workdir};
pub use error::WorkdirError;
