//! The guard in process, one semantics everywhere (issue 69, B18): the development
//! trajectories, as the steps a host reports, through `looprail_embed::AgentGuard` (Rust) and
//! through the `looprail` Python module and Node package give the events and the stop `looprail audit` gives,
//! call for call.
//!
//! The Python module (crates/python: the guard through PyO3, its LangChain and OpenAI Agents
//! SDK and pydantic-ai adapters) is tested in Python: its native part, built by the same `cargo
//! test` (a dependency of this package), is laid out beside the Python sources, the pinned frameworks and mypy are installed into the venv the gateway's
//! SDK tests use (target/tmp/sdk-venv, crates/gateway/tests/clients/requirements.txt), then the
//! Python tests run (crates/python/tests/test_*.py: the ladder, a process restart, bad input, a
//! real LangChain agent, a real OpenAI Agents SDK run, the trajectories against the audit) and
//! mypy --strict checks the type stubs against typed uses of them. Without python3 the Python
//! test skips on a developer's machine and fails under CI.
//!
//! The Node package (crates/node: the guard through napi-rs, its Vercel AI SDK adapter) is
//! tested the same way in Node (`node --test`, crates/node/tests), its JavaScript side
//! (packaging/npm/looprail) laid out as npm installs it, beside the AI SDK that the
//! gateway's Node clients pin; `tsc --strict` checks its TypeScript declarations against a typed use
//! of them (crates/node/tests/types.ts).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use looprail::LooprailConfig;
use looprail::core::profile::Profile;
use looprail_audit::steps::HostStep;
use looprail_embed::{Action, AgentGuard, Call, GuardEvent, Reply};
use looprail_tests::host_steps::{self, Case};
use looprail_tests::trajectories;

/// The cases, computed once for both tests (`None` without ../shared on a developer's machine).
fn cases() -> Option<&'static [Case]> {
    static CASES: OnceLock<Option<Vec<Case>>> = OnceLock::new();
    CASES
        .get_or_init(|| {
            let root = trajectories::root()?;
            Some(host_steps::cases(&root, &LooprailConfig::for_profile(Profile::CodingAgent)))
        })
        .as_deref()
}

/// What the guard reported of one run: its events, and why it stopped.
fn drive(config: &LooprailConfig, run: &[HostStep]) -> (Vec<GuardEvent>, Option<String>) {
    let mut guard = AgentGuard::new(config);
    let ends = |action: Action| matches!(action, Action::Stop | Action::Ask);
    let mut stop = None;
    for step in run {
        let verdict = match step {
            HostStep::User => {
                guard.user_message(None);
                continue;
            }
            HostStep::Model { at_ms, text, calls, usage, model } => {
                let now = i64::try_from(*at_ms).unwrap();
                let before = guard.before_model(now);
                if ends(before.action) {
                    before
                } else {
                    let calls = calls
                        .iter()
                        .map(|c| Call {
                            id: c.id.clone(),
                            name: c.name.clone(),
                            arguments: c.arguments.clone(),
                        })
                        .collect();
                    let reply =
                        Reply { text: text.clone(), calls, usage: Some(*usage), model: model.clone() };
                    guard.model_response(&reply, now)
                }
            }
            HostStep::Result { id, output, failed } => guard.after_tool(id, output, *failed),
        };
        if ends(verdict.action) {
            stop = Some(verdict.reason);
            break;
        }
    }
    (guard.take_events(), stop)
}

#[test]
fn the_guard_in_process_reports_what_the_audit_reports_on_every_development_set() {
    let Some(cases) = cases() else { return };
    let config = LooprailConfig::for_profile(Profile::CodingAgent);
    let (mut with_events, mut stopped) = (0, 0);
    for case in cases {
        let (events, stop) = drive(&config, &case.steps);
        assert_eq!(events, case.events, "{}: the same events, call for call", case.name);
        assert_eq!(stop, case.stop, "{}: the same stop", case.name);
        with_events += usize::from(!events.is_empty());
        stopped += usize::from(stop.is_some());
    }
    eprintln!("{} runs, {with_events} with events, {stopped} stopped", cases.len());
    assert!(cases.len() >= 800, "every development set is read ({} runs)", cases.len());
    assert!(with_events >= 50 && stopped >= 20, "the comparison covers the ladder and its stops");
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[path = "../../crates/gateway/tests/common/python.rs"]
mod python;

/// The venv the gateway's SDK tests use, with the pinned frameworks and mypy.
fn python() -> Option<PathBuf> {
    python::venv()
}

/// The path of `file`, a native library `cargo test` built beside this test binary: this
/// package depends on looprail-python and looprail-node (crate types cdylib and rlib), so the
/// Python module and the Node addon come out of the same build, with the same features.
fn native(file: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let library = exe.parent().unwrap().join(file);
    assert!(library.is_file(), "{} was not built with the tests", library.display());
    library
}

/// The cases as JSON lines in a file, written once for the Python and the Node tests.
fn cases_file() -> Option<&'static Path> {
    static FILE: OnceLock<Option<PathBuf>> = OnceLock::new();
    FILE.get_or_init(|| {
        let all = cases()?;
        let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("conformance.jsonl");
        let lines: Vec<String> = all.iter().map(Case::to_json_line).collect();
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
        Some(path)
    })
    .as_deref()
}

/// The module as a wheel lays it out: the Python sources and the native library beside them.
fn module() -> PathBuf {
    let library = native("lib_native.so");
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-module");
    let package = out.join("looprail");
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&package).unwrap();
    for entry in std::fs::read_dir(root().join("crates/python/python/looprail")).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_file() {
            std::fs::copy(entry.path(), package.join(entry.file_name())).unwrap();
        }
    }
    std::fs::copy(&library, package.join("_native.abi3.so")).unwrap();
    out
}

#[test]
fn the_python_module_passes_its_tests_in_python() {
    let Some(python) = python() else { return };
    let Some(cases) = cases_file() else { return };
    let module = module();
    let tests = root().join("crates/python/tests");
    // mypy takes longer than the tests: it checks while they run.
    let mypy = Command::new(&python)
        .args(["-m", "mypy", "--strict", "--no-incremental"])
        .args([
            "test_guard.py",
            "test_langchain.py",
            "test_openai_agents.py",
            "test_pydantic_ai.py",
            "test_conformance.py",
        ])
        .arg(module.join("looprail"))
        .env("MYPYPATH", &module)
        .current_dir(&tests)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let run = Command::new(&python)
        .args(["-m", "unittest", "discover", "-s"])
        .arg(&tests)
        .args(["-p", "test_*.py"])
        .env("PYTHONPATH", &module)
        .env("LOOPRAIL_CONFORMANCE", cases)
        // The Agents SDK would send its traces to OpenAI: nothing leaves the machine.
        .env("OPENAI_AGENTS_DISABLE_TRACING", "1")
        .current_dir(&tests)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "the Python tests failed:\n{report}");
    assert!(!report.contains("skipped"), "no Python test may skip here:\n{report}");
    let mypy = mypy.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&mypy.stdout).into_owned() + &String::from_utf8_lossy(&mypy.stderr);
    assert!(mypy.status.success(), "mypy --strict finds errors:\n{said}");
}

#[path = "../../crates/gateway/tests/common/node.rs"]
mod node;

#[test]
fn the_node_package_passes_its_tests_in_node() {
    let Some(clients) = node::clients() else { return };
    let Some(cases) = cases_file() else { return };
    let addon = native("liblooprail_node.so");
    // The package as npm lays it out, beside the AI SDK the clients' lockfile pins.
    let package = clients.join("node_modules/looprail");
    let _ = std::fs::remove_dir_all(&package);
    std::fs::create_dir_all(&package).unwrap();
    for dir in ["packaging/npm/looprail", "crates/node/tests"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let into = if dir.starts_with("packaging") { &package } else { &clients };
            if path.is_file() {
                std::fs::copy(&path, into.join(path.file_name().unwrap())).unwrap();
            }
        }
    }
    std::fs::copy(&addon, package.join("looprail.node")).unwrap();
    let run = Command::new("node")
        .args(["--test", "guard.test.mjs"])
        .env("LOOPRAIL_CONFORMANCE", cases)
        .current_dir(&clients)
        .output()
        .unwrap();
    // The TypeScript declarations, checked against a typed use of them (types.ts).
    let tsc = Command::new(clients.join("node_modules/.bin/tsc"))
        .args(["--noEmit", "--strict", "--skipLibCheck", "--module", "nodenext"])
        .args(["--moduleResolution", "nodenext", "--target", "es2022", "types.ts"])
        .current_dir(&clients)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&tsc.stdout);
    assert!(tsc.status.success(), "tsc --strict finds errors in the declarations' use:\n{said}");
    let report = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "the Node tests failed:\n{report}");
    assert!(
        report.contains("# skipped 0") && report.contains("# fail 0"),
        "no Node test may skip:\n{report}"
    );
}
