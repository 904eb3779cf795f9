//! docs/reference/config.md is generated from the code: the complete config file with every
//! section and key at its default, written out from `LooprailConfig`'s own defaults. This test
//! regenerates it and fails when the checked-in page differs (`SNAPSHOTS=overwrite`, which
//! `cargo xtask docs` sets, writes it); the generated file must read back as the defaults; and
//! every key in it must be explained somewhere in docs/, so no key ships undocumented.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};

use looprail::LooprailConfig;
use looprail::core::profile::Profile;
use serde_json::{Map, Value};

fn docs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

/// A JSON scalar or array as TOML (JSON's strings, numbers, booleans and arrays of them are TOML).
fn scalar(value: &Value) -> String {
    value.to_string()
}

/// The TOML of `table` under the header `path`: its plain keys (a key unset by default as a
/// comment), then its tables.
fn render(out: &mut String, path: &[String], table: &Map<String, Value>) {
    let (tables, plain): (Vec<_>, Vec<_>) = table.iter().partition(|(_, v)| v.is_object());
    if !path.is_empty() && (!plain.is_empty() || tables.is_empty()) {
        out.push_str(&format!("\n[{}]\n", path.join(".")));
    }
    for (key, value) in plain {
        match value {
            Value::Null => out.push_str(&format!("# {key} = …            (unset by default)\n")),
            other => out.push_str(&format!("{key} = {}\n", scalar(other))),
        }
    }
    for (key, value) in tables {
        let mut child = path.to_vec();
        child.push(key.clone());
        render(out, &child, value.as_object().unwrap());
    }
}

/// Every key path of `table`'s leaves (`loop.budget.max_turns`).
fn leaves(prefix: &str, table: &Map<String, Value>, out: &mut Vec<String>) {
    for (key, value) in table {
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match value {
            Value::Object(inner) if !inner.is_empty() => leaves(&path, inner, out),
            _ => out.push(path),
        }
    }
}

fn defaults(profile: Profile) -> Map<String, Value> {
    let value = serde_json::to_value(LooprailConfig::for_profile(profile)).unwrap();
    value.as_object().unwrap().clone()
}

fn toml_of(table: &Map<String, Value>) -> String {
    let mut out = String::new();
    render(&mut out, &[], table);
    out.trim_start().to_owned()
}

fn page() -> String {
    let task = defaults(Profile::Task);
    let agent = defaults(Profile::CodingAgent);
    let agent_loop: Map<String, Value> = agent.into_iter().filter(|(k, _)| k == "loop").collect();
    format!(
        "# Configuration reference\n\n<!-- Generated from the code's defaults by \
         crates/looprail/tests/config_reference.rs (`cargo xtask docs` rewrites it); do not edit by hand. -->\n\n\
         One file configures the library (`LooprailConfig`), `looprail run`, `worker`, `gateway`, `hook` and \
         `audit` (`--config FILE`, or `LOOPRAIL_CONFIG`). It is TOML or JSON; every section and key is optional, \
         and an unknown key or a value out of range is refused with an error naming the key. Below is the \
         whole file with every default. What each key means is in the guides: [the loop \
         engine](../loop-engine.md#configuration-keys) (`[loop]`), [loop detection](../guardrails.md#configuration-keys) \
         (`[guardrails]`), [context management](../compaction.md) (`[compaction]`), [retries](../retry.md) \
         (`[retry]`), [the command guide](../cli.md#run-runs-resume-cancel) (`[provider]`, `[journal]`), \
         [durable runs](../journal.md) (`[delegation]`), [the audit](../cli.md#audit) (`[audit]`) and \
         [the gateway](../gateway.md#configuration) (`[gateway]`).\n\n\
         ## Every default (the `task` profile, the library's)\n\n```toml\n{}```\n\n\
         ## `[loop]` under the `coding-agent` profile\n\nThe gateway, the hooks and the audit start from this \
         profile (limits per autonomous stretch); the other sections are the same.\n\n```toml\n{}```\n",
        toml_of(&task),
        toml_of(&agent_loop)
    )
}

#[test]
fn the_config_reference_is_generated_from_the_defaults() {
    let path = docs().join("reference/config.md");
    // snapbox compares, and with SNAPSHOTS=overwrite writes the page instead.
    snapbox::Assert::new()
        .action_env(snapbox::assert::DEFAULT_ACTION_ENV)
        .eq(page(), snapbox::Data::read_from(&path, None));
}

#[test]
fn the_generated_file_reads_back_as_the_defaults() {
    let text = toml_of(&defaults(Profile::Task));
    let read = LooprailConfig::from_toml_str(&text).unwrap();
    assert_eq!(read, LooprailConfig::for_profile(Profile::Task));
}

#[test]
fn every_key_is_explained_in_the_docs() {
    let mut text = String::new();
    for entry in std::fs::read_dir(docs()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            text.push_str(&std::fs::read_to_string(path).unwrap());
        }
    }
    let mut keys = Vec::new();
    leaves("", &defaults(Profile::Task), &mut keys);
    let missing: Vec<&String> = keys
        .iter()
        .filter(|path| {
            let key = path.rsplit('.').next().unwrap();
            // A key is explained where a table row or a sentence names it in code.
            !text.contains(&format!("`{key}`"))
                && !text.contains(&format!(".{key}`"))
                && !text.contains(&format!("{key} ="))
        })
        .collect();
    assert!(missing.is_empty(), "config keys no page of docs/ explains: {missing:?}");
}
