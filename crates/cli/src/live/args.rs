//! The command-line arguments of the live-run commands.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Which API to call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI Chat Completions (and OpenAI-compatible servers with --base-url).
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

/// How to reach the model and where the run lives. A new run needs `--provider` and
/// `--model`; on an existing run (resume, answer, resolve) every flag given replaces what the
/// run's stored recipe says.
#[derive(clap::Args)]
pub struct ModelArgs {
    /// The API.
    #[arg(long, value_enum)]
    pub provider: Option<ProviderKind>,
    /// The model name.
    #[arg(long)]
    pub model: Option<String>,
    /// Another base URL (vLLM, Ollama, OpenRouter, a proxy).
    #[arg(long, env = "LOOPRAIL_BASE_URL")]
    pub base_url: Option<String>,
    /// A looprail config file (JSON or TOML).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Where runs are stored: a SQLite file or a `postgres://user@host:port/db` URL.
    #[arg(long, env = "LOOPRAIL_STORE", default_value = "looprail.db")]
    pub store: String,
    /// The directory the file tools may use (default: the current directory).
    #[arg(long)]
    pub workdir: Option<PathBuf>,
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

/// Arguments of `looprail run` and `looprail submit`.
#[derive(clap::Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Run in this lane, one run at a time, after the lane's earlier runs (by default each run
    /// has a lane of its own).
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
    /// Record the answer and leave the run queued for a `looprail worker` instead of driving it here.
    #[arg(long)]
    pub queue: bool,
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
    /// Record the verdict and leave the run queued for a `looprail worker` instead of driving it here.
    #[arg(long)]
    pub queue: bool,
}

/// Arguments of `looprail worker`.
#[derive(clap::Args)]
pub struct WorkerArgs {
    /// Where runs are stored: a SQLite file or a `postgres://user@host:port/db` URL.
    #[arg(long, env = "LOOPRAIL_STORE", default_value = "looprail.db")]
    pub store: String,
    /// Only these lanes (comma-separated, as given to `--lane`); default: every lane.
    #[arg(long, value_delimiter = ',')]
    pub lanes: Vec<String>,
    /// Exit once no run is due (for batch jobs and tests) instead of waiting for more.
    #[arg(long)]
    pub exit_when_idle: bool,
    /// How often to look for due runs, in milliseconds (workers poll the store; there is no
    /// push notification).
    #[arg(long, default_value_t = 500)]
    pub poll_ms: u64,
    /// The name this worker writes into the runs it holds (shown by `looprail runs`);
    /// default `host:pid`.
    #[arg(long)]
    pub name: Option<String>,
    /// A config file (TOML or JSON): its `[journal]` section sets the worker's staleness,
    /// reconcile interval and cancel timeout (a flag given here wins over the file).
    #[arg(long, env = "LOOPRAIL_CONFIG")]
    pub config: Option<std::path::PathBuf>,
    /// A run whose holder has not heartbeaten for this long is taken over by this worker and
    /// resumed from its latest checkpoint. Keep it well above the runs' `journal.heartbeat_secs`.
    /// Default: the config's `journal.stale_after_secs` (60).
    #[arg(long)]
    pub stale_after_secs: Option<u64>,
    /// How often to run the reconciler, in seconds. Default: the config's
    /// `journal.reconcile_interval_secs` (300).
    #[arg(long)]
    pub reconcile_secs: Option<u64>,
}

impl WorkerArgs {
    /// The journal settings this worker keeps to: each flag given, else the config file's
    /// `[journal]` key, else its default; checked as a whole.
    pub fn journal(&self) -> Result<looprail::journal::JournalConfig, String> {
        let mut journal = match &self.config {
            Some(path) => {
                looprail::LooprailConfig::from_path(path)
                    .map_err(|e| format!("{e} (in {})", path.display()))?
                    .journal
            }
            None => looprail::journal::JournalConfig::default(),
        };
        if let Some(secs) = self.stale_after_secs {
            journal.stale_after_secs = secs;
        }
        if let Some(secs) = self.reconcile_secs {
            journal.reconcile_interval_secs = secs;
        }
        if journal.stale_after_secs == 0 || journal.reconcile_interval_secs == 0 {
            return Err("--stale-after-secs and --reconcile-secs must be at least 1 second".to_owned());
        }
        Ok(journal)
    }
}

/// Arguments of `looprail wait`.
#[derive(clap::Args)]
pub struct WaitArgs {
    /// Where runs are stored: a SQLite file or a `postgres://user@host:port/db` URL.
    #[arg(long, env = "LOOPRAIL_STORE", default_value = "looprail.db")]
    pub store: String,
    /// Give up after this many seconds (exit 1); default: wait as long as it takes.
    #[arg(long)]
    pub timeout_secs: Option<u64>,
    /// The run.
    pub run_id: String,
}
