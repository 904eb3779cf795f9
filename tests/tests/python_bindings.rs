//! The `looprail` Python module (crates/python: the guard through PyO3, and its LangChain
//! adapter) tested in Python: the native part is built with cargo and laid out beside the
//! Python sources, the pinned frameworks and mypy are installed into a venv under the target
//! directory on first use (crates/python/tests/requirements.txt), then the Python tests run
//! (crates/python/tests/test_*.py: the ladder, a process restart, bad input, a real LangChain
//! agent, and the development trajectories against the audit) and mypy --strict checks the
//! type stubs against a typed use of them. Without python3 the test skips on a developer's
//! machine and fails under CI (issue 69, B18).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use looprail::LooprailConfig;
use looprail::core::profile::Profile;
use looprail_tests::{host_steps, trajectories};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The venv's python, with the pinned packages (installed again when the pins change).
fn python() -> Option<PathBuf> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-bindings-venv");
    let python = dir.join("bin/python");
    let pins = root().join("crates/python/tests/requirements.txt");
    let wanted = std::fs::read(&pins).unwrap();
    if python.exists() && std::fs::read(dir.join("requirements.txt")).ok().as_ref() == Some(&wanted) {
        return Some(python);
    }
    if Command::new("python3").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "python3 is needed for the Python module's tests under CI");
        eprintln!("skipping the Python module's tests: no python3");
        return None;
    }
    if !python.exists() {
        let made = Command::new("python3").args(["-m", "venv"]).arg(&dir).status().unwrap();
        assert!(made.success(), "python3 -m venv failed (Debian: apt install python3-venv)");
    }
    let pip = Command::new(dir.join("bin/pip"))
        .args(["install", "-q", "--disable-pip-version-check", "-r"])
        .arg(&pins)
        .status()
        .unwrap();
    assert!(pip.success(), "installing the pinned frameworks failed");
    std::fs::write(dir.join("requirements.txt"), wanted).unwrap();
    Some(python)
}

/// The module as a wheel lays it out: the Python sources and the native library beside them.
fn module() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let built = Command::new(cargo)
        .args(["build", "--quiet", "-p", "looprail-python"])
        .current_dir(root())
        .status()
        .unwrap();
    assert!(built.success(), "cargo build -p looprail-python failed");
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("..");
    let library = target.join("debug/lib_native.so");
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
    let Some(shared) = trajectories::root() else { return };
    let module = module();
    let cases = Path::new(env!("CARGO_TARGET_TMPDIR")).join("conformance.jsonl");
    let config = LooprailConfig::for_profile(Profile::CodingAgent);
    let lines: Vec<String> = host_steps::cases(&shared, &config).iter().map(|c| c.to_json_line()).collect();
    std::fs::write(&cases, lines.join("\n") + "\n").unwrap();
    let tests = root().join("crates/python/tests");
    let run = Command::new(&python)
        .args(["-m", "unittest", "discover", "-s"])
        .arg(&tests)
        .args(["-p", "test_*.py"])
        .env("PYTHONPATH", &module)
        .env("LOOPRAIL_CONFORMANCE", &cases)
        .current_dir(&tests)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "the Python tests failed:\n{report}");
    assert!(!report.contains("skipped"), "no Python test may skip here:\n{report}");
    let mypy = Command::new(&python)
        .args(["-m", "mypy", "--strict", "--no-incremental", "test_guard.py", "test_langchain.py"])
        .arg(module.join("looprail"))
        .env("MYPYPATH", &module)
        .current_dir(&tests)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&mypy.stdout).into_owned() + &String::from_utf8_lossy(&mypy.stderr);
    assert!(mypy.status.success(), "mypy --strict finds errors:\n{said}");
}
