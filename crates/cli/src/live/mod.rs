//! `looprail run`, `runs`, `resume` and `cancel`: a live agent on a real provider, durable in a
//! SQLite file.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use looprail::LooprailConfig;
use looprail::compaction::AutoCompaction;
use looprail::core::event::{Event, EventSink};
use looprail::core::outcome::{Outcome, StopCause};
use looprail::core::provider::Provider;
use looprail::guardrails::default_stack;
use looprail::journal::{Resumed, RunSpec, RunStatus, Runner, SqliteStore, Started};
use looprail::providers::{AnthropicClient, ClientConfig, OpenAiClient};
use looprail::retry::{FallbackChain, Retry, RetryingExecutor};

use looprail_workdir::Workdir;

const SYSTEM: &str = "You are a careful assistant working in a local directory. Use the tools to \
read, search and write files there; answer concisely.";

/// Which API to call.
#[derive(Clone, Copy, clap::ValueEnum)]
pub enum ProviderKind {
    /// OpenAI Chat Completions (and OpenAI-compatible servers with --base-url).
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

/// How to reach the model, shared by `run` and `resume`.
#[derive(clap::Args)]
pub struct ModelArgs {
    /// The API.
    #[arg(long, value_enum)]
    pub provider: ProviderKind,
    /// The model name.
    #[arg(long)]
    pub model: String,
    /// Another base URL (vLLM, Ollama, OpenRouter, a proxy).
    #[arg(long)]
    pub base_url: Option<String>,
    /// A looprail config file (JSON or TOML).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The SQLite file runs are stored in.
    #[arg(long, default_value = "looprail.db")]
    pub store: PathBuf,
    /// The directory the file tools may use.
    #[arg(long, default_value = ".")]
    pub workdir: PathBuf,
    /// Wait for whole answers instead of streaming them.
    #[arg(long)]
    pub no_stream: bool,
    /// A model to fall back to when the main one keeps failing, on the same API (repeat for a
    /// chain; replaces `provider.fallback_models` of the config file).
    #[arg(long = "fallback-model", value_name = "MODEL")]
    pub fallback_models: Vec<String>,
    /// A cheaper model for compaction summaries (replaces `provider.summary_model`).
    #[arg(long, value_name = "MODEL")]
    pub summary_model: Option<String>,
}

/// Arguments of `looprail run`.
#[derive(clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The task.
    pub task: String,
}

/// Arguments of `looprail resume`.
#[derive(clap::Args)]
pub struct ResumeArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The run.
    pub run_id: String,
}

/// The models a run uses: the main one (behind its fallback chain, if any) and the summarizer.
struct Models {
    main: Arc<dyn Provider>,
    summarizer: Option<Arc<dyn Provider>>,
}

/// One client for `model` on the API and base URL of `args`, with the config file's timeouts,
/// behind model-call retries (`retry.model`).
fn client(args: &ModelArgs, model: &str, config: &LooprailConfig) -> Result<Arc<dyn Provider>, String> {
    let client_config = match (args.provider, &args.base_url) {
        (ProviderKind::Openai, None) => ClientConfig::openai(model),
        (ProviderKind::Openai, Some(url)) => Ok(ClientConfig::openai_compatible(model, url)),
        (ProviderKind::Anthropic, None) => ClientConfig::anthropic(model),
        (ProviderKind::Anthropic, Some(url)) => ClientConfig::anthropic(model).map(|c| c.with_base_url(url)),
    }
    .map_err(|e| {
        if e.key.ends_with("_API_KEY") {
            format!("{} is not set: export it, or point --base-url at a server that needs no key", e.key)
        } else {
            e.to_string()
        }
    })?;
    let client_config = config.provider.apply(client_config);
    let retry = config.retry.model.clone();
    Ok(match args.provider {
        ProviderKind::Openai => Arc::new(
            Retry::new(OpenAiClient::new(client_config).map_err(|e| e.to_string())?).with_config(retry),
        ),
        ProviderKind::Anthropic => Arc::new(
            Retry::new(AnthropicClient::new(client_config).map_err(|e| e.to_string())?).with_config(retry),
        ),
    })
}

/// The models for `args`; flags replace the config file's `provider.fallback_models` and
/// `provider.summary_model`.
fn models(args: &ModelArgs, config: &LooprailConfig) -> Result<Models, String> {
    let fallbacks = if args.fallback_models.is_empty() {
        &config.provider.fallback_models
    } else {
        &args.fallback_models
    };
    let main = client(args, &args.model, config)?;
    let main = if fallbacks.is_empty() {
        main
    } else {
        let mut chain = vec![main];
        for model in fallbacks {
            chain.push(client(args, model, config)?);
        }
        Arc::new(FallbackChain::new(chain).with_events(printer()))
    };
    let summary_model = args.summary_model.as_ref().or(config.provider.summary_model.as_ref());
    let summarizer = summary_model.map(|model| client(args, model, config)).transpose()?;
    Ok(Models { main, summarizer })
}

fn printer() -> EventSink {
    EventSink::new(|event| match event {
        Event::TextDelta { text } => {
            let mut out = std::io::stdout();
            let _ = out.write_all(text.as_bytes());
            let _ = out.flush();
        }
        Event::TurnStarted { turn, cap } => eprintln!("[turn {turn}/{cap}]"),
        Event::StateChanged { .. } | Event::ModelResponded { .. } => {}
        other => eprintln!("[{}] {other}", other.name()),
    })
}

/// The runner for `args`; `existing` refuses a store file that is not there (resume).
async fn runner(args: &ModelArgs, existing: bool) -> Result<Runner, String> {
    let config = match &args.config {
        Some(path) => LooprailConfig::from_path(path).map_err(|e| format!("{e} (in {})", path.display()))?,
        None => LooprailConfig::default(),
    };
    let models = models(args, &config)?;
    let tools = Workdir::open(&args.workdir).map_err(|e| format!("work directory: {e}"))?.tools();
    let store = if existing {
        SqliteStore::open_existing(&args.store).await.map_err(|e| e.to_string())?
    } else {
        SqliteStore::open(&args.store).await.map_err(|e| format!("{}: {e}", args.store.display()))?
    };
    let (guardrails, compaction) = (config.guardrails.clone(), config.compaction.clone());
    let runner = Runner::new(store, models.main, tools, SYSTEM)
        .with_config(config.loop_.clone())
        .with_guards(move || default_stack(&guardrails))
        .with_policy(move || Box::new(AutoCompaction::new(compaction.clone())))
        .with_executor(Arc::new(RetryingExecutor::new(config.retry.tool.clone())))
        .with_events(printer())
        .with_streaming(!args.no_stream);
    Ok(match models.summarizer {
        Some(summarizer) => runner.with_summarizer(summarizer, config.provider.summary_timeout()),
        None => runner,
    })
}

/// Prints the outcome and returns its exit code.
fn show(outcome: &Outcome, streamed: bool) -> u8 {
    if !streamed || outcome.fallback.is_some() {
        println!("{}", outcome.final_text);
    } else {
        println!();
    }
    match &outcome.stop {
        StopCause::HandedToHuman { question } => {
            println!("The run waits for your answer: {}", one_line(question));
        }
        StopCause::ResumeUnsafe { call_id, tool } => println!(
            "The run waits for a human: call {call_id} of `{tool}` started before a crash and may or may not have taken effect."
        ),
        StopCause::ProviderFailed { message } => {
            eprintln!("error: the provider failed: {}", one_line(message))
        }
        _ => {}
    }
    let estimated = match outcome.usage.estimated_tokens {
        0 => String::new(),
        n => format!(" ({n} estimated: the provider reported no usage)"),
    };
    eprintln!(
        "[{:?}] {} turns, {} tool calls, {} tokens{estimated}, cost {:.4}",
        outcome.state,
        outcome.turns,
        outcome.tool_calls,
        outcome.usage.total(),
        outcome.cost
    );
    crate::exit::for_outcome(outcome)
}

/// `text` on one line: whitespace runs (CRLFs included) folded, cut at 300 characters.
fn one_line(text: &str) -> String {
    let folded = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match folded.char_indices().nth(300) {
        Some((cut, _)) => format!("{}…", &folded[..cut]),
        None => folded,
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
}

/// `looprail run`: the exit code of the outcome (see `crate::exit`).
pub fn run(args: RunArgs) -> Result<u8, String> {
    runtime()?.block_on(async {
        let runner = runner(&args.model, false).await?;
        let run_id = format!("run-{}", uuid::Uuid::now_v7());
        eprintln!("[run {run_id}]");
        Ok(
            match runner.start(&RunSpec::new(&run_id, "cli", &args.task)).await.map_err(|e| e.to_string())? {
                Started::Ran(outcome) => show(&outcome, !args.model.no_stream),
                Started::Queued { ahead } => {
                    eprintln!("queued behind {ahead} run(s)");
                    crate::exit::COMPLETED
                }
            },
        )
    })
}

/// `looprail resume`: the exit code of the outcome.
pub fn resume(args: ResumeArgs) -> Result<u8, String> {
    runtime()?.block_on(async {
        let runner = runner(&args.model, true).await?;
        match runner.resume(&args.run_id).await.map_err(|e| e.to_string())? {
            Resumed::Ran(outcome) => Ok(show(&outcome, !args.model.no_stream)),
            Resumed::Halted(halt) => Err(format!("the run was not resumed ({halt:?}); it waits for a human")),
        }
    })
}

/// `looprail runs`.
pub fn list(store: &std::path::Path) -> Result<(), String> {
    runtime()?.block_on(async {
        let store = SqliteStore::open_existing(store).await.map_err(|e| e.to_string())?;
        let runs = store.runs().await.map_err(|e| e.to_string())?;
        println!("{:<40} {:<18} {:<10} task", "run", "status", "resumable");
        for run in runs {
            let task: String = run.input.chars().take(60).collect();
            println!(
                "{:<40} {:<18} {:<10} {task}",
                run.run_id,
                run.status.as_str(),
                if run.resume_available { "yes" } else { "" }
            );
        }
        Ok(())
    })
}

/// `looprail cancel`.
pub fn cancel(store: &std::path::Path, run_id: &str) -> Result<(), String> {
    runtime()?.block_on(async {
        let store = SqliteStore::open_existing(store).await.map_err(|e| e.to_string())?;
        store.request_cancel(run_id, looprail::journal::now_ms()).await.map_err(|e| e.to_string())?;
        let status = store.run(run_id).await.map_err(|e| e.to_string())?.map(|r| r.status);
        if status == Some(RunStatus::WaitingOnHuman) {
            // No process drives a run that waits on a human: nothing else would ever observe
            // the request, so the run is cancelled now.
            store.set_status(run_id, RunStatus::Cancelled).await.map_err(|e| e.to_string())?;
            eprintln!("cancelled (the run was waiting on a human)");
        } else {
            eprintln!("cancel recorded; the run stops at its next safe boundary");
        }
        Ok(())
    })
}
