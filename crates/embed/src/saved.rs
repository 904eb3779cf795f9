//! A guard's state as JSON text: what [`crate::AgentGuard::save`] writes and
//! [`crate::AgentGuard::restore`] reads.

use std::collections::BTreeMap;

use looprail::guardrails::host_ladder::HostLadder;
use looprail::guardrails::session::SessionState;
use serde::{Deserialize, Serialize};

use crate::verdict::{Call, Verdict};

/// The format's version; a saved state of another version is refused.
pub(crate) const VERSION: u32 = 1;

/// A text that is not a saved guard state.
#[derive(Debug, thiserror::Error)]
pub enum SavedError {
    /// Not JSON of the saved form.
    #[error("not a saved looprail guard state: {0}")]
    Malformed(String),
    /// Saved by a version of looprail whose format this one does not read.
    #[error("a saved guard state of format {found}; this looprail reads format {VERSION}")]
    Version {
        /// The format found.
        found: u32,
    },
}

/// What holds for the current stretch (since the user's last message) only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Stretch {
    /// The ladder's later rungs: the call to deny if it comes again, whether the human was asked
    /// (saved as the fields `deny` and `asked`).
    #[serde(flatten)]
    pub(crate) ladder: HostLadder,
    /// Calls of the last reply a guard replaced: their id and the text the model reads.
    #[serde(default)]
    pub(crate) replaced: Vec<(String, String)>,
    /// The stretch was stopped: every further call gets this verdict.
    #[serde(default)]
    pub(crate) stopped: Option<Verdict>,
    /// Nudges said as a reply came, for its last result.
    #[serde(default)]
    pub(crate) nudges: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Saved {
    pub(crate) version: u32,
    pub(crate) session: SessionState,
    pub(crate) guards: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    pub(crate) stretch: Stretch,
    #[serde(default)]
    pub(crate) calls: Vec<Call>,
    #[serde(default)]
    pub(crate) started_ms: Option<i64>,
}

impl Default for Saved {
    fn default() -> Self {
        Self {
            version: VERSION,
            session: SessionState::default(),
            guards: BTreeMap::new(),
            stretch: Stretch::default(),
            calls: Vec::new(),
            started_ms: None,
        }
    }
}

impl Saved {
    pub(crate) fn parse(text: &str) -> Result<Self, SavedError> {
        #[derive(Deserialize)]
        struct Version {
            version: u32,
        }
        let version: Version =
            serde_json::from_str(text).map_err(|e| SavedError::Malformed(e.to_string()))?;
        if version.version != VERSION {
            return Err(SavedError::Version { found: version.version });
        }
        serde_json::from_str(text).map_err(|e| SavedError::Malformed(e.to_string()))
    }

    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}
