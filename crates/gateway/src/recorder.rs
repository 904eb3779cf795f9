//! The gateway's recorder: appends each conversation's new lines to its recording (see
//! [`crate::record`]), keeping the files of the conversations recorded last open.
//!
//! Two costs shape it, both measured on the peers bench (2-core VM, one client in turn):
//!
//! - Creating a file can cost the filesystem long (ext4 searching its inode bitmaps took
//!   0.4–0.8 ms of CPU per new file), time in which an async worker would serve no request. So
//!   a conversation's file is created on a thread of the recorder's own: one thread, not a
//!   blocking-pool task per file (files created side by side in one directory contend in the
//!   filesystem; a task per append cost 6–15 % of the highest rate).
//! - Handing every append to that thread, which opened and closed the file each time, cost
//!   0.13 ms of CPU per request on average at one client (a sleeping thread woken and waking
//!   the save back, an `openat`, a `close`): about a seventh of the gateway's CPU per request
//!   there. So once a conversation's file is open, its appends are written by the save itself
//!   through the file kept open: one `write` of a few hundred bytes into the page cache (and an
//!   `fstat`), no hand-over.
//!
//! A kept file that was removed (its link count 0) is created again, and its directory with
//! it. A kept file renamed away (rotated) keeps receiving its conversation's appends until it
//! is closed: at most [`KEPT_OPEN`] files are kept, the least recently appended to closed
//! first.

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::record;

/// How many conversations' files are kept open (each one file descriptor).
pub(crate) const KEPT_OPEN: usize = 128;

/// Appends recordings under one directory.
#[derive(Debug)]
pub(crate) struct Recorder {
    dir: PathBuf,
    kept: Mutex<Kept>,
    creations: std::sync::mpsc::Sender<Creation>,
}

/// The open files, each with when it was last appended to (a count of appends).
#[derive(Debug, Default)]
struct Kept {
    files: HashMap<PathBuf, (Arc<File>, u64)>,
    appends: u64,
}

impl Kept {
    fn get(&mut self, path: &Path) -> Option<Arc<File>> {
        self.appends += 1;
        let now = self.appends;
        self.files.get_mut(path).map(|(file, used)| {
            *used = now;
            Arc::clone(file)
        })
    }

    fn keep(&mut self, path: PathBuf, file: Arc<File>) {
        if self.files.len() >= KEPT_OPEN && !self.files.contains_key(&path) {
            let oldest = self.files.iter().min_by_key(|(_, (_, used))| *used).map(|(p, _)| p.clone());
            if let Some(oldest) = oldest {
                self.files.remove(&oldest);
            }
        }
        self.appends += 1;
        self.files.insert(path, (file, self.appends));
    }
}

/// A file to open (creating it when missing) and its first lines, for the recorder's thread.
#[derive(Debug)]
struct Creation {
    path: PathBuf,
    text: Vec<u8>,
    done: tokio::sync::oneshot::Sender<std::io::Result<File>>,
}

impl Recorder {
    /// Starts the thread creating files under `dir`; it ends once the recorder is dropped and
    /// the creations already sent are done.
    pub(crate) fn start(dir: PathBuf) -> std::io::Result<Self> {
        let (creations, queue) = std::sync::mpsc::channel::<Creation>();
        let thread_dir = dir.clone();
        std::thread::Builder::new().name("looprail-record".into()).spawn(move || {
            for Creation { path, text, done } in queue {
                let created = record::open_appending(&thread_dir, &path)
                    .and_then(|mut file| file.write_all(&text).map(|()| file));
                // A request that stopped waiting still gets its lines written.
                let _ = done.send(created);
            }
        })?;
        Ok(Self { dir, kept: Mutex::new(Kept::default()), creations })
    }

    /// Appends `text` (whole lines) to conversation `id`'s recording; returns once written.
    pub(crate) async fn append(&self, id: &str, text: Vec<u8>) -> std::io::Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        let path = record::file_for(&self.dir, id);
        let kept = self.kept.lock().ok().and_then(|mut kept| kept.get(&path));
        // A kept file removed since it was opened (no link left) is made again below.
        if let Some(file) = kept
            && file.metadata()?.nlink() > 0
        {
            return (&*file).write_all(&text);
        }
        let stopped = || std::io::Error::other("the recording thread has stopped");
        let (done, outcome) = tokio::sync::oneshot::channel();
        self.creations.send(Creation { path: path.clone(), text, done }).map_err(|_| stopped())?;
        let file = outcome.await.map_err(|_| stopped())??;
        if let Ok(mut kept) = self.kept.lock() {
            kept.keep(path, Arc::new(file));
        }
        Ok(())
    }

    /// How many files are open now.
    #[cfg(test)]
    fn open_files(&self) -> usize {
        self.kept.lock().map_or(0, |kept| kept.files.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use looprail_loop_core::message::Message;

    fn said(text: &str) -> Vec<u8> {
        record::lines(&[Message::user(text)]).expect("lines")
    }

    fn read(dir: &std::path::Path, id: &str) -> String {
        std::fs::read_to_string(record::file_for(dir, id)).expect("recording")
    }

    #[tokio::test]
    async fn appends_through_the_kept_file_and_make_a_removed_one_again() {
        let root = tempfile::tempdir().expect("temporary directory");
        let dir = root.path().join("records");
        let recorder = Recorder::start(dir.clone()).expect("recording thread");
        recorder.append("c", said("one")).await.expect("first append");
        recorder.append("c", said("two")).await.expect("second append");
        assert_eq!(
            read(&dir, "c"),
            "{\"content\":\"one\",\"role\":\"user\"}\n{\"content\":\"two\",\"role\":\"user\"}\n"
        );
        assert_eq!(recorder.open_files(), 1);
        std::fs::remove_dir_all(&dir).expect("directory removed");
        recorder.append("c", said("three")).await.expect("append after removal");
        assert_eq!(read(&dir, "c"), "{\"content\":\"three\",\"role\":\"user\"}\n");
        std::fs::remove_file(record::file_for(&dir, "c")).expect("file removed");
        recorder.append("c", said("four")).await.expect("append after the file's removal");
        recorder.append("c", said("five")).await.expect("append");
        assert_eq!(read(&dir, "c").lines().count(), 2);
        assert_eq!(recorder.open_files(), 1);
    }

    #[tokio::test]
    async fn keeps_at_most_its_bound_open_and_closes_the_least_recently_used() {
        let root = tempfile::tempdir().expect("temporary directory");
        let dir = root.path().to_path_buf();
        let recorder = Recorder::start(dir.clone()).expect("recording thread");
        for i in 0..=KEPT_OPEN {
            recorder.append(&format!("c{i}"), said("first")).await.expect("append");
            // Conversation 0 stays the most recently used.
            recorder.append("c0", said("again")).await.expect("append");
        }
        assert_eq!(recorder.open_files(), KEPT_OPEN);
        let kept =
            |id: &str| recorder.kept.lock().expect("lock").files.contains_key(&record::file_for(&dir, id));
        assert!(kept("c0") && !kept("c1") && kept(&format!("c{KEPT_OPEN}")));
        // A closed conversation's file is opened again and appended to, not truncated.
        recorder.append("c1", said("later")).await.expect("append");
        assert_eq!(read(&dir, "c1").lines().count(), 2);
        assert_eq!(read(&dir, "c0").lines().count(), KEPT_OPEN + 2);
    }
}
