//! Every relative link in the README, the contributor pages and docs/ resolves: the file it
//! names exists and, when it names an anchor, a heading of that file has that anchor (GitHub's
//! rule: lower case, punctuation dropped, spaces to hyphens, repeats numbered). User docs name
//! no path outside the repository and no internal catalogue id.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The markdown pages checked: the top-level ones, docs/ (walked), each crate's README.
fn pages() -> Vec<PathBuf> {
    let root = repo();
    let mut pages: Vec<PathBuf> = ["README.md", "CONTRIBUTING.md", "CHANGELOG.md", "examples/logs/README.md"]
        .iter()
        .map(|p| root.join(p))
        .collect();
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    for entry in std::fs::read_dir(root.join("crates")).unwrap() {
        let readme = entry.unwrap().path().join("README.md");
        if readme.is_file() {
            pages.push(readme);
        }
    }
    pages.sort();
    pages
}

/// The text outside fenced code blocks.
fn prose(text: &str) -> String {
    let mut fenced = false;
    let mut out = String::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The targets of the inline links `[text](target)` of `text` (code spans skipped).
fn link_targets(text: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose(text).lines() {
        let mut in_code = false;
        let chars: Vec<char> = line.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            if chars[i] == '`' {
                in_code = !in_code;
            } else if !in_code && chars[i] == ']' && chars.get(i + 1) == Some(&'(') {
                let rest: String = chars[i + 2..].iter().collect();
                if let Some(end) = rest.find(')') {
                    let target = rest[..end].split_whitespace().next().unwrap_or_default().to_owned();
                    targets.push(target);
                }
            }
            i += 1;
        }
    }
    targets
}

/// GitHub's anchors of the headings of `text`.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut counts = std::collections::HashMap::new();
    for line in prose(text).lines() {
        let Some(heading) = line.strip_prefix('#') else { continue };
        let heading = heading.trim_start_matches('#').trim();
        let slug: String = heading
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let n = counts.entry(slug.clone()).or_insert(0);
        seen.insert(if *n == 0 { slug.clone() } else { format!("{slug}-{n}") });
        *n += 1;
    }
    seen
}

/// `path` with `.` and `..` folded, or None when it climbs out of the repository.
fn inside_repo(path: &Path) -> Option<PathBuf> {
    let root = repo().canonicalize().unwrap();
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out.starts_with(&root).then_some(out)
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let dir = page.parent().unwrap().canonicalize().unwrap();
        for target in link_targets(&text) {
            if target.contains("://") || target.starts_with("mailto:") || target.is_empty() {
                continue;
            }
            checked += 1;
            let (file, anchor) =
                target.split_once('#').map_or((target.as_str(), None), |(f, a)| (f, Some(a)));
            let resolved = if file.is_empty() {
                Some(page.canonicalize().unwrap())
            } else {
                inside_repo(&dir.join(file))
            };
            let Some(resolved) = resolved else {
                broken.push(format!("{}: {target} leaves the repository", page.display()));
                continue;
            };
            if !resolved.exists() {
                broken.push(format!("{}: {target} does not exist", page.display()));
                continue;
            }
            if let Some(anchor) = anchor
                && resolved.is_file()
                && !anchors(&std::fs::read_to_string(&resolved).unwrap()).contains(anchor)
            {
                broken.push(format!("{}: {target}: no heading with that anchor", page.display()));
            }
        }
    }
    assert!(checked > 20, "only {checked} links found: is the parser right?");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn user_docs_name_no_path_outside_the_repository_and_no_catalogue_id() {
    let root = repo();
    let mut found = Vec::new();
    for page in pages() {
        let name = page.strip_prefix(&root).unwrap_or(&page).display().to_string();
        if name.starts_with("../") || name == "CONTRIBUTING.md" || name == "CHANGELOG.md" {
            continue;
        }
        let text = std::fs::read_to_string(&page).unwrap();
        for (number, line) in text.lines().enumerate() {
            if line.contains("../shared") {
                found.push(format!("{name}:{}: a path outside the repository", number + 1));
            }
            let ids = line
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|w| {
                    w.len() >= 2
                        && matches!(&w[..1], "F" | "B" | "S")
                        && w[1..].chars().all(|c| c.is_ascii_digit())
                })
                .count();
            if ids > 0 {
                found.push(format!("{name}:{}: a catalogue id", number + 1));
            }
        }
    }
    assert!(found.is_empty(), "{} lines:\n{}", found.len(), found.join("\n"));
}

#[test]
fn the_parsers_find_links_and_anchors_as_github_does() {
    let text = "# The `looprail` command\n## run, runs, resume, cancel\n## run, runs, resume, cancel\nSee [a](b.md#c) and `[x](y)`.\n```\n[z](w)\n```\n";
    assert_eq!(link_targets(text), ["b.md#c"]);
    let found = anchors(text);
    assert!(found.contains("the-looprail-command"), "{found:?}");
    assert!(found.contains("run-runs-resume-cancel"));
    assert!(found.contains("run-runs-resume-cancel-1"));
}
