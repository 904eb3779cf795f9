//! `looprail hook install`: merges looprail's hooks into a project's or the user's settings,
//! keeps everything else, changes nothing the second time, removes only its own entries with
//! `--uninstall`, and refuses a settings file that is not JSON (issue 38).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{Value, json};

fn looprail(args: &[&str], home: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_looprail")).args(args).env("HOME", home).output().unwrap()
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn installing_into_a_projects_claude_settings_keeps_the_users_own() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    let settings = project.join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let mine = json!({"permissions": {"allow": ["Bash(npm test)"]},
        "hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "npx prettier --write"}]}]}});
    std::fs::write(&settings, mine.to_string()).unwrap();
    let project_arg = project.display().to_string();
    let install = ["hook", "install", "claude-code", "--project", &project_arg];

    let out = looprail(&install, dir.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("installed"));
    let installed = read(&settings);
    assert_eq!(installed["permissions"], mine["permissions"]);
    let post = installed["hooks"]["PostToolUse"].as_array().unwrap();
    assert_eq!(post[0], mine["hooks"]["PostToolUse"][0], "the user's hook first, untouched");
    let ours = post[1]["hooks"][0]["command"].as_str().unwrap();
    // `looprail hook claude-code`, or the lean `looprail-hook claude-code` when it was built
    // beside it.
    assert!(ours.ends_with(" hook claude-code") || ours.ends_with("looprail-hook' claude-code"), "{ours}");
    for event in ["PreToolUse", "PostToolUseFailure", "UserPromptSubmit", "SessionEnd"] {
        assert!(installed["hooks"][event].is_array(), "{event}");
    }
    // The command runs as the agent runs it (through a shell): it answers an event.
    let event =
        r#"{"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {}}"#;
    let store = dir.path().join("hooks.db").display().to_string();
    let ran = Command::new("sh")
        .args(["-c", &format!("echo '{event}' | LOOPRAIL_HOOK_STORE='{store}' {ours}")])
        .output()
        .unwrap();
    assert_eq!(ran.status.code(), Some(0), "{}", String::from_utf8_lossy(&ran.stderr));
    assert!(Path::new(&store).is_file());

    let again = looprail(&install, dir.path());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already"));
    assert_eq!(read(&settings), installed, "the second install changes nothing");

    let mut uninstall = install.to_vec();
    uninstall.push("--uninstall");
    let out = looprail(&uninstall, dir.path());
    assert!(out.status.success());
    assert_eq!(read(&settings), mine, "only looprail's entries removed");
}

#[test]
fn the_users_gemini_settings_get_the_hooks_and_hooks_enabled() {
    let home = tempfile::tempdir().unwrap();
    let out = looprail(&["hook", "install", "gemini-cli", "--user", "--store", "/var/tmp/h.db"], home.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let settings = read(&home.path().join(".gemini/settings.json"));
    assert_eq!(settings["hooksConfig"]["enabled"], true);
    let command = settings["hooks"]["BeforeTool"][0]["hooks"][0]["command"].as_str().unwrap();
    assert!(
        command.ends_with(" gemini-cli --store '/var/tmp/h.db'") && command.contains("looprail"),
        "{command}"
    );
    assert!(settings["hooks"]["AfterTool"].is_array() && settings["hooks"]["BeforeAgent"].is_array());
}

#[test]
fn a_settings_file_that_is_not_json_is_left_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let settings = dir.path().join(".claude/settings.json");
    std::fs::create_dir_all(settings.parent().unwrap()).unwrap();
    std::fs::write(&settings, "{ \"model\": \"opus\", // a comment\n}").unwrap();
    let project = dir.path().display().to_string();
    let out = looprail(&["hook", "install", "claude-code", "--project", &project], dir.path());
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("is not JSON") && stderr.contains("left as it is"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), "{ \"model\": \"opus\", // a comment\n}");
}

#[test]
fn the_hook_command_answers_an_event_and_fails_open_on_a_bad_one() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("state/hooks.db");
    let run = |input: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_looprail"))
            .args(["hook", "claude-code", "--store"])
            .arg(&store)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
        child.wait_with_output().unwrap()
    };
    let event = json!({"session_id": "s", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": "ls"}});
    let out = run(&event.to_string());
    assert_eq!((out.status.code(), out.stdout.len(), out.stderr.len()), (Some(0), 0, 0));
    assert!(store.is_file(), "the store and its directory were made");
    let out = run("garbage");
    assert_eq!(out.status.code(), Some(1), "a non-blocking error: the call goes on");
    assert!(out.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1);
    assert!(stderr.starts_with("looprail hook:"), "{stderr}");
}

/// The binary under test at `path`, as a package manager would have put it there (a hard link:
/// it runs as that path).
fn placed(path: &Path) -> std::path::PathBuf {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    if std::fs::hard_link(env!("CARGO_BIN_EXE_looprail"), path).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_looprail"), path).unwrap();
    }
    path.to_owned()
}

#[test]
fn installing_through_npx_never_records_npx_s_cache() {
    // Not under the system's temporary directory: only npx's cache marks the copy throw-away.
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let npx = placed(&home.path().join(".npm/_npx/3c2e8a/node_modules/.bin/looprail"));
    let installed = placed(&home.path().join(".local/bin/looprail"));
    let project = home.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let settings = project.join(".claude/settings.json");
    let install = |path: &str| {
        Command::new(&npx)
            .args(["hook", "install", "claude-code", "--project"])
            .arg(&project)
            .env("HOME", home.path())
            .env("PATH", path)
            .output()
            .unwrap()
    };

    // No installed looprail on PATH: refused, with the fix, and nothing written.
    let refused = install("/usr/bin:/bin");
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(said.lines().count(), 1, "one line: {said}");
    assert!(said.contains("temporary place") && said.contains("npm install -g looprail"), "{said}");
    assert!(!settings.exists(), "nothing written");

    // With one: its path is the command, never the cache's.
    let path = format!("{}:/usr/bin:/bin", installed.parent().unwrap().display());
    let out = install(&path);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let command =
        read(&settings)["hooks"]["PreToolUse"][0]["hooks"][0]["command"].as_str().unwrap().to_owned();
    assert!(command.starts_with(&format!("'{}'", installed.display())), "{command}");
    assert!(!command.contains("_npx"), "{command}");
}

#[test]
fn http_hooks_point_claude_code_at_a_gateway_and_gemini_cli_is_refused_them() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().display().to_string();
    let http = ["hook", "install", "claude-code", "--project", &project, "--http", "http://127.0.0.1:8787/"];
    let out = looprail(&[&http[..], &["--key-env", "LOOPRAIL_GATEWAY_KEY"]].concat(), dir.path());
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let settings = read(&dir.path().join(".claude/settings.json"));
    let entry = &settings["hooks"]["PostToolUse"][0]["hooks"][0];
    assert_eq!(entry["type"], "http");
    assert_eq!(entry["url"], "http://127.0.0.1:8787/v1/hooks/claude-code");
    assert_eq!(entry["headers"]["Authorization"], "Bearer ${LOOPRAIL_GATEWAY_KEY}");
    assert_eq!(entry["allowedEnvVars"], json!(["LOOPRAIL_GATEWAY_KEY"]));
    // Installing the command hook replaces the HTTP one (and back); uninstall removes either.
    let command = looprail(&["hook", "install", "claude-code", "--project", &project], dir.path());
    assert!(command.status.success());
    let settings = read(&dir.path().join(".claude/settings.json"));
    assert_eq!(settings["hooks"]["PostToolUse"].as_array().unwrap().len(), 1, "{settings}");
    assert_eq!(settings["hooks"]["PostToolUse"][0]["hooks"][0]["type"], "command");
    looprail(&http, dir.path());
    let removed =
        looprail(&["hook", "install", "claude-code", "--project", &project, "--uninstall"], dir.path());
    assert!(removed.status.success());
    assert_eq!(read(&dir.path().join(".claude/settings.json")), json!({}));

    let gemini = looprail(
        &["hook", "install", "gemini-cli", "--project", &project, "--http", "http://127.0.0.1:8787"],
        dir.path(),
    );
    assert!(!gemini.status.success());
    let said = String::from_utf8_lossy(&gemini.stderr);
    assert!(said.contains("command hooks only") && said.lines().count() == 1, "{said}");
    let bad = looprail(
        &["hook", "install", "claude-code", "--project", &project, "--http", "127.0.0.1:8787"],
        dir.path(),
    );
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("not a gateway URL"));
}

#[test]
fn status_lists_each_agents_hooks_and_probes_them() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project).unwrap();
    let project_arg = project.display().to_string();
    let store = dir.path().join("hooks.db").display().to_string();
    let status = || {
        Command::new(env!("CARGO_BIN_EXE_looprail"))
            .args(["hook", "status", "--project", &project_arg])
            .env("HOME", dir.path())
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("CODEX_HOME")
            .env_remove("COPILOT_HOME")
            .output()
            .unwrap()
    };
    let nothing = status();
    assert!(nothing.status.success());
    let said = String::from_utf8_lossy(&nothing.stdout).into_owned();
    assert_eq!(said.matches("not installed").count(), 10, "five agents, two files each: {said}");

    let install = ["hook", "install", "claude-code", "--project", &project_arg, "--store", &store];
    assert!(looprail(&install, dir.path()).status.success());
    let ok = status();
    let said = String::from_utf8_lossy(&ok.stdout).into_owned();
    assert!(ok.status.success(), "{said}");
    assert!(said.contains(".claude/settings.json: installed"), "{said}");
    assert!(said.contains("claude-code --store") && said.contains(": answers"), "{said}");
    // Copilot CLI's own file, its command under `bash`.
    let install = ["hook", "install", "copilot", "--project", &project_arg, "--store", &store];
    assert!(looprail(&install, dir.path()).status.success());
    let said = String::from_utf8_lossy(&status().stdout).into_owned();
    assert!(said.contains(".github/hooks/looprail.json: installed"), "{said}");
    assert!(said.contains("copilot --store") && said.matches(": answers").count() == 2, "{said}");

    // A gateway that is not there: listed, probed, and the status says so.
    let http = ["hook", "install", "qwen-code", "--project", &project_arg, "--http", "http://127.0.0.1:9"];
    assert!(looprail(&http, dir.path()).status.success());
    let broken = status();
    let said = String::from_utf8_lossy(&broken.stdout).into_owned();
    assert!(!broken.status.success(), "{said}");
    assert!(
        said.contains("http http://127.0.0.1:9/v1/hooks/qwen-code: does not answer: cannot reach"),
        "{said}"
    );
}
