//! `looprail-hook <agent> [--store PATH]` (`claude-code`, `codex`, `copilot`, `gemini-cli`,
//! `qwen-code`): the hook command alone, answering as `looprail hook <agent>` does with the
//! default settings, in a binary that holds nothing else. It starts in about half the time of the whole `looprail` (a hook runs on
//! every tool call), so `looprail hook install` uses it when it sits beside `looprail`.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use looprail_hook::agents::Agent;
use looprail_hook::respond::respond;
use looprail_hook::session::Hook;
use looprail_loop_core::profile::Profile;

/// Fails open: the agent's call goes on, the user reads why.
fn fail_open(agent: Option<Agent>, message: &str) -> ExitCode {
    eprintln!("looprail hook: {message}; the call goes on unguarded");
    if agent == Some(Agent::GeminiCli) {
        println!("{{}}");
    }
    ExitCode::from(1)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let first = args.next().unwrap_or_default();
    let Some(agent) = Agent::from_name(&first) else {
        return fail_open(None, &format!("unknown agent `{first}` ({})", Agent::names()));
    };
    let mut store: Option<PathBuf> = std::env::var_os("LOOPRAIL_HOOK_STORE").map(PathBuf::from);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--store", Some(path)) => store = Some(PathBuf::from(path)),
            _ => {
                return fail_open(
                    Some(agent),
                    &format!("unknown argument `{arg}` (settings: use `looprail hook`)"),
                );
            }
        }
    }
    let mut input = Vec::new();
    if let Err(error) = std::io::stdin().take(64 << 20).read_to_end(&mut input) {
        return fail_open(Some(agent), &format!("cannot read the event: {error}"));
    }
    let Some(store) = store.or_else(looprail_hook::store::default_path) else {
        return fail_open(Some(agent), "no home directory for the session store (give --store)");
    };
    let hook = Hook::new(Profile::CodingAgent.config(), Default::default());
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let response = respond(agent, &input, &store, &hook, now);
    if !response.stdout.is_empty() {
        let _ = writeln!(std::io::stdout().lock(), "{}", response.stdout);
    }
    if let Some(line) = response.stderr {
        eprintln!("{line}");
    }
    ExitCode::from(response.exit_code)
}
