//! Call signatures (B1) and observation fingerprints (B4).
//!
//! A signature is the tool name plus the WHOLE arguments as canonical JSON (object keys sorted,
//! no whitespace), hashed to 64 bits so windows hold integers, not strings. Key order and
//! whitespace never change a signature; any other difference anywhere in the arguments does
//! (two full-file rewrites that differ only at the end are two different calls).
//!
//! S1's 200-character cut of string values is for display only: [`display_arguments`].
//!
//! The hasher is [`Fnv64`] (stable across processes and versions, so signatures can be saved
//! with a run); canonical JSON is hashed straight from the raw text (`canonical`), and tool
//! results are fingerprinted with their volatile numbers masked ([`observation_fingerprint`]).
//! [`OutputLines`] keeps a result's masked lines in brief, so that the next result of the same
//! call can be compared with it: the same change again, or no new content.

use serde_json::Value;

mod canonical;
mod fnv;
mod lines;
mod observation;

pub use canonical::canonical_json;
use canonical::{hash_canonical, hash_raw};
pub use fnv::{Fnv64, hash_str};
pub use lines::{LINES_KEPT, LINES_MAX_BYTES, LineChange, OutputLines, observe_output};
pub use observation::{FINGERPRINT_HEAD, FINGERPRINT_TAIL, observation_fingerprint};

/// String values longer than this many characters are cut when arguments are shown to a person
/// (events, evidence, errors). Never used for equality.
pub const DISPLAY_TRUNCATION: usize = 200;

/// The canonical form of a raw arguments text; text that is not JSON is used as it is, with
/// surrounding whitespace trimmed.
pub fn canonical_arguments(raw: &str) -> String {
    canonical_with_cut(raw, usize::MAX)
}

/// The canonical arguments as shown to a person: string values cut at
/// [`DISPLAY_TRUNCATION`] characters (S1's signature). Never compare these.
pub fn display_arguments(raw: &str) -> String {
    canonical_with_cut(raw, DISPLAY_TRUNCATION)
}

fn canonical_with_cut(raw: &str, cut: usize) -> String {
    match serde_json::from_str::<Value>(raw.trim()) {
        Ok(value) => {
            let mut out = String::with_capacity(raw.len().min(4096));
            canonical_json(&value, cut, &mut out);
            out
        }
        Err(_) => {
            let text = raw.trim();
            text.char_indices().nth(cut).map_or(text, |(i, _)| &text[..i]).to_owned()
        }
    }
}

/// One tool call reduced to what detectors compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct CallSignature {
    /// Hash of the tool name.
    pub tool: u64,
    /// Hash of the tool name and canonical arguments.
    pub call: u64,
}

impl CallSignature {
    /// The signature of a call.
    pub fn of(tool: &str, raw_arguments: &str) -> Self {
        let mut h = Fnv64::default();
        h.write(tool.as_bytes());
        h.write_byte(0);
        let raw = raw_arguments.trim();
        if !hash_raw(raw, &mut h) {
            // Not JSON after all (RawValue is stricter on some inputs): the tree decides.
            let mut h2 = Fnv64::default();
            h2.write(tool.as_bytes());
            h2.write_byte(0);
            match serde_json::from_str::<Value>(raw) {
                Ok(value) => hash_canonical(&value, &mut h2),
                Err(_) => h2.write(raw.as_bytes()),
            }
            h = h2;
        }
        Self { tool: hash_str(tool), call: h.finish() }
    }
}

#[cfg(test)]
mod tests;
