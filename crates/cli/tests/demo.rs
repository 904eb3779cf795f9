//! The demo is the README's main-job command: it must exit 0 with every scenario `ok`.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

#[test]
fn demo_exits_zero_with_every_scenario_ok() {
    let output = Command::new(env!("CARGO_BIN_EXE_looprail")).args(["demo", "--quiet"]).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "demo failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let rows: Vec<&str> = stdout.lines().skip(1).filter(|l| !l.contains("scenarios behaved")).collect();
    assert_eq!(rows.len(), 13, "{stdout}");
    assert!(rows.iter().all(|r| r.split_whitespace().nth(1) == Some("ok")), "{stdout}");
    assert!(stdout.contains("13 of 13 scenarios behaved as expected"));
}

#[test]
fn unknown_commands_and_options_fail_with_one_line() {
    let output = Command::new(env!("CARGO_BIN_EXE_looprail")).arg("launch").output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("launch") && stderr.contains("looprail --help"), "{stderr}");
    let output = Command::new(env!("CARGO_BIN_EXE_looprail")).args(["demo", "--loud"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
}
