//! The `looprail` command.
//!
//! - `looprail demo`: scripted scenarios through the full default stack on embedded defaults
//!   (no API key, no server); exits 0 only if every scenario behaved as expected.
//! - `looprail audit [--config FILE] [--json] PATH...`: replays recorded runs offline through the
//!   guard and context stack and reports where it would have intervened.
//! - `looprail run`, `runs`, `resume`, `cancel`: a live agent on a real provider, durable in a
//!   SQLite file.
//!
//! Errors are one line saying what is wrong and what to do, with a non-zero exit code.

mod audit;
mod demo;
mod live;
mod progress;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use looprail::LooprailConfig;

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
    /// Replay recorded agent runs offline and report where the guards would fire.
    Audit {
        /// A looprail config file (JSON or TOML).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Files or directories of runs (OpenAI chat or Anthropic Messages; JSON or JSONL).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Run an agent on a task with file tools confined to a work directory.
    Run(live::RunArgs),
    /// List the runs stored in a database.
    Runs {
        /// The SQLite file.
        #[arg(long, default_value = "looprail.db")]
        store: PathBuf,
    },
    /// Resume a stored run from its latest checkpoint.
    Resume(live::ResumeArgs),
    /// Ask a running run to stop at its next safe boundary.
    Cancel {
        /// The run.
        run_id: String,
        /// The SQLite file.
        #[arg(long, default_value = "looprail.db")]
        store: PathBuf,
    },
}

fn load_config(path: Option<&PathBuf>) -> Result<LooprailConfig, String> {
    match path {
        Some(path) => LooprailConfig::from_path(path).map_err(|e| format!("{e} (in {})", path.display())),
        None => Ok(LooprailConfig::default()),
    }
}

fn main() -> ExitCode {
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
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Demo { quiet } => return demo::run(quiet),
        Command::Audit { config, json, paths } => load_config(config.as_ref()).and_then(|config| {
            let report = audit::audit(&paths, &config, !json)?;
            if json {
                let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
                println!("{text}");
            } else {
                print!("{}", report.render());
            }
            Ok(())
        }),
        Command::Run(args) => live::run(args),
        Command::Runs { store } => live::list(&store),
        Command::Resume(args) => live::resume(args),
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
