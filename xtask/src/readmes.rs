//! Each published library crate's README.md (what crates.io shows), generated from the crate
//! documentation that opens its `lib.rs`, example included, so the two cannot drift:
//! `cargo xtask docs` writes them, and a test fails when a checked-in one differs.

use std::path::Path;

/// The crates whose README is generated (every published crate with a `lib.rs`; the
/// `looprail` command's README is the Python package's page and is written by hand).
pub fn generated_crates() -> Vec<(&'static str, &'static str)> {
    crate::CRATES.iter().copied().filter(|(name, _)| *name != "looprail-cli").collect()
}

/// The README of crate `name` from the text of its `lib.rs`.
pub fn readme(name: &str, lib_rs: &str) -> String {
    let mut out = format!("# {name}\n\n");
    let mut in_code = false;
    for line in lib_rs.lines().map(str::trim_start).take_while(|l| l.starts_with("//!") || l.is_empty()) {
        let text = line.strip_prefix("//!").map_or("", |t| t.strip_prefix(' ').unwrap_or(t));
        if let Some(fence) = text.trim_start().strip_prefix("```") {
            let lang = fence.trim_start_matches('`');
            let rust = lang.is_empty() || lang.starts_with("no_run") || lang.starts_with("ignore");
            match (in_code, rust) {
                (true, _) => out.push_str("```\n"),
                (false, true) => out.push_str("```rust\n"),
                (false, false) => {
                    out.push_str(text);
                    out.push('\n');
                }
            }
            in_code = !in_code;
            continue;
        }
        if in_code {
            // rustdoc's hidden lines are set-up the reader does not need.
            if text == "#" || text.starts_with("# ") {
                continue;
            }
            out.push_str(text);
        } else {
            out.push_str(&without_catalogue_ids(&plain_links(text)));
        }
        out.push('\n');
    }
    while out.ends_with("\n\n") {
        out.pop();
    }
    out.push_str(
        "\nPart of [looprail](https://github.com/looprail/looprail), the runtime layer that keeps LLM agent loops \
         safe, cheap and recoverable. Licensed under MIT or Apache-2.0, at your option.\n",
    );
    out
}

/// rustdoc's intra-doc links (`[`Gate`]`, `[`mod@relay`]`) as plain code spans: crates.io
/// cannot resolve them.
fn plain_links(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("[`") {
        let after = &rest[start + 2..];
        let Some(end) = after.find("`]") else { break };
        let follows = after[end + 2..].chars().next();
        // `[`Provider`](looprail_loop_core::Provider)`: a Rust path, not a web address.
        let rust_path = (follows == Some('('))
            .then(|| after[end + 3..].split_once(')'))
            .flatten()
            .filter(|(target, _)| target.contains("::") && !target.contains("://"));
        if let Some((_, tail)) = rust_path {
            out.push_str(&rest[..start]);
            out.push('`');
            out.push_str(&after[..end]);
            out.push('`');
            rest = tail;
            continue;
        }
        if matches!(follows, Some('(' | '[')) {
            out.push_str(&rest[..start + 2]);
            rest = after;
            continue;
        }
        let inner = &after[..end];
        let inner = inner.split_once('@').map_or(inner, |(_, item)| item);
        out.push_str(&rest[..start]);
        out.push('`');
        out.push_str(inner);
        out.push('`');
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

/// Whether `word` is a catalogue id (`F10`, `B16`, `S2`): the code cites them, users need not.
fn is_catalogue_id(word: &str) -> bool {
    let mut chars = word.chars();
    matches!(chars.next(), Some('F' | 'B' | 'S'))
        && (2..=3).contains(&word.len())
        && chars.all(|c| c.is_ascii_digit())
}

/// `text` without parenthesised lists of catalogue ids (` (F10)`, ` (F32, F34)`).
fn without_catalogue_ids(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(open) = rest.find('(') {
        let Some(close) = rest[open..].find(')').map(|c| open + c) else { break };
        let inner = &rest[open + 1..close];
        let ids = inner.split([',', '/', ' ']).filter(|w| !w.is_empty()).all(is_catalogue_id)
            && !inner.trim().is_empty();
        if ids {
            out.push_str(rest[..open].strip_suffix(' ').unwrap_or(&rest[..open]));
        } else {
            out.push_str(&rest[..=close]);
        }
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

/// Writes every generated README; the paths written.
pub fn write_all(root: &Path) -> Result<Vec<String>, String> {
    let mut written = Vec::new();
    for (name, folder) in generated_crates() {
        let lib = root.join(folder).join("src/lib.rs");
        let text = std::fs::read_to_string(&lib).map_err(|e| format!("{}: {e}", lib.display()))?;
        let path = root.join(folder).join("README.md");
        std::fs::write(&path, readme(name, &text)).map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(format!("{folder}/README.md"));
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::{generated_crates, plain_links, readme, without_catalogue_ids};

    #[test]
    fn every_crate_readme_is_the_one_its_lib_rs_generates() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        for (name, folder) in generated_crates() {
            let lib = std::fs::read_to_string(root.join(folder).join("src/lib.rs")).unwrap();
            let checked_in = std::fs::read_to_string(root.join(folder).join("README.md")).unwrap_or_default();
            assert!(
                checked_in == readme(name, &lib),
                "{folder}/README.md differs from what its lib.rs generates: run `cargo xtask docs`"
            );
        }
    }

    #[test]
    fn hidden_lines_and_intra_doc_links_are_left_out() {
        let lib = "//! The [`Gate`] and [`mod@relay`], not [`here`](x).\n//!\n//! ```\n//! # use a::b;\n//! let x = 1;\n//! ```\nfn main() {}\n";
        let text = readme("demo", lib);
        assert!(
            text.starts_with(
                "# demo\n\nThe `Gate` and `relay`, not [`here`](x).\n\n```rust\nlet x = 1;\n```\n"
            ),
            "{text}"
        );
        assert_eq!(plain_links("[`A`][b]"), "[`A`][b]");
        assert_eq!(plain_links("the [`Provider`](looprail_loop_core::Provider) seam"), "the `Provider` seam");
        assert_eq!(
            without_catalogue_ids("decide (F10), so (see x) and (F32, F34)."),
            "decide, so (see x) and."
        );
    }
}
