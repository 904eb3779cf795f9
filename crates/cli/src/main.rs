//! The `looprail` command.
//!
//! - `looprail demo`: scripted scenarios through the full default stack on embedded defaults
//!   (no API key, no server); exits 0 only if every scenario behaved as expected.
//! - `looprail audit [--config FILE] [--preset NAME] [--json] [--html FILE] PATH...`: replays recorded runs offline through the
//!   guard and context stack and reports where it would have intervened.
//! - `looprail run`, `submit`, `worker`, `wait`, `runs`, `resume`, `answer`, `resolve`,
//!   `cancel`: a live agent on a real
//!   provider, durable in a SQLite file; SIGINT/SIGTERM stop a run at its next safe boundary,
//!   resumable.
//!
//! Errors are one line saying what is wrong and what to do, with a non-zero exit code.

mod demo;
mod exit;
mod gateway;
mod hook;
mod live;
mod log;
mod progress;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use looprail::LooprailConfig;
use looprail::core::profile::Profile;
use looprail::guardrails::Preset;

#[derive(Parser)]
#[command(name = "looprail", version, about = "Keep LLM agent loops safe, cheap and recoverable")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the built-in scenarios on embedded defaults and check their outcomes.
    Demo {
        /// Print only the summary table.
        #[arg(long)]
        quiet: bool,
    },
    /// Replay recorded agent runs offline: where the loop guards and the limits would have
    /// stopped them, the replies that repeat themselves, and the context with and without
    /// compaction.
    Audit {
        /// A looprail config file (JSON or TOML).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Also write a self-contained HTML report (summary, sortable runs, timelines) here.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Replace the guardrails section with a named preset: novelty (the default),
        /// s2-literal, s1-consecutive, s3-repeat-hint, s0-reflection, looprail-0.1, and the
        /// peers' rules gemini-cli, roo-code, openhands-stuck.
        #[arg(long, value_parser = parse_preset)]
        preset: Option<Preset>,
        /// The limits replayed when the config file names no profile: coding-agent (the
        /// gateway's, the default: per autonomous stretch) or task (a library run's: 50 turns,
        /// 15 / 20 minutes).
        #[arg(long, value_parser = parse_profile)]
        profile: Option<Profile>,
        /// Files, or directories walked for .json, .jsonl and .traj files, of recorded runs; the
        /// format is told from the content: chat (OpenAI chat or Anthropic Messages logs),
        /// responses-items, claude-code, codex, codex-exec, gemini-cli, gemini-api, swe-agent,
        /// mini-swe-agent, openhands, tau-bench, langchain, vercel-ai. Each path is a set, with
        /// its runs' lengths and the limits that spare them.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Run an agent on a task with file tools confined to a work directory.
    Run(live::RunArgs),
    /// Store a run, queued, for a worker to execute; prints its id.
    Submit(live::RunArgs),
    /// Execute queued runs from their stored recipes until stopped (SIGTERM/SIGINT).
    Worker(live::WorkerArgs),
    /// Wait until a run ends or pauses; print its reply and exit with its code.
    Wait(live::WaitArgs),
    /// List the runs stored in a database.
    Runs {
        /// Where runs are stored: a SQLite file or a `postgres://user@host:port/db` URL.
        #[arg(long, env = "LOOPRAIL_STORE", default_value = "looprail.db")]
        store: String,
    },
    /// Serve the OpenAI and Anthropic APIs with looprail's guardrails, for agents in any
    /// language (point the SDK's base URL here).
    Gateway(gateway::GatewayArgs),
    /// Resume an interrupted or abandoned run from its latest checkpoint (never a finished one).
    Resume(live::ResumeArgs),
    /// Answer the question a waiting run asked, and drive it on.
    Answer(live::AnswerArgs),
    /// Say what an interrupted side-effecting call did (--done, --retry, --skip), and drive the
    /// run on.
    Resolve(live::ResolveArgs),
    /// Guard Claude Code or Gemini CLI from inside: answer their hook events, or install the
    /// hooks into their settings.
    Hook(hook::HookArgs),
    /// Ask a running run to stop at its next safe boundary.
    Cancel {
        /// The run.
        run_id: String,
        /// Where runs are stored: a SQLite file or a `postgres://user@host:port/db` URL.
        #[arg(long, env = "LOOPRAIL_STORE", default_value = "looprail.db")]
        store: String,
    },
}

fn parse_preset(name: &str) -> Result<Preset, String> {
    Preset::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
        format!("unknown preset `{name}` (one of {})", names.join(", "))
    })
}

/// The config file at `path` (its loop section over `profile` unless it names its own), or
/// every default with `profile`'s loop section.
fn load_config(path: Option<&PathBuf>, profile: Profile) -> Result<LooprailConfig, String> {
    match path {
        Some(path) => {
            LooprailConfig::from_path_for(path, profile).map_err(|e| format!("{e} (in {})", path.display()))
        }
        None => Ok(LooprailConfig::for_profile(profile)),
    }
}

fn parse_profile(name: &str) -> Result<Profile, String> {
    Profile::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = Profile::ALL.iter().map(|p| p.name()).collect();
        format!("unknown profile `{name}` (one of {})", names.join(", "))
    })
}

/// The exit code of a run (`crate::exit`), or the one-line error and `exit::FAILED`.
fn finish(result: Result<u8, String>) -> ExitCode {
    match result {
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            eprintln!("error: {}", message.split_whitespace().collect::<Vec<_>>().join(" "));
            ExitCode::from(exit::FAILED)
        }
    }
}

/// The binary's allocator (see Cargo.toml: glibc malloc was a third of the gateway's CPU).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // Spans and metrics go to an OpenTelemetry collector when OTEL_EXPORTER_OTLP_ENDPOINT is
    // set; the guard flushes them when the command is done.
    let telemetry = match looprail_telemetry::install_from_env() {
        Ok(telemetry) => telemetry,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let code = command();
    drop(telemetry);
    code
}

/// Parses the command line and runs the command.
fn command() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) if !error.use_stderr() => {
            let _ = error.print(); // --help and --version
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            // One line: what is wrong, and where to look.
            let rendered = error.render().to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments").trim_start_matches("error: ");
            eprintln!("error: {first}; run `looprail --help` for usage");
            return ExitCode::from(exit::USAGE);
        }
    };
    let result = match cli.command {
        Command::Demo { quiet } => return demo::run(quiet),
        Command::Hook(args) => return hook::hook(args),
        Command::Audit { config, json, html, preset, profile, paths } => {
            load_config(config.as_ref(), profile.unwrap_or(Profile::CodingAgent)).and_then(|mut config| {
                if let Some(preset) = preset {
                    config.guardrails = preset.config();
                }
                let report = looprail_audit::audit(&paths, &config, !json)?;
                if let Some(path) = &html {
                    std::fs::write(path, looprail_audit::render::html::render(&report))
                        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
                }
                if json {
                    let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
                    println!("{text}");
                } else {
                    print!("{}", looprail_audit::render::table::render(&report));
                }
                Ok(())
            })
        }
        Command::Run(args) => return finish(live::run(args)),
        Command::Submit(args) => return finish(live::submit(args)),
        Command::Worker(args) => return finish(log::to_stderr().and_then(|()| live::worker(args))),
        Command::Gateway(args) => {
            return finish(log::to_stderr().and_then(|()| {
                load_config(args.config.as_ref(), args.profile.unwrap_or(Profile::CodingAgent))
                    .and_then(|config| gateway::gateway(args, config))
            }));
        }
        Command::Wait(args) => return finish(live::wait(args)),
        Command::Runs { store } => live::list(&store),
        Command::Resume(args) => return finish(live::resume(args)),
        Command::Answer(args) => return finish(live::answer(args)),
        Command::Resolve(args) => return finish(live::resolve(args)),
        Command::Cancel { run_id, store } => live::cancel(&store, &run_id),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::FAILURE
        }
    }
}
