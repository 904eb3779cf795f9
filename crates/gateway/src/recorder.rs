//! The gateway's recorder: appends each conversation's new lines to its recording (see
//! [`crate::record`]), keeping the files of the conversations recorded last open.
//!
//! Three costs shape it, measured on the peers bench (2-core VM, one client in turn):
//!
//! - Creating a file can cost the filesystem long (ext4 searching its inode bitmaps took
//!   0.4–0.8 ms of CPU per new file, milliseconds on a disk full of recently deleted files), time
//!   in which an async worker would serve no request. So a conversation's file is created on a
//!   thread of the recorder's own: one thread, not a blocking-pool task per file (files created
//!   side by side in one directory contend in the filesystem; a task per append cost 6–15 % of
//!   the highest rate).
//! - A save does not wait for that thread: it hands it the lines and goes on, so the
//!   conversation's next request (which waits for the save) does not wait for the filesystem,
//!   unless [`WAITING_MAX`] bytes of lines are waiting there already (then saves wait, as they
//!   all did before). While a conversation has lines with the thread, its next ones go the
//!   same way, so its lines stay in order; an append the thread cannot make is logged and
//!   remembered ([`Recorder::take_failure`]): the conversation's next answer records from there.
//! - Handing every append to that thread, which opened and closed the file each time, cost
//!   0.13 ms of CPU per request on average at one client (a sleeping thread woken, an
//!   `openat`, a `close`): about a seventh of the gateway's CPU per request there. So once a
//!   conversation's file is open, its appends are written by the save itself through the file
//!   kept open: one `write` of a few hundred bytes into the page cache (and an `fstat`).
//!
//! A kept file that was removed (its link count 0) is created again, and its directory with
//! it. A kept file renamed away (rotated) keeps receiving its conversation's appends until it
//! is closed: at most [`KEPT_OPEN`] files are kept, the least recently appended to closed
//! first. [`Recorder::flushed`] waits for the thread's work (the gateway's shutdown).

use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::newest_kept::NewestKept;
use crate::record;

/// How many conversations' files are kept open (each one file descriptor).
pub(crate) const KEPT_OPEN: usize = 128;

/// How many conversations whose append failed are remembered until their next answer.
const FAILURES_KEPT: usize = 4096;

/// The most bytes of lines waiting for the recorder's thread: past it, a save waits for the
/// thread to catch up (a burst of new conversations on a slow disk, or a filesystem that
/// stopped answering, holds the saves, as before the thread took the lines without a wait).
const WAITING_MAX: usize = if cfg!(test) { 4096 } else { 64 << 20 };

/// Appends recordings under one directory.
pub(crate) struct Recorder {
    dir: PathBuf,
    shared: Arc<Shared>,
    jobs: std::sync::mpsc::Sender<Job>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("dir", &self.dir).finish_non_exhaustive()
    }
}

/// What the saves and the recorder's thread share.
struct Shared {
    kept: Mutex<Kept>,
    /// Conversations whose last append failed, each with how many messages its recording held
    /// before it.
    failures: Mutex<NewestKept<String, usize>>,
    /// Told each time the thread has done a job (lines waiting for room wait for it).
    caught_up: tokio::sync::Notify,
}

impl Shared {
    /// The recorder's thread: opens `path` (made when missing) and appends `text`, then keeps
    /// the file open for the saves and lets the appends waiting for room go on.
    fn open_and_append(&self, dir: &Path, id: &str, path: PathBuf, text: &[u8], recorded: usize) {
        let opened =
            record::open_appending(dir, &path).and_then(|mut file| file.write_all(text).map(|()| file));
        let mut kept = self.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        kept.waiting = kept.waiting.saturating_sub(text.len());
        if let Some(count) = kept.with_thread.get_mut(&path) {
            *count -= 1;
            if *count == 0 {
                kept.with_thread.remove(&path);
            }
        }
        match opened {
            Ok(file) => kept.keep(path, Arc::new(file)),
            Err(e) => {
                drop(kept);
                self.failed(id, recorded, &e);
            }
        }
        self.caught_up.notify_waiters();
    }

    fn failed(&self, id: &str, recorded: usize, error: &std::io::Error) {
        tracing::warn!(conversation = %id, error = %error, "gateway: conversation not recorded");
        if let Ok(mut failures) = self.failures.lock() {
            let before = failures.take(id).map_or(recorded, |earlier| earlier.min(recorded));
            failures.keep(id.to_owned(), before);
        }
    }
}

/// The open files, each with when it was last appended to (a count of appends), and the files
/// with lines still at the recorder's thread.
#[derive(Default)]
struct Kept {
    files: HashMap<PathBuf, (Arc<File>, u64)>,
    appends: u64,
    with_thread: HashMap<PathBuf, usize>,
    /// The bytes of the lines with the thread.
    waiting: usize,
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

/// Work for the recorder's thread.
enum Job {
    /// Lines for a file to open (creating it when missing), of conversation `id`, whose
    /// recording held `recorded` messages before them.
    Append { id: String, path: PathBuf, text: Vec<u8>, recorded: usize },
    /// Answered once the jobs sent before are done.
    Flush(tokio::sync::oneshot::Sender<()>),
}

impl Recorder {
    /// Starts the thread creating files under `dir`; it ends once the recorder is dropped and
    /// the jobs already sent are done.
    pub(crate) fn start(dir: PathBuf) -> std::io::Result<Self> {
        let (jobs, queue) = std::sync::mpsc::channel::<Job>();
        let shared = Arc::new(Shared {
            kept: Mutex::new(Kept::default()),
            failures: Mutex::new(NewestKept::new(FAILURES_KEPT)),
            caught_up: tokio::sync::Notify::new(),
        });
        let (thread_dir, thread_shared) = (dir.clone(), Arc::clone(&shared));
        std::thread::Builder::new().name("looprail-record".into()).spawn(move || {
            for job in queue {
                match job {
                    Job::Append { id, path, text, recorded } => {
                        thread_shared.open_and_append(&thread_dir, &id, path, &text, recorded);
                    }
                    Job::Flush(done) => {
                        let _ = done.send(());
                    }
                }
            }
        })?;
        Ok(Self { dir, shared, jobs })
    }

    /// Appends `text` (whole lines) to conversation `id`'s recording, which held `recorded`
    /// messages before them: written now through its open file, else handed to the recorder's
    /// thread, waiting only while [`WAITING_MAX`] bytes wait there (a failure is logged and
    /// remembered for [`Recorder::take_failure`]).
    pub(crate) async fn append(&self, id: &str, text: Vec<u8>, recorded: usize) {
        if text.is_empty() {
            return;
        }
        let path = record::file_for(&self.dir, id);
        let file = {
            let mut kept = self.shared.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if kept.with_thread.contains_key(&path) { None } else { kept.get(&path) }
        };
        // A kept file removed since it was opened (no link left) is made again by the thread.
        if let Some(file) = file {
            match file.metadata().map(|m| m.nlink() > 0) {
                Ok(true) => {
                    if let Err(e) = (&*file).write_all(&text) {
                        self.shared.failed(id, recorded, &e);
                    }
                    return;
                }
                Ok(false) => {}
                Err(e) => return self.shared.failed(id, recorded, &e),
            }
        }
        loop {
            // Made before the check: a job done between the check and the wait still wakes it.
            let caught_up = self.shared.caught_up.notified();
            let mut caught_up = std::pin::pin!(caught_up);
            caught_up.as_mut().enable();
            let room = {
                let mut kept = self.shared.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                let room = kept.waiting == 0 || kept.waiting + text.len() <= WAITING_MAX;
                if room {
                    kept.waiting += text.len();
                    *kept.with_thread.entry(path.clone()).or_default() += 1;
                }
                room
            };
            if room {
                break;
            }
            caught_up.await;
        }
        let size = text.len();
        let job = Job::Append { id: id.to_owned(), path: path.clone(), text, recorded };
        if self.jobs.send(job).is_err() {
            let mut kept = self.shared.kept.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            kept.with_thread.remove(&path);
            kept.waiting = kept.waiting.saturating_sub(size);
            drop(kept);
            self.shared.failed(id, recorded, &std::io::Error::other("the recording thread has stopped"));
        }
    }

    /// How many messages conversation `id`'s recording held before an append that failed
    /// since its last answer, if one did: its next answer records from there.
    pub(crate) fn take_failure(&self, id: &str) -> Option<usize> {
        self.shared.failures.lock().ok().and_then(|mut failures| failures.take(id))
    }

    /// Returns once the recorder's thread has done the work handed to it so far.
    pub(crate) async fn flushed(&self) {
        let (done, flushed) = tokio::sync::oneshot::channel();
        if self.jobs.send(Job::Flush(done)).is_ok() {
            let _ = flushed.await;
        }
    }

    /// How many files are open now.
    #[cfg(test)]
    fn open_files(&self) -> usize {
        self.shared.kept.lock().map_or(0, |kept| kept.files.len())
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
        // The second append comes while the first is with the thread: it follows it there.
        recorder.append("c", said("one"), 0).await;
        recorder.append("c", said("two"), 1).await;
        recorder.flushed().await;
        assert_eq!(
            read(&dir, "c"),
            "{\"content\":\"one\",\"role\":\"user\"}\n{\"content\":\"two\",\"role\":\"user\"}\n"
        );
        assert_eq!(recorder.open_files(), 1);
        std::fs::remove_dir_all(&dir).expect("directory removed");
        recorder.append("c", said("three"), 2).await;
        recorder.flushed().await;
        assert_eq!(read(&dir, "c"), "{\"content\":\"three\",\"role\":\"user\"}\n");
        std::fs::remove_file(record::file_for(&dir, "c")).expect("file removed");
        recorder.append("c", said("four"), 3).await;
        recorder.flushed().await;
        recorder.append("c", said("five"), 4).await; // through the kept file, at once
        assert_eq!(read(&dir, "c").lines().count(), 2);
        assert_eq!(recorder.open_files(), 1);
        assert_eq!(recorder.take_failure("c"), None);
    }

    #[tokio::test]
    async fn an_append_that_fails_is_told_once_from_the_earliest_count() {
        let root = tempfile::tempdir().expect("temporary directory");
        // A file where the directory should be: nothing can be created under it.
        let dir = root.path().join("records");
        std::fs::write(&dir, "not a directory").expect("file");
        let recorder = Recorder::start(dir.clone()).expect("recording thread");
        recorder.append("c", said("one"), 4).await;
        recorder.append("c", said("two"), 6).await; // the recording still holds 4
        recorder.flushed().await;
        assert_eq!(recorder.take_failure("c"), Some(4));
        assert_eq!(recorder.take_failure("c"), None, "told once");
        assert_eq!(recorder.open_files(), 0);
        // Once the directory can be made, the next append is written.
        std::fs::remove_file(&dir).expect("file removed");
        recorder.append("c", said("three"), 4).await;
        recorder.flushed().await;
        assert_eq!(read(&dir, "c").lines().count(), 1);
        assert_eq!(recorder.take_failure("c"), None);
    }

    #[tokio::test]
    async fn past_the_bound_an_append_waits_for_a_stuck_filesystem() {
        let root = tempfile::tempdir().expect("temporary directory");
        let dir = root.path().to_path_buf();
        // A FIFO: the thread's open blocks until a reader comes.
        let fifo = record::file_for(&dir, "stuck");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
        assert!(made.success());
        let recorder = Arc::new(Recorder::start(dir.clone()).expect("recording thread"));
        let line = said(&"x".repeat(1000));
        let fit = WAITING_MAX / line.len();
        for recorded in 0..fit {
            recorder.append("stuck", line.clone(), recorded).await; // within the bound: at once
        }
        let past = tokio::spawn({
            let (recorder, line) = (Arc::clone(&recorder), line.clone());
            async move { recorder.append("other", line, 0).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(!past.is_finished(), "past the bound it waits");
        let reader = std::thread::spawn(move || std::fs::read(&fifo).expect("read").len());
        tokio::time::timeout(std::time::Duration::from_secs(10), past)
            .await
            .expect("caught up")
            .expect("task");
        recorder.flushed().await;
        drop(recorder); // the thread closes the FIFO once its work is done
        assert_eq!(reader.join().expect("reader"), fit * line.len(), "every line written");
        assert_eq!(read(&dir, "other").len(), line.len());
    }

    #[tokio::test]
    async fn keeps_at_most_its_bound_open_and_closes_the_least_recently_used() {
        let root = tempfile::tempdir().expect("temporary directory");
        let dir = root.path().to_path_buf();
        let recorder = Recorder::start(dir.clone()).expect("recording thread");
        for i in 0..=KEPT_OPEN {
            recorder.append(&format!("c{i}"), said("first"), 0).await;
            recorder.flushed().await;
            // Conversation 0 stays the most recently used.
            recorder.append("c0", said("again"), 1).await;
        }
        recorder.flushed().await;
        assert_eq!(recorder.open_files(), KEPT_OPEN);
        let kept = |id: &str| {
            recorder.shared.kept.lock().expect("lock").files.contains_key(&record::file_for(&dir, id))
        };
        assert!(kept("c0") && !kept("c1") && kept(&format!("c{KEPT_OPEN}")));
        // A closed conversation's file is opened again and appended to, not truncated.
        recorder.append("c1", said("later"), 1).await;
        recorder.flushed().await;
        assert_eq!(read(&dir, "c1").lines().count(), 2);
        assert_eq!(read(&dir, "c0").lines().count(), KEPT_OPEN + 2);
    }
}
