//! Each crate's integration tests are one binary whose `tests/main.rs` names every test file
//! beside it as a module (`autotests = false`): a file left out of main.rs would never be
//! compiled nor run, and nothing else would say so. This checks every crate of the workspace.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The test folders of the workspace: each crate's `tests/`, and the top-level one.
fn test_folders() -> Vec<PathBuf> {
    let root = repo();
    let mut folders: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().path().join("tests"))
        .filter(|dir| dir.is_dir())
        .collect();
    folders.push(root.join("tests/tests"));
    folders.sort();
    folders
}

/// The modules `main.rs` declares: `mod x;` lines (with or without a `#[path]` above them).
fn declared(main: &str) -> BTreeSet<String> {
    main.lines()
        .filter_map(|line| line.trim().strip_prefix("mod ")?.strip_suffix(';').map(str::to_owned))
        .collect()
}

/// What must be declared: each `.rs` file but main.rs, each folder holding a `main.rs` or a
/// `mod.rs`.
fn expected(folder: &Path) -> BTreeSet<String> {
    let mut wanted = BTreeSet::new();
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        if path.is_dir() {
            if path.join("main.rs").is_file() || path.join("mod.rs").is_file() {
                wanted.insert(stem);
            }
        } else if path.extension().is_some_and(|e| e == "rs") && stem != "main" {
            wanted.insert(stem);
        }
    }
    wanted
}

#[test]
fn every_test_file_is_a_module_of_its_crates_test_binary() {
    let mut checked = 0;
    for folder in test_folders() {
        let manifest = std::fs::read_to_string(folder.join("../Cargo.toml")).unwrap();
        let main = folder.join("main.rs");
        if !manifest.contains("autotests = false") {
            // Cargo finds each file itself; a single file needs no main.rs.
            assert!(
                !main.exists(),
                "{}: a main.rs without `autotests = false` is built twice",
                folder.display()
            );
            continue;
        }
        let text = std::fs::read_to_string(&main)
            .unwrap_or_else(|_| panic!("{}: `autotests = false` but no main.rs", folder.display()));
        let (have, want) = (declared(&text), expected(&folder));
        let missing: Vec<_> = want.difference(&have).collect();
        assert!(
            missing.is_empty(),
            "{}: main.rs does not declare {missing:?}: they never run",
            main.display()
        );
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} crates have one test binary");
}
