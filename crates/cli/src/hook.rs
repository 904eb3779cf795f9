//! `looprail hook`: the guard stack inside the coding agents' hooks (see `looprail-hook`).
//! `hook claude-code`, `hook codex` … answer one hook event and exit: no async runtime, no
//! network client, one SQLite transaction. `hook install` merges the entries into the agent's
//! settings.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use looprail::LooprailConfig;
use looprail::core::profile::Profile;
use looprail_hook::agents::Agent;
use looprail_hook::install::{Change, Scope, Target, apply, settings_path};
use looprail_hook::respond::respond;
use looprail_hook::session::Hook;

/// The largest event read (a tool's whole output rides in it).
const MAX_EVENT: u64 = 64 << 20;

/// Arguments of `looprail hook`.
#[derive(clap::Args)]
pub struct HookArgs {
    #[command(subcommand)]
    command: HookCommand,
}

#[derive(clap::Subcommand)]
enum HookCommand {
    /// Answer one Claude Code hook event (stdin) in Claude Code's format (stdout).
    ClaudeCode(Answering),
    /// Answer one Gemini CLI hook event (stdin) in Gemini CLI's format (stdout).
    GeminiCli(Answering),
    /// Answer one Qwen Code hook event (stdin) in Qwen Code's format (stdout).
    QwenCode(Answering),
    /// Answer one Codex CLI hook event (stdin) in Codex's format (stdout).
    Codex(Answering),
    /// Answer one GitHub Copilot CLI hook event (stdin) in Copilot CLI's format (stdout).
    Copilot(Answering),
    /// Add looprail's hooks to the agent's settings (or remove them with --uninstall).
    Install(Installing),
    /// For every agent, where looprail's hooks are installed (this project's settings and the
    /// user's), what they run, and whether a dry event gets an answer; exits 1 when one does
    /// not.
    Status(Status),
}

#[derive(clap::Args)]
struct Status {
    /// The project directory whose settings to read (default: the current directory).
    #[arg(long)]
    project: Option<PathBuf>,
}

#[derive(clap::Args)]
struct Answering {
    /// The session store (SQLite); default `$XDG_STATE_HOME/looprail/hooks.db`, else
    /// `~/.local/state/looprail/hooks.db`.
    #[arg(long, env = "LOOPRAIL_HOOK_STORE")]
    store: Option<PathBuf>,
    /// A looprail config file (TOML or JSON): its `[loop]` and `[guardrails]` sections.
    #[arg(long)]
    config: Option<PathBuf>,
}

#[derive(clap::Args)]
struct Installing {
    /// The agent: claude-code, codex, copilot, gemini-cli or qwen-code.
    #[arg(value_parser = parse_agent)]
    agent: Agent,
    /// The user's settings (`~/.claude`, `~/.codex`, `~/.copilot`, `~/.gemini`, `~/.qwen`, or
    /// the agent's own `CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `COPILOT_HOME`) instead of the
    /// project's.
    #[arg(long, conflicts_with = "project")]
    user: bool,
    /// The project directory whose settings to change (default: the current directory).
    #[arg(long)]
    project: Option<PathBuf>,
    /// Remove looprail's hooks instead.
    #[arg(long)]
    uninstall: bool,
    /// The session store the hooks use (written into the hook command).
    #[arg(long)]
    store: Option<PathBuf>,
    /// A config file the hooks use (written into the hook command).
    #[arg(long, conflicts_with = "http")]
    config: Option<PathBuf>,
    /// Send the events to a looprail gateway's hook endpoint at this base URL
    /// (`http://127.0.0.1:8787`) instead of running a command per event (Claude Code, Qwen
    /// Code).
    #[arg(long, value_name = "URL", conflicts_with = "store")]
    http: Option<String>,
    /// With --http: the environment variable holding the gateway's client key, sent as a
    /// bearer token.
    #[arg(long, value_name = "VAR", requires = "http")]
    key_env: Option<String>,
}

fn parse_agent(name: &str) -> Result<Agent, String> {
    Agent::from_name(name).ok_or_else(|| format!("unknown agent `{name}` ({})", Agent::names()))
}

/// `looprail hook ...`.
pub fn hook(args: HookArgs) -> ExitCode {
    match args.command {
        HookCommand::ClaudeCode(answering) => answer(Agent::ClaudeCode, answering),
        HookCommand::GeminiCli(answering) => answer(Agent::GeminiCli, answering),
        HookCommand::QwenCode(answering) => answer(Agent::QwenCode, answering),
        HookCommand::Codex(answering) => answer(Agent::Codex, answering),
        HookCommand::Copilot(answering) => answer(Agent::Copilot, answering),
        HookCommand::Status(status) => match hook_status(status) {
            Ok(true) => ExitCode::SUCCESS,
            Ok(false) => ExitCode::FAILURE,
            Err(message) => {
                eprintln!("error: {message}");
                ExitCode::FAILURE
            }
        },
        HookCommand::Install(installing) => match install(installing) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("error: {message}");
                ExitCode::FAILURE
            }
        },
    }
}

/// Answers one event. Fails open: looprail's own trouble lets the call go on (exit 1, one
/// line on stderr, which both agents show and neither treats as a block).
fn answer(agent: Agent, args: Answering) -> ExitCode {
    let fail_open = |message: String| {
        eprintln!("looprail hook: {message}; the call goes on unguarded");
        if agent == Agent::GeminiCli {
            println!("{{}}");
        }
        ExitCode::from(1)
    };
    let mut input = Vec::new();
    if let Err(error) = std::io::stdin().take(MAX_EVENT).read_to_end(&mut input) {
        return fail_open(format!("cannot read the event: {error}"));
    }
    let Some(store) = args.store.or_else(looprail_hook::store::default_path) else {
        return fail_open("no home directory for the session store (give --store)".into());
    };
    let config = match &args.config {
        Some(path) => match LooprailConfig::from_path_for(path, Profile::CodingAgent) {
            Ok(config) => config,
            Err(error) => return fail_open(format!("{error} (in {})", path.display())),
        },
        None => LooprailConfig::for_profile(Profile::CodingAgent),
    };
    let hook = Hook::new(config.loop_, config.guardrails);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let response = respond(agent, &input, &store, &hook, now);
    if !response.stdout.is_empty() {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(response.stdout.as_bytes());
        let _ = out.write_all(b"\n");
    }
    if let Some(line) = response.stderr {
        eprintln!("{line}");
    }
    ExitCode::from(response.exit_code)
}

fn quoted(path: &std::path::Path) -> String {
    format!("'{}'", path.display().to_string().replace('\'', r"'\''"))
}

fn install(args: Installing) -> Result<(), String> {
    let scope = if args.user {
        Scope::user(args.agent).ok_or("no HOME for --user")?
    } else {
        let dir = match &args.project {
            Some(dir) => dir.clone(),
            None => std::env::current_dir().map_err(|e| format!("the current directory: {e}"))?,
        };
        Scope::Project(dir)
    };
    if let Some(gateway) = &args.http {
        let target = Target::http(gateway, args.key_env.clone()).map_err(|e| e.to_string())?;
        return write_settings(&args, &scope, &target);
    }
    let running = std::env::current_exe().map_err(|e| format!("where this looprail is: {e}"))?;
    // Never a throw-away copy (npx's cache, uvx's): the installed looprail on PATH, or a refusal
    // (removing needs no program that lasts).
    let exe = match args.uninstall {
        true => running,
        false => looprail_hook::program::hook_program(&running, std::env::var_os("PATH").as_deref())
            .map_err(|e| e.to_string())?,
    };
    // The lean hook binary when it sits beside this one (it starts in about half the time) and
    // no config file is asked for (it runs the defaults).
    let lean = exe.with_file_name(format!("looprail-hook{}", std::env::consts::EXE_SUFFIX));
    let mut command = if lean.is_file() && args.config.is_none() {
        format!("{} {}", quoted(&lean), args.agent.name())
    } else {
        format!("{} hook {}", quoted(&exe), args.agent.name())
    };
    for (flag, value) in [("--store", &args.store), ("--config", &args.config)] {
        if let Some(path) = value {
            let absolute = std::path::absolute(path).map_err(|e| format!("{}: {e}", path.display()))?;
            command.push_str(&format!(" {flag} {}", quoted(&absolute)));
        }
    }
    write_settings(&args, &scope, &Target::Command(command))
}

fn write_settings(args: &Installing, scope: &Scope, target: &Target) -> Result<(), String> {
    let path = settings_path(args.agent, scope);
    let change = apply(&path, args.agent, target, args.uninstall).map_err(|e| e.to_string())?;
    let what = match change {
        Change::Installed => "looprail's hooks installed in",
        Change::Removed => "looprail's hooks removed from",
        Change::Unchanged if args.uninstall => "no looprail hooks in",
        Change::Unchanged => "looprail's hooks already in",
    };
    eprintln!("{what} {}", path.display());
    if args.agent == Agent::Codex && change == Change::Installed {
        // Codex runs a new or changed hook only once the user has reviewed it, and a project's
        // hooks only in a project it trusts.
        let project = if matches!(scope, Scope::Project(_)) {
            "reads a project's hooks only in a trusted project (trust the folder when Codex asks), and "
        } else {
            ""
        };
        eprintln!(
            "Codex {project}runs new hooks once you trust them: start `codex`, open /hooks and trust \
             looprail's (automation that vets its hooks can pass --dangerously-bypass-hook-trust instead)"
        );
    }
    Ok(())
}

/// `looprail hook status`: one line per agent and settings file, then one per hook target with
/// its dry event's answer. True when every installed hook answered.
fn hook_status(args: Status) -> Result<bool, String> {
    use looprail_hook::status::{FileState, installed, probe};
    let project = match args.project {
        Some(dir) => dir,
        None => std::env::current_dir().map_err(|e| format!("the current directory: {e}"))?,
    };
    let mut healthy = true;
    for agent in Agent::ALL {
        let scopes = std::iter::once(("project", Scope::Project(project.clone())))
            .chain(Scope::user(agent).map(|scope| ("user", scope)));
        for (label, scope) in scopes {
            let (path, state) = installed(agent, &scope);
            let place = format!("{:<12} {label:<8} {}", agent.name(), path.display());
            match state {
                FileState::NotInstalled => println!("{place}: not installed"),
                FileState::Unreadable(why) => {
                    healthy = false;
                    println!("{place}: unreadable ({why})");
                }
                FileState::Installed(targets) => {
                    println!("{place}: installed");
                    for target in targets {
                        let answer = probe(agent, &target, &project);
                        healthy &= answer.is_ok();
                        let said = answer.unwrap_or_else(|why| format!("does not answer: {why}"));
                        println!("    {target}: {said}");
                    }
                }
            }
        }
    }
    Ok(healthy)
}
