//! `looprail gateway`: the wiring of `looprail-gateway` (flags, config file, store, signals);
//! the gateway's logic lives in its crate.

use std::path::PathBuf;

use looprail::journal::StoreLocation;
use looprail_gateway::{Gateway, GatewayConfig};

/// Arguments of `looprail gateway`.
#[derive(clap::Args)]
pub struct GatewayArgs {
    /// Where to listen (loopback by default; another address exposes the gateway).
    #[arg(long, default_value = "127.0.0.1:8787")]
    pub listen: String,
    /// A looprail config file (JSON or TOML): its `[loop]` and `[guardrails]` sections apply
    /// to every conversation.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Where conversations' guard state is kept: a SQLite file or a `postgres://` URL (share
    /// one between replicas).
    #[arg(long, env = "LOOPRAIL_STORE", default_value = "looprail.db")]
    pub store: String,
    /// The OpenAI-compatible upstream (base URL, without /v1).
    #[arg(long, default_value = "https://api.openai.com")]
    pub openai_upstream: String,
    /// The Anthropic upstream (base URL, without /v1).
    #[arg(long, default_value = "https://api.anthropic.com")]
    pub anthropic_upstream: String,
    /// A token clients must send (`Authorization: Bearer` or `x-api-key`); upstream keys then
    /// come from OPENAI_API_KEY / ANTHROPIC_API_KEY only.
    #[arg(long, env = "LOOPRAIL_GATEWAY_KEY")]
    pub require_key: Option<String>,
    /// Retries of a failed upstream call (429, 5xx, 529, unreachable).
    #[arg(long, default_value_t = 3)]
    pub retries: u32,
    /// Where each conversation is recorded for `looprail audit` (one JSONL file each).
    #[arg(long, default_value = "looprail-gateway-logs")]
    pub record_dir: PathBuf,
    /// Record nothing.
    #[arg(long)]
    pub no_record: bool,
}

/// `looprail gateway`.
pub fn gateway(args: GatewayArgs, config: looprail::LooprailConfig) -> Result<u8, String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async {
        let location = StoreLocation::parse(&args.store).map_err(|e| e.to_string())?;
        let store = looprail::journal::open(&location, false, None)
            .await
            .map_err(|e| format!("{}: {e}", location.display()))?;
        let mut settings = GatewayConfig::new(config.loop_, config.guardrails);
        settings.upstream.openai = args.openai_upstream;
        settings.upstream.anthropic = args.anthropic_upstream;
        settings.upstream.retries = args.retries;
        settings.require_key = args.require_key;
        settings.record_dir = (!args.no_record).then_some(args.record_dir);
        let gateway = Gateway::new(settings, store).map_err(|e| e.to_string())?;
        let listener = tokio::net::TcpListener::bind(&args.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", args.listen))?;
        let address = listener.local_addr().map_err(|e| e.to_string())?;
        eprintln!("[gateway] listening on http://{address} (store {})", location.display());
        looprail_gateway::serve(listener, gateway, shutdown()).await.map_err(|e| e.to_string())?;
        eprintln!("[gateway] stopped");
        Ok(crate::exit::COMPLETED)
    })
}

/// Completes at the first SIGINT or SIGTERM.
async fn shutdown() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let (Ok(mut interrupt), Ok(mut terminate)) =
            (signal(SignalKind::interrupt()), signal(SignalKind::terminate()))
        {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
