//! docs/reference/cli.md is generated from the binary itself: every command's and subcommand's
//! `--help` (what clap makes of the code), in order. This test regenerates it and fails when the
//! checked-in page differs, so no flag goes undocumented; `SNAPSHOTS=overwrite` (what `cargo
//! xtask docs` sets) writes the page instead.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;

/// `looprail ARGS --help`, with no variable that clap would show as a flag's current value.
fn help(args: &[&str]) -> String {
    let mut command = Command::new(env!("CARGO_BIN_EXE_looprail"));
    command.args(args).arg("--help").env("COLUMNS", "100");
    for (key, _) in std::env::vars() {
        if key.starts_with("LOOPRAIL_") || key.starts_with("OPENAI_") || key.starts_with("ANTHROPIC_") {
            command.env_remove(key);
        }
    }
    let out = command.output().unwrap();
    assert!(out.status.success(), "looprail {args:?} --help failed");
    String::from_utf8(out.stdout).unwrap()
}

/// The subcommands a help text lists (its `Commands:` section), `help` left out.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// The whole page.
fn page() -> String {
    let mut out = String::from(
        "# Command reference\n\n<!-- Generated from `looprail --help` by crates/cli/tests/cli_reference.rs \
         (`cargo xtask docs` rewrites it); do not edit by hand. -->\n\nEvery command and flag of `looprail`, \
         as `--help` prints them. The guides explain when to use which: [the command \
         guide](../cli.md).\n",
    );
    let mut queue: Vec<Vec<String>> = vec![vec![]];
    while let Some(path) = queue.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let text = help(&args);
        let title =
            if path.is_empty() { "looprail".to_owned() } else { format!("looprail {}", path.join(" ")) };
        out.push_str(&format!("\n## {title}\n\n```text\n{}\n```\n", text.trim_end()));
        let mut children: Vec<Vec<String>> = subcommands(&text)
            .into_iter()
            .map(|name| {
                let mut child = path.clone();
                child.push(name);
                child
            })
            .collect();
        children.reverse();
        queue.extend(children);
    }
    out
}

#[test]
fn the_command_reference_is_the_one_the_binary_prints() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/reference/cli.md");
    // snapbox compares, and with SNAPSHOTS=overwrite writes the page instead.
    snapbox::Assert::new()
        .action_env(snapbox::assert::DEFAULT_ACTION_ENV)
        .eq(page(), snapbox::Data::read_from(&path, None));
}

#[test]
fn subcommands_are_read_from_the_commands_section() {
    let text = "Usage: x <COMMAND>\n\nCommands:\n  demo   Run it\n         more words\n  hook   Hooks\n  help   Print\n\nOptions:\n  -h\n";
    assert_eq!(subcommands(text), ["demo", "hook"]);
}
