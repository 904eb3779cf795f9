//! The looprail gateway: looprail's guardrails for agents written in any language. It speaks
//! the OpenAI Chat Completions and Responses APIs and the Anthropic Messages API; an agent
//! points its SDK's base URL at it and changes nothing else. On every request it runs the guard stack a looprail run
//! uses over what is new in the conversation, and then:
//!
//! - forwards the request upstream, with the escalation ladder's nudge or directive added
//!   (tagged `[looprail]`) when the agent loops;
//! - forces the client's own ask-the-user tool when the ladder reaches `ask_human` and the
//!   client declared one;
//! - otherwise, when the ladder ends or a budget or cap is spent, answers with a final text
//!   obtained upstream with the tool choice `none` and an instruction to say what was tried and what
//!   the user must decide, so the client's loop ends by itself.
//!
//! Upstream failures are retried with backoff (honouring `retry-after`) and returned in the
//! provider's own format; streams are relayed as they arrive ([`relay`]) and a broken one ends
//! with the API's error event. Conversations are recognised across requests (see [`identity`]) and
//! their guard state kept in the run store, so a restart or a second replica goes on with it.
//!
//! The per-request decision is a state machine with no I/O ([`Gate`]):
//!
//! ```
//! use looprail_gateway::{ConversationState, Gate, Verdict};
//! use looprail_loop_core::config::LoopConfig;
//! use looprail_loop_core::message::{Message, ToolCall, ToolResult};
//!
//! let gate = Gate::new(LoopConfig::default(), Default::default());
//! let mut state = ConversationState::default();
//! let mut history = vec![Message::system("You search."), Message::user("Find the report")];
//! let mut verdicts = Vec::new();
//! for i in 0..12 {
//!     let id = format!("c{i}");
//!     history.push(Message::assistant_with_calls(None, vec![ToolCall::new(&id, "search", r#"{"q":"report"}"#)]));
//!     history.push(Message::tool_result(ToolResult::ok(&id, "no results")));
//!     verdicts.push(gate.observe(&mut state, &history, &["search".into()], 0));
//! }
//! assert!(matches!(verdicts[0], Verdict::Forward { ref instructions, .. } if instructions.is_empty()));
//! assert!(verdicts.iter().any(|v| matches!(v, Verdict::Forward { instructions, .. } if !instructions.is_empty())), "a nudge first");
//! assert!(matches!(verdicts.last(), Some(Verdict::Conclude { .. })), "then a final answer");
//! ```

mod body_layout;
mod bytes_memo;
pub mod compaction;
pub mod conversation;
mod declared;
mod finish;
mod first_message;
mod group_commit;
mod hook_sessions;
mod hooks_route;
mod http1_pool;
mod http2_lanes;
mod http_client;
pub mod identity;
mod json_scan;
mod listen;
mod newest_kept;
mod passthrough;
mod poll_rounds;
pub mod record;
mod recorder;
pub mod relay;
pub mod request;
mod respond;
pub mod response_chain;
mod responses_route;
mod save;
mod server;
mod server_timing;
mod state_store;
mod store_failure;
pub mod upstream;
mod upstream_stream;
pub mod wire;
mod write_behind;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use looprail_guardrails::GuardrailsConfig;
use looprail_journal::SharedStore;
use looprail_loop_core::config::LoopConfig;

pub use conversation::{ConversationState, Gate, Spent, Verdict, final_instruction};
pub use server::router;
pub use store_failure::StoreFailure;
pub use upstream::Upstream;
pub use wire::Api;
pub use write_behind::SaveOrder;

/// How many history fingerprints this replica remembers (the newest; an older one is looked up
/// in the store).
const RECENT_FINGERPRINTS: usize = 10_000;

/// How many distinct body beginnings keep their layouts, and the most bytes the kept bodies
/// hold together (shared with the requests that sent them while those run).
const LAYOUT_PREFIXES: usize = 1024;
const LAYOUT_BYTES: usize = 64 << 20;

/// Everything the gateway is configured with.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// Upstreams, keys and retries.
    pub upstream: Upstream,
    /// A token clients must present (`Authorization: Bearer` or `x-api-key`); the client's
    /// key is then never passed upstream.
    pub require_key: Option<String>,
    /// Whether a client's own provider key is passed upstream when the gateway has none of its
    /// own for that API (never when `require_key` is set).
    pub pass_client_key: bool,
    /// The largest request body accepted, in bytes.
    pub body_limit: usize,
    /// Limits, budgets, ask-human tool.
    pub loop_config: LoopConfig,
    /// Loop detection and the ladder.
    pub guardrails: GuardrailsConfig,
    /// Where each conversation is recorded for `looprail audit` (one JSONL file each);
    /// `None` records nothing.
    pub record_dir: Option<std::path::PathBuf>,
    /// Compaction of requests that pass a share of the model's window; `None` (the default)
    /// sends every request whole.
    pub compaction: Option<compaction::CompactionSettings>,
    /// What a request gets when its conversation's state cannot be read: a 503 (the default)
    /// or, with [`StoreFailure::FailOpen`], forwarded unguarded.
    pub on_store_error: StoreFailure,
    /// When a conversation's state is saved: [`SaveOrder::Auto`] (the default) after the
    /// answer on SQLite, before it on PostgreSQL. Set [`SaveOrder::BeforeAnswer`] when several
    /// gateway processes share one SQLite file.
    pub save_order: SaveOrder,
}

impl Default for GatewayConfig {
    /// The coding-agent profile's limits (per autonomous stretch; see
    /// [`Profile`](looprail_loop_core::profile::Profile)) and the default guardrails, with the
    /// settings of [`GatewayConfig::new`].
    fn default() -> Self {
        Self::new(looprail_loop_core::profile::Profile::CodingAgent.config(), GuardrailsConfig::default())
    }
}

impl GatewayConfig {
    /// The public APIs upstream, the keys from `OPENAI_API_KEY` and `ANTHROPIC_API_KEY` when
    /// set (else the client's own key is passed through), 3 retries, a 32 MiB body limit.
    pub fn new(loop_config: LoopConfig, guardrails: GuardrailsConfig) -> Self {
        let key = |name: &str| std::env::var(name).ok().filter(|k| !k.is_empty());
        Self {
            upstream: Upstream {
                openai: "https://api.openai.com".into(),
                anthropic: "https://api.anthropic.com".into(),
                openai_key: key("OPENAI_API_KEY"),
                anthropic_key: key("ANTHROPIC_API_KEY"),
                retries: 3,
                max_retry_after: Duration::from_secs(60),
                backoff: Duration::from_millis(500),
                openai_fallbacks: Vec::new(),
                anthropic_fallbacks: Vec::new(),
            },
            require_key: None,
            pass_client_key: true,
            body_limit: 32 * 1024 * 1024,
            loop_config,
            guardrails,
            record_dir: None,
            compaction: None,
            on_store_error: StoreFailure::default(),
            save_order: SaveOrder::default(),
        }
    }
}

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The HTTP client could not be built.
    #[error("cannot build the HTTP client: {0}")]
    Client(String),
    /// The thread recording conversations could not be started.
    #[error("cannot start the recording thread: {0}")]
    Record(String),
}

/// A running gateway's shared state.
pub struct Gateway {
    gate: Gate,
    upstream: Upstream,
    require_key: Option<String>,
    pass_client_key: bool,
    body_limit: usize,
    store: SharedStore,
    /// Where conversations are recorded, when they are.
    recorder: Option<recorder::Recorder>,
    compaction: Option<compaction::CompactionSettings>,
    on_store_error: StoreFailure,
    http: http_client::HttpClient,
    /// First messages' identity fingerprints, by their bytes.
    first_messages: first_message::FirstMessages,
    /// Requests' tools and system prompts, read once per distinct bytes.
    declarations: declared::Declarations,
    /// Recent request bodies' layouts, for the next request that extends one.
    layouts: body_layout::Layouts,
    /// Fingerprints answered recently by this replica (the store has them all).
    recent: Mutex<newest_kept::NewestKept<u64, String>>,
    /// Saves that run after their answers, and the states they wrote.
    write_behind: write_behind::WriteBehind,
    /// The writer grouping those saves into one transaction (SQLite, saving after the answer).
    group_commit: Option<group_commit::GroupCommit>,
    /// The coding CLIs' hooks served over HTTP (`POST /v1/hooks/{agent}`).
    hook: looprail_hook::session::Hook,
    /// Their sessions in memory, when saved after the answer.
    hook_sessions: hook_sessions::HookSessions,
}

impl std::fmt::Debug for Gateway {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gateway").field("upstream", &self.upstream.openai).finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway keeping conversations in `store`.
    pub fn new(config: GatewayConfig, store: SharedStore) -> Result<Arc<Self>, GatewayError> {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = http_client::HttpClient::new().map_err(|e| GatewayError::Client(e.to_string()))?;
        let save_order = config.save_order.on(store.backend());
        let write_behind = write_behind::WriteBehind::new(save_order);
        let group_commit = (write_behind.after_answer() && store.backend() == "sqlite")
            .then(|| group_commit::GroupCommit::new(Arc::clone(&store)));
        let recorder = config
            .record_dir
            .map(recorder::Recorder::start)
            .transpose()
            .map_err(|e| GatewayError::Record(e.to_string()))?;
        let hook = looprail_hook::session::Hook::new(config.loop_config.clone(), config.guardrails.clone());
        Ok(Arc::new(Self {
            gate: Gate::new(config.loop_config, config.guardrails),
            hook,
            upstream: config.upstream,
            require_key: config.require_key,
            pass_client_key: config.pass_client_key,
            body_limit: config.body_limit,
            store,
            recorder,
            compaction: config.compaction,
            on_store_error: config.on_store_error,
            http,
            first_messages: first_message::FirstMessages::new(),
            declarations: declared::Declarations::new(),
            layouts: body_layout::Layouts::new(LAYOUT_PREFIXES, LAYOUT_BYTES),
            recent: Mutex::new(newest_kept::NewestKept::new(RECENT_FINGERPRINTS)),
            write_behind,
            group_commit,
            hook_sessions: hook_sessions::HookSessions::default(),
        }))
    }
}

/// Serves `gateway` on `listener` until `shutdown` completes, then waits for the saves still
/// running behind their answers and the recordings they began.
pub async fn serve(
    listener: tokio::net::TcpListener,
    gateway: Arc<Gateway>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    listen::serve(listener, router(Arc::clone(&gateway)), shutdown).await;
    gateway.write_behind.drain().await;
    if let Some(recorder) = &gateway.recorder {
        recorder.flushed().await;
    }
}
