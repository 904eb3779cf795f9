//! The work directory cannot be left, whatever the model asks (issue 14): dangling and nested
//! symlinks, links to directories, `..`, absolute paths, NUL bytes, FIFOs, a huge sparse file
//! and a path swapped between check and use.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::os::unix::fs::symlink;
use std::path::Path;

use looprail_loop_core::tool::{ToolContext, ToolErrorKind};
use looprail_workdir::{Limits, Workdir, WorkdirError};
use serde_json::json;

struct Sandbox {
    /// The work directory.
    inside: tempfile::TempDir,
    /// A directory beside it that must never be touched.
    outside: tempfile::TempDir,
}

fn sandbox() -> Sandbox {
    Sandbox { inside: tempfile::tempdir().unwrap(), outside: tempfile::tempdir().unwrap() }
}

impl Sandbox {
    fn workdir(&self) -> Workdir {
        Workdir::open(self.inside.path()).unwrap()
    }
    fn outside(&self, name: &str) -> std::path::PathBuf {
        self.outside.path().join(name)
    }
    fn inside(&self, name: &str) -> std::path::PathBuf {
        self.inside.path().join(name)
    }
    fn outside_is_empty(&self) -> bool {
        std::fs::read_dir(self.outside.path()).unwrap().next().is_none()
    }
}

fn refused(result: Result<impl std::fmt::Debug, WorkdirError>) -> WorkdirError {
    let error = result.expect_err("must be refused");
    assert!(error.is_refusal(), "a refusal, not a failure: {error:?}");
    error
}

#[test]
fn a_dangling_symlink_to_outside_is_never_written_through() {
    let s = sandbox();
    symlink(s.outside("planted.txt"), s.inside("notes.txt")).unwrap();
    refused(s.workdir().write("notes.txt", "pwned"));
    assert!(s.outside_is_empty(), "nothing was created outside");
}

#[test]
fn a_dangling_symlink_one_directory_down_is_never_written_through() {
    let s = sandbox();
    std::fs::create_dir(s.inside("sub")).unwrap();
    symlink(s.outside("planted.txt"), s.inside("sub/notes.txt")).unwrap();
    refused(s.workdir().write("sub/notes.txt", "pwned"));
    assert!(s.outside_is_empty());
}

#[test]
fn a_symlinked_directory_leading_outside_is_refused_for_every_operation() {
    let s = sandbox();
    std::fs::write(s.outside("secret.txt"), "secret").unwrap();
    symlink(s.outside.path(), s.inside("link")).unwrap();
    let w = s.workdir();
    refused(w.write("link/new.txt", "pwned"));
    refused(w.read("link/secret.txt", 1024));
    refused(w.list("link"));
    assert_eq!(std::fs::read_dir(s.outside.path()).unwrap().count(), 1, "no file added outside");
    // A listing shows the link without following it.
    assert_eq!(w.list(".").unwrap(), ["link@"]);
}

#[test]
fn a_symlink_to_an_existing_file_outside_is_neither_read_nor_written() {
    let s = sandbox();
    std::fs::write(s.outside("secret.txt"), "secret").unwrap();
    symlink(s.outside("secret.txt"), s.inside("secret.txt")).unwrap();
    let w = s.workdir();
    refused(w.read("secret.txt", 1024));
    refused(w.write("secret.txt", "changed"));
    assert_eq!(std::fs::read_to_string(s.outside("secret.txt")).unwrap(), "secret");
}

#[test]
fn dot_dot_absolute_paths_and_nul_bytes_are_refused() {
    let s = sandbox();
    let w = s.workdir();
    for path in ["../x.txt", "a/../../x.txt", "/etc/passwd", "/tmp/x.txt"] {
        assert!(matches!(refused(w.write(path, "x")), WorkdirError::Outside { .. }), "{path}");
    }
    assert!(matches!(refused(w.read("a\0b", 10)), WorkdirError::InvalidPath { .. }));
    assert!(matches!(refused(w.write("", "x")), WorkdirError::InvalidPath { .. }));
    assert!(s.outside_is_empty());
    // `..` that stays inside is just a path.
    w.write("a/b.txt", "ok").unwrap();
    assert_eq!(w.read("a/../a/b.txt", 10).unwrap().text, "ok");
}

#[test]
fn writes_create_directories_and_replace_files_inside() {
    let s = sandbox();
    let w = s.workdir();
    w.write("deep/er/file.txt", "a longer first text").unwrap();
    w.write("deep/er/file.txt", "short").unwrap();
    assert_eq!(std::fs::read_to_string(s.inside("deep/er/file.txt")).unwrap(), "short");
}

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success());
}

#[test]
fn a_fifo_is_refused_at_once_and_never_hangs_a_read_a_write_or_a_search() {
    let s = sandbox();
    mkfifo(&s.inside("pipe"));
    std::fs::write(s.inside("plain.txt"), "needle here").unwrap();
    let w = s.workdir();
    let error = refused(w.read("pipe", 1024));
    assert!(error.to_string().contains("FIFO"), "{error}");
    refused(w.write("pipe", "x"));
    let tools = w.tools();
    let search = tools.get("search_text").unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let found =
        runtime.block_on(search.call(json!({"pattern": "needle"}), ToolContext::detached("t"))).unwrap();
    assert_eq!(found.content, "plain.txt:1: needle here");
}

#[test]
fn a_huge_sparse_file_is_read_up_to_the_cap_only() {
    let s = sandbox();
    let file = std::fs::File::create(s.inside("huge.bin")).unwrap();
    file.set_len(8 * 1024 * 1024 * 1024).unwrap(); // 8 GiB, no blocks
    let read = s.workdir().read("huge.bin", 64 * 1024).unwrap();
    assert!(read.truncated);
    assert_eq!(read.size, 8 * 1024 * 1024 * 1024);
    assert_eq!(read.text.len(), 64 * 1024);
}

#[test]
fn a_cut_inside_a_multibyte_character_drops_the_partial_character() {
    let s = sandbox();
    std::fs::write(s.inside("utf8.txt"), "ab€cd").unwrap(); // € is 3 bytes at offset 2
    let read = s.workdir().read("utf8.txt", 3).unwrap();
    assert_eq!(read.text, "ab");
    assert!(read.truncated);
}

#[test]
fn a_path_swapped_for_a_symlink_after_a_check_is_still_confined() {
    // The race the old string check lost: a file that is plain when inspected becomes a link
    // to outside before the write. Here the swap happens between two operations; the write
    // judges the path again beneath the directory handle, so it is refused.
    let s = sandbox();
    let w = s.workdir();
    w.write("report.txt", "v1").unwrap();
    assert_eq!(w.read("report.txt", 100).unwrap().text, "v1");
    std::fs::remove_file(s.inside("report.txt")).unwrap();
    symlink(s.outside("report.txt"), s.inside("report.txt")).unwrap();
    refused(w.write("report.txt", "v2"));
    assert!(s.outside_is_empty());
}

#[test]
fn search_follows_no_symlink_loop_and_respects_its_caps() {
    let s = sandbox();
    std::fs::create_dir(s.inside("a")).unwrap();
    symlink(s.inside.path(), s.inside("a/loop")).unwrap();
    for i in 0..30 {
        std::fs::write(s.inside(&format!("a/f{i:02}.txt")), "match\nmatch\n").unwrap();
    }
    let w = s.workdir().with_limits(Limits { max_matches: 10, ..Limits::default() });
    let found = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(
            w.tools()
                .get("search_text")
                .unwrap()
                .call(json!({"pattern": "match"}), ToolContext::detached("t")),
        )
        .unwrap();
    assert_eq!(found.content.lines().filter(|l| l.contains(": match")).count(), 10);
    assert!(found.content.ends_with("[first 10 matches]"));
    let w = s.workdir().with_limits(Limits { max_search_files: 5, ..Limits::default() });
    let found = w.tools();
    let out = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(
            found.get("search_text").unwrap().call(json!({"pattern": "zzz"}), ToolContext::detached("t")),
        )
        .unwrap();
    assert!(out.content.ends_with("[stopped after 5 files]"), "{}", out.content);
}

#[tokio::test]
async fn tool_errors_tell_the_model_what_is_wrong() {
    let s = sandbox();
    let tools = s.workdir().tools();
    let write = tools.get("write_file").unwrap();
    let error =
        write.call(json!({"path": "../x", "content": "y"}), ToolContext::detached("t")).await.unwrap_err();
    assert_eq!(error.kind, ToolErrorKind::InvalidArguments);
    assert!(error.message.contains("outside the work directory"), "{}", error.message);
    let error = write.call(json!({"path": 7, "content": "y"}), ToolContext::detached("t")).await.unwrap_err();
    assert_eq!(error.kind, ToolErrorKind::InvalidArguments);
    let read = tools.get("read_file").unwrap();
    let error = read.call(json!({"path": "missing.txt"}), ToolContext::detached("t")).await.unwrap_err();
    assert_eq!(error.kind, ToolErrorKind::Failed, "a missing file is a failure, not a refusal");
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// Whatever path the model writes to, nothing appears outside the work directory.
        #[test]
        fn no_path_writes_outside(parts in prop::collection::vec(prop::sample::select(vec!["..", ".", "a", "b", "link", "dangling", "/", "/tmp"]), 1..6)) {
            let s = sandbox();
            std::fs::create_dir(s.inside("a")).unwrap();
            symlink(s.outside.path(), s.inside("link")).unwrap();
            symlink(s.outside("x"), s.inside("dangling")).unwrap();
            symlink(s.outside.path(), s.inside("a/link")).unwrap();
            let path = parts.join("/");
            let _ = s.workdir().write(&path, "x");
            let _ = s.workdir().write(&format!("{path}/f.txt"), "x");
            prop_assert!(s.outside_is_empty(), "{path} wrote outside");
        }
    }
}
