//! `looprail audit --html`: one self-contained page whose timelines draw one mark per event,
//! checked in the file and in a real headless Chromium (no console message, so no error and no
//! blocked request; the script ran).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> String {
    format!("{}/tests/fixtures", env!("CARGO_MANIFEST_DIR"))
}

/// Writes the report of the fixtures (plus a looping OpenHands run) and returns the page and
/// the JSON.
fn report(dir: &Path) -> (PathBuf, serde_json::Value) {
    std::fs::create_dir_all(dir).unwrap();
    let mut history = vec![
        serde_json::json!({"id": 0, "source": "user", "action": "message", "args": {"content": "Fix <it> & \"quote\""}}),
    ];
    for i in 0..10u64 {
        history.push(serde_json::json!({"id": 1 + 2 * i, "source": "agent", "action": "run", "args": {"command": "ls </script>"}}));
        history.push(serde_json::json!({"id": 2 + 2 * i, "source": "agent", "observation": "run", "content": "same", "cause": 1 + 2 * i}));
    }
    std::fs::write(
        dir.join("output.jsonl"),
        serde_json::json!({"instance_id": "x<1>", "history": history}).to_string(),
    )
    .unwrap();
    let page = dir.join("report.html");
    let out = Command::new(env!("CARGO_BIN_EXE_looprail"))
        .args([
            "audit",
            "--json",
            "--html",
            &page.display().to_string(),
            &fixtures(),
            &dir.join("output.jsonl").display().to_string(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (page, serde_json::from_slice(&out.stdout).unwrap())
}

fn events(json: &serde_json::Value) -> usize {
    json["runs"].as_array().unwrap().iter().map(|r| r["events"].as_array().unwrap().len()).sum()
}

#[test]
fn the_page_is_self_contained_and_draws_one_mark_per_event() {
    let dir = std::env::temp_dir().join(format!("looprail-html-{}", std::process::id()));
    let (page, json) = report(&dir);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(events(&json) >= 6, "the fixtures have events");
    assert_eq!(html.matches("data-event=").count(), events(&json));
    assert_eq!(html.matches("class=\"timeline-row\"").count(), json["runs"].as_array().unwrap().len());
    for forbidden in ["src=", "href=", "@import", "url("] {
        assert!(!html.contains(forbidden), "the page must load nothing: found {forbidden}");
    }
    assert!(html.contains("Content-Security-Policy"));
    assert!(html.contains("x&lt;1&gt;"), "paths are escaped");
    assert!(!html.contains("ls </script>"), "data cannot close a script tag");
    let _ = std::fs::remove_dir_all(dir);
}

fn chromium() -> Option<&'static str> {
    ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]
        .into_iter()
        .find(|b| Command::new(b).arg("--version").output().is_ok_and(|o| o.status.success()))
}

#[test]
fn headless_chromium_loads_it_without_a_console_message_and_finds_every_mark() {
    let Some(browser) = chromium() else {
        assert!(std::env::var_os("CI").is_none(), "CI must have Chromium: .ci/run installs it");
        eprintln!("skipped: no Chromium on this machine (CI installs it)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("looprail-html-browser-{}", std::process::id()));
    let (page, json) = report(&dir);
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr", "--v=0"])
        .arg(format!("--user-data-dir={}", dir.join("profile").display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dom = String::from_utf8_lossy(&out.stdout);
    let log = String::from_utf8_lossy(&out.stderr);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages (errors, blocked requests): {console:?}");
    assert!(dom.contains("data-ready=\"1\""), "the script ran to its end");
    assert_eq!(dom.matches("data-event=").count(), events(&json), "every event is drawn in the loaded DOM");
    let _ = std::fs::remove_dir_all(dir);
}
