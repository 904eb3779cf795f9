//! [`JournalConfig`]: the config file's `[journal]` section — heartbeats, staleness, the
//! cancel timeout of waiting runs and the reconcile interval, with S2's defaults.

use std::time::Duration;

use looprail_loop_core::config::ConfigError;
use serde::{Deserialize, Serialize};

/// How durable runs are kept alive and reconciled (F31, F33).
///
/// ```
/// use looprail_journal::JournalConfig;
///
/// let config = JournalConfig::default();
/// assert_eq!(config.cancel_timeout_secs, 180);
/// assert!(JournalConfig { stale_after_secs: 5, ..config }.validate().is_err());
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct JournalConfig {
    /// How often a running run records its heartbeat and checks for a cancel request.
    pub heartbeat_secs: u64,
    /// A running run whose heartbeat is older than this was abandoned (its process died): the
    /// reconciler marks it `timed_out`, and resume may take it over. At least three
    /// heartbeats, so one slow write does not count as a death.
    pub stale_after_secs: u64,
    /// A run waiting on a human whose cancel request is older than this is cancelled by the
    /// reconciler (S2: 3 minutes).
    pub cancel_timeout_secs: u64,
    /// How often a long-lived process (`looprail worker`) reconciles (S2: every 5 minutes,
    /// and at start-up).
    pub reconcile_interval_secs: u64,
}

impl Default for JournalConfig {
    fn default() -> Self {
        Self {
            heartbeat_secs: 10,
            stale_after_secs: 60,
            cancel_timeout_secs: 180,
            reconcile_interval_secs: 300,
        }
    }
}

impl JournalConfig {
    /// Checks every value, naming the key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (key, value) in [
            ("heartbeat_secs", self.heartbeat_secs),
            ("cancel_timeout_secs", self.cancel_timeout_secs),
            ("reconcile_interval_secs", self.reconcile_interval_secs),
        ] {
            if value == 0 {
                return Err(ConfigError::new(key, "must be at least 1 second"));
            }
        }
        if self.stale_after_secs < self.heartbeat_secs.saturating_mul(3) {
            return Err(ConfigError::new(
                "stale_after_secs",
                "must be at least three times `heartbeat_secs`",
            ));
        }
        Ok(())
    }

    /// The heartbeat interval.
    pub fn heartbeat(&self) -> Duration {
        Duration::from_secs(self.heartbeat_secs)
    }

    /// The staleness threshold.
    pub fn stale_after(&self) -> Duration {
        Duration::from_secs(self.stale_after_secs)
    }

    /// The cancel timeout of waiting runs.
    pub fn cancel_timeout(&self) -> Duration {
        Duration::from_secs(self.cancel_timeout_secs)
    }

    /// The reconcile interval.
    pub fn reconcile_interval(&self) -> Duration {
        Duration::from_secs(self.reconcile_interval_secs)
    }
}
