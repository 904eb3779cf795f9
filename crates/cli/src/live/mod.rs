//! `looprail run`, `runs`, `resume`, `answer`, `resolve` and `cancel`: a live agent on a real
//! provider, durable in a SQLite file. This module builds the runner from the command line and
//! the config file; `commands` holds the commands, `show` what they print, `signals` the
//! shutdown handling.

mod commands;
mod show;
mod signals;

use std::path::PathBuf;
use std::sync::Arc;

use looprail::LooprailConfig;
use looprail::compaction::AutoCompaction;
use looprail::core::provider::Provider;
use looprail::guardrails::default_stack;
use looprail::journal::{Runner, SqliteStore};
use looprail::providers::{AnthropicClient, ClientConfig, OpenAiClient};
use looprail::retry::{FallbackChain, Retry, RetryingExecutor};
use tokio_util::sync::CancellationToken;

pub use commands::{answer, cancel, list, resolve, resume, run};
use show::printer;

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
    /// Run in this lane, one run at a time, after the lane's earlier runs (by default each run
    /// has a lane of its own). This process waits for its turn and runs the task itself.
    #[arg(long)]
    pub lane: Option<String>,
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

/// Arguments of `looprail answer`.
#[derive(clap::Args)]
pub struct AnswerArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The run waiting for an answer.
    pub run_id: String,
    /// The answer.
    pub text: String,
}

/// Arguments of `looprail resolve`.
#[derive(clap::Args)]
#[command(group(clap::ArgGroup::new("verdict").required(true).args(["done", "retry", "skip"])))]
pub struct ResolveArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// The run waiting for a verdict.
    pub run_id: String,
    /// The call (as `looprail runs` shows it).
    pub call_id: String,
    /// It did take effect; this is what it returned.
    #[arg(long, value_name = "RESULT")]
    pub done: Option<String>,
    /// It did not take effect: run it again.
    #[arg(long)]
    pub retry: bool,
    /// Do not run it; tell the model it was skipped.
    #[arg(long)]
    pub skip: bool,
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

/// The runner for `args`, stopping at the next safe boundary when `shutdown` fires; `existing`
/// refuses a store file that is not there (resume, answer, resolve). It reconciles the store
/// first (runs left behind by dead processes are marked, expired waits cancelled).
async fn runner(args: &ModelArgs, existing: bool, shutdown: CancellationToken) -> Result<Runner, String> {
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
        .with_streaming(!args.no_stream)
        .with_journal_config(&config.journal)
        .with_lane_draining(false)
        .with_shutdown(shutdown);
    let runner = match models.summarizer {
        Some(summarizer) => runner.with_summarizer(summarizer, config.provider.summary_timeout()),
        None => runner,
    };
    runner.reconcile().await.map_err(|e| e.to_string())?;
    Ok(runner)
}
