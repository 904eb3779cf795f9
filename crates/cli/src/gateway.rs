//! `looprail gateway`: the wiring of `looprail-gateway` (flags, config file, store, signals);
//! the gateway's logic lives in its crate.

use std::path::PathBuf;

use looprail::GatewaySettings;
use looprail::journal::StoreLocation;
use looprail_gateway::compaction::CompactionSettings;
use looprail_gateway::{Gateway, GatewayConfig};

/// Arguments of `looprail gateway`. Each flag, when given, wins over the config file's
/// `[gateway]` key of the same name.
#[derive(clap::Args)]
pub struct GatewayArgs {
    /// Where to listen [default: 127.0.0.1:8787, loopback; another address exposes the gateway].
    #[arg(long)]
    pub listen: Option<String>,
    /// A looprail config file (JSON or TOML): its `[gateway]` section configures the gateway,
    /// its `[loop]` and `[guardrails]` sections apply to every conversation.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// The limits' profile when the config file names none: coding-agent (the default: per
    /// autonomous stretch, 1,000 turns, 8 / 12 h) or task (50 turns, 15 / 20 min).
    #[arg(long, value_parser = crate::parse_profile)]
    pub profile: Option<looprail::core::profile::Profile>,
    /// Where conversations' guard state is kept: a SQLite file or a `postgres://` URL (share
    /// one between replicas).
    #[arg(long, env = "LOOPRAIL_STORE", default_value = "looprail.db")]
    pub store: String,
    /// The OpenAI-compatible upstream (base URL, without /v1) [default: https://api.openai.com].
    #[arg(long, env = "LOOPRAIL_OPENAI_UPSTREAM")]
    pub openai_upstream: Option<String>,
    /// The Anthropic upstream (base URL, without /v1) [default: https://api.anthropic.com].
    #[arg(long, env = "LOOPRAIL_ANTHROPIC_UPSTREAM")]
    pub anthropic_upstream: Option<String>,
    /// A token clients must send (`Authorization: Bearer` or `x-api-key`); upstream keys then
    /// come from OPENAI_API_KEY / ANTHROPIC_API_KEY only.
    #[arg(long, env = "LOOPRAIL_GATEWAY_KEY")]
    pub require_key: Option<String>,
    /// Retries of a failed upstream call (429, 5xx, 529, unreachable), at most 10 [default: 3].
    #[arg(long)]
    pub retries: Option<u32>,
    /// A model tried when the client's model keeps failing, `openai:MODEL` or
    /// `anthropic:MODEL`; repeat for a chain (replaces the config file's list for that API).
    #[arg(long = "fallback", value_name = "API:MODEL")]
    pub fallbacks: Vec<String>,
    /// Where each conversation is recorded for `looprail audit` (one JSONL file each)
    /// [default: looprail-gateway-logs].
    #[arg(long)]
    pub record_dir: Option<PathBuf>,
    /// Record nothing.
    #[arg(long)]
    pub no_record: bool,
    /// Replace the older messages of requests past the config's `compaction.threshold` of
    /// `compaction.context_window` with a summary upstream (also `[gateway] compaction = true`).
    #[arg(long)]
    pub compaction: bool,
    /// Threads serving requests [default: one per core this process may use].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=i64::from(looprail::gateway_settings::MAX_WORKERS)))]
    pub workers: Option<u32>,
}

/// The config file's `[gateway]` section with the flags given over it, checked as one: a flag's
/// value is held to the bounds of its key (the file's own keys were checked when it was read).
fn flags_over(args: &GatewayArgs, mut file: GatewaySettings) -> Result<GatewaySettings, String> {
    if let Some(url) = &args.openai_upstream {
        file.openai_upstream.clone_from(url);
    }
    if let Some(url) = &args.anthropic_upstream {
        file.anthropic_upstream.clone_from(url);
    }
    if let Some(retries) = args.retries {
        file.retries = retries;
    }
    let (mut openai, mut anthropic) = (Vec::new(), Vec::new());
    for fallback in &args.fallbacks {
        match fallback.split_once(':') {
            Some(("openai", model)) if !model.trim().is_empty() => openai.push(model.trim().to_owned()),
            Some(("anthropic", model)) if !model.trim().is_empty() => anthropic.push(model.trim().to_owned()),
            _ => return Err(format!("--fallback {fallback:?}: expected openai:MODEL or anthropic:MODEL")),
        }
    }
    if !openai.is_empty() {
        file.openai_fallback_models = openai;
    }
    if !anthropic.is_empty() {
        file.anthropic_fallback_models = anthropic;
    }
    file.compaction |= args.compaction;
    file.record &= !args.no_record;
    if args.workers.is_some() {
        file.workers = args.workers;
    }
    // Only a flag can make a file that passed its own check fail here: name the flag.
    file.validate().map_err(|e| format!("--{}: {}", e.key.replace('_', "-"), e.message))?;
    Ok(file)
}

/// The gateway's settings from `file` (the config file's `[gateway]` section with the flags
/// over it, already checked: see [`flags_over`]) and the rest of the config.
fn settings(args: &GatewayArgs, file: GatewaySettings, config: looprail::LooprailConfig) -> GatewayConfig {
    let mut settings = GatewayConfig::new(config.loop_, config.guardrails);
    settings.compaction = file.compaction.then(|| CompactionSettings {
        context_window: config.compaction.context_window,
        threshold: config.compaction.threshold,
        summary_max_tokens: config.compaction.summary_max_tokens,
        summary_model: config.provider.summary_model.clone(),
        ..CompactionSettings::default()
    });
    settings.upstream.openai = file.openai_upstream;
    settings.upstream.anthropic = file.anthropic_upstream;
    settings.upstream.retries = file.retries;
    settings.upstream.openai_fallbacks = file.openai_fallback_models;
    settings.upstream.anthropic_fallbacks = file.anthropic_fallback_models;
    settings.pass_client_key = file.pass_client_key;
    settings.on_store_error = match file.on_store_error {
        looprail::OnStoreError::FailClosed => looprail_gateway::StoreFailure::FailClosed,
        looprail::OnStoreError::FailOpen => looprail_gateway::StoreFailure::FailOpen,
    };
    settings.save_order = match file.save_order {
        looprail::SaveOrder::Auto => looprail_gateway::SaveOrder::Auto,
        looprail::SaveOrder::BeforeAnswer => looprail_gateway::SaveOrder::BeforeAnswer,
        looprail::SaveOrder::AfterAnswer => looprail_gateway::SaveOrder::AfterAnswer,
    };
    settings.require_key = args.require_key.clone().filter(|k| !k.is_empty());
    settings.body_limit = usize::try_from(file.body_limit_mib).unwrap_or(32).saturating_mul(1024 * 1024);
    let record_dir = args.record_dir.clone().unwrap_or_else(|| PathBuf::from(file.record_dir));
    settings.record_dir = file.record.then_some(record_dir);
    settings
}

/// `looprail gateway`.
pub fn gateway(args: GatewayArgs, mut config: looprail::LooprailConfig) -> Result<u8, String> {
    let file = flags_over(&args, std::mem::take(&mut config.gateway))?;
    // Always set, so tokio never reads TOKIO_WORKER_THREADS (it panics on a bad value).
    let workers = file.workers.map_or_else(
        || std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get),
        |n| n as usize,
    );
    let listen = args.listen.clone().unwrap_or_else(|| file.listen.clone());
    let settings = settings(&args, file, config);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let location = StoreLocation::parse(&args.store).map_err(|e| e.to_string())?;
        let store = looprail::journal::open(&location, false, None)
            .await
            .map_err(|e| format!("{}: {e}", location.display()))?;
        let gateway = Gateway::new(settings, store).map_err(|e| e.to_string())?;
        let listener = tokio::net::TcpListener::bind(&listen)
            .await
            .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        let address = listener.local_addr().map_err(|e| e.to_string())?;
        // The signals are taken before the gateway says it listens: a supervisor's SIGTERM right
        // after that line then stops it cleanly instead of killing it.
        let stop = shutdown();
        eprintln!("[gateway] listening on http://{address} (store {})", location.display());
        looprail_gateway::serve(listener, gateway, stop).await;
        eprintln!("[gateway] stopped");
        Ok(crate::exit::COMPLETED)
    })
}

/// Takes SIGINT and SIGTERM from now on (not from the returned future's first poll: until then
/// a signal would still kill the process); the future completes at the first one.
fn shutdown() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let (Ok(mut interrupt), Ok(mut terminate)) =
            (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
        {
            return Box::pin(async move {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                }
            });
        }
    }
    Box::pin(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}
