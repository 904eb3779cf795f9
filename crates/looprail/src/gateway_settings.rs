//! The `[gateway]` section of the config file: what `looprail gateway` listens on, where it
//! sends requests, and what it keeps. Flags given on the command line win over these keys.

use looprail_loop_core::config::ConfigError;
use serde::{Deserialize, Serialize};

/// The most worker threads `[gateway] workers` (and `looprail gateway --workers`) may ask for.
pub const MAX_WORKERS: u32 = 1024;

/// Settings of `looprail gateway` (the client token is not among them: it comes from
/// `--require-key` or `LOOPRAIL_GATEWAY_KEY` only, so it never sits in a file).
///
/// ```
/// let config = looprail::LooprailConfig::from_toml_str(
///     "[gateway]\nlisten = \"0.0.0.0:9000\"\nopenai_fallback_models = [\"gpt-4o-mini\"]\n",
/// )
/// .unwrap();
/// assert_eq!(config.gateway.listen, "0.0.0.0:9000");
/// assert_eq!(config.gateway.retries, 3);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GatewaySettings {
    /// Where to listen (`host:port`; loopback by default).
    pub listen: String,
    /// The OpenAI-compatible upstream's base URL, without `/v1`.
    pub openai_upstream: String,
    /// The Anthropic upstream's base URL, without `/v1`.
    pub anthropic_upstream: String,
    /// Retries of a failed upstream call (429, 5xx, 529, unreachable) before the next fallback.
    pub retries: u32,
    /// Models tried in order on the OpenAI API when the client's model keeps failing.
    pub openai_fallback_models: Vec<String>,
    /// Likewise on the Anthropic API.
    pub anthropic_fallback_models: Vec<String>,
    /// Whether a client's own provider key is passed upstream when the gateway has none of
    /// its own for that API (never when the gateway requires a client token).
    pub pass_client_key: bool,
    /// Whether each conversation is recorded for `looprail audit`.
    pub record: bool,
    /// Where conversations are recorded (one JSONL file each).
    pub record_dir: String,
    /// The largest request body accepted, in MiB.
    pub body_limit_mib: u32,
    /// Whether requests past `compaction.threshold` of `compaction.context_window` get their
    /// older messages replaced upstream by a summary (written by `provider.summary_model`,
    /// else the request's model).
    pub compaction: bool,
    /// What a request gets when its conversation's state cannot be read (the store is down or
    /// locked): `fail_closed`, a 503 the SDKs retry, nothing forwarded; or `fail_open`,
    /// forwarded unguarded (logged and counted).
    pub on_store_error: OnStoreError,
    /// When a conversation's state is saved: `auto` (after the answer on a SQLite store, before
    /// it on PostgreSQL), `before_answer` (set it when several gateway processes share one
    /// SQLite file) or `after_answer`.
    pub save_order: SaveOrder,
    /// Threads serving requests: by default one per core this process may use (its CPU
    /// affinity and cgroup quota counted), at most 1,024.
    pub workers: Option<u32>,
}

/// The `[gateway] save_order` key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SaveOrder {
    /// After the answer on SQLite, before it on PostgreSQL.
    #[default]
    Auto,
    /// Before the answer goes out (a store shared by several gateway processes).
    BeforeAnswer,
    /// After the answer goes out (a store only this gateway process writes).
    AfterAnswer,
}

/// The `[gateway] on_store_error` key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnStoreError {
    /// A 503 the client retries; nothing goes upstream.
    #[default]
    FailClosed,
    /// The request goes upstream unguarded.
    FailOpen,
}

impl Default for GatewaySettings {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8787".into(),
            openai_upstream: "https://api.openai.com".into(),
            anthropic_upstream: "https://api.anthropic.com".into(),
            retries: 3,
            openai_fallback_models: Vec::new(),
            anthropic_fallback_models: Vec::new(),
            pass_client_key: true,
            record: true,
            record_dir: "looprail-gateway-logs".into(),
            body_limit_mib: 32,
            compaction: false,
            on_store_error: OnStoreError::FailClosed,
            save_order: SaveOrder::Auto,
            workers: None,
        }
    }
}

impl GatewaySettings {
    /// Checks every value, naming the key: the listen address parses, upstreams are http(s)
    /// URLs, at most 10 retries, a body limit of 1 to 1024 MiB, 1 to 1024 workers, no blank model
    /// name.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.listen.parse::<std::net::SocketAddr>().is_err() {
            return Err(ConfigError::new("listen", "must be an address and port, like 127.0.0.1:8787"));
        }
        for (key, url) in
            [("openai_upstream", &self.openai_upstream), ("anthropic_upstream", &self.anthropic_upstream)]
        {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(ConfigError::new(key, "must be an http:// or https:// URL"));
            }
        }
        if self.retries > 10 {
            return Err(ConfigError::new("retries", "must be at most 10"));
        }
        if !(1..=1024).contains(&self.body_limit_mib) {
            return Err(ConfigError::new("body_limit_mib", "must be between 1 and 1024"));
        }
        for (key, models) in [
            ("openai_fallback_models", &self.openai_fallback_models),
            ("anthropic_fallback_models", &self.anthropic_fallback_models),
        ] {
            if let Some(index) = models.iter().position(|m| m.trim().is_empty()) {
                return Err(ConfigError::new(format!("{key}[{index}]"), "must not be empty"));
            }
        }
        if self.workers.is_some_and(|n| !(1..=MAX_WORKERS).contains(&n)) {
            return Err(ConfigError::new("workers", format!("must be between 1 and {MAX_WORKERS}")));
        }
        if self.record_dir.trim().is_empty() {
            return Err(ConfigError::new("record_dir", "must not be empty"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::LooprailConfig;

    #[test]
    fn bad_gateway_keys_are_named() {
        for (toml, key) in [
            ("[gateway]\nlisten = \"localhost\"\n", "gateway.listen"),
            ("[gateway]\nopenai_upstream = \"ftp://x\"\n", "gateway.openai_upstream"),
            ("[gateway]\nretries = 99\n", "gateway.retries"),
            ("[gateway]\nbody_limit_mib = 0\n", "gateway.body_limit_mib"),
            ("[gateway]\nworkers = 0\n", "gateway.workers"),
            (
                "[gateway]\nanthropic_fallback_models = [\"a\", \" \"]\n",
                "gateway.anthropic_fallback_models[1]",
            ),
            ("[gateway]\nrequire_key = \"secret\"\n", "gateway.require_key"),
        ] {
            assert_eq!(LooprailConfig::from_toml_str(toml).unwrap_err().key, key, "{toml}");
        }
        let toml = "[gateway]\non_store_error = \"fail_open\"\n";
        assert_eq!(
            crate::LooprailConfig::from_toml_str(toml).unwrap().gateway.on_store_error,
            super::OnStoreError::FailOpen
        );
        let toml = "[gateway]\non_store_error = \"ignore\"\n";
        assert!(
            crate::LooprailConfig::from_toml_str(toml).unwrap_err().to_string().contains("on_store_error")
        );
        let toml = "[gateway]\nsave_order = \"before_answer\"\n";
        assert_eq!(
            crate::LooprailConfig::from_toml_str(toml).unwrap().gateway.save_order,
            super::SaveOrder::BeforeAnswer
        );
        let toml = "[gateway]\nsave_order = \"later\"\n";
        assert!(crate::LooprailConfig::from_toml_str(toml).unwrap_err().to_string().contains("save_order"));
        let json = r#"{"gateway": {"record": false, "openai_fallback_models": ["b"], "compaction": true}}"#;
        let config = LooprailConfig::from_json_str(json).unwrap();
        assert!(!config.gateway.record && config.gateway.compaction);
        assert_eq!(config.gateway.openai_fallback_models, ["b"]);
    }
}
